#!/usr/bin/env python3
"""Fails when any code or document outside the format crate's `src/` names a hidden
internals module of `serde_daphne` (`__` + `private`), or when `src/` declares one (issue 70): the dbdf
crate, the bindings, the examples, the tests and the benchmarks live on the public API."""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
# Spelled in two pieces so that this file does not find itself.
hidden = "__" + "private"
skip = {"target", ".git", "node_modules", ".venv"}
found = []
for path in root.rglob("*"):
    relative = path.relative_to(root)
    if skip & set(relative.parts) or not path.is_file() or path.stat().st_size > 4 << 20:
        continue
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        continue
    in_src = relative.parts[0] == "src"
    for number, line in enumerate(text.splitlines(), 1):
        if hidden in line and (not in_src or f"mod {hidden}" in line):
            found.append(f"{relative}:{number}: {line.strip()}")
for line in found:
    print(f"a hidden module named: {line}")
if found:
    sys.exit(1)
print(f"{hidden}: named nowhere outside src/, declared nowhere")
