#!/usr/bin/env python3
"""SQL over a `.dbdf` through Arrow's stream interface (issue 89): DuckDB's
`select sum(c0), avg(c1)` over a frame of 8 f64 columns (about --mib MiB) read batch by batch
from `dbdf.arrow_reader` (the two columns picked, and every column), against the same query
over the same table as a Parquet file pyarrow wrote (DuckDB's own reader), in the same run.
Each query runs in a process of its own, timed inside it (imports apart), best of --runs,
the files in the page cache; peak resident memory of the process from /usr/bin/time.

    python3 benches/arrow_stream.py [--mib 1024] [--runs 3] [--dir DIR]

Needs: numpy, pyarrow, duckdb and the dbdf package.
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
from machine import describe  # noqa: E402

COLUMNS = 8

QUERY = """
import sys, time, duckdb, dbdf
kind, path = sys.argv[1], sys.argv[2]
if kind == "parquet":
    s = None
    sql = f"select sum(c0), avg(c1) from '{path}'"
else:
    s = dbdf.arrow_reader(path, ["c0", "c1"] if kind == "dbdf" else None)
    sql = "select sum(c0), avg(c1) from s"
start = time.perf_counter()
got = duckdb.sql(sql).fetchall()[0]
print(time.perf_counter() - start, got[0], got[1])
"""


def make(folder: Path, mib: int) -> tuple[Path, Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import dbdf

    rows = (mib << 20) // (8 * COLUMNS)
    rng = np.random.default_rng(89)
    columns = {f"c{j}": rng.random(rows) for j in range(COLUMNS)}
    frame, parquet = folder / "t.dbdf", folder / "t.parquet"
    dbdf.save(frame, columns)
    pq.write_table(pa.table(columns), parquet)
    return frame, parquet


def run(kind: str, path: Path, runs: int) -> tuple[float, float, float]:
    """Best query time, largest peak RSS (MiB), and the sum the query gave."""
    best, rss, total = float("inf"), 0.0, 0.0
    for _ in range(runs):
        with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
            script.write(QUERY)
            script.flush()
            done = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, script.name,
                                   kind, str(path)], capture_output=True, text=True, check=True)
        seconds, total, _ = map(float, done.stdout.split())
        best = min(best, seconds)
        rss = max(rss, int(done.stderr.split()[-1]) / 1024)
    return best, rss, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    print(describe())
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        frame, parquet = make(Path(scratch), args.mib)
        # Into the page cache.
        for path in (frame, parquet):
            path.read_bytes()
        base, base_rss, base_sum = run("parquet", parquet, args.runs)
        print("| query | seconds | Parquet / this | peak RSS MiB |")
        print("|---|---|---|---|")
        print(f"| DuckDB over Parquet ({parquet.stat().st_size >> 20} MiB) | {base:.3f} | 1.00x "
              f"| {base_rss:.0f} |")
        for kind, what in [("dbdf", "the stream of c0, c1"), ("all", "the stream of all 8")]:
            seconds, rss, total = run(kind, frame, args.runs)
            if abs(total - base_sum) > 1e-6 * abs(base_sum):
                raise SystemExit(f"{kind}: sum {total} where Parquet gave {base_sum}")
            print(f"| DuckDB over {what} ({frame.stat().st_size >> 20} MiB `.dbdf`) "
                  f"| {seconds:.3f} | {base / seconds:.2f}x | {rss:.0f} |")


if __name__ == "__main__":
    main()
