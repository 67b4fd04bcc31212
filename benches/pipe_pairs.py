"""Every pair of formats through `dbdf convert` (issue 31): seconds and peak resident memory
of the converting process (/usr/bin/time), each output checked against what numpy or scipy
wrote.

Two matrices, as the issue measured them: a dense f64 matrix of 4096 x 8192 (256 MiB)
saved by numpy, through all 9 x 8 pairs of dbdf, tiled dbdf, npy, csv, mtx (array, written
by fast_matrix_market), futhark, binsparse (.npz), binsparse Zarr and SystemDS; and a
1e6 x 1e6 matrix with 1e7 non-zeros made by scipy, through the 6 x 5 pairs of the sparse
formats (mtx coordinate written by fast_matrix_market). Each output is converted to .npy
(dense) or a Binsparse .npz (sparse) and compared, bit for bit, with numpy's array or
scipy's CSR arrays (read by numpy from the archive).

Usage: python benches/pipe_pairs.py [DIR] [--quick] [--only dense|sparse] [--baseline BIN]
(needs numpy, scipy and fast_matrix_market; about 4 GiB free in DIR; removes its files.)
--quick uses small matrices (a smoke test of the script itself).
--baseline BIN runs each conversion with another build of the tool too (an earlier commit's
`target/release/dbdf`, copied aside), before or after this one in turn, and adds its figures
to each cell with the ratios: the comparison in one run, on the same files and the same
machine state.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import fast_matrix_market as fmm
import numpy as np
import scipy.sparse as sp
from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBDF = os.path.join(ROOT, "target", "release", "dbdf")
BOUND_MIB = 128

# Format name -> (file name, extra convert flags for output).
TARGETS = {
    "dbdf": ("m.dbdf", []),
    "dbdf-tiled": ("m.tiled.dbdf", ["--tile", "1000,1000"]),
    "npy": ("m.npy", []),
    "csv": ("m.csv", []),
    "mtx": ("m.mtx", []),
    "futhark": ("m.fut", []),
    "binsparse": ("m.bsp.npz", []),
    "zarr": ("m.bsp.zarr", []),
    "systemds": ("m.sysds", ["--to", "systemds"]),
}
DENSE = list(TARGETS)
SPARSE = ["dbdf", "dbdf-tiled", "mtx", "binsparse", "zarr", "systemds"]


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    for extra in (path + ".mtd", path + ".meta"):
        if os.path.exists(extra):
            os.remove(extra)


def convert(src, dst, flags=(), from_format=None):
    args = [DBDF, "convert", "--quiet", src, dst, *flags]
    if from_format == "systemds":
        args += ["--from", "systemds"]
    subprocess.run(args, check=True)


def measured(src, dst, flags, from_format, tool=None):
    """Seconds and peak MiB of one conversion (by `tool`, this build's by default)."""
    stats = dst + ".time"
    tool = tool or DBDF
    args = ["/usr/bin/time", "-f", "%e %M", "-o", stats, tool, "convert", "--quiet", src, dst, *flags]
    if from_format == "systemds":
        args += ["--from", "systemds"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        os.remove(stats)
        return None, None, done.stderr.strip().splitlines()[-1] if done.stderr else "failed"
    secs, kib = open(stats).read().split()[-2:]
    os.remove(stats)
    return float(secs), int(kib) / 1024, None


def sources(kind, base, d):
    """Each source format's file, made from the peer's file `base`."""
    made = {}
    peer = "npy" if kind == "dense" else "mtx"
    made[peer] = base
    if kind == "dense":
        # A dense MatrixMarket file is an array file, as fast_matrix_market writes it.
        made["mtx"] = os.path.join(d, "src.m.mtx")
        fmm.mmwrite(made["mtx"], np.load(base))
    for name in (DENSE if kind == "dense" else SPARSE):
        if name in made:
            continue
        file, flags = TARGETS[name]
        path = os.path.join(d, "src." + file)
        convert(base, path, flags)
        made[name] = path
    return made


def check_dense(out, fmt, d, expected):
    back = os.path.join(d, "check.npy")
    convert(out, back, [], fmt)
    got = np.load(back)
    remove(back)
    return got.shape == expected.shape and np.array_equal(
        got.view(np.uint64), expected.view(np.uint64)
    )


def check_sparse(out, fmt, d, expected):
    back = os.path.join(d, "check.bsp.npz")
    convert(out, back, ["--binsparse-format", "csr", "--data-type", "csr"], fmt)
    with np.load(back) as z:
        indptr, indices, values = z["pointers_to_1"], z["indices_1"], z["values"]
    remove(back)
    return (
        np.array_equal(indptr, expected.indptr)
        and np.array_equal(indices, expected.indices)
        and np.array_equal(values.view(np.uint64), expected.data.view(np.uint64))
    )


def run(kind, d, quick, baseline=None):
    if kind == "dense":
        rows, cols = (256, 512) if quick else (4096, 8192)
        a = np.random.default_rng(0).standard_normal((rows, cols))
        base = os.path.join(d, "peer.npy")
        np.save(base, a)
        formats, expected, check = DENSE, a, check_dense
        what = f"dense f64 {rows} x {cols} ({a.nbytes >> 20} MiB), saved by numpy"
    else:
        n, nnz = (10_000, 100_000) if quick else (1_000_000, 10_000_000)
        rng = np.random.default_rng(0)
        # nnz / n entries per row at random columns (the few that repeat are summed).
        rows = np.repeat(np.arange(n), nnz // n)
        cols = rng.integers(0, n, size=rows.size)
        m = sp.coo_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(n, n)).tocsr()
        m.sum_duplicates()
        m.sort_indices()
        base = os.path.join(d, "peer.mtx")
        fmm.mmwrite(base, m)
        formats, expected, check = SPARSE, m, check_sparse
        what = f"sparse {n} x {n}, {m.nnz} non-zeros, made by scipy"
    made = sources(kind, base, d)
    print(f"\n{what}: peak MiB, seconds (* = within {BOUND_MIB} MiB)\n")
    print("| from \\ to | " + " | ".join(formats) + " |")
    print("|---" * (len(formats) + 1) + "|")
    within = total = 0
    ratios = []
    for src in formats:
        cells = []
        for dst in formats:
            if dst == src:
                cells.append("-")
                continue
            file, flags = TARGETS[dst]
            out = os.path.join(d, "out." + file)
            remove(out)
            # Which build goes first alternates, so that neither always meets the colder
            # page cache.
            baseline_first = baseline and total % 2 == 1
            if baseline_first:
                base = measured(made[src], out, flags, src, baseline)
                remove(out)
            secs, mib, error = measured(made[src], out, flags, src)
            if error:
                cells.append(f"fails: {error}")
                remove(out)
                continue
            exact = check(out, dst, d, expected)
            remove(out)
            total += 1
            within += mib <= BOUND_MIB
            star = "*" if mib <= BOUND_MIB else ""
            cell = f"{mib:.0f}{star} {secs:.1f} s" + ("" if exact else " NOT EXACT")
            if baseline:
                if not baseline_first:
                    base = measured(made[src], out, flags, src, baseline)
                    remove(out)
                base_secs, base_mib, base_error = base
                if base_error:
                    cell += " (baseline fails)"
                else:
                    ratios.append((mib / base_mib, secs / max(base_secs, 0.01)))
                    cell += f" (was {base_mib:.0f}, {base_secs:.1f} s)"
            cells.append(cell)
        print(f"| {src} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{within} of {total} conversions within {BOUND_MIB} MiB.")
    if ratios:
        memory = sorted(r[0] for r in ratios)
        seconds = sorted(r[1] for r in ratios)
        mid = len(ratios) // 2
        print(
            f"Against the baseline, this build's over the baseline's: peak memory median "
            f"{memory[mid]:.2f} (from {memory[0]:.2f} to {memory[-1]:.2f}), seconds median "
            f"{seconds[mid]:.2f} (from {seconds[0]:.2f} to {seconds[-1]:.2f})."
        )


def main():
    print(describe(), flush=True)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if only:
        args.remove(only)
    baseline = None
    if "--baseline" in sys.argv:
        baseline = os.path.abspath(sys.argv[sys.argv.index("--baseline") + 1])
        args.remove(sys.argv[sys.argv.index("--baseline") + 1])
    d = tempfile.mkdtemp(dir=args[0] if args else None)
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "dbdf", "--bin", "dbdf"], cwd=ROOT, check=True
    )
    started = time.time()
    try:
        for kind in ("dense", "sparse"):
            if only in (None, kind):
                os.makedirs(os.path.join(d, kind))
                run(kind, os.path.join(d, kind), quick, baseline)
                shutil.rmtree(os.path.join(d, kind))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"\n({time.time() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
