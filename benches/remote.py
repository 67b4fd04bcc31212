#!/usr/bin/env python3
"""Remote storage against local servers (issue 45): requests, bytes and speed of `dbdf` on
objects in an S3 server (moto's, or s3s-fs with --s3s-fs) and behind nginx, with curl
moving the same bytes from the same server in the same run as the baseline (and boto3's
multipart upload), and each process's peak resident memory.

    python3 benches/remote.py [--dbdf target/release/dbdf] [--quick] [--dir /tmp/remote-bench]
                              [--s3s-fs PATH]

Needs: moto[server] (or s3s-fs), boto3, numpy, scipy and the `dbdf` package in this Python; nginx; curl.
Files: a 1 GiB dense f64 matrix, 16384 x 8192 in tiles of 1024 x 1024 (128 blocks) and as
its `.npy` (a window of each), and a
1e6 x 1e6 CSR matrix with 1e7 non-zeros in tiles of 100,000 x 100,000 (--quick: smaller).
Prints a Markdown table; the files are removed at the end.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "tests"))
from remote_servers import S3, Nginx  # noqa: E402
from machine import describe, timed  # noqa: E402


def stats(err):
    m = re.search(r"requests: (\d+), bytes fetched: (\d+), bytes sent: (\d+)", err)
    return tuple(map(int, m.groups()))


def best(runs, f):
    """The fastest of `runs` runs of `f` (wall, rss, err), with the largest RSS seen."""
    results = [f() for _ in range(runs)]
    fastest = min(results, key=lambda r: r[0])
    return fastest[0], max(r[1] for r in results), fastest[2]


def main():
    print(describe(), flush=True)
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbdf", default=str(ROOT / "target" / "release" / "dbdf"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--s3s-fs", default=None,
                    help="the S3 server: s3s-fs at this path (cargo install s3s-fs --features "
                         "binary) instead of moto, whose range reads cost the whole object")
    args = ap.parse_args()
    if args.s3s_fs:
        os.environ["DBDF_S3S_FS"] = args.s3s_fs
    work = Path(args.dir or tempfile.mkdtemp(prefix="remote-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    dbdf_cli = args.dbdf
    rows, cols, tile = (16384, 8192, 1024) if not args.quick else (2048, 1024, 256)
    n, nnz, stile = (10**6, 10**7, 10**5) if not args.quick else (10**5, 10**6, 10**4)
    try:
        s3 = S3(work)
        nginx = Nginx(work)
    except BaseException as e:  # pytest.skip's exception, outside pytest
        raise SystemExit(f"a server is missing: {e}")
    env = s3.env()
    # curl signs its requests as ours are signed (the servers refuse anonymous writes).
    signed = ["curl", "-sSf", "--aws-sigv4", "aws:amz:us-east-1:s3",
              "--user", f"{env['AWS_ACCESS_KEY_ID']}:{env['AWS_SECRET_ACCESS_KEY']}",
              "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
    run = lambda *a: subprocess.run([dbdf_cli, *map(str, a)], env=env, check=True,  # noqa: E731
                                     capture_output=True, text=True)
    out = []
    try:
        # The files.
        dense_npy = work / "d.npy"
        m = np.lib.format.open_memmap(dense_npy, mode="w+", dtype=np.float64, shape=(rows, cols))
        for r in range(0, rows, 1024):
            m[r:r + 1024] = np.arange(r * cols, min(r + 1024, rows) * cols,
                                      dtype=np.float64).reshape(-1, cols)
        del m
        run("convert", dense_npy, work / "d.dbdf", "--tile", f"{tile},{tile}", "--no-sync")
        run("index", work / "d.dbdf")
        import scipy.sparse as sp
        rng = np.random.default_rng(1)
        coo = sp.coo_array((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                           shape=(n, n))
        sp.save_npz(work / "s.npz", coo.tocsr(), compressed=False)
        run("convert", work / "s.npz", work / "s.dbdf", "--tile", f"{stile},{stile}", "--no-sync")
        run("index", work / "s.dbdf")
        for name in ("d.dbdf", "d.dbdf.index", "s.dbdf", "s.dbdf.index"):
            shutil.copy(work / name, nginx.root / name)
        dsize = (work / "d.dbdf").stat().st_size

        # Upload: ours (with its index) against curl's PUT of the same bytes.
        up = best(args.runs, lambda: timed([dbdf_cli, "--stats", "convert", dense_npy,
                                            "s3://data/d.dbdf", "--tile", f"{tile},{tile}"], env))
        curl_up = best(args.runs, lambda: timed([*signed, "-T", work / "d.dbdf",
                                                 f"{s3.endpoint}/data/curl.dbdf"]))
        out.append(("local .npy -> S3 .dbdf (+ index)", up, curl_up, stats(up[2])))
        # A multipart upload of the same bytes by boto3 (16 MiB parts, 4 at once, as ours):
        # what the server's multipart path costs, beside curl's single PUT.
        from boto3.s3.transfer import TransferConfig
        config = TransferConfig(multipart_chunksize=16 << 20, max_concurrency=4)

        def boto3_up():
            start = time.perf_counter()
            s3.client.upload_file(str(work / "d.dbdf"), "data", "boto3.dbdf", Config=config)
            return time.perf_counter() - start, 0, ""
        out.append(("local .npy -> S3 .dbdf, against boto3's multipart", up,
                    best(args.runs, boto3_up), stats(up[2])))
        for name in ("s.dbdf", "s.dbdf.index"):
            s3.client.upload_file(str(work / name), "data", name)

        # Opening: with and without the index, S3 and nginx.
        for server, url, count in (
            ("S3", "s3://data/{}", None),
            ("nginx", nginx.url + "/{}", nginx.requests),
        ):
            for name in ("d.dbdf", "s.dbdf"):
                before = count() if count else 0
                info = run("--stats", "info", url.format(name))
                logged = (count() - before) if count else None
                blocks = len(re.findall(r"^  block \d+:", info.stdout, re.M))
                out.append((f"info {server} {name}, index", stats(info.stderr), blocks, logged))
        s3.client.delete_object(Bucket="data", Key="s.dbdf.index")
        s3.client.delete_object(Bucket="data", Key="d.dbdf.index")
        for name in ("d.dbdf", "s.dbdf"):
            info = run("--stats", "info", f"s3://data/{name}")
            blocks = len(re.findall(r"^  block \d+:", info.stdout, re.M))
            out.append((f"info S3 {name}, no index", stats(info.stderr), blocks, None))
        run("index", "s3://data/d.dbdf")
        run("index", "s3://data/s.dbdf")

        # A 1000 x 1000 window (smaller with --quick): requests and bytes against the blocks it touches.
        r0, c0, w = rows // 3, cols // 3, min(1000, cols // 2)
        window = run("--stats", "slice", "s3://data/d.dbdf", "--rows", f"{r0}:{r0 + w}",
                     "--cols", f"{c0}:{c0 + w}", work / "w.npy")
        touched = (((r0 + w - 1) // tile - r0 // tile + 1)
                   * ((c0 + w - 1) // tile - c0 // tile + 1))
        block_bytes = tile * tile * 8 + 42
        out.append((f"window {w} x {w}, CLI", stats(window.stderr), touched, block_bytes))
        import dbdf
        with dbdf.open("s3://data/d.dbdf", storage_options=s3.options()) as f:
            got = f[0][r0:r0 + w, c0:c0 + w]
            py = f.requests
        local = np.load(dense_npy, mmap_mode="r")[r0:r0 + w, c0:c0 + w]
        assert np.array_equal(got, local)
        assert np.array_equal(np.load(work / "w.npy"), local)
        out.append((f"window {w} x {w}, Python", (py["requests"], py["bytes_fetched"], 0),
                    touched, block_bytes))

        # The same window of the .npy itself (issue 71): its header, then the rows' span.
        s3.client.upload_file(str(dense_npy), "data", "d.npy")
        window = run("--stats", "slice", "s3://data/d.npy", "--rows", f"{r0}:{r0 + w}",
                     "--cols", f"{c0}:{c0 + w}", work / "w.npy")
        assert np.array_equal(np.load(work / "w.npy"), local)
        out.append((f"window {w} x {w} of .npy, CLI", stats(window.stderr), w * cols * 8))

        # Download: remote .dbdf to a local .npy, against curl's GET of the same object.
        down = best(args.runs, lambda: timed([dbdf_cli, "--stats", "convert", "s3://data/d.dbdf",
                                              work / "back.npy", "--no-sync"], env))
        curl_down = best(args.runs, lambda: timed([*signed, "-o", work / "curl.out",
                                                   f"{s3.endpoint}/data/d.dbdf"]))
        assert np.array_equal(np.load(work / "back.npy", mmap_mode="r")[-3:],
                              np.load(dense_npy, mmap_mode="r")[-3:])
        out.append(("S3 .dbdf -> local .npy", down, curl_down, stats(down[2])))
        down_n = best(args.runs, lambda: timed([dbdf_cli, "--stats", "convert",
                                                f"{nginx.url}/d.dbdf", work / "back.npy",
                                                "--no-sync"], env))
        curl_n = best(args.runs, lambda: timed(["curl", "-sSf", "-o", work / "curl.out",
                                                f"{nginx.url}/d.dbdf"]))
        out.append(("nginx .dbdf -> local .npy", down_n, curl_n, stats(down_n[2])))

        # Parquet: bytes fetched against the file's size.
        run("convert", dense_npy, "s3://data/d.parquet")
        psize = s3.client.head_object(Bucket="data", Key="d.parquet")["ContentLength"]
        pq = run("--stats", "convert", "s3://data/d.parquet", work / "p.dbdf", "--no-sync")
        out.append(("S3 .parquet -> local .dbdf", stats(pq.stderr), psize, None))
    finally:
        s3.stop()
        nginx.stop()
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)

    print(f"dense {rows} x {cols} f64 in tiles of {tile} ({dsize} bytes); sparse {n} x {n}, "
          f"{nnz} non-zeros in tiles of {stile}; best of {args.runs}\n")
    print("| measurement | dbdf | baseline | ratio / check |")
    print("|---|---|---|---|")
    for row in out:
        name = row[0]
        if name.startswith("info"):
            (req, fetched, _), blocks, logged = row[1], row[2], row[3]
            log = f", nginx logged {logged}" if logged is not None else ""
            print(f"| {name} | {req} requests, {fetched} bytes | {blocks} blocks{log} | |")
        elif name.startswith("window") and ".npy" in name:
            (req, fetched, _), rows_bytes = row[1], row[2]
            print(f"| {name} | {req} requests, {fetched} bytes | the rows' {rows_bytes} bytes "
                  f"| {fetched / rows_bytes:.2f}x the rows' bytes |")
        elif name.startswith("window"):
            (req, fetched, _), touched, bb = row[1], row[2], row[3]
            print(f"| {name} | {req} requests, {fetched} bytes | {touched} blocks of {bb} bytes "
                  f"| {fetched / (touched * bb):.2f}x the blocks' bytes |")
        elif name.startswith("S3 .parquet"):
            (req, fetched, _), size = row[1], row[2]
            print(f"| {name} | {req} requests, {fetched} bytes | file {size} bytes "
                  f"| {fetched / size:.3f}x |")
        else:
            ours, base, st = row[1], row[2], row[3]
            who = "boto3" if "boto3" in name else "curl"
            print(f"| {name} | {ours[0]:.2f} s, {ours[1]:.0f} MiB peak, {st[0]} requests "
                  f"| {who} {base[0]:.2f} s, {base[1]:.0f} MiB | {base[0] / ours[0]:.2f}x "
                  f"{who}'s speed |")


if __name__ == "__main__":
    main()
