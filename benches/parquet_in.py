"""Parquet in at pyarrow's speed (issue 47): `dbdf convert t.parquet t.dbdf --no-sync` (the
whole process) against pyarrow doing the same work in one warm process,
`write_feather(read_table(t), compression="uncompressed")`, and `read_table` alone; in
alternating turns, medians. The table: 8 f64 columns, 512 MiB, 16 row groups, uncompressed,
written by pyarrow (made once in DIR), in the page cache.

Usage: python benches/parquet_in.py [DIR] [--runs N]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBDF = os.path.join(ROOT, "target", "release", "dbdf")


def main():
    argv = sys.argv[1:]
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 7
    dirs = [a for i, a in enumerate(argv) if not a.startswith("--") and
            (i == 0 or not argv[i - 1].startswith("--"))]
    folder = dirs[0] if dirs else tempfile.gettempdir()
    src = os.path.join(folder, "parquet_in_f64x8.parquet")
    rows = (512 << 20) // 64
    if not os.path.exists(src):
        rng = np.random.default_rng(0)
        table = pa.table({f"c{i}": rng.random(rows) for i in range(8)})
        pq.write_table(table, src, compression="none", row_group_size=rows // 16)
    out, copy = os.path.join(folder, "parquet_in.dbdf"), os.path.join(folder, "parquet_in.feather")
    pq.read_table(src)  # the page cache and this process warm
    ours, theirs, alone = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([DBDF, "--quiet", "convert", src, out, "--no-sync"], check=True)
        ours.append(time.perf_counter() - t)
        os.remove(out)
        t = time.perf_counter()
        feather.write_feather(pq.read_table(src), copy, compression="uncompressed")
        theirs.append(time.perf_counter() - t)
        os.remove(copy)
        t = time.perf_counter()
        pq.read_table(src)
        alone.append(time.perf_counter() - t)
    m = statistics.median
    print(f"dbdf convert (whole process)              {m(ours):.3f} s")
    print(f"pyarrow read_table + write_feather        {m(theirs):.3f} s   ratio {m(theirs) / m(ours):.2f}x")
    print(f"pyarrow read_table alone                  {m(alone):.3f} s   ratio {m(alone) / m(ours):.2f}x")
    os.remove(src) if "--keep" not in argv else None


if __name__ == "__main__":
    main()
