#!/usr/bin/env python3
"""Fails when code outside the format crate uses a hidden item of `serde_daphne` that
ARCHITECTURE.md does not list under "Internals shared with the converters", or any
`__private` module but the version-stamped one (issue 44)."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
section = root.joinpath("ARCHITECTURE.md").read_text().split("## Internals shared with the converters")[1]
section = section.split("\n## ")[0]
listed = set(re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)`", section))
used, stray = {}, []
for folder in ["dbdf", "python/src", "examples", "tests", "fuzz"]:
    for path in root.joinpath(folder).rglob("*.rs"):
        if "target" in path.parts:
            continue
        text = path.read_text()
        for name in re.findall(r"__private_0_1_0::([A-Za-z_][A-Za-z_0-9]*)", text):
            used.setdefault(name, []).append(str(path.relative_to(root)))
        for line in text.splitlines():
            if re.search(r"__private(?!_0_1_0)", line) and not line.lstrip().startswith("//"):
                stray.append(f"{path.relative_to(root)}: {line.strip()}")
unlisted = sorted(set(used) - listed)
for name in unlisted:
    print(f"not listed in ARCHITECTURE.md: __private_0_1_0::{name} (used in {used[name][0]})")
for line in stray:
    print(f"an unversioned __private: {line}")
if unlisted or stray:
    sys.exit(1)
print(f"__private: {len(used)} listed internals used, nothing else")
