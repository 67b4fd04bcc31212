#!/usr/bin/env python3
"""Dask on a bucket (issue 85): a tiled dense f64 matrix of `--mib` MiB (chunks of 1024 x
1024) in an S3 server (s3s-fs with --s3s-fs, else moto's), on worker processes started as
`dask worker`, each with a TMPDIR and a local directory of its own (no shared folder).

- `store`: `dbdf.store` of the array, held in the workers' memory, each run to new objects,
  to `s3://data/x.dbdf` (tiles of 1024 x 1024, one multipart upload whose parts the workers
  send) and to DAPHNE's segments `s3://data/x.hdfs` (an upload per 1024 rows), on 1 and on 2
  workers; each read back against the array chunk by chunk. Twice: from the 1024 x 1024
  chunks (which `store` regroups into rows, moving them between workers) and from the same
  array held in chunks of whole rows.
- `read`: `dbdf.to_dask(url).sum()` on 1 and 2 workers, against `dask.array.from_zarr` of
  the same matrix written by zarr-python into the same bucket with the same chunks,
  uncompressed (through s3fs).

    python3 benches/dask_bucket.py --s3s-fs PATH [--mib 1024] [--repeat 2] [--dir DIR]

Needs dbdf with its dask extra, boto3, zarr, s3fs, and s3s-fs (`cargo install s3s-fs
--features binary`) or moto[server]. Times are medians; ratios are the baseline's time over
ours (above 1: we are faster) and one worker's over two.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "tests"))
sys.path.insert(0, str(ROOT / "benches"))
from dask_workers import median_time  # noqa: E402
from machine import describe  # noqa: E402
from remote_servers import S3  # noqa: E402

CHUNK = 1024


def cpu_seconds(pid):
    """The CPU time process `pid` has used, user and system (Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def clear(s3, name):
    """Deletes the object `name` and its folder: each `store` writes a new one (a rewrite of
    a folder of segments first copies the old one aside, on the server)."""
    for key in s3.keys():
        if key == name or key.startswith((name + "/", name + ".")):
            s3.client.delete_object(Bucket="data", Key=key)


class Workers:
    """A scheduler in this process and `n` `dask worker` processes, each with a TMPDIR and a
    local directory of its own."""

    def __init__(self, work, n, env):
        from dask.distributed import Client, LocalCluster

        self.cluster = LocalCluster(n_workers=0, dashboard_address=None)
        self.procs = []
        for k in range(n):
            own = work / f"worker{n}-{k}"
            (own / "tmp").mkdir(parents=True, exist_ok=True)
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker",
                 self.cluster.scheduler_address, "--nworkers", "1", "--nthreads", "1",
                 "--local-directory", str(own), "--memory-limit", "8GiB", "--no-dashboard"],
                env=dict(env, TMPDIR=str(own / "tmp")),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.client = Client(self.cluster)
        self.client.wait_for_workers(n, timeout=120)

    def close(self):
        self.client.close()
        for p in self.procs:
            p.terminate()
            p.wait()
        self.cluster.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--s3s-fs", default=None)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    print(describe(), flush=True)
    if args.s3s_fs:
        os.environ["DBDF_S3S_FS"] = args.s3s_fs
    import dask.array as da

    import dbdf

    work = Path(args.dir or tempfile.mkdtemp(prefix="dask-bucket-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "s3root", ignore_errors=True)
    s3 = S3(work)
    options = s3.options()
    env = s3.env()
    cols = 8192
    rows = max(CHUNK, (args.mib << 20) // (8 * cols) // CHUNK * CHUNK)
    url, segments_url = "s3://data/x.dbdf", "s3://data/x.hdfs"
    results = {}
    try:
        fsspec_options = {"key": options["aws_access_key_id"],
                          "secret": options["aws_secret_access_key"],
                          "client_kwargs": {"endpoint_url": s3.endpoint,
                                            "region_name": "us-east-1"}}
        zarr_url = "s3://data/x.zarr"
        for n in (1, 2):
            w = Workers(work, n, env)
            try:
                x = da.random.default_rng(0).random((rows, cols), chunks=CHUNK).persist()
                w.client.wait_for_workers(n)
                rows_x = x.rechunk({1: -1}).persist()
                stores = [(what + held, target, array)
                          for held, array in (("", x), (" rows", rows_x))
                          for what, target in (("store", url), ("segments", segments_url))]
                for what, target, array in stores:
                    times, server = [], []
                    for _ in range(args.repeat):
                        clear(s3, target.removeprefix("s3://data/"))
                        t, c = time.perf_counter(), cpu_seconds(s3.proc.pid)
                        dbdf.store(array, target, tile=(CHUNK, CHUNK), storage_options=options)
                        times.append(time.perf_counter() - t)
                        server.append((cpu_seconds(s3.proc.pid) - c) / times[-1])
                    results[(what, n)] = statistics.median(times)
                    results[(what + " server", n)] = statistics.median(server)
                    y = dbdf.to_dask(target, storage_options=options)
                    results[(what + " equal", n)] = bool((y == x).all().compute())
                del rows_x
                if n == 2:
                    da.to_zarr(x, zarr_url, storage_options=fsspec_options, overwrite=True,
                               compressors=None, zarr_format=2)
                del x
                t, total = median_time(
                    lambda: dbdf.to_dask(url, storage_options=options).sum().compute(),
                    args.repeat)
                results[("read", n)] = (t, total)
                if n == 2:
                    t, ztotal = median_time(lambda: da.from_zarr(
                        zarr_url, storage_options=fsspec_options).sum().compute(), args.repeat)
                    results["zarr"] = (t, ztotal)
            finally:
                w.close()
    finally:
        s3.stop()
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    mib = rows * cols * 8 / 2**20
    server = "s3s-fs" if args.s3s_fs else "moto"
    print(f"\n{rows} x {cols} f64 ({mib:.0f} MiB), chunks {CHUNK} x {CHUNK}, {server}; "
          f"medians of {args.repeat}\n")
    print("| step | 1 worker s | 2 workers s | 1 / 2 | baseline s | baseline / ours | "
          "server's cores busy, 1 / 2 workers |")
    print("|---|---|---|---|---|---|---|")
    for what, name in (("store", "a tiled `.dbdf`"), ("segments", "DAPHNE's segments"),
                       ("store rows", "a tiled `.dbdf`, from rows"),
                       ("segments rows", "DAPHNE's segments, from rows")):
        s1, s2 = results[(what, 1)], results[(what, 2)]
        equal = results[(what + " equal", 1)] and results[(what + " equal", 2)]
        busy = f"{results[(what + ' server', 1)]:.2f} / {results[(what + ' server', 2)]:.2f}"
        print(f"| `store` to {name} ({'reads back equal' if equal else 'DIFFERS'}) | "
              f"{s1:.2f} | {s2:.2f} | {s1 / s2:.2f}x | | | {busy} |")
    (r1, t1), (r2, t2) = results[("read", 1)], results[("read", 2)]
    z, zt = results["zarr"]
    same = np.isclose(t1, t2) and np.isclose(t2, zt)
    print(f"| `to_dask(url).sum()` ({'same sums' if same else 'SUMS DIFFER'}) | {r1:.2f} | "
          f"{r2:.2f} | {r1 / r2:.2f}x | `from_zarr` {z:.2f} | {z / r2:.2f}x | |")


if __name__ == "__main__":
    main()
