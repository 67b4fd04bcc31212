"""Arrow's stream interface (``__arrow_c_stream__``): DuckDB, Polars and pyarrow read a
``.dbdf`` object batch by batch, local or in a bucket (moto's server)."""

import json
import math

import numpy as np
import pyarrow as pa
import pytest

import dbdf
from conftest import DAPHNE

MANIFEST = {e["file"]: e for e in json.loads((DAPHNE / "MANIFEST.json").read_text())}


def table(stream):
    return pa.RecordBatchReader.from_stream(stream).read_all()


def test_a_frame_daphne_wrote_reads_in_pyarrow_duckdb_and_polars_as_its_manifest_says():
    import duckdb
    import polars as pl

    path = DAPHNE / "frame_mixed_3x8.dbdf"
    entry = MANIFEST["frame_mixed_3x8.dbdf"]
    expected = {}
    for part in entry["values"].split(": ", 1)[1].split(" | "):
        name, rest = part.split(":", 1)
        vt, values = rest.split("=", 1)
        expected[name] = (vt, eval(values, {"__builtins__": {}}, {}))
    arrow_types = {"si64": pa.int64(), "f64": pa.float64(), "si32": pa.int32(), "ui8": pa.uint8(),
                   "f32": pa.float32(), "ui64": pa.uint64(), "si8": pa.int8(), "ui32": pa.uint32()}
    loaded = dbdf.load(path)

    obj = dbdf.open(path)[0]
    t = table(obj)
    assert t.column_names == list(expected)
    for name, (vt, values) in expected.items():
        assert t.schema.field(name).type == arrow_types[vt]
        column = t.column(name).to_numpy()
        assert column.tolist() == pytest.approx(values, rel=1e-7)
        assert column.tobytes() == loaded[name].tobytes()

    s = obj.arrow()
    by_duckdb = duckdb.sql("select id, price, quantity_total from s").fetchnumpy()
    assert by_duckdb["id"].tolist() == [1, -2, 9000000000]
    assert by_duckdb["price"].tolist() == [0.5, -1.25, 1e100]
    assert by_duckdb["quantity_total"].tolist() == [10, 20, 2**64 - 1]
    # Each stream taken starts anew: a second query reads the rows again.
    assert duckdb.sql("select count(*) from s").fetchall()[0] == (3,)

    frame = pl.DataFrame(obj)
    assert frame.columns == list(expected)
    assert frame["qty"].to_list() == [7, -8, 2147483647]
    assert frame["c"].dtype == pl.UInt32


@pytest.mark.parametrize("name", ["dense_f64_100x7.dbdf", "dense_ui64_max_2x3.dbdf",
                                  "csr_f64_5x6.dbdf", "dense_f64_0x4.dbdf"])
def test_a_matrix_daphne_wrote_is_a_table_of_its_columns(name):
    import duckdb
    import polars as pl

    path = DAPHNE / name
    m = dbdf.load(path)
    dense = m.toarray() if hasattr(m, "toarray") else m
    t = table(dbdf.open(path)[0])
    assert t.column_names == [f"c{j}" for j in range(dense.shape[1])]
    assert t.schema.metadata[b"daphne:data_type"] == MANIFEST[name]["object"].encode()
    assert t.num_rows == dense.shape[0]
    assert np.array_equal(np.column_stack([c.to_numpy() for c in t.columns]), dense)
    by_polars = pl.DataFrame(dbdf.open(path)[0])
    assert by_polars.columns == t.column_names
    assert np.array_equal(by_polars.to_numpy().reshape(dense.shape), dense)
    s = dbdf.arrow_reader(path, ["c1"])
    got = duckdb.sql("select sum(c1::double) from s").fetchall()[0][0]
    assert got == (pytest.approx(float(dense[:, 1].sum())) if len(dense) else None)


def test_columns_and_batches_as_asked(tmp_path):
    rows = 10_000
    columns = {"a": np.arange(rows, dtype=np.int32), "b": np.linspace(0, 1, rows),
               "c": np.arange(rows, dtype=np.uint8)}
    dbdf.save(tmp_path / "f.dbdf", columns)
    reader = pa.RecordBatchReader.from_stream(
        dbdf.arrow_reader(tmp_path / "f.dbdf", ["c", "b"], batch_rows=4096))
    batches = list(reader)
    assert [b.num_rows for b in batches] == [4096, 4096, 1808]
    t = pa.Table.from_batches(batches)
    assert t.column_names == ["c", "b"]
    assert t.column("b").to_numpy().tobytes() == columns["b"].tobytes()
    assert t.column("c").to_numpy().tobytes() == columns["c"].tobytes()
    # Positions pick as well; a matrix's columns are c0, c1, ...
    m = np.arange(60, dtype=np.float32).reshape(12, 5)
    dbdf.save(tmp_path / "m.dbdf", m, tile=(4, 2))
    t = table(dbdf.open(tmp_path / "m.dbdf")[0].arrow([4, "c1"], batch_rows=5))
    assert t.column_names == ["c4", "c1"]
    assert t.column("c4").to_numpy().tolist() == m[:, 4].tolist()
    assert t.column("c1").type == pa.float32()
    # A file opened with columns streams those.
    t = table(dbdf.open(tmp_path / "f.dbdf", columns=["b"])[0])
    assert t.column_names == ["b"]


def test_bad_picks_and_widths_are_errors_naming_them(tmp_path):
    dbdf.save(tmp_path / "f.dbdf", {"a": np.arange(3.0)})
    with pytest.raises(ValueError, match='no column "z"'):
        dbdf.arrow_reader(tmp_path / "f.dbdf", ["z"]).__arrow_c_stream__()
    dbdf.save(tmp_path / "w.dbdf", np.zeros((1, 70_000)))
    with pytest.raises(ValueError, match="more than 65536"):
        dbdf.arrow_reader(tmp_path / "w.dbdf").__arrow_c_schema__()


def test_a_remote_frame_streams_only_the_picked_columns_blocks(s3):
    import duckdb

    rows = 200_000
    rng = np.random.default_rng(7)
    columns = {f"c{j}": rng.random(rows) for j in range(8)}
    dbdf.save("s3://data/frame.dbdf", columns, storage_options=s3.options())
    whole = 8 * rows * 8
    f = dbdf.open("s3://data/frame.dbdf", storage_options=s3.options())
    s = f[0].arrow(["c0", "c1"])
    got = duckdb.sql("select sum(c0), avg(c1) from s").fetchall()[0]
    assert got[0] == pytest.approx(columns["c0"].sum())
    assert got[1] == pytest.approx(columns["c1"].mean())
    fetched = f.requests["bytes_fetched"]
    # The two columns' bytes, once (the opening's read-ahead among them), and headers.
    assert 2 * rows * 8 <= fetched <= 2 * rows * 8 + (1 << 20), fetched
    assert fetched < whole / 3
    assert math.isclose(table(f[0].arrow(["c7"])).column(0).to_numpy().sum(),
                        columns["c7"].sum())
