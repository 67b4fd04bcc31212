"""numpy, scipy and pandas values written and read back; options; the lazy handle."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import dbdf

DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64,
          np.float32, np.float64]


def values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dialect", ["spec", "daphne"])
def test_every_dtype_round_trips_exactly(tmp_path, dtype, dialect):
    if dialect == "daphne" and np.dtype(dtype).itemsize == 2:
        pytest.skip("DAPHNE's runtime has no 16-bit value types")
    a = values(dtype, (7, 5))
    path = tmp_path / "a.dbdf"
    dbdf.save(path, a, dialect=dialect)
    back = dbdf.load(path)
    assert back.dtype == dtype and back.flags.c_contiguous
    np.testing.assert_array_equal(back, a)
    assert dbdf.loads(dbdf.dumps(a, dialect=dialect)).tobytes() == a.tobytes()


def test_16_bit_types_are_refused_for_daphne(tmp_path):
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.save(tmp_path / "a.dbdf", np.zeros((2, 2), np.int16), dialect="daphne")
    assert e.value.kind == "NotInDialect"
    assert not (tmp_path / "a.dbdf").exists()


@pytest.mark.parametrize("vt,dtype", [("si8", np.int8), ("si32", np.int32), ("si64", np.int64),
                                      ("ui8", np.uint8), ("ui32", np.uint32),
                                      ("ui64", np.uint64), ("f32", np.float32),
                                      ("f64", np.float64)])
def test_daphne_dialect_writes_what_daphne_writes(tmp_path, vt, dtype):
    from conftest import DAPHNE

    # DAPHNE's own files of v[r][c] = r*10 + c, 3 x 4, and their sidecars.
    a = (np.arange(3)[:, None] * 10 + np.arange(4)).astype(dtype)
    path = tmp_path / "m.dbdf"
    dbdf.save(path, a, dialect="daphne")
    golden = DAPHNE / f"dense_{vt}_3x4.dbdf"
    assert path.read_bytes() == golden.read_bytes()
    meta = (tmp_path / "m.dbdf.meta").read_text()
    assert json.loads(meta) == json.loads(golden.with_suffix(".dbdf.meta").read_text())


@pytest.mark.parametrize(
    "make",
    [
        lambda a: np.asfortranarray(a),
        lambda a: a[::2, ::3],
        lambda a: a[::-1, ::-2],
        lambda a: a.T,
        lambda a: a.astype(a.dtype.newbyteorder(">")),
    ],
    ids=["fortran", "strided", "reversed", "transposed", "big-endian"],
)
def test_any_memory_order(make):
    a = make(values(np.float64, (9, 8)))
    back = dbdf.loads(dbdf.dumps(a))
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, a)


def test_unaligned_arrays_are_written():
    """Regression: an array at an odd address (as Dask's workers hand results over) made the
    core panic ("The pointer must be aligned")."""
    import scipy.sparse as sp

    odd = np.frombuffer(b"\0" + np.arange(12.0).tobytes(), np.float64, 12, 1)
    odd = odd.reshape(3, 4)
    assert not odd.flags.aligned
    np.testing.assert_array_equal(dbdf.loads(dbdf.dumps(odd)), np.arange(12.0).reshape(3, 4))
    frame = {"a": odd[:, 0]}
    assert dbdf.loads(dbdf.dumps(frame))["a"].tolist() == [0.0, 4.0, 8.0]
    csr = sp.csr_array(np.eye(3))
    data = np.frombuffer(b"\0" + csr.data.tobytes(), np.float64, 3, 1)
    csr = sp.csr_array((data, csr.indices, csr.indptr), shape=(3, 3))
    assert (dbdf.loads(dbdf.dumps(csr)) != sp.csr_array(np.eye(3))).nnz == 0


@pytest.mark.parametrize("shape", [(0, 0), (0, 4), (4, 0), (1, 1)])
def test_empty_and_tiny(shape):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    back = dbdf.loads(dbdf.dumps(a))
    assert back.shape == shape and back.dtype == np.float32


def test_bool_scalars_and_vectors():
    assert dbdf.loads(dbdf.dumps(np.array([[True, False]]))).tolist() == [[1, 0]]
    assert dbdf.loads(dbdf.dumps(np.array([[True]]))).dtype == np.uint8
    assert dbdf.loads(dbdf.dumps(2.5)).tolist() == [[2.5]]
    assert dbdf.loads(dbdf.dumps(np.arange(3))).shape == (3, 1)


@pytest.mark.parametrize("bad", [np.zeros((2, 2, 2)), np.zeros(2, np.complex128),
                                 np.array(["a"]), np.zeros(2, np.float16)])
def test_unrepresentable_values_are_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        dbdf.dumps(bad)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"])
@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_every_scipy_sparse_format(fmt, kind):
    sparse = pytest.importorskip("scipy.sparse")
    m = sparse.random_array((30, 20), density=0.2, format=fmt, dtype=np.float64, rng=1)
    if kind == "matrix":
        m = sparse.csr_matrix(m).asformat(fmt)
    back = dbdf.loads(dbdf.dumps(m))
    assert isinstance(back, sparse.csr_array)
    np.testing.assert_array_equal(back.toarray(), m.toarray())


@pytest.mark.parametrize("dtype", DTYPES)
def test_sparse_dtypes_and_index_types(dtype):
    sparse = pytest.importorskip("scipy.sparse")
    dense = values(dtype, (12, 9), seed=3) * (values(np.uint8, (12, 9), seed=4) % 3 == 0)
    m = sparse.csr_array(dense.astype(dtype))
    for index in (np.int32, np.int64):
        m.indices, m.indptr = m.indices.astype(index), m.indptr.astype(index)
        back = dbdf.loads(dbdf.dumps(m))
        assert back.dtype == dtype
        np.testing.assert_array_equal(back.toarray(), dense)


def test_unsorted_and_duplicate_entries_are_summed_as_scipy_does():
    sparse = pytest.importorskip("scipy.sparse")
    m = sparse.csr_array((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])),
                         shape=(1, 3))
    assert not m.has_canonical_format
    back = dbdf.loads(dbdf.dumps(m))
    assert back.toarray().tolist() == [[2.0, 0.0, 4.0]]
    assert m.indices.tolist() == [2, 0, 2]  # the caller's matrix is left as it was


def test_sparse_for_daphne(tmp_path):
    sparse = pytest.importorskip("scipy.sparse")
    m = sparse.random_array((50, 40), density=0.05, dtype=np.float64, rng=2).tocsr()
    dbdf.save(tmp_path / "s.dbdf", m, dialect="daphne")
    assert json.loads((tmp_path / "s.dbdf.meta").read_text())["valueType"] == "f64"
    back = dbdf.load(tmp_path / "s.dbdf")
    np.testing.assert_array_equal(back.toarray(), m.toarray())


def test_frames_from_dicts_and_dataframes():
    frame = {"id": np.array([1, 2, 3], np.int64), "x": np.array([0.5, -1, 2], np.float32),
             "ok": np.array([True, False, True])}
    back = dbdf.loads(dbdf.dumps(frame))
    assert list(back) == ["id", "x", "ok"]
    assert back["x"].dtype == np.float32 and back["ok"].tolist() == [1, 0, 1]
    pandas = pytest.importorskip("pandas")
    df = pandas.DataFrame(frame)
    back = dbdf.loads(dbdf.dumps(df), as_pandas=True)
    assert back.columns.tolist() == ["id", "x", "ok"]
    assert back["id"].tolist() == [1, 2, 3]


def test_frames_refuse_text_and_ragged_columns():
    with pytest.raises(TypeError, match="'name'"):
        dbdf.dumps({"name": np.array(["a", "b"])})
    with pytest.raises(ValueError, match="different lengths"):
        dbdf.dumps({"a": np.zeros(2), "b": np.zeros(3)})


def test_several_objects(tmp_path):
    sparse = pytest.importorskip("scipy.sparse")
    objs = [np.eye(3), sparse.eye_array(4, format="csr"), {"c": np.arange(5)}]
    dbdf.save(tmp_path / "many.dbdf", objs)
    back = dbdf.load(tmp_path / "many.dbdf")
    assert isinstance(back, list) and len(back) == 3
    np.testing.assert_array_equal(back[0], np.eye(3))
    np.testing.assert_array_equal(back[1].toarray(), np.eye(4))
    assert back[2]["c"].tolist() == list(range(5))
    np.testing.assert_array_equal(dbdf.load(tmp_path / "many.dbdf", object=0), np.eye(3))


def test_tiles_blocks_and_narrowing(tmp_path):
    a = np.arange(100, dtype=np.int64).reshape(10, 10) % 7
    path = tmp_path / "t.dbdf"
    dbdf.save(path, a, tile=(4, 3), block="smallest", narrow=True)
    with dbdf.open(path) as f:
        obj = f[0]
        assert obj.dtype == np.int64 and len(obj.blocks) == 3 * 4
        # Narrowing keeps the sign: i64 values 0..6 are stored as i8.
        assert {b["value_type"] for b in obj.blocks} == {"i8"}
        assert obj.blocks[0]["shape"] == (4, 3)
        whole = obj.read()
        assert whole.dtype == np.int64
        np.testing.assert_array_equal(whole, a)


def test_windows_match_numpy_slicing(tmp_path):
    a = values(np.float64, (50, 40), seed=5)
    path = tmp_path / "w.dbdf"
    dbdf.save(path, a, tile=(7, 6))
    with dbdf.open(path) as f:
        obj = f[0]
        for key in [np.s_[3:17, 5:33], np.s_[::5, ::-3], np.s_[-5:, :2], np.s_[4, 1:9],
                    np.s_[2:9, 7], np.s_[10:10, :], np.s_[49, 39], np.s_[8]]:
            np.testing.assert_array_equal(obj[key], a[key], err_msg=str(key))
        with pytest.raises(IndexError):
            obj[50, 0]


def test_sparse_windows(tmp_path):
    sparse = pytest.importorskip("scipy.sparse")
    m = sparse.random_array((60, 50), density=0.1, dtype=np.float64, rng=6).tocsr()
    path = tmp_path / "s.dbdf"
    dbdf.save(path, m, tile=(16, 16))
    with dbdf.open(path) as f:
        window = f[0][10:45, 3:30]
        assert isinstance(window, sparse.csr_array)
        np.testing.assert_array_equal(window.toarray(), m.toarray()[10:45, 3:30])


def test_frame_rows_and_labels(tmp_path):
    frame = {"a": np.arange(20, dtype=np.int32), "b": np.arange(20) * 0.5,
             "c": np.arange(20, dtype=np.uint8)}
    path = tmp_path / "f.dbdf"
    dbdf.save(path, frame, tile=(6, 1))
    with dbdf.open(path) as f:
        obj = f[0]
        assert obj.labels == ["a", "b", "c"] and obj.dtype["b"] == np.float64
        part = obj[5:9, ["c", "a"]]
        assert list(part) == ["c", "a"] and part["a"].tolist() == [5, 6, 7, 8]
        assert obj[2:4, 1:3]["b"].tolist() == [1.0, 1.5]
        assert obj.rows(18, 30)["c"].tolist() == [18, 19]


def test_writes_are_atomic(tmp_path):
    path = tmp_path / "keep.dbdf"
    dbdf.save(path, np.ones((2, 2)))
    before = path.read_bytes()
    with pytest.raises(dbdf.DbdfError):
        dbdf.save(path, np.ones((2, 2), np.uint16), dialect="daphne")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.dbdf"]


@pytest.mark.parametrize(
    "dtype", ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f4", "f8"]
)
def test_tiled_files_load_whole_in_every_dtype(tmp_path, dtype):
    # Tiled dense files load through the typed read that places each tile's rows directly.
    a = (np.arange(7 * 11) % 97).astype(dtype).reshape(7, 11)
    dbdf.save(tmp_path / "t.dbdf", a, tile=(3, 4))
    back = dbdf.load(tmp_path / "t.dbdf")
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    assert dbdf.load(tmp_path / "t.dbdf", object=0).dtype == a.dtype


@pytest.mark.skipif(sys.platform == "win32", reason="file names are UTF-16 on Windows")
def test_paths_that_are_not_utf8(tmp_path):
    # A name of raw bytes, as Linux allows: given as bytes, as the str os.fsdecode makes of
    # it, or as a Path, it names the same file, and nothing is mangled on the way.
    raw = os.fsencode(tmp_path) + b"/m\xff\xfe.dbdf"
    a = np.arange(6.0).reshape(2, 3)
    dbdf.save(raw, a)
    assert b"m\xff\xfe.dbdf" in os.listdir(os.fsencode(tmp_path))
    for path in (raw, os.fsdecode(raw), Path(os.fsdecode(raw))):
        np.testing.assert_array_equal(dbdf.load(path), a)
        with dbdf.open(path) as file:
            assert file[0].shape == (2, 3)
    out = os.fsencode(tmp_path) + b"/out\xff.npy"
    dbdf.convert(raw, out)
    np.testing.assert_array_equal(np.load(out), a)
    with pytest.raises(FileNotFoundError):
        dbdf.load(os.fsencode(tmp_path) + b"/missing\xff.dbdf")


@pytest.mark.parametrize("kwargs", [{}, {"tile": (1000, 700)}, {"narrow": True}, {"block": "sparse"}])
def test_dumps_writes_the_bytes_save_writes(tmp_path, kwargs):
    # Large enough (tens of MiB) for the in-place encoding's huge-page path.
    import scipy.sparse as sp

    dense = values(np.float64, (2500, 1700), seed=3)
    dense[::7] = 0
    csr = sp.random(3000, 2000, density=0.2, format="csr", random_state=4, dtype=np.float32)
    frame = {"a": np.arange(3_000_000, dtype=np.int64), "b": np.linspace(0, 1, 3_000_000)}
    for obj in (dense, csr, frame, [dense, csr]):
        if isinstance(obj, dict) and "tile" in kwargs:
            continue
        path = tmp_path / "x.dbdf"
        dbdf.save(path, obj, **kwargs)
        assert dbdf.dumps(obj, **kwargs) == path.read_bytes()


def test_loads_takes_any_bytes_like_object():
    a = values(np.int32, (300, 200), seed=5)
    data = dbdf.dumps(a)
    for like in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert dbdf.loads(like).tobytes() == a.tobytes()
