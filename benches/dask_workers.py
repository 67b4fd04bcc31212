#!/usr/bin/env python3
"""Dask over `.dbdf` files on real worker processes, against zarr in the same run.

    python benches/dask_workers.py --dir /var/tmp/daskbench [--gib 4] [--repeat 3]

Needs the `dbdf` package with its `dask` extra and zarr (`pip install "dbdf[dask]" zarr`).

- `store`: a random dask array of `--gib` GiB (chunks of 2048 x 2048 f64, made on the
  workers) written by `dbdf.store` to a tiled `.dbdf` on 1 and on 2 worker processes; the
  file against the array chunk by chunk; each worker's peak resident memory above its idle
  size, in chunks.
- `read`: `to_dask(...).sum()` and the column means on 1 and 2 workers, against
  `dask.array.from_zarr` of the same matrix written by zarr-python with the same chunks,
  uncompressed (the same bytes: our own Zarr sink writes Binsparse, whose values are 1-D);
  the page cache holds both files (a run after writing them). Results against numpy's on
  the whole matrix.
- `sparse`: a 1e6 x 1e6 matrix with 1e7 non-zeros tiled 100,000 x 100,000;
  `to_dask(...).sum(axis=0)` on 2 workers against scipy's on the whole matrix.

Times are medians of `--repeat` runs; ratios are zarr's time over ours (above 1: we are
faster) and one worker's over two.
"""

import argparse
import os
import resource
import shutil
import statistics
import time

import numpy as np
from machine import describe


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cluster(workers: int):
    from dask.distributed import Client, LocalCluster

    c = LocalCluster(
        n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None,
        memory_limit="8GiB",
    )
    return c, Client(c)


def median_time(fn, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), value


def bench_store(args, shape, tile, path):
    import dask.array as da

    import dbdf

    result = {}
    for workers in (1, 2):
        c, client = cluster(workers)
        with c, client:
            idle = max(client.run(rss_mib).values())
            x = da.random.default_rng(7).random(shape, chunks=tile)


            def run():
                # Each run starts with no dirty pages: the last run's file would otherwise be
                # written back meanwhile and throttle this one's writes to the disk's speed.
                if os.path.exists(path):
                    os.remove(path)
                os.sync()
                t = time.perf_counter()
                dbdf.store(x, path)
                return time.perf_counter() - t

            t = statistics.median(run() for _ in range(args.repeat))
            peak = max(client.run(peak_mib).values())
            result[workers] = (t, peak - idle)
            if workers == 2:
                # The file against the array, chunk by chunk (the array is reproducible).
                y = dbdf.to_dask(path)
                assert y.chunks == x.chunks
                equal = da.map_blocks(
                    lambda a, b: np.array([[np.array_equal(a, b)]]), x, y, dtype=bool,
                    chunks=(1, 1),
                ).all().compute()
                assert equal, "the file differs from the array"
    chunk_mib = tile[0] * tile[1] * 8 / 2**20
    t1, _ = result[1]
    t2, extra = result[2]
    print(f"store {shape[0]} x {shape[1]} f64 ({args.gib} GiB), chunks {tile}: "
          f"1 worker {t1:.2f} s, 2 workers {t2:.2f} s ({t1 / t2:.2f}x); "
          f"peak per worker {extra:.0f} MiB above idle = {extra / chunk_mib:.1f} chunks "
          f"of {chunk_mib:.0f} MiB")


def bench_read(args, path, zpath, expected_sum, expected_means):
    import dask.array as da

    import dbdf

    rows = []
    for workers in (1, 2):
        c, client = cluster(workers)
        with c, client:
            for name, make in (("dbdf", lambda: dbdf.to_dask(path)),
                               ("zarr", lambda: da.from_zarr(zpath))):
                x = make()
                t_sum, s = median_time(lambda: x.sum().compute(), args.repeat)
                t_mean, m = median_time(lambda: x.mean(axis=0).compute(), args.repeat)
                assert np.isclose(s, expected_sum, rtol=1e-9), (name, s, expected_sum)
                np.testing.assert_allclose(m, expected_means, rtol=1e-9)
                rows.append((workers, name, t_sum, t_mean))
    t = {(w, n): (a, b) for w, n, a, b in rows}
    for w in (1, 2):
        (ds, dm), (zs, zm) = t[(w, "dbdf")], t[(w, "zarr")]
        print(f"read on {w} worker(s): sum dbdf {ds:.2f} s, zarr {zs:.2f} s ({zs / ds:.2f}x); "
              f"column means dbdf {dm:.2f} s, zarr {zm:.2f} s ({zm / dm:.2f}x)")
    (d1s, d1m), (d2s, d2m) = t[(1, "dbdf")], t[(2, "dbdf")]
    print(f"dbdf, 2 workers over 1: sum {d1s / d2s:.2f}x, column means {d1m / d2m:.2f}x")


def bench_sparse(args, folder):
    import scipy.sparse as sp

    import dbdf

    n, nnz = 1_000_000, 10_000_000
    rng = np.random.default_rng(3)
    m = sp.csr_array(
        (rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n)
    )
    m.sum_duplicates()
    path = os.path.join(folder, "sparse.dbdf")
    dbdf.save(path, m, tile=(100_000, 100_000))
    expected = np.asarray(m.sum(axis=0)).ravel()
    c, client = cluster(2)
    with c, client:
        x = dbdf.to_dask(path)
        t, s = median_time(lambda: x.sum(axis=0).compute(), args.repeat)
        np.testing.assert_allclose(np.asarray(s).ravel(), expected, rtol=1e-9, atol=1e-9)
    t_scipy, _ = median_time(lambda: m.sum(axis=0), args.repeat)
    print(f"sparse {n} x {n}, {m.nnz} non-zeros, tiles 100000 x 100000: sum(axis=0) on 2 "
          f"workers {t:.2f} s (equal to scipy's; scipy in memory {t_scipy:.2f} s)")


def main():
    print(describe(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--gib", type=float, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import zarr

    os.makedirs(args.dir, exist_ok=True)
    tile = (2048, 2048)
    cols = 32768
    rows = max(tile[0], int(args.gib * 2**30 / 8 / cols) // tile[0] * tile[0])
    shape = (rows, cols)
    path = os.path.join(args.dir, "dense.dbdf")
    zpath = os.path.join(args.dir, "dense.zarr")
    try:
        bench_store(args, shape, tile, path)
        import dbdf

        # The same matrix as zarr-python writes it, same chunks, uncompressed; and numpy's
        # answers on the whole matrix.
        whole = dbdf.load(path)
        z = zarr.create_array(zpath, shape=shape, chunks=tile, dtype="f8", compressors=None,
                              overwrite=True)
        z[:] = whole
        expected_sum, expected_means = whole.sum(), whole.mean(axis=0)
        del whole, z
        bench_read(args, path, zpath, expected_sum, expected_means)
        bench_sparse(args, args.dir)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
