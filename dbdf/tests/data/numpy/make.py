"""Writes the numpy and scipy files the dbdf crate's tests read (run once, in the reference
virtual environment: numpy 2.4.6, scipy 1.17.1; the outputs are committed, never our own).

The values follow formulas the tests compute again (tests/suite/numpy_files.rs):
- the sparse matrix M below, in every format scipy saves (compressed and not);
- records: row r, field k: integers (r * 37 + k * 11) % 100, minus 50 when signed;
  floats (r - 2) * 0.5 + k; bools r % 2;
- archives: a = arange(6).reshape(2, 3) / 4, b = arange(4, dtype=int32) - 1, c = records.
Also copied: numpy's own test files win64python2.npy (a Python 2 header) and python3.npy,
and scipy's record array stable-loc-scale-sample-data.npy (9 fields, 126 records).
"""
import os
import shutil

import numpy as np
import scipy.sparse as sp

M = np.array([
    [1.5, 0, 0, 2, 0],
    [0, 0, 0, 0, 0],
    [0, -3.25, 0, 0, 4],
    [5, 0, 0, 0, 0],
    [0, 0, 6.5, 0, 0],
    [0, 7, 0, 0, -8],
])
TYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8", "b1"]


def records(order, align, rows=5):
    names = [f"f_{t}" for t in TYPES]
    dtype = np.dtype([(n, ("|" if t in ("u1", "i1", "b1") else order) + t)
                      for n, t in zip(names, TYPES)], align=align)
    a = np.zeros(rows, dtype=dtype)
    for k, (n, t) in enumerate(zip(names, TYPES)):
        r = np.arange(rows)
        if t == "b1":
            a[n] = r % 2
        elif t[0] == "f":
            a[n] = (r - 2) * 0.5 + k
        elif t[0] == "i":
            a[n] = (r * 37 + k * 11) % 100 - 50
        else:
            a[n] = (r * 37 + k * 11) % 100
    return a


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    os.chdir(here)
    npdata = os.path.join(os.path.dirname(np.__file__), "lib", "tests", "data")
    for name in ("win64python2.npy", "python3.npy"):
        shutil.copy(os.path.join(npdata, name), name)
    import scipy
    shutil.copy(os.path.join(os.path.dirname(scipy.__file__), "stats", "tests", "data",
                             "levy_stable", "stable-loc-scale-sample-data.npy"),
                "stable-loc-scale-sample-data.npy")
    for order, o in (("<", "le"), (">", "be")):
        for align in (False, True):
            np.save(f"records_{o}_{'aligned' if align else 'packed'}.npy", records(order, align))
    np.save("matrix_f64.npy", np.arange(6).reshape(2, 3) / 4)
    np.save("records_strings.npy", np.zeros(2, dtype=[("id", "<i8"), ("name", "<U5")]))
    np.save("records_nested.npy", np.zeros(2, dtype=[("pos", [("x", "<f8"), ("y", "<f8")])]))
    csr = sp.csr_matrix(M)
    made = {
        "csr": csr, "csc": sp.csc_matrix(M), "coo": sp.coo_matrix(M),
        "bsr": sp.bsr_matrix(M, blocksize=(2, 1)), "dia": sp.dia_matrix(M),
        "csr_array": sp.csr_array(M),
        "csr_i32": sp.csr_matrix(M.astype(np.int32)),
    }
    for name, m in made.items():
        sp.save_npz(f"scipy_{name}.npz", m, compressed=False)
        sp.save_npz(f"scipy_{name}_compressed.npz", m, compressed=True)
    # Rows whose columns are out of order (scipy allows them; has_sorted_indices is False).
    unsorted = sp.csr_matrix((np.array([2.0, 1.5, 4, -3.25, 5, 6.5, -8, 7]),
                              np.array([3, 0, 4, 1, 0, 2, 4, 1]),
                              np.array([0, 2, 2, 4, 5, 6, 8])), shape=(6, 5))
    assert not unsorted.has_sorted_indices and (unsorted.toarray() == M).all()
    sp.save_npz("scipy_csr_unsorted.npz", unsorted, compressed=False)
    duplicates = sp.coo_matrix((np.array([1.0, 2.0]), (np.array([0, 0]), np.array([1, 1]))),
                               shape=(2, 2))
    sp.save_npz("scipy_coo_duplicates.npz", duplicates, compressed=False)
    a = np.arange(6).reshape(2, 3) / 4
    b = np.arange(4, dtype=np.int32) - 1
    c = records("<", False)
    np.savez("savez.npz", a=a, b=b, c=c)
    np.savez_compressed("savez_compressed.npz", a=a, b=b, c=c)
    np.savez("savez_positional.npz", a, b)


if __name__ == "__main__":
    main()
