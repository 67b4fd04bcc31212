"""The lazy handle: a file's index, and reads of objects and windows that touch only the
blocks (and, of dense blocks, the rows) they need."""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from . import _dbdf
from ._values import wrap

_DTYPES = {
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "f32": np.float32,
    "f64": np.float64,
}

Key = Union[int, slice, tuple]


class File:
    """An open ``.dbdf`` file: ``len(f)`` objects, ``f[i]`` the i-th as a :class:`LazyObject`.

    Only headers have been read. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self, index: "_dbdf.Index", opened: Optional[tuple] = None, columns: Any = None
    ) -> None:
        self._index = index
        infos = index.objects()
        if columns is not None:
            infos = [_projected(i, info, columns) for i, info in enumerate(infos)]
        self._objects = [LazyObject(index, i, info, opened) for i, info in enumerate(infos)]

    def __len__(self) -> int:
        return len(self._objects)

    def __getitem__(self, i: int) -> "LazyObject":
        return self._objects[i]

    def __iter__(self) -> Iterator["LazyObject"]:
        return iter(self._objects)

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Releases the file; later reads raise ValueError."""
        self._index.close()

    @property
    def requests(self) -> Optional[dict[str, int]]:
        """For a file behind a URL, the requests made so far and the bytes they fetched
        (``{"requests": ..., "bytes_fetched": ..., "bytes_sent": ...}``); ``None`` for a
        local file."""
        return self._index.requests()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._index.closed

    def __repr__(self) -> str:
        return f"<dbdf.File: {len(self)} object(s){' (closed)' if self.closed else ''}>"


class LazyObject:
    """One object of an open file, not yet read.

    ``obj[r0:r1, c0:c1]`` reads that window (a numpy array, a ``scipy.sparse.csr_array``,
    or for frames a dict of columns; frame columns may be chosen by label:
    ``obj[0:10, ["a", "b"]]``). ``obj.read()`` reads it whole.
    """

    def __init__(
        self, index: "_dbdf.Index", position: int, info: dict, opened: Optional[tuple] = None
    ) -> None:
        self._index = index
        self._position = position
        self._info = info
        # The path and the options it was opened with, for Dask's workers to open it again.
        self._opened = opened

    @property
    def data_type(self) -> str:
        """``"DenseMatrix"``, ``"CSRMatrix"``, ``"Frame"`` or ``"Scalar"``."""
        return self._info["data_type"]

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)``."""
        return tuple(self._info["shape"])

    @property
    def dtype(self) -> Union[np.dtype, dict]:
        """The numpy dtype of a matrix; for a frame, a dict of label -> dtype."""
        if self.data_type == "Frame":
            return {
                label: np.dtype(_DTYPES[vt])
                for label, vt in zip(self._info["labels"], self._info["value_types"])
            }
        return np.dtype(_DTYPES[self._info["value_type"]])

    @property
    def labels(self) -> Optional[list[str]]:
        """A frame's column labels (None for matrices)."""
        return self._info.get("labels")

    @property
    def dialect(self) -> str:
        """``"spec"`` or ``"daphne"`` (DAPHNE's runtime dialect)."""
        return self._info["dialect"]

    @property
    def blocks(self) -> list[dict]:
        """Each block's ``row``, ``col``, ``shape``, ``block_type``, ``value_type``, ``nnz``
        and byte ``range`` in the file."""
        return self._info["blocks"]

    @property
    def nbytes_on_disk(self) -> int:
        """The object's size in the file."""
        start, end = self._info["range"]
        return end - start

    def read(self, *, as_pandas: bool = False) -> Any:
        """The whole object (numpy array, csr_array, or dict of columns / DataFrame)."""
        if "picked" in self._info:
            return self.rows(0, self.shape[0], as_pandas=as_pandas)
        return wrap(self._index.read(self._position), as_pandas)

    def to_dask(self, chunks: Any = None) -> Any:
        """This object as a ``dask.array.Array`` (a frame: a ``dask.dataframe.DataFrame``)
        read on Dask's workers, chunked by the file's tiles: see :func:`dbdf.to_dask`."""
        if self._opened is None:
            raise TypeError("an object of bytes in memory has no file for Dask's workers to open")
        from ._dask import to_dask

        path, options = self._opened
        if "picked" in self._info:
            options = dict(options, columns=self.labels)
        return to_dask(path, self._position, chunks=chunks, **options)

    def arrow(self, columns: Any = None, *, batch_rows: Optional[int] = None) -> "ArrowStream":
        """This object as Arrow record batches read one at a time: see :class:`ArrowStream`.
        ``columns`` (as in :func:`dbdf.load`; a matrix's are ``c0``, ``c1``, ...) reads only
        those; ``batch_rows`` rows per batch (by default about 8 MiB of cells, whole tiles)."""
        if columns is None and "picked" in self._info:
            columns = self.labels
        return ArrowStream(self._index, self._position, columns, batch_rows)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Arrow's stream interface over every column: see :meth:`arrow`."""
        return self.arrow().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow schema of :meth:`__arrow_c_stream__`."""
        return self.arrow().__arrow_c_schema__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self.read()
        if self.data_type == "CSRMatrix":
            value = value.toarray()
        elif self.data_type == "Frame":
            raise TypeError("a frame is not an array: read() it as a dict of columns")
        return value if dtype is None else value.astype(dtype, copy=False)

    def rows(
        self,
        start: int,
        stop: int,
        columns: Optional[Sequence[str]] = None,
        *,
        as_pandas: bool = False,
    ) -> Any:
        """Rows ``start:stop`` of a frame's columns (all, or those labelled ``columns``)."""
        if self.data_type != "Frame":
            raise TypeError(f"rows() reads frames; this object is a {self.data_type}")
        if not columns:
            columns = self.labels if "picked" in self._info else None
        elif "picked" in self._info:
            unknown = [c for c in columns if c not in (self.labels or [])]
            if unknown:
                raise KeyError(f"column {unknown[0]!r} is not among the columns opened")
        start, stop, _ = slice(start, stop).indices(self.shape[0])
        raw = self._index.frame(self._position, (start, max(start, stop)), list(columns or []))
        return wrap(raw, as_pandas)

    def __getitem__(self, key: Key) -> Any:
        if isinstance(key, tuple) and len(key) != 2:
            raise IndexError(f"DAPHNE objects have 2 dimensions, the key has {len(key)}")
        rows_key, cols_key = key if isinstance(key, tuple) else (key, slice(None))
        nrows, ncols = self.shape
        r0, r1, rlocal, rsqueeze = _range(rows_key, nrows, "row")
        if self.data_type == "Frame":
            if isinstance(cols_key, (int, slice, np.integer)):
                c0, c1, clocal, _ = _range(cols_key, ncols, "column")
                labels = (self.labels or [])[c0:c1][clocal]
            else:
                labels = [cols_key] if isinstance(cols_key, str) else list(cols_key)
            if not labels:
                return {}
            value = self.rows(r0, r1, labels)
            return {k: v[rlocal] for k, v in value.items()}
        c0, c1, clocal, csqueeze = _range(cols_key, ncols, "column")
        value = wrap(self._index.window(self._position, (r0, r1), (c0, c1)))
        if rlocal != slice(None) or clocal != slice(None):
            value = value[rlocal, clocal]
        if self.data_type != "CSRMatrix" and (rsqueeze or csqueeze):
            value = value[0 if rsqueeze else slice(None), 0 if csqueeze else slice(None)]
        return value

    def __repr__(self) -> str:
        rows, cols = self.shape
        what = self._info.get("value_type") or f"{len(self.labels or [])} columns"
        return f"<dbdf.LazyObject {self.data_type} {rows} x {cols} {what}, {len(self.blocks)} block(s)>"


class ArrowStream:
    """An object of an open file as Arrow record batches, read one at a time as a consumer
    pulls them: it has Arrow's PyCapsule stream interface (``__arrow_c_stream__``,
    ``__arrow_c_schema__``), so that ``duckdb.sql("select avg(c0) from s")``,
    ``polars.DataFrame(s)`` and ``pyarrow.RecordBatchReader.from_stream(s)`` read it with
    memory for a batch or two, whatever its size, local or behind a URL. A frame is a table
    of its columns; a matrix a table of one column per matrix column (``c0``, ``c1``, ...),
    as the Parquet and Arrow outputs write them. Each stream taken starts from the first row.
    """

    def __init__(
        self, index: "_dbdf.Index", position: int, columns: Any, batch_rows: Optional[int]
    ) -> None:
        self._index = index
        self._position = position
        self._columns = columns
        self._batch_rows = batch_rows

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """A capsule of an ``ArrowArrayStream`` (the table's own schema: a requested one is
        not applied, as the interface allows)."""
        return _dbdf.arrow_stream(self._index, self._position, self._columns, self._batch_rows)

    def __arrow_c_schema__(self) -> Any:
        """A capsule of the table's ``ArrowSchema``."""
        return _dbdf.arrow_schema(self._index, self._position, self._columns)

    def __repr__(self) -> str:
        return f"<dbdf.ArrowStream of object {self._position}>"


def _projected(position: int, info: dict, columns: Any) -> dict:
    """An object's description with only the frame columns ``columns`` picks."""
    if info["data_type"] != "Frame":
        raise ValueError(
            f"columns are picked from a table (a frame); object {position} is a {info['data_type']}"
        )
    picked = _dbdf.pick_columns(info["labels"], columns)
    return dict(
        info,
        labels=[info["labels"][p] for p in picked],
        value_types=[info["value_types"][p] for p in picked],
        shape=(info["shape"][0], len(picked)),
        picked=picked,
    )


def _range(key: Any, n: int, what: str) -> tuple[int, int, slice, bool]:
    """A key along one axis as the range ``lo:hi`` to read, the slice that picks the key's
    elements from what was read (steps, reversal), and whether the key was an integer (the
    axis is then dropped, as numpy does)."""
    if isinstance(key, (int, np.integer)):
        i = int(key)
        if not -n <= i < n:
            raise IndexError(f"{what} {i} is out of range for {n} {what}s")
        i %= n
        return i, i + 1, slice(None), True
    if not isinstance(key, slice):
        raise TypeError(f"{what} indices must be integers or slices, not {type(key).__name__}")
    picked = range(*key.indices(n))
    if len(picked) == 0:
        return 0, 0, slice(None), False
    lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
    if picked.step == 1:
        return lo, hi, slice(None), False
    return lo, hi, slice(picked[0] - lo, None, picked.step), False
