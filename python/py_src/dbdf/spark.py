"""Spark's DataFrames over ``.dbdf`` files: a data source named ``"dbdf"`` (extra ``spark``:
pyspark 4, whose Python data sources it uses).

>>> dbdf.spark.register(spark)                                   # doctest: +SKIP
>>> df = spark.read.format("dbdf").load("scores.dbdf")           # doctest: +SKIP
>>> df.write.format("dbdf").mode("overwrite").save("out.hdfs")   # doctest: +SKIP

Installing the wheel also registers the source by itself (module ``pyspark_dbdf``, found by
Spark's lookup of Python data sources), so ``register`` is needed only where the package is
not importable by Spark's own Python workers.

This is the source's Python half. Its JVM half, the jar at :func:`jar` given to a session as
it starts (``spark.jars``), then holds the name ``"dbdf"``: it reads into Spark's column
vectors without a Python worker, only the columns a query uses, and answers ``count()``
from the headers; it hands writes to this half, registered a second time as
``"dbdf_python"`` (module ``pyspark_dbdf_python``), which also reads what the JVM half does
not (URLs, the ``array`` and ``triples`` layouts).

**Reading** (``spark.read.format("dbdf")``): a frame gives its labels and column types; a
matrix gives columns ``c0`` ... ``c{n-1}`` of its value type, or one array column
``values`` (``layout="array"``), or ``(row, col, value)`` triples of its non-zero cells
(``layout="triples"``, the natural one for CSR matrices). Unsigned types widen to the next
signed Spark type that holds them (``u64`` to ``decimal(20,0)``), the file's type kept in the
field's metadata (``dbdf.value_type``), where writes find it again. Partitions are the
object's segments, its rows of tiles, or row bands of about 128 MiB; each is read on an
executor by the lazy reader and handed over as Arrow record batches of a few MiB.
Options: ``object`` (which object of the file, from 0), ``columns`` (labels, or for a
matrix ``c<j>`` names or indices, comma-separated: only those columns' bytes are read),
``layout``, ``rowIndex`` (a name: a column of row numbers is added), ``dialect``, and
``storage.<key>`` for the object store of a URL.

**Writing** (``df.write.format("dbdf")``): DAPHNE's segmented layout, a folder ``NAME.hdfs``
(the path as given) of one segment per non-empty partition, in partition order, each in
DAPHNE's runtime dialect with its ``.meta``, and the local sidecar ``NAME.hdfs.meta``.
Each task writes its segment into a hidden scratch folder beside the target (spilling its
record batches to an Arrow file first, so memory holds a batch, not the partition); the
job's commit moves the segments into a folder that replaces the target whole. A failed or
aborted job leaves the target as it was; a killed driver leaves at most the hidden scratch
folder (``.NAME.tmp-*-spark``). ``mode("overwrite")`` replaces the target,
``mode("append")`` adds segments after those already there (their columns and types must
agree). Spark 4 refuses the ``error`` and ``ignore`` modes for every Python data source
before any of this code runs: :func:`save` gives them, as Spark's built-in sources do.
Option ``object="matrix"`` writes a dense matrix of the columns (one value type, or
``valueType``) instead of a frame. Nulls are refused, naming the column and row; so are
types DAPHNE lacks (strings, dates, decimals but ``dbdf.value_type``'s, 16-bit integers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)

from . import _dbdf
from ._files import ObjectFiles, is_url, locate, open_options

__all__ = ["DbdfDataSource", "DbdfPythonDataSource", "jar", "register", "save"]

# Rows per record batch handed to Spark: about this many bytes of cells.
_BATCH_BYTES = 8 << 20
# The field metadata key that keeps a column's value type in the file.
_VALUE_TYPE_KEY = "dbdf.value_type"
# Spark's types by the names the planner gives them (``dbdf::plan::spark_type``), and so
# each value type's Spark type (unsigned ones widened).
_BY_NAME = {"tinyint": ByteType(), "smallint": ShortType(), "int": IntegerType(),
            "bigint": LongType(), "decimal(20,0)": DecimalType(20, 0), "float": FloatType(),
            "double": DoubleType()}
_SPARK_TYPES = {vt: _BY_NAME[_dbdf.spark_type(vt)]
                for vt in ("u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64")}
# The unsigned types as Arrow has them, and the Spark types that hold them, in Arrow.
_ARROW_TYPES = {"u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64()}
_WIDENED = {vt: to_arrow_type(_SPARK_TYPES[vt]) for vt in _ARROW_TYPES}
_LAYOUTS = ("columns", "array", "triples")


def register(spark: Any) -> None:
    """Registers the data source ``"dbdf"`` with the session ``spark``, and again as
    ``"dbdf_python"`` (the name the JVM source's writes use)."""
    spark.dataSource.register(DbdfDataSource)
    spark.dataSource.register(DbdfPythonDataSource)


def jar() -> str:
    """The path of the jar of the JVM data source ``"dbdf"``, shipped in the wheel: give it
    to the session as it starts, ``SparkSession.builder.config("spark.jars", dbdf.spark.jar())``.

    In the JVM, reads take only the columns a query uses, answer ``count()`` from the headers
    and fill Spark's column vectors without a Python worker; writes still run on the Python
    workers (through ``"dbdf_python"``).

    Raises:
        FileNotFoundError: a package built without the jar (``spark/build.sh`` makes it).
    """
    path = os.path.join(os.path.dirname(__file__), "jars", "dbdf-spark.jar")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: this dbdf package was built without the JVM data "
                                "source (spark/build.sh builds it)")
    return path


def save(df: Any, path: str, mode: str = "errorifexists", **options: Any) -> None:
    """Writes ``df`` to ``path`` as ``df.write.format("dbdf")`` does, in any of Spark's save
    modes: ``"errorifexists"``/``"error"`` (the default, as for Spark's built-in sources:
    a ``FileExistsError`` where ``path`` exists), ``"ignore"`` (nothing happens where it
    exists), ``"append"`` and ``"overwrite"``. ``options`` are the source's write options.

    Spark 4 takes only ``append`` and ``overwrite`` from a Python data source; the other two
    are checked here, on the driver, and once more by the job's commit.
    """
    mode = mode.lower()
    if mode not in ("errorifexists", "error", "ignore", "append", "overwrite"):
        raise ValueError(f"unknown save mode {mode!r}")
    exists = os.path.exists(path)
    if mode == "ignore" and exists:
        return
    if mode in ("errorifexists", "error"):
        if exists:
            raise FileExistsError(f"{path} already exists (save mode {mode!r})")
        options = {**options, "ifExists": "error"}
    writer = df.write.format("dbdf").options(**{k: str(v) for k, v in options.items()})
    writer.mode("overwrite" if mode == "overwrite" else "append").save(path)


def _words(value: Optional[str]) -> list[str]:
    return [w.strip() for w in (value or "").split(",") if w.strip()]


def _field(name: str, value_type: str) -> StructField:
    return StructField(name, _SPARK_TYPES[value_type], nullable=False,
                       metadata={_VALUE_TYPE_KEY: value_type})


class DbdfDataSource(DataSource):
    """The ``"dbdf"`` data source: reads objects of ``.dbdf`` files and folders of DAPHNE's
    segments, writes folders of segments (see the module's documentation)."""

    @classmethod
    def name(cls) -> str:
        return "dbdf"

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise ValueError("the dbdf data source needs a path: load(path) or save(path)")
        return path

    def _plan(self) -> "_Plan":
        if not hasattr(self, "_planned"):
            self._planned = _Plan.make(self._path(), self.options)
        return self._planned

    def schema(self) -> StructType:
        return self._plan().schema

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader(self._plan(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return _Writer.make(self._path(), schema, overwrite, self.options)


class DbdfPythonDataSource(DbdfDataSource):
    """The same source, named ``"dbdf_python"``: where the JVM source holds ``"dbdf"``."""

    @classmethod
    def name(cls) -> str:
        return "dbdf_python"


@dataclass
class _Plan:
    """What a read gives: where the rows are, which columns, in which layout."""

    where: ObjectFiles
    data_type: str
    value_types: list  # of the chosen columns
    columns: list  # labels (frames) or indices (matrices)
    layout: str
    row_index: Optional[str]
    schema: StructType
    batch_rows: int
    parts: tuple  # rows per partition

    @staticmethod
    def make(path: str, options: Any) -> "_Plan":
        storage = {k[len("storage."):]: v for k, v in options.items() if k.startswith("storage.")}
        opts = open_options(options.get("dialect"), storage or None)
        where, obj = locate(path, int(options.get("object", 0)), opts)
        shown = _dbdf.redact(path)  # no URL secret in a message
        layout = options.get("layout", "columns").lower()
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(_LAYOUTS)}, not {layout!r}")
        row_index = options.get("rowIndex")
        chosen = _words(options.get("columns"))
        if obj.data_type == "Frame":
            labels = obj.labels or []
            types = dict(zip(labels, obj._info["value_types"]))
            missing = [c for c in chosen if c not in types]
            if missing:
                raise ValueError(f"{shown}: no columns {missing}; the frame has {labels}")
            if layout != "columns":
                raise ValueError(f"layout {layout!r} is for matrices; {shown} holds a frame")
            columns = chosen or labels
            value_types = [types[c] for c in columns]
            fields = [_field(c, t) for c, t in zip(columns, value_types)]
        else:
            if obj.data_type not in ("DenseMatrix", "CSRMatrix"):
                raise ValueError(f"{shown}: a {obj.data_type} is not a table")
            cols = obj.shape[1]
            names = _dbdf.matrix_column_names(cols)
            columns = [_column_index(c, names, shown) for c in chosen] or list(range(cols))
            vt = obj._info["value_type"]
            value_types = [vt] * len(columns)
            if layout == "columns":
                fields = [_field(names[j], vt) for j in columns]
            elif layout == "array":
                fields = [StructField("values", ArrayType(_SPARK_TYPES[vt], containsNull=False),
                                      nullable=False, metadata={_VALUE_TYPE_KEY: vt})]
            else:
                fields = [StructField("row", LongType(), nullable=False),
                          StructField("col", LongType(), nullable=False), _field("value", vt)]
        if row_index:
            fields.insert(0, StructField(row_index, LongType(), nullable=False))
        per_row = where.row_bytes * max(1, len(columns)) // max(1, obj.shape[1])
        return _Plan(where, obj.data_type, value_types, columns, layout, row_index,
                     StructType(fields), max(1, _BATCH_BYTES // max(1, per_row)),
                     where.parts[0])


def _column_index(name: str, names: list, path: str) -> int:
    """A matrix's column by its name or its position."""
    if name in names:
        return names.index(name)
    if name.isdigit() and int(name) < len(names):
        return int(name)
    raise ValueError(f"{path}: no column {name!r}; the matrix has {names[0]} to {names[-1]}"
                     if names else f"{path}: no column {name!r}; the matrix has none")


@dataclass
class _Rows(InputPartition):
    start: int
    stop: int


class _Reader(DataSourceReader):
    def __init__(self, plan: _Plan, schema: StructType) -> None:
        self.plan = plan
        self.wanted = to_arrow_schema(schema)
        self.given = to_arrow_schema(plan.schema)

    def partitions(self) -> list:
        starts = np.cumsum((0,) + self.plan.parts)
        return [_Rows(int(a), int(b)) for a, b in zip(starts, starts[1:]) if b > a]

    def read(self, partition: _Rows) -> Iterator[pa.RecordBatch]:
        step = self.plan.batch_rows
        for obj, lo, hi, first in self.plan.where.pieces(partition.start, partition.stop):
            for a in range(lo, hi, step):
                yield self._batch(obj, a, min(hi, a + step), first)

    def _batch(self, obj: Any, a: int, b: int, first: int) -> pa.RecordBatch:
        plan = self.plan
        arrays = _arrays(obj, plan, a, b, first)
        if plan.row_index:
            arrays.insert(0, pa.array(np.arange(first + a, first + b, dtype=np.int64)))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.given)
        # A schema the reader was given (spark.read.schema(...)) takes what casts exactly.
        return batch if self.wanted == self.given else batch.cast(self.wanted)


def _arrow(values: np.ndarray, value_type: str) -> pa.Array:
    """A column of the file's type as Spark takes it (unsigned types widened)."""
    if value_type in _ARROW_TYPES:
        return pa.array(values, type=_ARROW_TYPES[value_type]).cast(_WIDENED[value_type])
    return pa.array(values)


def _arrays(obj: Any, plan: _Plan, a: int, b: int, first: int) -> list:
    if plan.data_type == "Frame":
        got = obj.rows(a, b, plan.columns)
        return [_arrow(got[c], t) for c, t in zip(plan.columns, plan.value_types)]
    lo, hi = min(plan.columns, default=0), max(plan.columns, default=-1) + 1
    block = obj[a:b, lo:hi]
    picked = [j - lo for j in plan.columns]
    vt = plan.value_types[0] if plan.value_types else "f64"
    if plan.layout == "triples":
        import scipy.sparse as sp

        block = sp.csr_array(block)
        if picked != list(range(hi - lo)):
            block = block[:, picked]
        coo = block.tocoo()
        rows = coo.row.astype(np.int64) + (first + a)
        cols = np.asarray(plan.columns, dtype=np.int64)[coo.col]
        return [pa.array(rows), pa.array(cols), _arrow(coo.data, vt)]
    if hasattr(block, "toarray"):
        block = block.toarray()
    if picked != list(range(hi - lo)):
        block = block[:, picked]
    if plan.layout == "array":
        flat = _arrow(np.ascontiguousarray(block).reshape(-1), vt)
        offsets = pa.array(np.arange(0, block.size + 1, max(1, block.shape[1]), dtype=np.int32))
        return [pa.ListArray.from_arrays(offsets, flat)]
    columns = np.ascontiguousarray(block.T)
    return [_arrow(columns[k], vt) for k in range(columns.shape[0])]


def _check_writable(schema: StructType, file_types: dict) -> None:
    """Refuses, before any task runs, a column that no segment can hold."""
    from pyspark.sql.types import BooleanType

    for field in schema.fields:
        kind = field.dataType
        if field.name in file_types or isinstance(
                kind, (BooleanType, ByteType, IntegerType, LongType, FloatType, DoubleType)):
            continue
        if isinstance(kind, ShortType):
            why = "DAPHNE's runtime has no 16-bit integers: cast it to int"
        else:
            why = ("DAPHNE's binary format holds integers and floats only (booleans as u8): "
                   "drop it, or cast it to double or an integer type")
        raise ValueError(f"column {field.name!r} is a {kind.simpleString()}: {why}")


@dataclass
class _Written(WriterCommitMessage):
    """A task's segment: its partition, its file in the scratch folder, its rows."""

    partition: int
    path: str
    rows: int


@dataclass
class _Writer(DataSourceArrowWriter):
    target: str
    scratch: str
    staged: str
    overwrite: bool
    if_exists: str
    data_type: Optional[str]
    value_type: Optional[str]
    file_types: dict  # column -> unsigned value type kept in the field's metadata
    arrow_schema: pa.Schema
    nulls: Optional[str]

    @staticmethod
    def make(target: str, schema: StructType, overwrite: bool, options: Any) -> "_Writer":
        if is_url(target):
            raise ValueError(f"{target}: the dbdf source writes to file system paths only "
                             "(a shared one, for a cluster)")
        if_exists = options.get("ifExists", "").lower()
        if if_exists == "error" and os.path.exists(target):
            raise FileExistsError(f"{target} already exists (save mode 'errorifexists')")
        obj = options.get("object", "frame").lower()
        if obj not in ("frame", "matrix"):
            raise ValueError(f"object must be 'frame' or 'matrix', not {obj!r}")
        file_types = {f.name: f.metadata[_VALUE_TYPE_KEY] for f in schema.fields
                      if f.metadata.get(_VALUE_TYPE_KEY) in _ARROW_TYPES}
        _check_writable(schema, file_types)
        scratch, staged = map(os.fspath, _dbdf.stage_segments(target, "spark"))
        return _Writer(target, scratch, staged, overwrite, if_exists,
                       "dense" if obj == "matrix" else None, options.get("valueType"),
                       file_types, to_arrow_schema(schema), options.get("nulls"))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _Written:
        from pyspark import TaskContext

        from . import convert

        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        attempt = context.attemptNumber() if context else 0
        stem = os.path.join(self.scratch, f"part-{partition:05d}-{attempt}")
        rows = 0
        # The partition is spilled to an Arrow file, then converted: a segment's header needs
        # its row count before its values, and memory holds a batch, not the partition.
        try:
            with pa.OSFile(stem + ".arrow", "wb") as sink:
                writer = None
                for batch in iterator:
                    batch = self._to_file_types(batch)
                    if writer is None:
                        writer = pa.ipc.new_file(sink, batch.schema)
                    writer.write_batch(batch)
                    rows += batch.num_rows
                if writer is None:
                    empty = pa.RecordBatch.from_pylist([], schema=self.arrow_schema)
                    writer = pa.ipc.new_file(sink, self._to_file_types(empty).schema)
                writer.close()
            options = {"data_type": self.data_type, "value_type": self.value_type,
                       "nulls": self.nulls}
            try:
                convert(stem + ".arrow", stem + ".dbdf", from_format="arrow",
                        to_format="dbdf", dialect="daphne",
                        **{k: v for k, v in options.items() if v})
            except _dbdf.DbdfError as e:
                # The scratch file's name means nothing to the job's author; the partition
                # does, and the option that fills nulls is the source's.
                why = str(e).split(": ", 1)[-1].replace("--nulls ", "option nulls=")
                raise _dbdf.DbdfError(f"partition {partition} (rows from its first): {why}") \
                    from None
        finally:
            if os.path.exists(stem + ".arrow"):
                os.remove(stem + ".arrow")
        return _Written(partition, stem + ".dbdf", rows)

    def commit(self, messages: list) -> None:
        try:
            written = sorted((m for m in messages if m is not None and m.path),
                             key=lambda m: m.partition)
            # Empty partitions make no segment, unless all are: the layout needs one.
            kept = [m for m in written if m.rows] or written[:1]
            earlier = []
            if not self.overwrite and os.path.exists(self.target):
                if self.if_exists == "error":
                    raise FileExistsError(f"{self.target} appeared while the job ran")
                # Appending: the segments there come first (linked, not copied), then ours.
                earlier = [os.fspath(p) for p, _, _ in _dbdf.segment_files(self.target)]
            if not kept and not earlier:
                kept = [self._empty_segment()]
            name = os.path.basename(self.staged)
            sources = [(p, os.link) for p in earlier] + [(m.path, os.rename) for m in kept]
            for k, (path, place) in enumerate(sources, 1):
                for suffix in ("", ".meta"):  # the segment and its sidecar
                    place(path + suffix,
                          os.path.join(self.staged, _dbdf.segment_name(name, k) + suffix))
            _dbdf.commit_segments(self.staged, self.target)
        finally:
            _dbdf.discard_scratch(self.scratch)

    def _empty_segment(self) -> _Written:
        """The segment of a job without partitions: no rows, the schema's columns."""
        return self.write(iter([]))

    def abort(self, messages: list) -> None:
        _dbdf.discard_scratch(self.scratch)

    def _to_file_types(self, batch: Any) -> pa.RecordBatch:
        """Columns read from a file with an unsigned type (``dbdf.value_type`` in their
        metadata) cast back to it, exactly or with an error."""
        if not self.file_types:
            return batch
        schema = pa.schema([
            pa.field(f.name, _ARROW_TYPES[self.file_types[f.name]], nullable=f.nullable)
            if f.name in self.file_types else f for f in batch.schema])
        return batch.cast(schema, safe=True)
