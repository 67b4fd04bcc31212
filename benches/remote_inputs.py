#!/usr/bin/env python3
"""Remote inputs with no local copy (issue 83): each format's 1 GiB object in an S3 server
(s3s-fs with --s3s-fs, else moto's) converted to a local file by `dbdf convert` with TMPDIR
on a 64 MiB tmpfs, against curl fetching the same object into a local file on the same disk
from the same server in the same run. Prints each conversion's time, the ratio to curl, its
peak resident memory (from /usr/bin/time) and its requests and bytes fetched (`--stats`).

    sudo python3 benches/remote_inputs.py [--dbdf target/release/dbdf] [--s3s-fs PATH]
                                          [--mib 1024] [--runs 2] [--dir DIR] [--only TEXT,...]

Needs: boto3, numpy, scipy, pyarrow, fast_matrix_market and moto[server] or s3s-fs (cargo
install s3s-fs --features binary); curl. The tmpfs is mounted only when run as root: otherwise the
table says so, and TMPDIR is an ordinary folder. Files: a dense f64 matrix of 8192 columns
as `.npy`, as a tiled `.dbdf` (tiles of 1024 x 1024; with its block index, and a copy
without, whose headers are walked) and as DAPHNE writes one (a single block, `--dialect
daphne`); a table of 64 f64 columns as CSV (pyarrow's writer), Parquet and
Arrow IPC (pyarrow's, uncompressed); a sparse matrix as MatrixMarket coordinates
(fast_matrix_market's writer, entries in its order); each about --mib MiB.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "tests"))
sys.path.insert(0, str(ROOT / "benches"))
from machine import describe, timed  # noqa: E402
from remote_servers import S3  # noqa: E402

TMPFS_MIB = 64


def fetched(err):
    m = re.search(r"requests: (\d+), bytes fetched: (\d+)", err)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def best(runs, f):
    """The fastest of `runs` runs of `f`, with the largest RSS seen."""
    results = [f() for _ in range(runs)]
    fastest = min(results, key=lambda r: r[0])
    return fastest[0], max(r[1] for r in results), fastest[2]


def mount_tmpfs(folder):
    """A tmpfs of TMPFS_MIB MiB at `folder` when run as root; whether it was mounted."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MIB}m", "tmpfs", str(folder)],
                   check=True)
    return True


def dense_npy(path, mib):
    """A dense f64 matrix of 8192 columns and about `mib` MiB at `path` (`.npy`), written a
    slab at a time."""
    cols = 8192
    rows = max(1, (mib << 20) // (8 * cols))
    m = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(rows, cols))
    for r in range(0, rows, 1024):
        n = min(1024, rows - r)
        m[r:r + n] = np.arange(r * cols, (r + n) * cols, dtype=np.float64).reshape(n, cols) / 7
    del m
    return path


def make_inputs(work, mib, run):
    """The inputs, each about `mib` MiB: {object name: (path, sidecars)}."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    npy = dense_npy(work / "d.npy", mib)
    run("convert", npy, work / "d.dbdf", "--tile", "1024,1024", "--no-sync")
    # With its block index, as the tool sends a tiled file up; a copy without, walked.
    run("index", work / "d.dbdf")
    shutil.copyfile(work / "d.dbdf", work / "w.dbdf")
    run("convert", npy, work / "r.dbdf", "--dialect", "daphne", "--no-sync")
    inputs = {"d.npy": (npy, []), "d.dbdf": (work / "d.dbdf", [".index"]),
              "w.dbdf": (work / "w.dbdf", []), "r.dbdf": (work / "r.dbdf", [".meta"])}
    # A table: 64 columns of f64, row groups and batches of 64 Ki rows.
    width, batch = 64, 1 << 16
    rng = np.random.default_rng(7)
    table_rows = max(batch, (mib << 20) // (8 * width)) // batch * batch

    def batches():
        for start in range(0, table_rows, batch):
            values = rng.random((batch, width)) * 1000
            yield pa.record_batch([pa.array(values[:, j]) for j in range(width)],
                                  names=[f"c{j}" for j in range(width)])

    schema = next(batches()).schema
    with pq.ParquetWriter(work / "t.parquet", schema, compression="none") as w:
        for b in batches():
            w.write_batch(b, row_group_size=batch)
    with pa.OSFile(str(work / "t.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, schema) as w:
            for b in batches():
                w.write_batch(b)
    # CSV text of about `mib` MiB: values rounded to 3 places (about 8 bytes each).
    csv_rows = max(batch, (mib << 20) // (9 * width)) // batch * batch
    unquoted = pcsv.WriteOptions(quoting_style="none")
    with pcsv.CSVWriter(str(work / "t.csv"), schema, write_options=unquoted) as w:
        for _, b in zip(range(csv_rows // batch), batches()):
            w.write_batch(pa.record_batch([pa.array(np.round(c.to_numpy(), 3)) for c in b.columns],
                                          schema=schema))
    inputs.update({"t.parquet": (work / "t.parquet", []), "t.arrow": (work / "t.arrow", []),
                   "t.csv": (work / "t.csv", [])})
    # MatrixMarket coordinates, about 25 bytes an entry.
    import fast_matrix_market as fmm
    import scipy.sparse as sp

    nnz = (mib << 20) // 25
    n = 1 << 20
    coo = sp.coo_matrix((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                        shape=(n, n))
    coo.sum_duplicates()
    fmm.mmwrite(str(work / "s.mtx"), coo)
    inputs["s.mtx"] = (work / "s.mtx", [])
    return inputs


def setup(prefix):
    """The command line every remote benchmark takes, and what it runs on: its folder, the
    tmpfs (and whether it was mounted) and the S3 server."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbdf", default=str(ROOT / "target" / "release" / "dbdf"))
    ap.add_argument("--s3s-fs", default=None)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--only", default=None,
                    help="the conversions whose names hold any of these texts, separated "
                         "by commas (all by default)")
    args = ap.parse_args()
    if args.s3s_fs:
        os.environ["DBDF_S3S_FS"] = args.s3s_fs
    work = Path(args.dir or tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    tmpfs = work / "tmpfs"
    mounted = mount_tmpfs(tmpfs)
    # The server's folder from an earlier run in --dir holds its bucket already.
    shutil.rmtree(work / "s3root", ignore_errors=True)
    try:
        s3 = S3(work)
    except BaseException as e:  # pytest.skip's exception, outside pytest
        if mounted:
            subprocess.run(["umount", str(tmpfs)], check=False)
        raise SystemExit(f"no S3 server: {e}")
    return args, work, tmpfs, mounted, s3


def teardown(args, work, tmpfs, mounted, s3):
    """Stops what [`setup`] started; what the run ran on, in a sentence."""
    s3.stop()
    if mounted:
        subprocess.run(["umount", str(tmpfs)], check=False)
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    server = "s3s-fs" if args.s3s_fs else "moto"
    bound = f"a {TMPFS_MIB} MiB tmpfs" if mounted else "an ordinary folder (not root: no tmpfs)"
    return f"Server: {server}; TMPDIR: {bound}; best of {args.runs}"


def main():
    print(describe(), flush=True)
    args, work, tmpfs, mounted, s3 = setup("remote-inputs-")
    env = s3.env()
    bounded = dict(env, TMPDIR=str(tmpfs))
    signed = ["curl", "-sSf", "--aws-sigv4", "aws:amz:us-east-1:s3",
              "--user", f"{env['AWS_ACCESS_KEY_ID']}:{env['AWS_SECRET_ACCESS_KEY']}",
              "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]

    def run(*a):
        return subprocess.run([args.dbdf, *map(str, a)], env=env, check=True,
                              capture_output=True, text=True)

    rows = []
    try:
        inputs = make_inputs(work, args.mib, run)
        for name, (path, sidecars) in inputs.items():
            for suffix in ["", *sidecars]:
                s3.client.upload_file(str(path) + suffix, "data", name + suffix)
        outputs = [(name, "out.dbdf") for name in inputs]
        outputs += [("d.dbdf", "out.npy"), ("w.dbdf", "out.npy"), ("r.dbdf", "out.npy")]
        wanted = args.only.split(",") if args.only else [""]
        outputs = [(n, o) for n, o in outputs if any(w in f"{n} -> {o}" for w in wanted)]
        for name, out in outputs:
            size = inputs[name][0].stat().st_size
            curl = best(args.runs, lambda: timed([*signed, "-o", work / "curl.out",
                                                  f"{s3.endpoint}/data/{name}"]))
            ours = best(args.runs, lambda: timed([args.dbdf, "--stats", "-q", "convert",
                                                  f"s3://data/{name}", work / out, "--no-sync"],
                                                 bounded))
            requests, got = fetched(ours[2])
            rows.append((f"{name} -> {out}", size, curl[0], ours[0], ours[1], requests, got))
            (work / out).unlink()
    finally:
        ran = teardown(args, work, tmpfs, mounted, s3)
    print(f"\n{ran}.\n")
    print("| conversion | MiB | curl s | dbdf s | curl / dbdf | peak RSS MiB | requests "
          "| fetched / size |")
    print("|---|---|---|---|---|---|---|---|")
    for what, size, curl_s, ours_s, rss, requests, got in rows:
        print(f"| {what} | {size / 2**20:.0f} | {curl_s:.2f} | {ours_s:.2f} | "
              f"{curl_s / ours_s:.2f}x | {rss:.0f} | {requests} | {got / size:.3f} |")


if __name__ == "__main__":
    main()
