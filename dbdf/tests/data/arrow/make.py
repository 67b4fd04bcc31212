"""Writes the Parquet and Arrow IPC files the tests read, with pyarrow, pandas and polars
(the reference environment: pip install numpy pyarrow pandas polars). Run from anywhere:
python make.py. The expected values come from numpy: `types.npy` is the same table as a
packed record array (bools as numpy's b1), written by numpy.save."""

import os

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

TYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8", "b1"]
ROWS = 10


def column(k, t):
    r = np.arange(ROWS)
    if t == "b1":
        return r % 2 == 1
    if t[0] == "f":
        return ((r - 2.0) * 0.5 + k).astype(t)
    if t[0] == "i":
        return ((r * 37 + k * 11) % 100 - 50).astype(t)
    return ((r * 37 + k * 11) % 100).astype(t)


def main():
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    columns = {f"f_{t}": column(k, t) for k, t in enumerate(TYPES)}
    records = np.zeros(ROWS, dtype=[(n, c.dtype) for n, c in columns.items()])
    for n, c in columns.items():
        records[n] = c
    np.save("types.npy", records)
    table = pa.table(columns)
    for codec in ["none", "snappy", "zstd", "gzip", "brotli", "lz4"]:
        pq.write_table(table, f"types_{codec}.parquet", row_group_size=4, compression=codec)
    # Version 1.0 files and data page v2 too.
    pq.write_table(table, "types_v1.parquet", row_group_size=4, version="1.0")
    pq.write_table(table, "types_pagev2.parquet", data_page_version="2.0")
    for codec in ["uncompressed", "lz4", "zstd"]:
        feather.write_feather(table, f"types_{codec}.feather", compression=codec,
                              chunksize=4)
    # Dictionary-encoded integer and float columns, kept as dictionaries in the schema.
    pq.write_table(pa.table({
        "ints": pa.array([3, 1, 3, 3, 2, 1], type=pa.int64()).dictionary_encode(),
        "floats": pa.array([0.5, 0.5, -1.0, 0.5, 2.0, -1.0]).dictionary_encode(),
    }), "dictionary.parquet")
    feather.write_feather(pa.table({
        "ints": pa.array([3, 1, 3, 3, 2, 1], type=pa.int64()).dictionary_encode(),
    }), "dictionary.feather", compression="uncompressed")
    # Nulls: row 2 of a float column, row 3 of an int column, row 1 of a bool column.
    pq.write_table(pa.table({
        "x": pa.array([1.5, 2.5, None, 4.5]),
        "n": pa.array([1, 2, 3, None], type=pa.int32()),
        "b": pa.array([True, None, False, True]),
    }), "nulls.parquet")
    pq.write_table(pa.table({"x": pa.array([1.5, None, 2.0])}), "nulls_float.parquet")
    # Columns DAPHNE cannot hold.
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}), "strings.parquet")
    pq.write_table(pa.table({"id": [1, 2], "day": pa.array([0, 1], type=pa.date32())}),
                   "dates.parquet")
    pq.write_table(pa.table({"id": [1, 2], "xs": pa.array([[1, 2], [3]])}), "nested.parquet")
    pq.write_table(pa.table({"p": pa.array([1, 2], type=pa.decimal128(5, 2))}),
                   "decimals.parquet")
    # A matrix's columns without DAPHNE's metadata, and columns of two types.
    pq.write_table(pa.table({f"x{c}": np.arange(4, dtype=np.float64) * (c + 1)
                             for c in range(3)}), "matrix_columns.parquet")
    pq.write_table(pa.table({"a": np.arange(3, dtype=np.int32), "b": np.arange(3) / 2}),
                   "mixed.parquet")
    # From pandas (its index is metadata, not a column) and from polars (zstd by default).
    frame = pd.DataFrame({"a": np.arange(5, dtype=np.int64), "b": np.arange(5) / 4})
    frame.to_parquet("pandas.parquet")
    pl.DataFrame({"a": np.arange(5, dtype=np.int64), "b": np.arange(5) / 4}).write_parquet(
        "polars.parquet")
    pl.DataFrame({"a": np.arange(5, dtype=np.int64), "b": np.arange(5) / 4}).write_ipc(
        "polars.arrow")
    # User attributes in the schema's metadata, beside pandas' own key.
    attributes(pd, pa, pq, feather)


def attributes(pd, pa, pq, feather):
    table = pa.Table.from_pandas(pd.DataFrame({"a": np.arange(3, dtype=np.int64)}))
    metadata = {**table.schema.metadata, b"origin": b"sensor-7", b"units": b"m/s"}
    table = table.replace_schema_metadata(metadata)
    pq.write_table(table, "attributes.parquet")
    feather.write_feather(table, "attributes.feather", compression="uncompressed")


if __name__ == "__main__":
    main()
