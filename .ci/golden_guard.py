#!/usr/bin/env python3
"""The golden-file guard: fails when a reference file in `tests/data` or `dbdf/tests/data` is
opened by no test (issue 44). Test names are built at run time, so the guard watches what
the tests really open (Linux's inotify, through libc) rather than reading their sources.

    golden_guard.py watch LOG TREE...   # until SIGTERM: every file opened under the data
                                        # folders of each TREE (a checkout), one per line
    golden_guard.py check LOG TREE      # the data files of TREE that LOG does not name
"""
import ctypes
import os
import signal
import struct
import sys

DATA = ["tests/data", "dbdf/tests/data"]
IN_OPEN = 0x20
IN_ISDIR = 0x40000000


def data_files(tree):
    """The reference files of `tree`: not the notes for people (READMEs, manifests in
    Markdown, `DUMP.txt`) nor the scripts that made the files."""
    for data in DATA:
        for folder, _, files in os.walk(os.path.join(tree, data)):
            for name in files:
                if name != "DUMP.txt" and not name.endswith((".md", ".py", ".sh")):
                    yield os.path.relpath(os.path.join(folder, name), tree)


def watch(log, trees):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    if fd < 0:
        sys.exit(f"golden_guard: inotify_init: errno {ctypes.get_errno()}")
    folders = {}
    for tree in trees:
        for data in DATA:
            for folder, _, _ in os.walk(os.path.join(tree, data)):
                wd = libc.inotify_add_watch(fd, folder.encode(), IN_OPEN)
                if wd < 0:
                    sys.exit(f"golden_guard: cannot watch {folder}: errno {ctypes.get_errno()}")
                folders[wd] = os.path.relpath(folder, tree)
    opened = set()

    def stop(*_):
        with open(log, "w") as out:
            out.writelines(f"{name}\n" for name in sorted(opened))
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        try:
            events = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        at = 0
        while at + 16 <= len(events):
            wd, mask, _, size = struct.unpack_from("iIII", events, at)
            name = events[at + 16 : at + 16 + size].split(b"\0", 1)[0].decode()
            at += 16 + size
            if name and not mask & IN_ISDIR and wd in folders:
                opened.add(os.path.join(folders[wd], name))


def check(log, tree):
    opened = set(open(log).read().split("\n"))
    unused = sorted(f for f in data_files(tree) if f not in opened)
    for name in unused:
        print(f"golden_guard: no test opens {name}")
    if unused:
        sys.exit(1)
    print(f"golden_guard: every one of {len(list(data_files(tree)))} data files is opened by a test")


if __name__ == "__main__":
    mode, log, *trees = sys.argv[1:]
    if mode == "watch":
        watch(log, trees)
    elif mode == "check":
        check(log, trees[0])
    else:
        sys.exit(__doc__)
