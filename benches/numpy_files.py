"""scipy's sparse .npz to .dbdf (issue 34): a 1e6 x 1e6 matrix with 1e7 non-zeros saved by
scipy.sparse.save_npz (uncompressed, int32 indices), converted by `dbdf convert` (release
build), against scipy.sparse.load_npz reading it, whole processes in alternating turns
(seconds and peak resident memory, /usr/bin/time), and load_npz alone inside Python. The
output is checked against scipy's arrays.

Usage: python benches/numpy_files.py [DIR] [--runs N]
"""

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp
from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBDF = os.path.join(ROOT, "target", "release", "dbdf")


def timed(args):
    stats = tempfile.mktemp()
    subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", stats, *args], check=True)
    secs, kib = open(stats).read().split()[-2:]
    os.remove(stats)
    return float(secs), int(kib) / 1024


def main():
    print(describe(), flush=True)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    if "--runs" in sys.argv:
        args.remove(str(runs))
    d = tempfile.mkdtemp(dir=args[0] if args else None)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "dbdf", "--bin", "dbdf"],
                   cwd=ROOT, check=True)
    n, nnz = 1_000_000, 10_000_000
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n), nnz // n)
    cols = rng.integers(0, n, size=rows.size)
    m = sp.coo_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    npz, out = os.path.join(d, "m.npz"), os.path.join(d, "m.dbdf")
    sp.save_npz(npz, m, compressed=False)
    load = [sys.executable, "-c", f"import scipy.sparse as sp; sp.load_npz({npz!r})"]
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(timed([DBDF, "convert", "--quiet", npz, out]))
        theirs.append(timed(load))
    inside = []
    for _ in range(runs):
        t = time.perf_counter()
        sp.load_npz(npz)
        inside.append(time.perf_counter() - t)
    got = subprocess.run([DBDF, "convert", "--quiet", out, out + ".npz", "--to", "scipy"],
                         check=True)
    back = sp.load_npz(out + ".npz")
    exact = (np.array_equal(back.indptr, m.indptr) and np.array_equal(back.indices, m.indices)
             and back.data.tobytes() == m.data.tobytes())
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"{m.nnz} non-zeros, {os.path.getsize(npz) >> 20} MiB archive, {runs} turns")
    print(f"dbdf convert m.npz m.dbdf: median {med([s for s, _ in ours]):.2f} s "
          f"({min(s for s, _ in ours):.2f}-{max(s for s, _ in ours):.2f}), "
          f"peak {max(k for _, k in ours):.0f} MiB")
    print(f"python -c load_npz:        median {med([s for s, _ in theirs]):.2f} s "
          f"({min(s for s, _ in theirs):.2f}-{max(s for s, _ in theirs):.2f}), "
          f"peak {max(k for _, k in theirs):.0f} MiB")
    print(f"load_npz inside Python:    median {med(inside):.3f} s")
    print(f"round trip exact: {exact}")
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)


if __name__ == "__main__":
    main()
