"""Python's bytes API (issue 48): `dbdf.loads` and `dbdf.dumps` of a 4096 x 4096 f64 matrix
(128 MiB) against `np.load(io.BytesIO(...))`, `pickle.loads` and `pickle.dumps(protocol=5)`,
of a 1e6 x 1e6 CSR matrix with 1e7 non-zeros against scipy's `load_npz` from a `BytesIO`
(uncompressed) and pickle, and of a frame (8 f64 columns, 128 MiB) against pickle; `dbdf.load`
of the matrices' files against `np.load` and `load_npz` of theirs. Medians of N runs in one process, taken in alternating turns; the
results are checked against the originals. Peak resident memory of the process at the end.

In two states of memory: as found, and with the page cache full (`--fill-cache GIB`: a file
of that many GiB written and read back first, then removed after the run; 14 on a 24 GiB
machine), since a machine that has been running has a full page cache. With `--idle SECONDS`,
each call comes after that long asleep, so that memory freed by the last one has gone back to
the host of a virtual machine that takes back free memory.

Usage: python benches/python_bytes.py [--runs N] [--fill-cache GIB] [--dir DIR] [--idle S]
"""

import io
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

import dbdf
from machine import describe


def option(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def fill_page_cache(gib, directory):
    """Writes and reads back a file of `gib` GiB, and says where it is (to remove later)."""
    path = os.path.join(directory, "page-cache-filler")
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={gib * 1024}",
                    "status=none"], check=True)
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M", "status=none"], check=True)
    return path


def medians(cases, runs, idle=0.0):
    """Median milliseconds of each case, the cases taken in turns, each call after `idle`
    seconds of sleep."""
    times = {name: [] for name in cases}
    for _ in range(runs):
        for name, f in cases.items():
            time.sleep(idle)
            started = time.perf_counter()
            result = f()
            times[name].append((time.perf_counter() - started) * 1e3)
            del result
    return {name: statistics.median(t) for name, t in times.items()}


def main():
    print(describe(), flush=True)
    runs, gib, idle = option("--runs", 7), option("--fill-cache", 0), option("--idle", 0.0)
    directory = option("--dir", tempfile.gettempdir())
    filler = fill_page_cache(gib, directory) if gib else None
    files = []
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        cached = int(info["Cached"].split()[0]) / 2**20
        print(f"page cache: {cached:.1f} GiB{' (filled)' if gib else ''}"
              + (f"; each call after {idle:g} s idle" if idle else ""))

        a = np.random.default_rng(1).random((4096, 4096))
        data, npy, pickled = dbdf.dumps(a), io.BytesIO(), pickle.dumps(a, protocol=5)
        np.save(npy, a)
        npy = npy.getvalue()
        assert np.array_equal(dbdf.loads(data), a)
        dense_file, npy_file = os.path.join(directory, "m.dbdf"), os.path.join(directory, "m.npy")
        files = [dense_file, npy_file]
        dbdf.save(dense_file, a)
        np.save(npy_file, a)
        dense = medians({
            "dbdf.loads": lambda: dbdf.loads(data),
            "np.load(BytesIO)": lambda: np.load(io.BytesIO(npy)),
            "dbdf.load(file)": lambda: dbdf.load(dense_file),
            "np.load(file)": lambda: np.load(npy_file),
            "pickle.loads": lambda: pickle.loads(pickled),
            "dbdf.dumps": lambda: dbdf.dumps(a),
            "pickle.dumps(5)": lambda: pickle.dumps(a, protocol=5),
        }, runs, idle)

        rng, nnz, n = np.random.default_rng(2), 10_000_000, 1_000_000
        rows = np.sort(rng.integers(0, n, nnz))
        m = sp.csr_array((rng.random(nnz), (rows, rng.integers(0, n, nnz))), shape=(n, n))
        m.sum_duplicates()
        csr_data, npz = dbdf.dumps(m), io.BytesIO()
        sp.save_npz(npz, m, compressed=False)
        npz = npz.getvalue()
        assert (dbdf.loads(csr_data) != m).nnz == 0
        csr_pickled = pickle.dumps(m, protocol=5)
        csr_file, npz_file = os.path.join(directory, "m.csr.dbdf"), os.path.join(directory, "m.npz")
        files += [csr_file, npz_file]
        dbdf.save(csr_file, m)
        sp.save_npz(npz_file, m, compressed=False)
        csr = medians({
            "dbdf.loads": lambda: dbdf.loads(csr_data),
            "load_npz(BytesIO)": lambda: sp.load_npz(io.BytesIO(npz)),
            "dbdf.load(file)": lambda: dbdf.load(csr_file),
            "load_npz(file)": lambda: sp.load_npz(npz_file),
            "pickle.loads": lambda: pickle.loads(csr_pickled),
            "dbdf.dumps": lambda: dbdf.dumps(m),
            "pickle.dumps(5)": lambda: pickle.dumps(m, protocol=5),
        }, runs, idle)

        # A frame of 8 f64 columns, 2^21 rows (128 MiB), as a dict of columns.
        frame = {f"c{k}": np.random.default_rng(k).random(1 << 21) for k in range(8)}
        frame_data, frame_pickled = dbdf.dumps(frame), pickle.dumps(frame, protocol=5)
        assert all(np.array_equal(v, frame[k]) for k, v in dbdf.loads(frame_data).items())
        frames = medians({
            "dbdf.loads": lambda: dbdf.loads(frame_data),
            "pickle.loads": lambda: pickle.loads(frame_pickled),
            "dbdf.dumps": lambda: dbdf.dumps(frame),
            "pickle.dumps(5)": lambda: pickle.dumps(frame, protocol=5),
        }, runs, idle)
    finally:
        for path in files + ([filler] if filler else []):
            if os.path.exists(path):
                os.remove(path)
    for title, t, base in [("4096 x 4096 f64", dense, "np.load(BytesIO)"),
                           (f"CSR {m.nnz} non-zeros", csr, "load_npz(BytesIO)"),
                           ("frame of 8 f64 columns, 2^21 rows", frames, "pickle.loads")]:
        print(title)
        for name, ms in t.items():
            print(f"  {name:18} {ms:7.1f} ms")
        if "np.load(file)" in t or "load_npz(file)" in t:
            other = "np.load(file)" if "np.load(file)" in t else "load_npz(file)"
            print(f"  load: {t[other] / t['dbdf.load(file)']:.2f}x {other}")
        against = [base] + (["pickle.loads"] if base != "pickle.loads" else [])
        loads = ", ".join(f"{t[b] / t['dbdf.loads']:.2f}x {b}" for b in against)
        print(f"  loads: {loads}; "
              f"dumps: {t['pickle.dumps(5)'] / t['dbdf.dumps']:.2f}x pickle.dumps(5)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
