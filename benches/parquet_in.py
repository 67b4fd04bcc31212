"""Parquet in at pyarrow's speed (issue 47): `dbdf convert t.parquet t.dbdf --no-sync` (the
whole process, with its peak resident memory) against pyarrow doing the same work in one
warm process, `write_feather(read_table(t), compression="uncompressed")`, and `read_table`
alone (after the others); in alternating turns (ABBA, each right after the previous turn's
output was removed), medians. The tables, written by pyarrow (made once in DIR), in
the page cache:
- f64x8: 8 f64 columns, 512 MiB, 16 row groups, uncompressed;
- mixed: 1 GiB of the ten numeric types and bools (43 bytes a row, 25 M rows), 24 row
  groups, uncompressed and zstd (pyarrow's default level).

Usage: python benches/parquet_in.py [DIR] [--runs N] [--only NAME] [--keep]
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBDF = os.path.join(ROOT, "target", "release", "dbdf")
TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64"]


def f64x8(path):
    rows = (512 << 20) // 64
    rng = np.random.default_rng(0)
    table = pa.table({f"c{i}": rng.random(rows) for i in range(8)})
    pq.write_table(table, path, compression="none", row_group_size=rows // 16)


def mixed(path, compression):
    rows = (1 << 30) // 43
    rng = np.random.default_rng(1)
    columns = {}
    for name in TYPES:
        dtype = np.dtype(name)
        if dtype.kind == "f":
            columns[name] = rng.random(rows, dtype=np.float64).astype(dtype)
        else:
            info = np.iinfo(dtype)
            columns[name] = rng.integers(info.min, info.max, rows, dtype=dtype, endpoint=True)
    columns["bool"] = rng.random(rows) < 0.5
    pq.write_table(pa.table(columns), path, compression=compression,
                   row_group_size=-(-rows // 24))


TABLES = {
    "f64x8": ("parquet_in_f64x8.parquet", f64x8),
    "mixed": ("parquet_in_mixed.parquet", lambda p: mixed(p, "none")),
    "mixed-zstd": ("parquet_in_mixed_zstd.parquet", lambda p: mixed(p, "zstd")),
}


def ours(src, out):
    """Our whole process: seconds, and peak resident MiB from /usr/bin/time (a child forked
    from this process would count this process's memory too)."""
    stats = out + ".time"
    t = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", stats,
                    DBDF, "--quiet", "convert", src, out, "--no-sync"], check=True)
    secs = time.perf_counter() - t
    with open(stats) as f:
        peak = int(f.read().split()[-1]) / 1024
    os.remove(stats)
    return secs, peak


def main():
    print(describe(), flush=True)
    argv = sys.argv[1:]
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 7
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    values = {argv[i + 1] for i, a in enumerate(argv) if a in ("--runs", "--only")}
    dirs = [a for a in argv if not a.startswith("--") and a not in values]
    folder = dirs[0] if dirs else tempfile.gettempdir()
    for name, (file, make) in TABLES.items():
        if only and name != only:
            continue
        src = os.path.join(folder, file)
        if not os.path.exists(src):
            make(src)
        out = os.path.join(folder, "parquet_in.dbdf")
        copy = os.path.join(folder, "parquet_in.feather")
        pq.read_table(src)  # the page cache and this process warm
        mine, peaks, theirs, alone = [], [], [], []

        def our_turn():
            secs, peak = ours(src, out)
            mine.append(secs)
            peaks.append(peak)
            os.remove(out)

        def their_turn():
            t = time.perf_counter()
            feather.write_feather(pq.read_table(src), copy, compression="uncompressed")
            theirs.append(time.perf_counter() - t)
            os.remove(copy)

        # Every timed write starts right after the turn before removed its output, and the
        # two sides take turns in the order ABBA: on this host (VM) memory freed a moment
        # ago comes back fast and memory freed earlier comes back slowly (the host took it
        # back; see BENCHMARKS.md), so a fixed order favoured whoever followed a removal.
        for run in range(runs):
            for turn in ((our_turn, their_turn) if run % 2 == 0 else (their_turn, our_turn)):
                turn()
        for _ in range(runs):
            t = time.perf_counter()
            pq.read_table(src)
            alone.append(time.perf_counter() - t)
        m = statistics.median
        size = os.path.getsize(src) / (1 << 20)
        groups = pq.ParquetFile(src).metadata.num_row_groups
        print(f"{name}: {size:.0f} MiB, {groups} row groups, medians of {runs}")
        print(f"  dbdf convert (whole process)        {m(mine):.3f} s   peak {max(peaks):.0f} MiB")
        print(f"  pyarrow read_table + write_feather  {m(theirs):.3f} s   ratio {m(theirs) / m(mine):.2f}x")
        print(f"  pyarrow read_table alone            {m(alone):.3f} s   ratio {m(alone) / m(mine):.2f}x")
        if "--keep" not in argv:
            os.remove(src)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(pyarrow's process peaked at {peak:.0f} MiB)")


if __name__ == "__main__":
    main()
