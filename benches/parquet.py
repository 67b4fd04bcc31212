"""Parquet and Arrow (issue 32): a 1 GiB frame of 8 columns of mixed types in 16 row groups,
written by pyarrow uncompressed and with zstd, and as an uncompressed Feather v2 file.

Whole processes in alternating turns (seconds and peak resident memory, /usr/bin/time):
- `dbdf convert x.parquet x.dbdf` (synced to disk, the default, and `--no-sync`) against
  `pyarrow.parquet.read_table(x)` alone;
- `dbdf convert x.dbdf x.parquet` against pyarrow reading the same table from Feather and
  `write_table` (each with the same compression);
inside this Python process, the median of `write_table` alone; and in a Python process each,
after a first load, the medians of `dbdf.load(x.dbdf, as_arrow=True)` and
`pyarrow.feather.read_table(x.feather)`.
Every output is read back by pyarrow and compared with the table.

Usage: python benches/parquet.py [DIR] [--runs N] [--rows N]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

# Whole processes timed with /usr/bin/time, as the other benchmarks time them.
from numpy_files import timed
from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBDF = os.path.join(ROOT, "target", "release", "dbdf")

# 43 bytes a row: 1 GiB is 24,970,740 rows.
TYPES = ["f64", "f64", "i64", "i64", "f32", "i32", "u16", "u8"]
NUMPY = {"f64": np.float64, "i64": np.int64, "f32": np.float32, "i32": np.int32,
         "u16": np.uint16, "u8": np.uint8}


def table(rows):
    rng = np.random.default_rng(0)
    columns = {}
    for c, t in enumerate(TYPES):
        dtype = NUMPY[t]
        if t.startswith("f"):
            columns[f"{t}_{c}"] = rng.standard_normal(rows).astype(dtype)
        else:
            info = np.iinfo(dtype)
            columns[f"{t}_{c}"] = rng.integers(info.min, info.max, size=rows, dtype=dtype)
    return pa.table(columns)


def same(a, b):
    """Equal names and values (our schemas say `not null` and carry metadata)."""
    return a.column_names == b.column_names and all(
        x.equals(y) for x, y in zip(a.columns, b.columns))


def inside_python(setup, runs):
    """Seconds of the first `load()` in a fresh Python process (cold: the allocator's first
    touch of fresh memory), and the median of `runs` more (warm: pyarrow's allocator keeps
    freed memory for the next table; numpy's arrays are given back to the system)."""
    code = (f"{setup}\nimport time\ns = time.perf_counter(); x = load()\n"
            f"cold = time.perf_counter() - s; del x\nts = []\n"
            f"for _ in range({runs}):\n    s = time.perf_counter(); x = load(); "
            f"ts.append(time.perf_counter() - s); del x\n"
            f"print(cold, sorted(ts)[len(ts) // 2])")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    cold, warm = out.stdout.split()[-2:]
    return float(cold), float(warm)


def med(xs):
    return sorted(xs)[len(xs) // 2]


def line(name, runs):
    secs = [s for s, _ in runs]
    return (f"{name:<48} median {med(secs):6.2f} s ({min(secs):.2f}-{max(secs):.2f}), "
            f"peak {max(k for _, k in runs):6.0f} MiB")


def main():
    print(describe(), flush=True)
    argv = sys.argv[1:]
    opt = lambda name, default: int(argv[argv.index(name) + 1]) if name in argv else default
    runs, rows = opt("--runs", 5), opt("--rows", (1 << 30) // 43)
    args = [a for i, a in enumerate(argv) if not a.startswith("--")
            and (i == 0 or not argv[i - 1].startswith("--"))]
    d = tempfile.mkdtemp(dir=args[0] if args else None)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "dbdf", "--bin", "dbdf"],
                   cwd=ROOT, check=True)
    t = table(rows)
    group = -(-rows // 16)
    print(f"{rows} rows x {len(TYPES)} columns ({t.nbytes / 2**30:.2f} GiB), "
          f"row groups of {group} rows ({group * 43 / 2**20:.0f} MiB), {runs} turns")
    fea = os.path.join(d, "x.feather")
    feather.write_feather(t, fea, compression="uncompressed")
    for codec in ["none", "zstd"]:
        src = os.path.join(d, f"x-{codec}.parquet")
        pq.write_table(t, src, row_group_size=group, compression=codec)
        out, back = os.path.join(d, "x.dbdf"), os.path.join(d, "back.parquet")
        read = [sys.executable, "-c", f"import pyarrow.parquet as pq; pq.read_table({src!r})"]
        write = [sys.executable, "-c",
                 "import pyarrow.feather as f, pyarrow.parquet as pq; "
                 f"pq.write_table(f.read_table({fea!r}), {back!r}, row_group_size={group}, "
                 f"compression={codec!r})"]
        ours_in, unsynced, theirs_in, ours_out, theirs_out = [], [], [], [], []
        for _ in range(runs):
            ours_in.append(timed([DBDF, "convert", "--quiet", src, out]))
            unsynced.append(timed([DBDF, "convert", "--quiet", "--no-sync", src, out]))
            theirs_in.append(timed(read))
        for _ in range(runs):
            ours_out.append(timed([DBDF, "convert", "--quiet", out, back,
                                   "--compression", codec, "--row-group-rows", str(group)]))
            theirs_out.append(timed(write))
        subprocess.run([DBDF, "convert", "--quiet", out, back, "--compression", codec,
                        "--row-group-rows", str(group)], check=True)
        exact = same(pq.read_table(back), t)
        inside = []
        for _ in range(runs):
            start = time.perf_counter()
            pq.write_table(t, back, row_group_size=group, compression=codec)
            inside.append(time.perf_counter() - start)
        print(f"-- {codec}: {os.path.getsize(src) >> 20} MiB file")
        print(line(f"dbdf convert x.parquet x.dbdf", ours_in))
        print(line(f"dbdf convert --no-sync x.parquet x.dbdf", unsynced))
        print(line(f"python: pq.read_table(x.parquet)", theirs_in))
        print(line(f"dbdf convert x.dbdf x.parquet", ours_out))
        print(line(f"python: feather.read_table + pq.write_table", theirs_out))
        print(f"{'pq.write_table alone, inside Python':<48} median {med(inside):6.2f} s")
        print(f"round trip exact: {exact}")
    out = os.path.join(d, "x.dbdf")
    ours = [inside_python(f"import dbdf\nload = lambda: dbdf.load({out!r}, as_arrow=True)", runs)
            for _ in range(3)]
    theirs = [inside_python(
        f"import pyarrow.feather as f\nload = lambda: f.read_table({fea!r})", runs)
        for _ in range(3)]
    print("-- inside Python, three processes each: the first load, then the median of the rest")
    for name, got in [("dbdf.load(x.dbdf, as_arrow=True)", ours),
                      ("pyarrow.feather.read_table(x.feather)", theirs)]:
        print(f"{name:<48} cold {med([c for c, _ in got]):6.3f} s, "
              f"warm {med([w for _, w in got]):6.3f} s")
    print(f"ratio (feather / dbdf): cold {med([c for c, _ in theirs]) / med([c for c, _ in ours]):.2f}x, "
          f"warm {med([w for _, w in theirs]) / med([w for _, w in ours]):.2f}x")
    import dbdf

    print(f"as_arrow exact: {same(dbdf.load(out, as_arrow=True), t)}")
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
