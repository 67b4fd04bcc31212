"""Checks serde_daphne's Futhark and Binsparse files with the real Python references.

`neighbours.py check DIR`: every `NAME.fut`, `NAME.*.bsp.npz`, `NAME.*.bsp.h5` and
`NAME.*.bsp.zarr` (Zarr v3 and v2 groups, read by zarr-python) in DIR
that dbdf wrote is read with futhark-data / binsparse and compared with `NAME.npy` (the same
matrix, written by dbdf's independent .npy path).

`neighbours.py write DIR`: the references write files of their own into DIR (each with the
expected values as `.expected.npy`), for dbdf to convert back.

`neighbours.py compare DIR`: every `X.expected.npy` equals `X.dbdf.npy` (what dbdf read).
"""

import glob
import json
import os
import sys

import numpy as np
import futhark_data
from binsparse import NPZBinsparseContainer, load_binsparse, save_binsparse
import binsparse
from binsparse.conversions.numpy import from_numpy

failures = []


def same(name, got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        failures.append(f"{name}: shape {got.shape} != {want.shape}")
        return
    if got.tobytes() != want.astype(got.dtype).tobytes() or got.dtype != want.dtype:
        failures.append(f"{name}: values or dtype differ ({got.dtype} vs {want.dtype})")


def dense_from_binsparse(tensor, header_types):
    """The logical dense array of a parsed tensor, computed here from its arrays."""
    fmt = tensor.format
    shape = tuple(tensor.shape)
    values = np.asarray(tensor.values)
    nnz = tensor.number_of_stored_values
    if header_types.get("values", "").startswith("iso["):
        values = np.repeat(values.reshape(-1)[:1], nnz)
    if fmt in ("DVEC", "DMAT", "DMATR"):
        return values.reshape(shape)
    if fmt == "DMATC":
        return values.reshape((shape[1], shape[0])).T
    out = np.zeros(shape, dtype=values.dtype)
    if fmt == "CVEC":
        out[np.asarray(tensor.indices_0)] = values
        return out
    transposed = fmt in ("CSC", "DCSC", "COOC")
    major = shape[1] if transposed else shape[0]
    if fmt in ("CSR", "CSC"):
        ptr = np.asarray(tensor.pointers_to_1).astype(np.int64)
        rows = np.repeat(np.arange(major), np.diff(ptr).astype(np.int64))
    elif fmt in ("DCSR", "DCSC"):
        ptr = np.asarray(tensor.pointers_to_1).astype(np.int64)
        rows = np.repeat(np.asarray(tensor.indices_0).astype(np.int64), np.diff(ptr).astype(np.int64))
    else:
        rows = np.asarray(tensor.indices_0).astype(np.int64)
    cols = np.asarray(tensor.indices_1).astype(np.int64)
    if transposed:
        rows, cols = cols, rows
    out[rows, cols] = values
    return out


def check(directory):
    checked = 0
    for npy in sorted(glob.glob(os.path.join(directory, "*.npy"))):
        stem = npy[: -len(".npy")]
        want = np.load(npy)
        fut = stem + ".fut"
        if os.path.exists(fut):
            with open(fut, "rb") as f:
                got = list(futhark_data.load(f))
            if len(got) != 1:
                failures.append(f"{fut}: {len(got)} values")
            else:
                value = np.asarray(got[0])
                # dbdf writes n x 1 as 1-D and 1 x 1 as a scalar.
                same(fut, value.reshape(want.shape), want)
            checked += 1
        paths = [glob.glob(stem + ".*.bsp." + ext) for ext in ("npz", "h5", "zarr")]
        for path in sorted(sum(paths, [])):
            tensor = load_binsparse(path)
            if path.endswith(".npz"):
                with np.load(path) as archive:
                    header = json.loads(str(archive["binsparse"].item()))["binsparse"]
            elif path.endswith(".zarr"):
                import zarr

                header = zarr.open_group(path, mode="r").attrs["binsparse"]["binsparse"]
            else:
                import h5py

                with h5py.File(path, "r") as f:
                    header = json.loads(f.attrs["binsparse"])["binsparse"]
            if header["version"] != "0.1.0":
                failures.append(f"{path}: version {header['version']}")
            got = dense_from_binsparse(tensor, header["data_types"])
            same(path, got.reshape(want.shape), want)
            checked += 1
    # The default, the spec's "0.1", is refused by binsparse 0.1.4 for Python: say so, and
    # notice when a new release accepts it.
    for path in sorted(glob.glob(os.path.join(directory, "*.spec-version.npz"))):
        try:
            load_binsparse(path)
            print(f"neighbours.py: NOTE the Python reference now reads version 0.1 ({path})")
        except binsparse.BinsparseParseError as error:
            if "0.1" not in str(error):
                failures.append(f"{path}: refused for another reason: {error}")
    print(f"neighbours.py: {checked} files written by dbdf read back by the references")
    if checked == 0:
        failures.append("no files to check")


def write(directory):
    rng = np.random.default_rng(7)
    cases = {
        "py_f64": rng.standard_normal((4, 5)),
        "py_i32": rng.integers(-1000, 1000, (3, 3)).astype(np.int32),
        "py_u8": rng.integers(0, 255, (2, 6)).astype(np.uint8),
        "py_col": rng.standard_normal((5, 1)).astype(np.float32),
    }
    for name, array in cases.items():
        with open(os.path.join(directory, name + ".fut"), "wb") as f:
            futhark_data.dump(array, f, True)
        np.save(os.path.join(directory, name + ".fut.expected.npy"), array)
        sparse = np.where(np.abs(array) > np.median(np.abs(array)), array, 0)
        sparse = sparse.astype(array.dtype)
        save_binsparse(from_numpy(sparse), os.path.join(directory, name + ".bsp.npz"))
        np.save(os.path.join(directory, name + ".bsp.npz.expected.npy"), sparse)
        # A CSR written through scipy-free construction: the reference's CSRMatrix.
        rows, cols = np.nonzero(sparse)
        ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=sparse.shape[0]))])
        csr = binsparse.CSRMatrix(
            shape=sparse.shape,
            number_of_stored_values=len(rows),
            pointers_to_1=ptr.astype(np.int64),
            indices_1=cols.astype(np.int64),
            values=sparse[rows, cols],
        )
        for ext in (".csr.bsp.npz", ".csr.bsp.h5", ".csr.bsp.zarr"):
            save_binsparse(csr, os.path.join(directory, name + ext))
            np.save(os.path.join(directory, name + ext + ".expected.npy"), sparse)
        # The same archive as numpy.savez_compressed writes it (deflated members).
        archive = {}
        csr.serialize(NPZBinsparseContainer(archive))
        np.savez_compressed(os.path.join(directory, name + ".deflated.bsp.npz"), **archive)
        np.save(os.path.join(directory, name + ".deflated.bsp.npz.expected.npy"), sparse)
    print(f"neighbours.py: the references wrote {len(cases) * 6} files")


def compare(directory):
    compared = 0
    for expected in sorted(glob.glob(os.path.join(directory, "*.expected.npy"))):
        read = expected.replace(".expected.npy", ".dbdf.npy")
        if not os.path.exists(read):
            failures.append(f"{read}: missing (dbdf did not convert it)")
            continue
        want = np.load(expected)
        got = np.load(read)
        same(read, got.reshape(want.shape), want)
        compared += 1
    print(f"neighbours.py: {compared} files written by the references read by dbdf")


if __name__ == "__main__":
    command, directory = sys.argv[1], sys.argv[2]
    {"check": check, "write": write, "compare": compare}[command](directory)
    for failure in failures:
        print("FAIL", failure)
    sys.exit(1 if failures else 0)
