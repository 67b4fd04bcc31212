#!/usr/bin/env python3
"""Every writer of `dbdf`, run with failing system calls (issue 69): after each run the
target and its sidecars are the old set or the new set, the exit code is 0 (new set) or 1
(old set) with one line on standard error, never a panic; after the next clean write
nothing else is left.

For each writer: one clean run counts the calls on the output folder by kind, then the
targeted runs fail the k-th call of each kind in turn (open, write, fsync, rename, link,
close, unlink, mkdir: every call site, as SQLite's I/O-error tests do, at most --per-kind
spread over them), then seeded random runs fail calls of every kind with mixed errors until
--random runs have had a failure. The failures come from tests/faults/inject.c, a preload
built here with the C compiler.

    python3 tests/faults/run.py --dbdf target/debug/dbdf [--python PY] [--random 100]
        [--only NAME]
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["open", "write", "fsync", "rename", "link", "close", "unlink", "mkdir"]


class Writer:
    """A command writing version 0 (old) or 1 (new) of `names` in the output folder: `dbdf`
    with `args(v)`, or (`python`) the Python package's `dbdf.save` of that version."""

    def __init__(self, name, names, args, old=None, python=False):
        self.name, self.names, self.args, self.old = name, names, args, old
        self.python = python


# The Python package's writer, as a program: one line and exit 1 for an exception (a Rust
# panic is a BaseException, and its traceback fails the run).
SAVE = """
import sys, numpy, dbdf
out, v = sys.argv[1], int(sys.argv[2])
m = numpy.arange((50 + 10 * v) * 4, dtype=numpy.float64).reshape(-1, 4) + v
try:
    dbdf.save(out + "/p.dbdf", m, dialect="daphne")
except Exception as e:
    print(f"dbdf: {e}", file=sys.stderr)
    sys.exit(1)
"""


def writers():
    conv = lambda out, *extra: lambda v: ["convert", f"{{in}}/m{v}.dbdf", out, *extra]
    return [
        Writer("dbdf", ["m.dbdf", "m.dbdf.meta", "m.dbdf.index"], conv("m.dbdf")),
        Writer("dbdf tiled", ["t.dbdf"], conv("t.dbdf", "--tile", "16,2")),
        Writer("dbdf for DAPHNE", ["d.dbdf", "d.dbdf.meta", "d.dbdf.index"],
               conv("d.dbdf", "--dialect", "daphne")),
        Writer("csv", ["t.csv", "t.csv.meta"], conv("t.csv")),
        Writer("mtx", ["m.mtx"], conv("m.mtx")),
        Writer("npy", ["m.npy"], conv("m.npy")),
        Writer("npz", ["a.npz"], conv("a.npz", "--to", "npz")),
        Writer("scipy", ["s.npz"], conv("s.npz", "--to", "scipy", "--data-type", "csr")),
        Writer("futhark", ["m.fut"], conv("m.fut")),
        Writer("binsparse npz", ["m.bsp.npz"], conv("m.bsp.npz")),
        Writer("binsparse zarr", ["m.bsp.zarr"], conv("m.bsp.zarr")),
        Writer("systemds", ["m.sysds", "m.sysds.mtd"], conv("m.sysds", "--to", "systemds")),
        Writer("systemds parts", ["p.sysds", "p.sysds.mtd"],
               conv("p.sysds", "--to", "systemds", "--parts", "2")),
        Writer("segments", ["s.hdfs", "s.hdfs.meta"],
               conv("s.hdfs", "--to", "segments", "--segments", "2")),
        Writer("parquet", ["m.parquet"], conv("m.parquet")),
        Writer("arrow", ["m.arrow"], conv("m.arrow")),
        Writer("slice to csv", ["w.csv", "w.csv.meta"],
               lambda v: ["slice", f"{{in}}/m{v}.dbdf", "w.csv", "--rows", "3:9"]),
        Writer("spy", ["m.png"], lambda v: ["spy", f"{{in}}/m{v}.dbdf", "--output", "m.png"]),
        # The block index of a file already there: the old set has none.
        Writer("index", ["i.dbdf.index"], lambda v: ["index", "i.dbdf"], old="remove"),
        Writer("python save", ["p.dbdf", "p.dbdf.meta"], None, python=True),
    ]


def snapshot(folder, names):
    """Each name's bytes (a folder's: its files by relative path); absent names are left out."""
    snap = {}
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            files = {}
            for root, _, entries in os.walk(path):
                for e in entries:
                    full = os.path.join(root, e)
                    with open(full, "rb") as f:
                        files[os.path.relpath(full, path)] = f.read()
            snap[name] = files
        elif os.path.exists(path):
            with open(path, "rb") as f:
                snap[name] = f.read()
    return snap


class Suite:
    def __init__(self, dbdf, python, shim, work):
        self.dbdf, self.python, self.shim, self.work = dbdf, python, shim, work
        os.makedirs(work, exist_ok=True)
        self.inputs = os.path.join(work, "in")
        self.out = os.path.join(work, "out")
        os.makedirs(self.inputs)
        os.makedirs(self.out)
        self.problems = []

    def run(self, writer, version, faults=None):
        if writer.python:
            # Isolated (-I), from outside the output folder: only the save's own calls there
            # can fail, not the interpreter's imports.
            command, cwd = [self.python, "-I", "-c", SAVE, self.out, str(version)], self.work
        else:
            args = [a.replace("{in}", self.inputs) for a in writer.args(version)]
            command, cwd = [self.dbdf, "--quiet", *args], self.out
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if faults is not None:
            env.update(faults)
            env["LD_PRELOAD"] = self.shim
            env["FAULT_DIR"] = self.out
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=120)

    def clean(self, writer, version):
        if version == 0 and writer.old == "remove":
            for name in writer.names:
                path = os.path.join(self.out, name)
                if os.path.exists(path):
                    os.remove(path)
            return
        done = self.run(writer, version)
        if done.returncode != 0:
            raise SystemExit(f"{writer.name}: the clean write of version {version} failed: "
                             f"{done.stderr.decode(errors='replace')}")

    def count(self, writer):
        """The eligible calls of a clean write of the new version over the old, by kind."""
        counts = os.path.join(self.work, "counts")
        self.clean(writer, 0)
        done = self.run(writer, 1, {"FAULT_KINDS": "none", "FAULT_COUNT": counts})
        assert done.returncode == 0, done.stderr
        with open(counts) as f:
            pairs = [line.split() for line in f]
        self.clean(writer, 0)
        return {k: int(n) for k, n in pairs}

    def faulty(self, writer, faults, old, new, what, tally):
        counts = os.path.join(self.work, "counts")
        done = self.run(writer, 1, {**faults, "FAULT_COUNT": counts})
        with open(counts) as f:
            failed = int(dict(line.split() for line in f)["failed"])
        now = snapshot(self.out, writer.names)
        err = done.stderr.decode(errors="replace")
        where = f"{writer.name}, {what}"
        if done.returncode == 0:
            if now != new:
                self.problems.append(f"{where}: exit 0 but the new set is not in place")
        elif done.returncode == 1:
            lines = err.splitlines()
            if len(lines) != 1 or not lines[0].startswith("dbdf: "):
                self.problems.append(f"{where}: exit 1 without one line: {err!r}")
            if now != old:
                state = "the new set" if now == new else "a mixed or lost set"
                self.problems.append(f"{where}: exit 1 but {state}: {err.strip()}")
        else:
            self.problems.append(f"{where}: exit {done.returncode}: {err.strip()[-300:]}")
        if "panicked" in err:
            self.problems.append(f"{where}: a panic: {err.strip()[-300:]}")
        tally[done.returncode == 0] += 1
        if now != old:
            self.clean(writer, 0)
        return failed

    def check(self, writer, per_kind, random_runs):
        self.clean(writer, 1)
        new = snapshot(self.out, writer.names)
        self.clean(writer, 0)
        old = snapshot(self.out, writer.names)
        assert old != new, f"{writer.name}: the versions differ"
        counts = self.count(writer)
        tally = [0, 0]
        targeted = 0
        for kind in KINDS:
            n = counts.get(kind, 0)
            picks = sorted({1 + (i * n) // per_kind for i in range(per_kind)} if n > per_kind
                           else range(1, n + 1))
            for k in picks:
                faults = {"FAULT_KINDS": kind, "FAULT_NTH": str(k), "FAULT_ERRNO": "mixed",
                          "FAULT_SEED": str(k)}
                self.faulty(writer, faults, old, new, f"{kind} call {k} of {n} failing", tally)
                targeted += 1
        total = max(1, sum(counts.get(k, 0) for k in KINDS))
        rate = min(0.5, 1.5 / total)
        with_failures, seed = 0, 0
        while with_failures < random_runs and seed < 4 * random_runs:
            seed += 1
            faults = {"FAULT_RATE": str(rate), "FAULT_SEED": str(seed), "FAULT_ERRNO": "mixed"}
            failed = self.faulty(writer, faults, old, new, f"random seed {seed}", tally)
            with_failures += failed > 0
        if with_failures < random_runs:
            self.problems.append(f"{writer.name}: only {with_failures} random runs failed a call")
        # The next clean write leaves the new set and nothing else.
        self.clean(writer, 1)
        if snapshot(self.out, writer.names) != new:
            self.problems.append(f"{writer.name}: the clean write after the faults differs")
        known = set(writer.names) | {"i.dbdf"}
        litter = [n for n in os.listdir(self.out) if n not in known]
        if litter:
            self.problems.append(f"{writer.name}: litter after the next clean write: {litter}")
        for name in os.listdir(self.out):
            path = os.path.join(self.out, name)
            if name != "i.dbdf":
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        runs = targeted + seed
        print(f"faults: {writer.name:<16} {runs:>4} runs ({targeted} targeted at "
              f"{sum(counts.get(k, 0) for k in KINDS)} calls, {with_failures} random with a "
              f"failure): {tally[0]} failed with the old set, {tally[1]} wrote the new set",
              flush=True)
        return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dbdf", required=True)
    parser.add_argument("--random", type=int, default=100)
    parser.add_argument("--per-kind", type=int, default=25)
    parser.add_argument("--python", help="a Python with the dbdf package: its save too")
    parser.add_argument("--only", action="append")
    args = parser.parse_args()
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("faults: SKIPPED: no C compiler for the preload")
        return
    work = tempfile.mkdtemp(prefix="dbdf-faults-")
    try:
        shim = os.path.join(work, "inject.so")
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", shim,
                        os.path.join(HERE, "inject.c"), "-ldl"], check=True)
        chosen = []
        for writer in writers():
            if args.only and writer.name not in args.only:
                continue
            if writer.python and not args.python:
                print(f"faults: {writer.name}: SKIPPED (no --python)")
                continue
            chosen.append(writer)

        def one(k, writer):
            # Each writer in a folder of its own, so that they run side by side.
            suite = Suite(os.path.abspath(args.dbdf), args.python, shim,
                          os.path.join(work, f"writer{k}"))
            make_inputs(suite)
            return suite.check(writer, args.per_kind, args.random), suite.problems

        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            done = list(pool.map(one, range(len(chosen)), chosen))
        runs = sum(n for n, _ in done)
        problems = [p for _, found in done for p in found]
        if problems:
            print("\n".join(problems[:50]))
            print(f"faults: {len(problems)} problems in {runs} runs")
            sys.exit(1)
        print(f"faults: {runs} runs in {time.time() - start:.0f} s: no old set lost, "
              "no mixed set, no panic, no litter after the next clean write")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def make_inputs(suite):
    """Two versions of a 50 x 4 matrix (a third of it zero), as .dbdf files written by
    `dbdf convert` from MatrixMarket text; and the file whose block index is written."""
    for v in range(2):
        rows = 50 + 10 * v
        lines = [f"{r + 1} {c + 1} {r * 4 + c + v + 0.5}" for r in range(rows)
                 for c in range(4) if (r + c) % 3]
        mtx = os.path.join(suite.inputs, f"m{v}.mtx")
        with open(mtx, "w") as f:
            f.write("%%MatrixMarket matrix coordinate real general\n")
            f.write(f"{rows} 4 {len(lines)}\n" + "\n".join(lines) + "\n")
        out = os.path.join(suite.inputs, f"m{v}.dbdf")
        subprocess.run([suite.dbdf, "convert", mtx, out, "--data-type", "dense"], check=True)
    shutil.copy(os.path.join(suite.inputs, "m1.dbdf"), os.path.join(suite.out, "i.dbdf"))


if __name__ == "__main__":
    main()
