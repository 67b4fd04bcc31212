"""dbdf.convert: the crate's conversions, checked against files other tools wrote."""

import json

import numpy as np
import pytest

import dbdf
from conftest import DAPHNE, REPO

# The neighbouring formats' reference files are the dbdf crate's.
DATA = REPO / "dbdf" / "tests" / "data"


def test_matrix_market_to_dbdf_and_back(tmp_path):
    mtx = tmp_path / "m.mtx"
    mtx.write_text(
        "%%MatrixMarket matrix coordinate integer symmetric\n% a comment\n3 3 3\n"
        "1 1 5\n3 1 -2\n3 3 7\n"
    )
    dbdf.convert(mtx, tmp_path / "m.dbdf")
    m = dbdf.load(tmp_path / "m.dbdf")
    assert m.dtype == np.int64
    assert m.toarray().tolist() == [[5, 0, -2], [0, 0, 0], [-2, 0, 7]]
    dbdf.convert(tmp_path / "m.dbdf", tmp_path / "dense.dbdf", data_type="dense",
                 value_type="i8")
    d = dbdf.load(tmp_path / "dense.dbdf")
    assert d.dtype == np.int8 and d.tolist() == [[5, 0, -2], [0, 0, 0], [-2, 0, 7]]
    dbdf.convert(tmp_path / "dense.dbdf", tmp_path / "back.mtx")
    scipy_io = pytest.importorskip("scipy.io")
    # A dense matrix is written as an array file, which scipy reads as an ndarray.
    assert scipy_io.mmread(tmp_path / "back.mtx").tolist() == d.tolist()


@pytest.mark.parametrize("dtype", ["f8", "f4", "i4", "u1"])
def test_dense_matrices_are_matrix_market_array_files_scipy_and_fmm_read(tmp_path, dtype):
    scipy_io = pytest.importorskip("scipy.io")
    a = (np.random.default_rng(5).standard_normal((70, 13)) * 50).astype(dtype)
    np.save(tmp_path / "a.npy", a)
    dbdf.convert(tmp_path / "a.npy", tmp_path / "a.mtx")
    assert (tmp_path / "a.mtx").read_text().startswith("%%MatrixMarket matrix array ")
    got = scipy_io.mmread(tmp_path / "a.mtx")
    assert isinstance(got, np.ndarray) and np.array_equal(got, a)
    # The same bytes from a tiled .dbdf (windows) and from CSV (rows in order, spilled).
    dbdf.convert(tmp_path / "a.npy", tmp_path / "a.dbdf", tile=(16, 5))
    dbdf.convert(tmp_path / "a.npy", tmp_path / "a.csv")
    for other in ["a.dbdf", "a.csv"]:
        dbdf.convert(tmp_path / other, tmp_path / "b.mtx")
        assert (tmp_path / "b.mtx").read_bytes() == (tmp_path / "a.mtx").read_bytes(), other
    # Read back: the same matrix, dense, of its type.
    dbdf.convert(tmp_path / "a.mtx", tmp_path / "back.npy")
    back = np.load(tmp_path / "back.npy")
    assert back.dtype == a.dtype and np.array_equal(back, a)
    fmm = pytest.importorskip("fast_matrix_market")
    assert np.array_equal(fmm.mmread(tmp_path / "a.mtx"), a)


def test_mtx_layout_writes_every_matrix_as_asked_scipy_and_fmm_read_it(tmp_path, cli):
    scipy_io = pytest.importorskip("scipy.io")
    sparse = pytest.importorskip("scipy.sparse")
    fmm = pytest.importorskip("fast_matrix_market")
    a = np.where(np.arange(60).reshape(6, 10) % 7 == 0, np.arange(60.0).reshape(6, 10), 0.0)
    np.save(tmp_path / "a.npy", a)
    # Dense as coordinate: the non-zeros, which scipy reads as a sparse matrix.
    dbdf.convert(tmp_path / "a.npy", tmp_path / "c.mtx", mtx_layout="coordinate")
    assert (tmp_path / "c.mtx").read_text().startswith("%%MatrixMarket matrix coordinate real")
    got = scipy_io.mmread(tmp_path / "c.mtx")
    assert sparse.issparse(got) and got.nnz == np.count_nonzero(a)
    assert np.array_equal(got.toarray(), a)
    assert np.array_equal(fmm.mmread(tmp_path / "c.mtx").toarray(), a)
    # CSR as array: every value, column by column, as scipy writes a dense array.
    sparse.save_npz(tmp_path / "s.npz", sparse.csr_array(a))
    cli("convert", tmp_path / "s.npz", tmp_path / "s.mtx", "--mtx-layout", "array")
    scipy_io.mmwrite(tmp_path / "scipy.mtx", a)
    ours = (tmp_path / "s.mtx").read_text().splitlines()
    theirs = (tmp_path / "scipy.mtx").read_text().splitlines()
    assert ours[0] == theirs[0] == "%%MatrixMarket matrix array real general"
    assert np.array_equal(scipy_io.mmread(tmp_path / "s.mtx"), a)
    assert np.array_equal(fmm.mmread(tmp_path / "s.mtx"), a)
    with pytest.raises(dbdf.DbdfError, match="array layout writes a DenseMatrix"):
        dbdf.convert(tmp_path / "s.npz", tmp_path / "x.mtx", mtx_layout="array", data_type="csr")
    with pytest.raises(ValueError, match="mtx_layout"):
        dbdf.convert(tmp_path / "s.npz", tmp_path / "x.mtx", mtx_layout="dense")


def test_npy_streams_to_tiled_dbdf_and_back_bit_identical(tmp_path):
    a = np.random.default_rng(1).standard_normal((300, 170))
    np.save(tmp_path / "a.npy", a)
    dbdf.convert(tmp_path / "a.npy", tmp_path / "a.dbdf", tile=(64, 64))
    with dbdf.open(tmp_path / "a.dbdf") as f:
        assert len(f[0].blocks) == 5 * 3
    dbdf.convert(tmp_path / "a.dbdf", tmp_path / "b.npy")
    assert (tmp_path / "b.npy").read_bytes() == (tmp_path / "a.npy").read_bytes()


def test_binsparse_reference_file_converts_to_its_manifest_values(tmp_path):
    manifest = json.loads((DATA / "binsparse" / "MANIFEST.json").read_text())
    entry = next(e for e in manifest if e["file"] == "csr_f64.npz")
    dbdf.convert(DATA / "binsparse" / "csr_f64.npz", tmp_path / "m.dbdf")
    m = dbdf.load(tmp_path / "m.dbdf")
    assert m.toarray().tolist() == entry["expected_logical"]
    # And back to Binsparse, which the reference reads in the neighbours check.
    dbdf.convert(tmp_path / "m.dbdf", tmp_path / "m.bsp.npz", binsparse_format="coo")
    dbdf.convert(tmp_path / "m.bsp.npz", tmp_path / "again.dbdf")
    assert dbdf.load(tmp_path / "again.dbdf").toarray().tolist() == entry["expected_logical"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_binsparse_zarr_groups_convert_both_ways(tmp_path, zarr_format):
    # The reference's own Zarr group holds the same matrix as its .npz twin.
    manifest = json.loads((DATA / "binsparse" / "MANIFEST.json").read_text())
    entry = next(e for e in manifest if e["file"] == "csr_f64.npz")
    dbdf.convert(DATA / "binsparse" / "csr_f64.zarr", tmp_path / "m.dbdf")
    assert dbdf.load(tmp_path / "m.dbdf").toarray().tolist() == entry["expected_logical"]
    out = tmp_path / "m.bsp.zarr"
    dbdf.convert(tmp_path / "m.dbdf", out, binsparse_format="DCSR", zarr_format=zarr_format)
    assert (out / ("zarr.json" if zarr_format == 3 else ".zgroup")).is_file()
    dbdf.convert(out, tmp_path / "again.dbdf")
    assert dbdf.load(tmp_path / "again.dbdf").toarray().tolist() == entry["expected_logical"]
    with pytest.raises(ValueError, match="zarr_format"):
        dbdf.convert(tmp_path / "m.dbdf", tmp_path / "x.zarr", zarr_format=4)


def test_systemds_binary_blocks_match_systemds_own_csv(tmp_path):
    dbdf.convert(DATA / "systemds" / "dense_small", tmp_path / "d.dbdf")
    expected = np.loadtxt(DATA / "systemds" / "dense_small.csv", delimiter=",", ndmin=2)
    np.testing.assert_array_equal(dbdf.load(tmp_path / "d.dbdf"), expected)
    # Back as a directory of parts, as Spark writes them, and read again.
    dbdf.convert(tmp_path / "d.dbdf", tmp_path / "parts", to_format="systemds",
                 systemds_block_size=2, systemds_parts=2)
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == [
        "_SUCCESS", "part-00000", "part-00001"]
    dbdf.convert(tmp_path / "parts", tmp_path / "again.dbdf")
    np.testing.assert_array_equal(dbdf.load(tmp_path / "again.dbdf"), expected)


def test_futhark_values(tmp_path):
    dbdf.convert(DATA / "futhark" / "array_f64_2d_3x4.bin", tmp_path / "f.dbdf",
                 from_format="futhark")
    f = dbdf.load(tmp_path / "f.dbdf")
    assert f.shape == (3, 4) and f.dtype == np.float64


def test_csv_frames_keep_labels_and_types_through_the_sidecar(tmp_path):
    frame = {"id": np.array([3, 1], np.int32), "w": np.array([0.25, -2.0])}
    dbdf.save(tmp_path / "f.dbdf", frame)
    dbdf.convert(tmp_path / "f.dbdf", tmp_path / "f.csv")
    assert (tmp_path / "f.csv").read_text().splitlines() == ["id,w", "3,0.25", "1,-2.0"]
    dbdf.convert(tmp_path / "f.csv", tmp_path / "g.dbdf")
    back = dbdf.load(tmp_path / "g.dbdf")
    assert back["id"].dtype == np.int32 and back["w"].tolist() == [0.25, -2.0]


def test_daphne_warnings_become_python_warnings(tmp_path):
    sparse = pytest.importorskip("scipy.sparse")
    dbdf.save(tmp_path / "dense_csr.dbdf", sparse.csr_array(np.ones((4, 4))))
    with pytest.warns(UserWarning, match="readMatrix"):
        dbdf.convert(tmp_path / "dense_csr.dbdf", tmp_path / "out.dbdf", dialect="daphne",
                     data_type="csr")


def test_failures_name_the_file_and_leave_nothing(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n")
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.convert(bad, tmp_path / "out.dbdf")
    assert e.value.file == str(bad) and e.value.kind == "ForeignInput"
    assert "line 3" in str(e.value) and str(bad) in str(e.value)
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.convert(DAPHNE / "dense_si8_neg_2x3.dbdf", tmp_path / "u.dbdf",
                     value_type="u8")
    assert e.value.kind == "LossyConversion"
    with pytest.raises(FileNotFoundError) as e:
        dbdf.convert(tmp_path / "missing.mtx", tmp_path / "out.dbdf")
    assert e.value.filename == str(tmp_path / "missing.mtx")
    with pytest.raises(TypeError, match="colour"):
        dbdf.convert(bad, tmp_path / "out.dbdf", colour="red")
    with pytest.raises(dbdf.DbdfError, match="format"):
        dbdf.convert(bad, tmp_path / "out.xyz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mtx"]


def test_cells_given_twice_sum_as_scipy_tocsr_sums_them(tmp_path):
    """A MatrixMarket file and a COO archive written by scipy, each giving cells more than
    once (finite-element assembly): refused by default, naming the cell; with
    ``duplicates="sum"``, the CSR matrix of ``scipy.io.mmread(f).tocsr()`` and of
    ``load_npz(f).tocsr()``, bit for bit (three entries of a cell sum in file order).

    scipy sorts each row with ``std::sort``, which keeps equal columns in file order in rows
    of up to 16 entries (its insertion sort); the rows here are that short."""
    sparse = pytest.importorskip("scipy.sparse")
    scipy_io = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(5)
    n, k = 100, 600
    rows, cols = rng.integers(0, n, k), rng.integers(0, 8, k)
    assert np.bincount(rows).max() <= 16
    values = rng.choice([0.1, 0.2, 0.3, -0.3, 1e16, 1.0, 3.5], k)
    coo = sparse.coo_array((values, (rows, cols)), shape=(n, 8))
    scipy_io.mmwrite(tmp_path / "fem.mtx", coo)
    sparse.save_npz(tmp_path / "fem.npz", coo, compressed=False)
    counts = np.bincount(rows * 8 + cols)
    assert counts.max() >= 3
    for name, expected in [("fem.mtx", scipy_io.mmread(tmp_path / "fem.mtx").tocsr()),
                           ("fem.npz", sparse.load_npz(tmp_path / "fem.npz").tocsr())]:
        out = tmp_path / f"{name}.dbdf"
        with pytest.raises(dbdf.DbdfError, match="given twice|duplicate entry"):
            dbdf.convert(tmp_path / name, out)
        assert not out.exists()
        dbdf.convert(tmp_path / name, out, duplicates="sum")
        back = dbdf.load(out)
        expected.eliminate_zeros()  # cells that sum to zero: a .dbdf CSR block keeps none
        assert back.indptr.tolist() == expected.indptr.tolist(), name
        assert back.indices.tolist() == expected.indices.tolist(), name
        assert back.data.tobytes() == expected.data.tobytes(), name
    with pytest.raises(ValueError, match="keep"):
        dbdf.convert(tmp_path / "fem.mtx", tmp_path / "x.dbdf", duplicates="keep")
