#!/usr/bin/env python3
"""Remote outputs (issue 84): a 1 GiB `.dbdf` (a dense f64 matrix of 8192 columns), local
and in the bucket, converted by `dbdf convert` to each format in an S3 server (s3s-fs with
--s3s-fs, else moto's) with TMPDIR on a 64 MiB tmpfs, against boto3's `upload_file`
(default transfer settings) sending the same `.npy` bytes to the same server in the same
run. Prints each
conversion's time (or why it failed), its peak resident memory (from /usr/bin/time), its
requests and bytes sent (`--stats`), and whether the object reads back equal to the local
conversion.

    sudo python3 benches/remote_outputs.py [--dbdf target/release/dbdf] [--s3s-fs PATH]
                                           [--mib 1024] [--runs 2] [--dir DIR] [--only TEXT,...]

Needs: boto3, numpy and moto[server] or s3s-fs (cargo install s3s-fs --features binary).
The tmpfs is mounted only when run as root: otherwise the table says so.
"""

import itertools
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "tests"))
sys.path.insert(0, str(ROOT / "benches"))
from machine import describe, timed  # noqa: E402
from remote_inputs import dense_npy, setup, teardown  # noqa: E402

# Each output: its object's name and the tool's extra arguments.
OUTPUTS = [
    ("out.npy", []),
    ("out.csv", []),
    ("out.parquet", []),
    ("out.arrow", []),
    ("out.dbdf", []),
    ("out-csr.dbdf", ["--dialect", "daphne", "--data-type", "csr"]),
    ("out.zarr", []),
    ("out.sysds", ["--to", "systemds", "--parts", "4"]),
    ("out.hdfs", ["--segments", "4"]),
    ("out.bsp.h5", []),
    ("out.bsp.npz", []),
]

UPLOAD = """
import os, sys, boto3
client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                      region_name="us-east-1")
client.upload_file(sys.argv[1], "data", sys.argv[2])
"""


def attempt(runs, cmd, env):
    """The fastest of `runs` runs of `cmd`: seconds, the largest RSS, stderr; or the reason
    the first run failed."""
    results = []
    for _ in range(runs):
        try:
            results.append(timed(cmd, env))
        except SystemExit as e:
            return str(e).strip().splitlines()[-1][-90:]
    fastest = min(results, key=lambda r: r[0])
    return fastest[0], max(r[1] for r in results), fastest[2]


def sent(err):
    m = re.search(r"requests: (\d+), bytes fetched: \d+, bytes sent: (\d+)", err)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def main():
    print(describe(), flush=True)
    args, work, tmpfs, mounted, s3 = setup("remote-outputs-")
    env = s3.env()
    bounded = dict(env, TMPDIR=str(tmpfs))

    def run(*a):
        return subprocess.run([args.dbdf, *map(str, a)], env=env, check=True,
                              capture_output=True, text=True)

    rows = []
    try:
        npy = dense_npy(work / "m.npy", args.mib)
        source = work / "m.dbdf"
        run("convert", npy, source, "--no-sync")
        wanted = args.only.split(",") if args.only else [""]
        # The baseline: boto3 sending the `.npy` conversion's bytes.
        local_npy = work / "local.npy"
        run("convert", source, local_npy, "--no-sync")
        boto = attempt(args.runs, [sys.executable, "-c", UPLOAD, local_npy, "boto.npy"], env)
        size = local_npy.stat().st_size
        # Bucket to bucket: the same file in the bucket, with its block index.
        run("convert", source, "s3://data/in.dbdf")
        outputs = [(name, extra) for name, extra in OUTPUTS if any(w in name for w in wanted)]
        for (name, extra), (place, src) in itertools.product(
                outputs, [("local", source), ("bucket", "s3://data/in.dbdf")]):
            target = f"s3://data/{place}-{name}"
            ours = attempt(args.runs, [args.dbdf, "--stats", "-q", "convert", src, target,
                                       *extra], bounded)
            if isinstance(ours, str):
                rows.append((name, place, ours, None, None, None, None))
                continue
            requests, out = sent(ours[2])
            back = work / "back.npy"
            run("convert", target, back, "--no-sync")
            equal = np.array_equal(np.load(back, mmap_mode="r"), np.load(local_npy, mmap_mode="r"))
            back.unlink()
            rows.append((name, place, ours[0], ours[1], requests, out, equal))
    finally:
        ran = teardown(args, work, tmpfs, mounted, s3)
    print(f"\n{ran}. boto3 `upload_file` of "
          f"the {size / 2**20:.0f} MiB `.npy`: "
          + (f"{boto[0]:.2f} s, {boto[1]:.0f} MiB" if not isinstance(boto, str) else boto)
          + ".\n")
    print("| output | from | dbdf s | boto3 / dbdf | peak RSS MiB | requests | MiB sent | "
          "reads back |")
    print("|---|---|---|---|---|---|---|---|")
    for name, place, secs, rss, requests, out, equal in rows:
        if isinstance(secs, str):
            print(f"| {name} | {place} | failed: {secs} | | | | | |")
            continue
        ratio = f"{boto[0] / secs:.2f}x" if not isinstance(boto, str) else "-"
        print(f"| {name} | {place} | {secs:.2f} | {ratio} | {rss:.0f} | {requests} | "
              f"{out / 2**20:.0f} | {'equal' if equal else 'DIFFERS'} |")


if __name__ == "__main__":
    main()
