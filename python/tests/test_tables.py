"""Parquet and Arrow: files pyarrow, pandas and polars write, converted to .dbdf exactly; the
files we write, read by pyarrow, pandas, polars and DuckDB; pyarrow tables and polars frames
saved, and frames loaded as pyarrow tables over the same buffers."""

import numpy as np
import pytest

import dbdf
from conftest import REPO

DATA = REPO / "dbdf" / "tests" / "data"

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
feather = pytest.importorskip("pyarrow.feather")

TYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8"]
ROWS = 1000


def columns(rows=ROWS):
    rng = np.random.default_rng(7)
    out = {}
    for t in TYPES:
        dtype = np.dtype(t)
        if dtype.kind == "f":
            out[f"c_{t}"] = rng.standard_normal(rows).astype(dtype)
        else:
            info = np.iinfo(dtype)
            out[f"c_{t}"] = rng.integers(info.min, info.max, size=rows, dtype=dtype, endpoint=True)
    out["flag"] = rng.integers(0, 2, size=rows).astype(bool)
    return out


def same(table, cols):
    """The table holds these columns exactly (bools as uint8)."""
    assert table.column_names == list(cols)
    for name, want in cols.items():
        got = table.column(name).to_numpy()
        want = want.astype(np.uint8) if want.dtype == bool else want
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), name


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd", "gzip", "lz4"])
def test_pyarrow_parquet_converts_exactly_in_every_codec(tmp_path, codec):
    cols = columns()
    pq.write_table(pa.table(cols), tmp_path / "t.parquet", row_group_size=300, compression=codec)
    dbdf.convert(tmp_path / "t.parquet", tmp_path / "t.dbdf")
    frame = dbdf.load(tmp_path / "t.dbdf")
    for name, want in cols.items():
        want = want.astype(np.uint8) if want.dtype == bool else want
        assert frame[name].tobytes() == want.tobytes() and frame[name].dtype == want.dtype, name


def test_pandas_and_polars_files_convert(tmp_path):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    cols = {k: v for k, v in columns().items() if k != "flag"}
    pd.DataFrame(cols).to_parquet(tmp_path / "pandas.parquet")
    pl.DataFrame(cols).write_parquet(tmp_path / "polars.parquet")
    pl.DataFrame(cols).write_ipc(tmp_path / "polars.arrow")
    for name in ["pandas.parquet", "polars.parquet", "polars.arrow"]:
        dbdf.convert(tmp_path / name, tmp_path / "out.dbdf")
        same(dbdf.load(tmp_path / "out.dbdf", as_arrow=True), cols)


def test_what_we_write_reads_in_pyarrow_pandas_polars_and_duckdb(tmp_path):
    cols = columns()
    dbdf.save(tmp_path / "f.dbdf", cols)
    dbdf.convert(tmp_path / "f.dbdf", tmp_path / "f.parquet", row_group_rows=256)
    dbdf.convert(tmp_path / "f.dbdf", tmp_path / "f.arrow")
    same(pq.read_table(tmp_path / "f.parquet"), cols)
    assert pq.read_metadata(tmp_path / "f.parquet").num_row_groups == 4
    same(feather.read_table(tmp_path / "f.arrow"), cols)
    # Uncompressed IPC: pyarrow maps it without copying.
    same(feather.read_table(tmp_path / "f.arrow", memory_map=True), cols)
    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(tmp_path / "f.parquet")
    assert np.array_equal(frame["c_i8"].to_numpy(), cols["c_i8"])
    pl = pytest.importorskip("polars")
    assert pl.read_parquet(tmp_path / "f.parquet")["c_u8"].to_numpy().tobytes() == cols["c_u8"].tobytes()
    assert pl.read_ipc(tmp_path / "f.arrow")["c_f4"].to_numpy().tobytes() == cols["c_f4"].tobytes()
    duckdb = pytest.importorskip("duckdb")
    path = str(tmp_path / "f.parquet")
    got = duckdb.sql(f"SELECT sum(c_f8), sum(c_i4), count(*) FROM '{path}'").fetchall()[0]
    assert got[0] == pytest.approx(float(np.sum(cols["c_f8"])), rel=1e-12)
    assert got[1] == int(np.sum(cols["c_i4"].astype(np.int64)))
    assert got[2] == ROWS


def test_matrices_round_trip_through_parquet_and_arrow_bit_for_bit(tmp_path):
    m = np.random.default_rng(1).standard_normal((50, 4))
    m[3, 2] = -0.0
    m[4, 1] = np.nan
    dbdf.save(tmp_path / "m.dbdf", m)
    for table in ["m.parquet", "m.feather"]:
        dbdf.convert(tmp_path / "m.dbdf", tmp_path / table, labels=["a", "b", "c", "d"])
        dbdf.convert(tmp_path / table, tmp_path / "back.dbdf")
        assert (tmp_path / "back.dbdf").read_bytes() == (tmp_path / "m.dbdf").read_bytes()
    t = pq.read_table(tmp_path / "m.parquet")
    assert t.column_names == ["a", "b", "c", "d"]
    assert t.schema.metadata[b"daphne:data_type"] == b"DenseMatrix"


def test_nulls_are_refused_or_filled(tmp_path):
    pq.write_table(pa.table({"x": pa.array([1.0, None, 3.0])}), tmp_path / "n.parquet")
    with pytest.raises(dbdf.DbdfError, match="row 1 of column"):
        dbdf.convert(tmp_path / "n.parquet", tmp_path / "n.dbdf")
    assert not (tmp_path / "n.dbdf").exists()
    dbdf.convert(tmp_path / "n.parquet", tmp_path / "n.dbdf", nulls="nan")
    x = dbdf.load(tmp_path / "n.dbdf")["x"]
    assert x[0] == 1.0 and np.isnan(x[1]) and x[2] == 3.0


def test_as_arrow_shares_the_loaded_buffers_and_saves_back(tmp_path):
    cols = columns()
    dbdf.save(tmp_path / "f.dbdf", cols)
    table = dbdf.load(tmp_path / "f.dbdf", as_arrow=True)
    same(table, cols)
    assert table.schema.metadata[b"daphne:data_type"] == b"Frame"
    dbdf.save(tmp_path / "again.dbdf", table)
    assert (tmp_path / "again.dbdf").read_bytes() == (tmp_path / "f.dbdf").read_bytes()
    m = np.arange(12, dtype=np.int16).reshape(3, 4)
    dbdf.save(tmp_path / "m.dbdf", m)
    t = dbdf.load(tmp_path / "m.dbdf", as_arrow=True)
    assert t.column_names == ["c0", "c1", "c2", "c3"]
    dbdf.save(tmp_path / "m2.dbdf", t)
    assert np.array_equal(dbdf.load(tmp_path / "m2.dbdf"), m)


def test_pyarrow_tables_and_polars_frames_save_as_frames(tmp_path):
    cols = {k: v for k, v in columns().items() if k != "flag"}
    chunked = pa.concat_tables([pa.table(cols).slice(0, 10), pa.table(cols).slice(10)])
    dbdf.save(tmp_path / "t.dbdf", chunked)
    same(dbdf.load(tmp_path / "t.dbdf", as_arrow=True), cols)
    pl = pytest.importorskip("polars")
    dbdf.save(tmp_path / "p.dbdf", pl.DataFrame(cols))
    same(dbdf.load(tmp_path / "p.dbdf", as_arrow=True), cols)
    with pytest.raises(ValueError, match="nulls"):
        dbdf.save(tmp_path / "n.dbdf", pa.table({"x": pa.array([1, None])}))
    with pytest.raises(TypeError, match="numbers only"):
        dbdf.save(tmp_path / "s.dbdf", pa.table({"s": ["a", "b"]}))


def test_schema_metadata_is_kept_as_user_attributes_between_tables(tmp_path):
    """pyarrow's schema metadata survives Parquet -> Arrow IPC -> Parquet, but for the keys
    that describe the schema itself (pandas' here)."""
    table = pa.table({"a": np.arange(4, dtype=np.int64)})
    metadata = {b"origin": b"sensor-7", b"pandas": b"{}"}
    pq.write_table(table.replace_schema_metadata(metadata), tmp_path / "in.parquet")
    dbdf.convert(tmp_path / "in.parquet", tmp_path / "mid.arrow")
    dbdf.convert(tmp_path / "mid.arrow", tmp_path / "out.parquet")
    for name in ["mid.arrow", "out.parquet"]:
        path = tmp_path / name
        schema = pq.read_schema(path) if name.endswith(".parquet") else feather.read_table(path).schema
        assert schema.metadata[b"origin"] == b"sensor-7", name
        assert b"pandas" not in schema.metadata, name
        assert schema.metadata[b"daphne:data_type"] == b"Frame", name


def test_columns_picked_by_label_or_position_read_alone(tmp_path):
    """pyarrow's projection is the reference: the same columns, in the order picked."""
    cols = columns()
    table = pa.table(dict(cols, name=[f"n{i}" for i in range(ROWS)]))
    pq.write_table(table, tmp_path / "t.parquet")
    picks = ["c_f8", 0, "flag"]
    labels = ["c_f8", "c_u1", "flag"]
    with pytest.raises(dbdf.DbdfError, match="--columns"):
        dbdf.convert(tmp_path / "t.parquet", tmp_path / "all.dbdf")
    dbdf.convert(tmp_path / "t.parquet", tmp_path / "t.dbdf", columns=picks)
    want = pq.read_table(tmp_path / "t.parquet", columns=labels)
    same(dbdf.load(tmp_path / "t.dbdf", as_arrow=True), {k: cols[k] for k in labels})
    assert want.column_names == labels
    # Read from a .dbdf frame: load, open and a window of what open shows.
    dbdf.convert(tmp_path / "t.parquet", tmp_path / "num.dbdf", columns=list(cols))
    got = dbdf.load(tmp_path / "num.dbdf", columns=picks)
    assert list(got) == labels
    for k in labels:
        want_k = cols[k].astype(np.uint8) if cols[k].dtype == bool else cols[k]
        assert got[k].tobytes() == want_k.tobytes(), k
    with dbdf.open(tmp_path / "num.dbdf", columns="c_i4") as f:
        assert f[0].labels == ["c_i4"] and f[0].shape == (ROWS, 1)
        assert list(f[0].dtype) == ["c_i4"]
        assert np.array_equal(f[0].read()["c_i4"], cols["c_i4"])
        assert np.array_equal(f[0][10:20, 0]["c_i4"], cols["c_i4"][10:20])
        with pytest.raises(KeyError):
            f[0].rows(0, 5, ["c_f8"])
    with pytest.raises(dbdf.DbdfError, match='no column "nope"'):
        dbdf.load(tmp_path / "num.dbdf", columns=["nope"])
    with pytest.raises(TypeError):
        dbdf.load(tmp_path / "num.dbdf", columns=[1.5])
    dbdf.save(tmp_path / "m.dbdf", np.eye(3))
    with pytest.raises(dbdf.DbdfError, match="columns are picked from a table"):
        dbdf.load(tmp_path / "m.dbdf", columns=[0])
    with pytest.raises(ValueError, match="columns are picked from a table"):
        dbdf.open(tmp_path / "m.dbdf", columns=[0])


def test_big_endian_ipc_files_read_as_pyarrow_swaps_them(tmp_path):
    """The Arrow project's integration file written on a big-endian machine: pyarrow swaps
    its values on read, and so do we."""
    ipc = pytest.importorskip("pyarrow.ipc")
    path = DATA / "arrow" / "arrow-testing" / "primitive_bigendian.arrow_file"
    want = ipc.open_file(path).read_all()
    picks = ["int32_nonnullable", "float64_nonnullable", "uint16_nonnullable", "bool_nullable"]
    dbdf.convert(path, tmp_path / "p.dbdf", from_format="arrow", columns=picks, nulls="zero")
    got = dbdf.load(tmp_path / "p.dbdf")
    assert list(got) == picks
    for name in picks:
        column = want.column(name).fill_null(False if name.startswith("bool") else 0)
        expected = column.to_numpy()
        expected = expected.astype(np.uint8) if expected.dtype == bool else expected
        assert got[name].tobytes() == expected.tobytes(), name
