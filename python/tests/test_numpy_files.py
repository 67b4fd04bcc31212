"""numpy's and scipy's own files: record arrays, scipy's sparse .npz in every format,
numpy's .npz archives, written by numpy and scipy here and read back by them."""

import zipfile

import numpy as np
import pytest

import dbdf

TYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8"]


def records(order="<", align=False, rows=7):
    dtype = np.dtype(
        [(f"f_{t}", ("|" if t[1] == "1" else order) + t) for t in TYPES] + [("flag", "?")],
        align=align,
    )
    a = np.zeros(rows, dtype=dtype)
    for k, t in enumerate(TYPES):
        a[f"f_{t}"] = (np.arange(rows) * 37 + k * 11) % 100 - (50 if t[0] == "i" else 0)
    a["flag"] = np.arange(rows) % 2 == 1
    return a


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("align", [False, True])
def test_record_arrays_save_as_frames_and_load_as_records(tmp_path, order, align):
    a = records(order, align)
    dbdf.save(tmp_path / "r.dbdf", a)
    frame = dbdf.load(tmp_path / "r.dbdf")
    assert list(frame) == list(a.dtype.names)
    for name in a.dtype.names:
        want = a[name].astype(np.uint8) if name == "flag" else a[name]
        assert np.array_equal(frame[name], want) and frame[name].dtype == want.dtype.newbyteorder("=")
    back = dbdf.load(tmp_path / "r.dbdf", as_records=True)
    assert back.dtype.names == a.dtype.names
    for name in a.dtype.names:
        assert np.array_equal(back[name], a[name].astype(back[name].dtype))


def test_record_npy_files_convert_both_ways(tmp_path):
    a = records(">", True)
    np.save(tmp_path / "r.npy", a)
    dbdf.convert(tmp_path / "r.npy", tmp_path / "r.dbdf")
    dbdf.convert(tmp_path / "r.dbdf", tmp_path / "back.npy")
    back = np.load(tmp_path / "back.npy")
    for name in a.dtype.names:
        assert np.array_equal(back[name], a[name].astype(back[name].dtype))
    assert back.dtype.isalignedstruct is False and back.dtype.itemsize == sum(
        back.dtype[n].itemsize for n in back.dtype.names
    )


def test_string_fields_are_refused_by_name(tmp_path):
    a = np.zeros(2, dtype=[("id", "<i8"), ("name", "<U4")])
    with pytest.raises(TypeError, match="'name'"):
        dbdf.save(tmp_path / "s.dbdf", a)
    np.save(tmp_path / "s.npy", a)
    with pytest.raises(dbdf.DbdfError, match='"name": strings'):
        dbdf.convert(tmp_path / "s.npy", tmp_path / "s.dbdf")


def matrix():
    return np.array(
        [[1.5, 0, 0, 2, 0], [0, 0, 0, 0, 0], [0, -3.25, 0, 0, 4], [5, 0, 0, 0, 0],
         [0, 0, 6.5, 0, 0], [0, 7, 0, 0, -8]]
    )


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dia"])
@pytest.mark.parametrize("compressed", [False, True])
def test_scipy_files_of_every_format_convert_exactly(tmp_path, fmt, compressed):
    sp = pytest.importorskip("scipy.sparse")
    m = sp.random_array((60, 40), density=0.1, rng=7, format="csr")
    m = getattr(m, "to" + fmt)() if fmt != "bsr" else sp.bsr_array(m, blocksize=(3, 2))
    sp.save_npz(tmp_path / "m.npz", m, compressed=compressed)
    dbdf.convert(tmp_path / "m.npz", tmp_path / "m.dbdf")
    got = dbdf.load(tmp_path / "m.dbdf")
    assert np.array_equal(got.toarray(), m.toarray())
    # BSR blocks store zeros, which a .dbdf sparse block leaves out.
    assert got.nnz == np.count_nonzero(m.toarray())


@pytest.mark.parametrize("compressed", [False, True])
def test_dbdf_to_scipy_is_what_save_npz_writes(tmp_path, compressed):
    sp = pytest.importorskip("scipy.sparse")
    m = sp.csr_matrix(matrix())
    dbdf.save(tmp_path / "m.dbdf", m)
    dbdf.convert(tmp_path / "m.dbdf", tmp_path / "ours.npz", to_format="scipy",
                 compressed=compressed)
    back = sp.load_npz(tmp_path / "ours.npz")
    assert back.format == "csr" and (back != m).nnz == 0
    assert back.dtype == m.dtype and back.indices.dtype == m.indices.dtype
    # Member by member, the bytes save_npz writes.
    sp.save_npz(tmp_path / "scipy.npz", m, compressed=compressed)
    with zipfile.ZipFile(tmp_path / "ours.npz") as ours, \
            zipfile.ZipFile(tmp_path / "scipy.npz") as theirs:
        assert ours.namelist() == theirs.namelist()
        for name in theirs.namelist():
            assert ours.read(name) == theirs.read(name), name
            method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
            assert ours.getinfo(name).compress_type == method


def test_npz_archives_are_an_object_per_array(tmp_path):
    a = np.arange(6).reshape(2, 3) / 4
    b = np.arange(12, dtype=np.int16).reshape(3, 4)
    r = records()
    np.savez(tmp_path / "x.npz", a=a, b=b, r=r)
    dbdf.convert(tmp_path / "x.npz", tmp_path / "x.dbdf")
    got = dbdf.load(tmp_path / "x.dbdf")
    assert np.array_equal(got[0], a) and np.array_equal(got[1], b)
    assert list(got[2]) == list(r.dtype.names)
    # Names kept between archives; arr_0, arr_1, ... from a .dbdf.
    dbdf.convert(tmp_path / "x.npz", tmp_path / "same.npz", to_format="npz", compressed=True)
    with np.load(tmp_path / "same.npz") as z:
        assert z.files == ["a", "b", "r"]
        assert np.array_equal(z["b"], b)
    dbdf.convert(tmp_path / "x.dbdf", tmp_path / "y.npz", to_format="npz")
    with np.load(tmp_path / "y.npz") as z:
        assert z.files == ["arr_0", "arr_1", "arr_2"]
        assert np.array_equal(z["arr_0"], a)


def test_python_2_headers_load_as_numpy_loads_them(tmp_path):
    # numpy's own test file, written by Python 2 ('shape': (2L,)).
    import os

    path = os.path.join(os.path.dirname(np.__file__), "lib", "tests", "data", "win64python2.npy")
    if not os.path.exists(path):
        pytest.skip("numpy's test data is not installed")
    dbdf.convert(path, tmp_path / "p.dbdf")
    with pytest.warns(UserWarning):
        want = np.load(path)
    assert np.array_equal(dbdf.load(tmp_path / "p.dbdf").ravel(), want)
