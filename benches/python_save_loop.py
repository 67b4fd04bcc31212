"""Dense saves in one process: `dbdf.save` and `numpy.save` of a 4096 x 4096 f64 array
(128 MiB) taking turns, medians (issue 36). Needs the `dbdf` wheel and numpy installed.

    python benches/python_save_loop.py [deleted|overwrite|fresh] [N] [--dir DIR]

`deleted` (the default) removes the previous file before the clock starts, `overwrite`
writes over it, `fresh` writes a new name each time and keeps the old files (on this VM
fresh page-cache memory costs both sides 0.1-0.3 s per 128 MiB). Run it under
`strace -f -T -e trace=write,openat,rename,fallocate,linkat` to compare the system calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import dbdf
from machine import describe


def main() -> None:
    print(describe(), flush=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="deleted",
                        choices=["deleted", "overwrite", "fresh"])
    parser.add_argument("n", nargs="?", type=int, default=41)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    x = np.random.default_rng(1).standard_normal((4096, 4096))
    times: dict[str, list[float]] = {"dbdf": [], "npy": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for i in range(args.n):
            for name in times:
                stem = "x" if args.mode != "fresh" else f"x{i}"
                path = os.path.join(tmp, f"{stem}.{name}")
                if args.mode == "deleted" and os.path.exists(path):
                    os.remove(path)
                start = time.perf_counter()
                if name == "dbdf":
                    dbdf.save(path, x)
                else:
                    np.save(path, x)
                times[name].append(time.perf_counter() - start)
    ms = {name: 1e3 * statistics.median(t) for name, t in times.items()}
    print(f"{args.mode}, medians of {args.n}: dbdf.save {ms['dbdf']:.1f} ms, "
          f"numpy.save {ms['npy']:.1f} ms, ratio {ms['npy'] / ms['dbdf']:.2f}x")


if __name__ == "__main__":
    main()
