#!/usr/bin/env python3
"""The Spark data source `dbdf` against Spark's built-in Parquet reader, in the same run.

    python benches/spark_source.py --dir /var/tmp/sparkbench [--gib 1] [--repeat 3]

Needs the `dbdf` package with its `spark` extra (pyspark 4, Java 17).

- `frame`: a frame of 8 f64 columns, `--gib` GiB, saved by `dbdf.save` (untiled: row bands
  of 128 MiB become the partitions) and converted to Parquet by `dbdf convert` (our Parquet
  sink, uncompressed).
- `matrix`: a 16384 x 8192 f64 matrix (1 GiB), saved tiled by rows (2048 x 8192), read as
  columns `c0..c8191` and as one array column (`layout="array"`); the same through our
  Parquet sink. Spark's 8192 per-column sums take minutes on either side, so they run only
  with `--matrix-sums`.

For each, `count()` and the per-column `sum()`s through `spark.read.format("dbdf")` (the
JVM source, where the package ships its jar), through the Python source (`"dbdf_python"`)
and through `spark.read.parquet`, on `local[2]`, results against numpy's; then `df.write` of
`spark.range()`'s table of 8 columns (`--gib` GiB) to DAPHNE's segments, read back and
compared. Times are medians of `--repeat` runs, ratios Parquet's time over ours (above 1:
we are faster). Peak resident memory is the largest sum over Spark's processes (the JVM
and its Python workers), sampled every 50 ms.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
from machine import describe


def tree_rss_mib(root: int) -> float:
    """Resident memory of `root` and its descendants."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return total / 2**20


class Peak:
    """The peak of `tree_rss_mib(os.getpid())` while in the `with` block."""

    def __enter__(self):
        self.peak, self.done = 0.0, False
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def _watch(self):
        while not self.done:
            self.peak = max(self.peak, tree_rss_mib(os.getpid()))
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.done = True
        self.thread.join()


def timed(f, repeat):
    times, value = [], None
    with Peak() as peak:
        for _ in range(repeat):
            t = time.perf_counter()
            value = f()
            times.append(time.perf_counter() - t)
    return statistics.median(times), value, peak.peak


def compare(spark, name, dbdf_path, want_sums, rows, repeat, sources, layouts=("columns",),
            sums=True):
    """Times each source and layout of ours and Spark's Parquet reader (once) on the same
    table. The JVM source (``"dbdf"`` with the jar) reads columns only."""
    from pyspark.sql import functions as F

    runs = [("count", lambda df: df.count())]
    if sums:
        runs.append(("sums", lambda df: df.agg(*[F.sum(c) for c in df.columns]).first()))
    theirs = spark.read.parquet(parquet_of(dbdf_path))
    print(f"{name}: {theirs.rdd.getNumPartitions()} partitions (parquet)")
    for what, run in runs:
        t_theirs, v_theirs, p_theirs = timed(lambda: run(theirs), repeat)
        print(f"  {what}: parquet {t_theirs:.2f} s (peak {p_theirs:.0f} MiB)")
        for source, layout in [(s, lay) for s in sources
                               for lay in (layouts if what == "count" else ("columns",))
                               if lay == "columns" or not jvm(s)]:
            ours = spark.read.format(source).option("layout", layout).load(dbdf_path)
            t_ours, v_ours, p_ours = timed(lambda: run(ours), repeat)
            for v in (v_ours, v_theirs):
                if what == "count":
                    assert v == rows, (v_ours, v_theirs)
                else:
                    np.testing.assert_allclose(list(v), want_sums, rtol=1e-9)
            print(f"  {what}, {source}, layout {layout} ({ours.rdd.getNumPartitions()} partitions): "
                  f"dbdf {t_ours:.2f} s (peak {p_ours:.0f} MiB): {t_theirs / t_ours:.2f}x parquet")


JVM = []  # whether "dbdf" is the JVM source (the jar loaded)


def jvm(source):
    """Whether ``source`` is the JVM's (which reads columns only)."""
    return source == "dbdf" and bool(JVM)


def parquet_of(dbdf_path):
    """Where our Parquet sink's copy of a `.dbdf` file is."""
    return dbdf_path[: -len(".dbdf")] + ".parquet"


def main():
    print(describe(), flush=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-matrix", action="store_true")
    parser.add_argument("--sources", default=None,
                        help="comma-separated: dbdf, dbdf_python (default: every one there is)")
    parser.add_argument("--skip-frame", action="store_true")
    parser.add_argument("--matrix-sums", action="store_true",
                        help="also the 8192 per-column sums of the matrix (minutes on each side)")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import dbdf
    import dbdf.spark
    from pyspark.sql import SparkSession

    os.makedirs(args.dir, exist_ok=True)
    rows = int(args.gib * 2**30) // 64
    rng = np.random.default_rng(0)
    frame = {f"x{j}": rng.random(rows) for j in range(8)}
    frame_sums = [v.sum() for v in frame.values()]
    fpath = os.path.join(args.dir, "f.dbdf")
    dbdf.save(fpath, frame)
    del frame
    dbdf.convert(fpath, parquet_of(fpath), compression="none")
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "4g"))
    try:
        builder = builder.config("spark.jars", dbdf.spark.jar())
        sources = ("dbdf", "dbdf_python")
        JVM.append(True)
    except FileNotFoundError:
        sources = ("dbdf",)
    if args.sources:
        sources = tuple(args.sources.split(","))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not args.skip_frame:
        compare(spark, f"frame {rows} x 8 f64", fpath, frame_sums, rows, args.repeat, sources)
    if not args.skip_matrix:
        m = rng.random((16384, 8192))
        mpath = os.path.join(args.dir, "m.dbdf")
        dbdf.save(mpath, m, tile=(2048, 8192))
        sums = m.sum(axis=0)
        del m
        dbdf.convert(mpath, parquet_of(mpath), compression="none")
        compare(spark, "matrix 16384 x 8192 f64", mpath, sums, 16384, args.repeat, sources,
                ("columns", "array"), args.matrix_sums)
    out = os.path.join(args.dir, "r.dbdf.hdfs")
    table = spark.range(rows).selectExpr(*[f"cast(id + {j} as double) as x{j}"
                                          for j in range(8)])
    t, _, peak = timed(lambda: table.write.format("dbdf").mode("overwrite").save(out), 1)
    t_pq, _, peak_pq = timed(lambda: table.write.mode("overwrite").option(
        "compression", "none").parquet(os.path.join(args.dir, "r.parquet")), 1)
    back = os.path.join(args.dir, "r.back.dbdf")
    dbdf.convert(out, back)
    got = dbdf.load(back)
    np.testing.assert_array_equal(got["x3"], np.arange(rows) + 3.0)
    for name in sorted(os.listdir(out)):
        if not name.endswith(".meta"):
            subprocess.run(["dbdf", "validate", os.path.join(out, name)], check=True,
                           capture_output=True)
    print(f"write {rows} x 8: dbdf {t:.2f} s (peak {peak:.0f} MiB), parquet {t_pq:.2f} s "
          f"(peak {peak_pq:.0f} MiB): {t_pq / t:.2f}x parquet; "
          f"{len(os.listdir(out)) // 2} segments, each valid")
    spark.stop()
    shutil.rmtree(args.dir)


if __name__ == "__main__":
    main()
