#!/usr/bin/env python3
"""Fails when a source file of the crates or the Python bindings is not named in
ARCHITECTURE.md (as `name.rs` or `folder/name.rs`), or when ARCHITECTURE.md names a `.rs` file
that no longer exists: the file lists stay true to the tree (issue 44)."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
text = root.joinpath("ARCHITECTURE.md").read_text()
named = set(re.findall(r"`([A-Za-z0-9_/]+\.rs)`", text))
trees = ["src", "dbdf/src", "python/src", "spark/src"]
files = [p for t in trees for p in root.joinpath(t).rglob("*.rs")]
# Entry points and folders' own modules are named by their folder.
skip = {"mod.rs", "lib.rs", "main.rs"}
missing = []
for path in files:
    if path.name in skip:
        continue
    rel = path.relative_to(root)
    # `name.rs` or any trailing part of its path (`pipe/spill.rs`, `zarr/source.rs`).
    tails = {"/".join(rel.parts[-k:]) for k in range(1, len(rel.parts) + 1)}
    if not tails & named:
        missing.append(str(rel))
# Test, example and benchmark files may be named too; each must exist.
everything = files + [
    p
    for t in ["tests", "dbdf/tests", "examples", "benches", "fuzz", "python"]
    for p in root.joinpath(t).rglob("*.rs")
    if "target" not in p.parts
]
existing = {"/".join(p.relative_to(root).parts[-k:]) for p in everything
            for k in range(1, len(p.relative_to(root).parts) + 1)}
stale = sorted(n for n in named if n not in existing)
# The storage layer sits below every format (issue 83): it may use only itself and the
# format crate, never `crate::<any other module>`.
storage = root / "dbdf" / "src" / "storage"
upward = [
    f"{p.relative_to(root)}: {m.group(0)}"
    for p in storage.rglob("*.rs")
    for m in re.finditer(r"\b(?:crate|super::super)::(\w+)", p.read_text())
    if m.group(1) != "storage"
]
for line in upward:
    print(f"the storage layer imports from above it: {line}")
for rel in missing:
    print(f"ARCHITECTURE.md does not name {rel}")
for name in stale:
    print(f"ARCHITECTURE.md names {name}, which is no file of the repository")
if missing or stale or upward:
    sys.exit(1)
print(f"ARCHITECTURE.md: all {len(files)} source files named")
