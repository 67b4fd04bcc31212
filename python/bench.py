"""Benchmark: dbdf.load/save against numpy.load/save (.npy) and scipy.sparse.load_npz/
save_npz (uncompressed), same data, same machine, same run.

    python bench.py [--repeat 7] [--dir DIR]

Each case runs in fresh processes (so peak resident memory is its own), rounds alternating
between dbdf and the baseline, each process timing a few repetitions; the table gives the
median over all, the ratio to the baseline (>1: dbdf faster) and peak RSS. Loads read files
in the page cache; saves write a new file each time (the previous one is deleted before the
clock starts, so both sides write into recycled page-cache memory: this virtual machine's
first touch of fresh memory otherwise costs 0.1-0.3 s per 128 MiB, whoever touches it);
"resave" cases write over the previous save's file, whose release each side's time includes
as its way of replacing it does.
Files are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CASES = {
    # name: (setup, timed statement); `path` is the file, `x` the value made by `make`.
    "dense save dbdf": ("dense", "dbdf.save(path + '.dbdf', x)"),
    "dense save npy": ("dense", "np.save(path + '.npy', x)"),
    # The same, over the file the previous save wrote (not deleted first).
    "dense resave dbdf": ("dense", "dbdf.save(path + '.dbdf', x)"),
    "dense resave npy": ("dense", "np.save(path + '.npy', x)"),
    "dense load dbdf": ("dense", "y = dbdf.load(path + '.dbdf')"),
    "dense load npy": ("dense", "y = np.load(path + '.npy')"),
    "csr save dbdf": ("csr", "dbdf.save(path + '.dbdf', x)"),
    "csr save daphne": ("csr", "dbdf.save(path + '.d.dbdf', x, dialect='daphne')"),
    "csr save npz": ("csr", "sparse.save_npz(path + '.npz', x, compressed=False)"),
    "csr load dbdf": ("csr", "y = dbdf.load(path + '.dbdf')"),
    "csr load daphne": ("csr", "y = dbdf.load(path + '.d.dbdf')"),
    "csr load npz": ("csr", "y = sparse.load_npz(path + '.npz')"),
}
# Each dbdf case against the baseline of the same operation.
BASELINES = {
    "dense save dbdf": "dense save npy",
    "dense resave dbdf": "dense resave npy",
    "dense load dbdf": "dense load npy",
    "csr save dbdf": "csr save npz",
    "csr save daphne": "csr save npz",
    "csr load dbdf": "csr load npz",
    "csr load daphne": "csr load npz",
}

MAKE = {
    # 4096 x 4096 f64 (128 MiB) of random values.
    "dense": "x = np.random.default_rng(1).standard_normal((4096, 4096))",
    # 1e6 x 1e6 with 1e7 non-zeros, f64, as scipy makes it (int32 indices).
    "csr": (
        "x = sparse.random_array((10**6, 10**6), density=1e-5, format='csr', rng=2)"
    ),
}

CHILD = """
import json, os, resource, sys, time
import numpy as np
from scipy import sparse
import dbdf
path = {path!r}
{make}
{warm}
times = []
for _ in range({inner}):
    if {is_save} and os.path.exists(path + {suffix!r}):
        os.remove(path + {suffix!r})
        if os.path.exists(path + {suffix!r} + ".meta"):
            os.remove(path + {suffix!r} + ".meta")
    t = time.perf_counter()
    {stmt}
    times.append(time.perf_counter() - t)
    y = None
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"times": times, "peak": peak}}))
"""


def run(path: str, kind: str, stmt: str, make: bool, inner: int = 3,
        resave: bool = False) -> dict:
    """One measurement in a fresh process. Loads do not build the value (their peak is the
    load's own); saves build it before the clock starts, and delete the file first unless
    `resave`."""
    is_load = "load" in stmt
    warm = ""
    if is_load:
        # Read the file once so that both sides read from the page cache.
        target = stmt.split("(")[1].split(")")[0]
        warm = f"open({target}, 'rb').read()"
    code = CHILD.format(path=path, make=MAKE[kind] if make and not is_load else "x = None",
                        warm=warm, stmt=stmt, inner=inner, is_save=not is_load and not resave,
                        suffix=stmt.split("path + '")[1].split("'")[0])
    # Run outside this folder, whose `dbdf/` (without the built core) would shadow the
    # installed package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(path))
    if out.returncode != 0:
        raise SystemExit(f"{stmt} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_process_peak() -> int:
    code = ("import resource, numpy, scipy.sparse, dbdf; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    return int(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                              text=True, cwd=tempfile.gettempdir()).stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for kind in ("dense", "csr"):
            path = os.path.join(tmp, kind)
            # Write both files once, then alternate the measurements.
            for name, (k, stmt) in CASES.items():
                if k == kind and "save" in name:
                    run(path, kind, stmt, make=True, inner=1)
            for _ in range(args.repeat):
                for name, (k, stmt) in CASES.items():
                    if k == kind:
                        result = run(path, kind, stmt, make=True, resave="resave" in name)
                        results.setdefault(name, []).append(result)
    idle = baseline_process_peak()
    mib = 1 << 20
    print(f"Python {sys.version.split()[0]}, numpy {__import__('numpy').__version__}, "
          f"scipy {__import__('scipy').__version__}; medians of {args.repeat}; peak RSS "
          f"includes the interpreter and imports ({idle / mib:.0f} MiB) and, for saves, the "
          "value")
    print(f"{'case':<18} {'median ms':>10} {'vs baseline':>12} {'peak MiB':>9}")
    summary = {}
    for name in CASES:
        seconds = statistics.median(t for r in results[name] for t in r["times"])
        peak = max(r["peak"] for r in results[name])
        summary[name] = {"ms": seconds * 1e3, "peak_mib": peak / mib}
    for name in CASES:
        ms = summary[name]["ms"]
        ratio = ""
        if name in BASELINES:
            base = BASELINES[name]
            ratio = f"{summary[base]['ms'] / ms:.2f}x"
            summary[name]["speedup"] = summary[base]["ms"] / ms
        print(f"{name:<18} {ms:>10.1f} {ratio:>12} {summary[name]['peak_mib']:>9.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
