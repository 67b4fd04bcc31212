"""Spark's DataFrames over ``.dbdf`` files and folders of DAPHNE's segments: the data source
``"dbdf"`` (extra ``spark``: pyspark 4, whose Python data sources it uses).

>>> dbdf.spark.register(spark)                                   # doctest: +SKIP
>>> df = spark.read.format("dbdf").load("scores.dbdf")           # doctest: +SKIP
>>> df.write.format("dbdf").mode("overwrite").save("out.hdfs")   # doctest: +SKIP

This is the source's Python half (also registered as ``"dbdf_python"``, the name the JVM
half in :func:`jar` hands its writes to). What reads give, their options, partitions and
the write protocol: ``docs/scaling-out.md``, "Spark".
"""

from __future__ import annotations

import json
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
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from . import _dbdf
from ._files import ObjectFiles, is_url, locate, open_options
from ._lazy import _DTYPES

__all__ = ["DbdfDataSource", "DbdfPythonDataSource", "jar", "register", "save"]

# Rows per record batch handed to Spark: about this many bytes of cells.
_BATCH_BYTES = 8 << 20
# The field metadata key that keeps a column's value type in the file.
_VALUE_TYPE_KEY = _dbdf.VALUE_TYPE_KEY


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
    """What a read gives: where the rows are, which columns, in which layout (the rules:
    ``dbdf::plan::spark_table``)."""

    where: ObjectFiles
    data_type: str
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
        layout, row_index = options.get("layout", "columns").lower(), options.get("rowIndex")
        table = (_words(options.get("columns")), layout, row_index,
                 _dbdf.redact(path))  # no URL secret in a message
        where, obj = locate(path, int(options.get("object", 0)), opts, table)
        columns, schema = where.table
        if obj.data_type == "Frame":
            columns = [obj.labels[j] for j in columns]
        per_row = where.row_bytes * max(1, len(columns)) // max(1, obj.shape[1])
        return _Plan(where, obj.data_type, columns, layout, row_index,
                     StructType.fromJson(json.loads(schema)),
                     max(1, _BATCH_BYTES // max(1, per_row)), where.parts[0])


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
        # The file's types as Spark's (unsigned ones widened: the plan's schema), then a
        # schema the reader was given (spark.read.schema(...)): each cast exact or an error.
        batch = pa.RecordBatch.from_arrays(arrays, names=self.given.names).cast(self.given)
        return batch if self.wanted == self.given else batch.cast(self.wanted)


def _arrays(obj: Any, plan: _Plan, a: int, b: int, first: int) -> list:
    """Rows ``a:b`` of the plan's columns in its layout, in the file's types."""
    if plan.data_type == "Frame":
        got = obj.rows(a, b, plan.columns)
        return [pa.array(got[c]) for c in plan.columns]
    lo, hi = min(plan.columns, default=0), max(plan.columns, default=-1) + 1
    block = obj[a:b, lo:hi]
    picked = [j - lo for j in plan.columns]
    if plan.layout == "triples":
        import scipy.sparse as sp

        block = sp.csr_array(block)
        if picked != list(range(hi - lo)):
            block = block[:, picked]
        coo = block.tocoo()
        rows = coo.row.astype(np.int64) + (first + a)
        cols = np.asarray(plan.columns, dtype=np.int64)[coo.col]
        return [pa.array(rows), pa.array(cols), pa.array(coo.data)]
    if hasattr(block, "toarray"):
        block = block.toarray()
    if picked != list(range(hi - lo)):
        block = block[:, picked]
    if plan.layout == "array":
        flat = pa.array(np.ascontiguousarray(block).reshape(-1))
        offsets = pa.array(np.arange(0, block.size + 1, max(1, block.shape[1]), dtype=np.int32))
        return [pa.ListArray.from_arrays(offsets, flat)]
    columns = np.ascontiguousarray(block.T)
    return [pa.array(columns[k]) for k in range(columns.shape[0])]


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
                      if f.metadata.get(_VALUE_TYPE_KEY, "").startswith("u")}
        for field in schema.fields:  # refused before any task runs
            if field.name not in file_types:
                _dbdf.check_spark_column(field.name, field.dataType.simpleString())
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
            appending = not self.overwrite and os.path.exists(self.target)
            if appending and self.if_exists == "error":
                raise FileExistsError(f"{self.target} appeared while the job ran")
            if not written and not appending:
                written = [self._empty_segment()]
            # Empty partitions make no segment; an append links the segments there first.
            _dbdf.commit_segments(self.staged, self.target, [(m.path, m.rows) for m in written],
                                  append=appending)
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
            pa.field(f.name, pa.from_numpy_dtype(np.dtype(_DTYPES[self.file_types[f.name]])),
                     nullable=f.nullable)
            if f.name in self.file_types else f for f in batch.schema])
        return batch.cast(schema, safe=True)
