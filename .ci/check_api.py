#!/usr/bin/env python3
"""Counts the crates' public API from rustdoc's JSON, as issue 30 counts it: the modules,
functions, types, traits, constants and macros reachable by a public path, plus the inherent
methods of public types (variants and fields are not counted; `#[doc(hidden)]` items are
not in the JSON, so not counted). Default features.

    python3 .ci/check_api.py            # every crate of .ci/api_budget.json, against it
    python3 .ci/check_api.py dbdf --list

Fails when a crate has more public items than .ci/api_budget.json allows (issue 70): the
face grows only by a reviewed edit of that file, which says why.
"""
import collections
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Under CARGO_TARGET_DIR where one is set (.ci/run: nightly's own cache).
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "api"


def rustdoc_json(crate):
    """rustdoc's JSON of `crate`'s library (nightly: the format is not stable)."""
    subprocess.run(
        ["cargo", "+nightly", "rustdoc", "-q", "-p", crate, "--lib", "--target-dir", str(TARGET),
         "--", "-Z", "unstable-options", "--output-format", "json"],
        cwd=ROOT, check=True)
    return json.loads((TARGET / "doc" / f"{crate}.json").read_text())


def count(data, list_items):
    """The crate's public items, by kind; printed one per line with `list_items`."""
    index, root = data["index"], data["root"]
    seen, counted = set(), collections.Counter()
    listing = []

    def inner_kind(item):
        return next(iter(item["inner"]))

    def visit(item_id, path):
        item = index.get(str(item_id))
        if item is None or item["visibility"] != "public" and path:
            return
        kind = inner_kind(item)
        if kind == "use":
            use = item["inner"]["use"]
            if use["id"] is not None:
                if use["is_glob"]:
                    target = index.get(str(use["id"]))
                    if target:
                        for child in target["inner"]["module"]["items"]:
                            visit(child, path)
                else:
                    visit(use["id"], path + [use["name"]])
            return
        name = path + ([item["name"]] if item["name"] and kind != "use" else [])
        key = (item_id, kind)
        if key in seen:
            return
        seen.add(key)
        if kind == "module":
            if path:
                counted["modules"] += 1
                listing.append(("module", "::".join(name)))
            for child in item["inner"]["module"]["items"]:
                visit(child, name)
        elif kind in ("function",):
            counted["functions"] += 1
            listing.append(("function", "::".join(name)))
        elif kind in ("struct", "enum", "type_alias", "union"):
            counted["types"] += 1
            listing.append(("type", "::".join(name)))
            for impl_id in item["inner"][kind].get("impls", []):
                impl = index[str(impl_id)]["inner"]["impl"]
                if impl["trait"] is None:
                    for m in impl["items"]:
                        method = index[str(m)]
                        if method["visibility"] == "public" and method["id"] not in seen:
                            seen.add(method["id"])
                            counted["methods"] += 1
                            listing.append(("method", "::".join(name) + "::" + method["name"]))
        elif kind == "trait":
            counted["traits"] += 1
            listing.append(("trait", "::".join(name)))
        elif kind in ("constant", "static"):
            counted["constants"] += 1
            listing.append(("constant", "::".join(name)))
        elif kind in ("macro", "proc_macro"):
            counted["macros"] += 1
            listing.append(("macro", "::".join(name)))

    visit(root, [])
    if list_items:
        for kind, name in sorted(listing, key=lambda x: x[1]):
            print(f"{kind:9} {name}")
    return counted


def main():
    budget = json.loads((ROOT / ".ci" / "api_budget.json").read_text())["budget"]
    crates = [a for a in sys.argv[1:] if not a.startswith("--")] or sorted(budget)
    over = []
    for crate in crates:
        counted = count(rustdoc_json(crate), "--list" in sys.argv)
        total = sum(counted.values())
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(counted.items()))
        print(f"api: {crate}: {total} public items (budget {budget[crate]}): {kinds}")
        if total > budget[crate]:
            over.append(crate)
    if over:
        sys.exit(f"api: over budget: {', '.join(over)}; take items out of the face, or raise "
                 ".ci/api_budget.json in a reviewed edit that says why")


main()
