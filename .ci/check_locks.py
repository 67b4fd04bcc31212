#!/usr/bin/env python3
"""The workspaces outside the main one (python/, spark/, examples/toy_converter/) lock every
crate they share with it at the main workspace's version, so that they build in its target
directory and reuse what it built instead of compiling their dependencies again.

Mend a difference with: cp Cargo.lock DIR/Cargo.lock && (cd DIR && cargo metadata >/dev/null)
"""
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OTHERS = ["python", "spark", "examples/toy_converter"]


def versions(lock: pathlib.Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for package in tomllib.loads(lock.read_text())["package"]:
        found.setdefault(package["name"], set()).add(package["version"])
    return found


main = versions(ROOT / "Cargo.lock")
failed = False
for other in OTHERS:
    for name, theirs in sorted(versions(ROOT / other / "Cargo.lock").items()):
        ours = main.get(name)
        if ours is not None and not theirs <= ours:
            print(f"{other}/Cargo.lock: {name} {sorted(theirs)}, Cargo.lock: {sorted(ours)}")
            failed = True
sys.exit(1 if failed else 0)
