"""Copies files of the Parquet project's test suite (apache/parquet-testing, a checkout given
as the first argument) here, and writes MANIFEST.json: what pyarrow reads from each, for
`dbdf/tests/suite/peer_files.rs` to compare with.

For each file, one or more reads: the columns picked (all when null), how nulls are taken
("refuse", or "zero" as pyarrow's `fill_null(0)`), and what the read gives: the rows and,
per column, its label, DAPHNE value type and the CRC-32 of its values' little-endian bytes
as pyarrow decodes them (bools as u8), or the words a refusal must hold (the column it
names: pyarrow reads these files, DAPHNE's format holds numbers only).

Usage: python make.py PARQUET_TESTING_CHECKOUT  (pyarrow 26 wrote the committed manifest)
"""
import json
import shutil
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).parent
TYPES = {
    "bool": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float": "f32", "double": "f64",
}
# Read whole, equal to pyarrow's values.
EQUAL = [
    "bad_data/ARROW-GH-43605.parquet",
    "data/byte_stream_split.zstd.parquet",
    "data/column_chunk_key_value_metadata.parquet",
    "data/concatenated_gzip_members.parquet",
    "data/datapage_v1-corrupt-checksum.parquet",
    "data/datapage_v1-snappy-compressed-checksum.parquet",
    "data/delta_binary_packed.parquet",
    "data/dict-page-offset-zero.parquet",
    "data/nan_in_stats.parquet",
]
# Refused whole, naming a column; some read in part or with nulls filled too.
REFUSED = {
    "data/alltypes_plain.parquet": ('"date_string_col" of type Binary', {
        "columns": ["id", "bool_col", "tinyint_col", "smallint_col", "int_col",
                    "bigint_col", "float_col", "double_col"]}),
    "data/nested_structs.rust.parquet": ('"roll_num" of type Struct', None),
    "data/int32_decimal.parquet": ('"value" of type Decimal128(4, 2)', None),
    "data/fixed_length_byte_array.parquet": ('"flba_field" of type FixedSizeBinary(4)', None),
    "data/float16_nonzeros_and_nans.parquet": ('"x" of type Float16', None),
    "data/int96_from_spark.parquet": ('"a" of type Timestamp(ns)', None),
    "data/int32_with_null_pages.parquet": ('the null at row 4 of column "int32_field"',
                                           {"nulls": "zero"}),
    "shredded_variant/case-001.parquet": ('"var" of type Struct("metadata"', None),
}
# Refused by pyarrow too: an error of one line, not a crash.
BROKEN = ["bad_data/PARQUET-1481.parquet", "data/incorrect_map_schema.parquet"]


def values(table: pa.Table) -> dict:
    columns = []
    for name, column in zip(table.column_names, table.columns):
        column = column.combine_chunks()
        if column.null_count:
            column = pc.fill_null(column, pa.scalar(0, column.type))
        array = column.to_numpy(zero_copy_only=False)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        kind = TYPES[str(column.type)]
        columns.append([name, kind, zlib.crc32(array.astype(array.dtype.newbyteorder("<")).tobytes())])
    return {"rows": table.num_rows, "columns": columns}


def main(checkout: Path) -> None:
    manifest = {}
    for rel in EQUAL + list(REFUSED) + BROKEN:
        source = checkout / rel
        target = HERE / rel.replace("/", "__")
        shutil.copyfile(source, target)
        reads = []
        if rel in EQUAL:
            reads.append({"columns": None, "nulls": "refuse", "expect": values(pq.read_table(source))})
        elif rel in REFUSED:
            words, also = REFUSED[rel]
            pq.read_table(source)  # pyarrow reads it
            reads.append({"columns": None, "nulls": "refuse", "expect": {"refused": words}})
            if also:
                columns = also.get("columns")
                nulls = also.get("nulls", "refuse")
                table = pq.read_table(source, columns=columns)
                reads.append({"columns": columns, "nulls": nulls, "expect": values(table)})
        else:
            try:
                pq.read_table(source)
                raise SystemExit(f"pyarrow reads {rel}")
            except (OSError, pa.ArrowException):
                reads.append({"columns": None, "nulls": "refuse", "expect": {"refused": ""}})
        manifest[target.name] = {"source": f"apache/parquet-testing {rel}", "reads": reads}
    (HERE / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
