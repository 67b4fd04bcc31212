"""DAPHNE binary data files (``.dbdf``) for numpy, scipy and pandas.

A DenseMatrix is a 2-D ``numpy.ndarray`` of its stored value type, a CSRMatrix a
``scipy.sparse.csr_array``, a Frame a dict of column label -> 1-D array (or a
``pandas.DataFrame``). A file of several objects is a list of them.

>>> import numpy as np, dbdf
>>> data = dbdf.dumps(np.arange(6, dtype=np.int32).reshape(2, 3))
>>> dbdf.loads(data)
array([[0, 1, 2],
       [3, 4, 5]], dtype=int32)

The format's rules all live in the Rust crate ``serde_daphne``; this package is a thin layer
over it (PyO3), which releases the GIL while it reads, writes and decodes.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional, Sequence, Union

from . import _dbdf
from ._dask import store, to_dask
from ._dbdf import DbdfError
from ._lazy import ArrowStream, File, LazyObject
from ._values import items as _items
from ._values import wrap as _wrap

__all__ = [
    "ArrowStream",
    "DbdfError",
    "File",
    "LazyObject",
    "arrow_reader",
    "convert",
    "dumps",
    "load",
    "loads",
    "open",
    "save",
    "store",
    "to_dask",
]
__version__ = "0.1.0"

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Columns = Union[str, Sequence[Union[str, int]]]


def __getattr__(name: str) -> Any:
    # dbdf.spark imports pyspark: loaded on first use, not with the package.
    if name == "spark":
        import importlib

        return importlib.import_module(".spark", __name__)
    raise AttributeError(f"module 'dbdf' has no attribute {name!r}")


def _result(
    raws: list,
    as_pandas: bool,
    object: Optional[int],
    as_records: bool = False,
    as_arrow: bool = False,
) -> Any:
    values = [_wrap(raw, as_pandas, as_records, as_arrow) for raw in raws]
    if object is not None or len(values) == 1:
        return values[0]
    return values


def load(
    path: PathLike,
    *,
    dialect: Optional[str] = None,
    object: Optional[int] = None,
    as_pandas: bool = False,
    as_records: bool = False,
    as_arrow: bool = False,
    max_alloc: Optional[int] = None,
    storage_options: Optional[dict[str, str]] = None,
    columns: Optional[Columns] = None,
) -> Any:
    """Reads the ``.dbdf`` file at ``path``: a local path or a URL (``s3://``, ``az://``,
    ``gs://``, ``http(s)://``, ``file://``; see :func:`open`).

    Returns its object (numpy array, ``scipy.sparse.csr_array``, dict of frame columns or,
    with ``as_pandas=True``, a ``pandas.DataFrame``; with ``as_records=True``, a frame is a
    numpy record array, a field per column; with ``as_arrow=True``, a frame or dense matrix
    is a ``pyarrow.Table`` over the same buffers, a matrix's columns named ``c0``, ``c1``,
    ..., the DAPHNE data type in the schema's metadata), or a list when it holds several.
    ``object=i`` reads only the i-th. ``dialect`` (``"spec"`` or ``"daphne"``) forces a
    dialect instead of telling it from the bytes; a DAPHNE ``.meta`` sidecar beside the file
    is used as DAPHNE uses it. Blocks stored in narrower types are widened exactly to the
    object's value type. An object is refused before allocating when holding it takes more
    than its bytes in the file plus ``max_alloc`` (default 4 GiB: a few bytes of empty
    blocks can describe any size); raise it for trusted files. ``columns`` reads only those
    columns of each frame, in that order: labels, or positions from 0 (a pick that is a
    label is that column); a file holding a matrix is then an error.

    Raises :class:`DbdfError` for a malformed file (with ``offset`` and ``kind``), OSError
    (FileNotFoundError, ...) when the file cannot be read.
    """
    raws = _dbdf.load(os.fsdecode(path), dialect, object, max_alloc, storage_options, columns)
    return _result(raws, as_pandas, object, as_records, as_arrow)


def loads(
    data: bytes,
    *,
    dialect: Optional[str] = None,
    object: Optional[int] = None,
    as_pandas: bool = False,
    as_records: bool = False,
    as_arrow: bool = False,
    max_alloc: Optional[int] = None,
) -> Any:
    """Like :func:`load`, from the bytes of a ``.dbdf`` file: a ``bytes`` object is decoded
    where it is (no copy, without the GIL); other bytes-like objects (``bytearray``,
    ``memoryview``, numpy arrays) are copied into one first."""
    raws = _dbdf.loads(bytes(data), dialect, object, max_alloc)
    return _result(raws, as_pandas, object, as_records, as_arrow)


def save(
    path: PathLike,
    obj: Any,
    *,
    dialect: str = "spec",
    tile: Optional[tuple[int, int]] = None,
    block: str = "auto",
    narrow: bool = False,
    sync: bool = False,
    storage_options: Optional[dict[str, str]] = None,
) -> None:
    """Writes ``obj`` to ``path`` atomically (a temporary file renamed into place). A URL
    (``s3://``, ...) is written as an object that appears only when complete, sent in parts
    as it is serialized (no local copy), with its block index beside it (``URL.index``) or,
    for ``dialect="daphne"``, its ``.meta`` sidecar.

    ``obj`` is a numpy array (any memory order; bool is stored as uint8; 1-D as a column
    vector), any scipy sparse array or matrix (written as CSR), a ``pandas.DataFrame``, a
    ``pyarrow.Table`` or ``RecordBatch``, a ``polars.DataFrame``, a dict of 1-D columns or
    a numpy record array of numeric fields (a frame, a field per column; a table whose
    metadata records a DAPHNE matrix, as ``as_arrow=True`` gives, is that matrix), or a
    list/tuple of those (several objects). Columns with nulls are refused.

    ``dialect="daphne"`` writes what DAPHNE's runtime reads, with its ``.meta`` sidecar.
    ``tile=(rows, cols)`` splits matrices into blocks (spec dialect). ``block`` chooses each
    block's encoding: ``"auto"``, ``"smallest"``, ``"dense"``, ``"sparse"`` or
    ``"ultra-sparse"``. ``narrow=True`` stores each block in the smallest value type that
    holds its values exactly. ``sync=True`` also flushes the file to disk before the rename
    (durable across a power loss; by default, as ``numpy.save``, the operating system writes
    it back when it will, and readers still see the old file or the new one, never a part).

    Raises TypeError for values the format cannot hold (such as strings or complex numbers),
    :class:`DbdfError` for what the chosen dialect cannot express.
    """
    _dbdf.save(
        os.fsdecode(path), _items(obj), dialect, tile, block, narrow, sync, storage_options
    )


def dumps(
    obj: Any,
    *,
    dialect: str = "spec",
    tile: Optional[tuple[int, int]] = None,
    block: str = "auto",
    narrow: bool = False,
) -> bytes:
    """Like :func:`save`, returning the file's bytes (no sidecar): measured first, then
    encoded once into the new ``bytes`` object, without the GIL."""
    return _dbdf.dumps(_items(obj), dialect, tile, block, narrow)


def open(
    path: PathLike,
    *,
    dialect: Optional[str] = None,
    max_alloc: Optional[int] = None,
    storage_options: Optional[dict[str, str]] = None,
    columns: Optional[Columns] = None,
) -> File:
    """Opens ``path`` lazily: reads headers only (any file size, milliseconds).

    ``path`` may be a URL of object storage or HTTP (``s3://bucket/m.dbdf``, ``az://``,
    ``gs://``, ``https://host/m.dbdf``): the file is then read with range requests, opened
    through its block index (``URL.index``, written by ``dbdf index`` and by writers to
    object storage) in two requests, and each window fetches each block it touches in one
    request. Credentials and endpoints come from the environment as the ``object_store``
    crate reads them (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, ``AWS_ACCESS_KEY_ID``, ...)
    and from ``storage_options`` (the same names, lower-case: ``{"aws_endpoint_url": ...}``).
    ``f.requests`` counts the requests made. An object replaced while it is read raises
    OSError (``"... was replaced while it was read"``), never a mix of two versions.

    ``f[i].shape``, ``.dtype``, ``.blocks`` describe object i; ``f[i][r0:r1, c0:c1]`` reads
    only the blocks (and rows of dense blocks) that window needs; ``f[i].read()`` reads it
    whole. Use as a context manager. The file stays open (not memory-mapped: windows are
    read with plain reads, so a file truncated meanwhile is an error, never a crash);
    ``max_alloc`` as in :func:`load`. ``columns`` (as in :func:`load`) makes each frame
    show only those columns: its ``labels``, ``shape``, ``dtype`` and reads.
    """
    opened = {"dialect": dialect, "storage_options": storage_options}
    return File(
        _dbdf.open(os.fsdecode(path), dialect, max_alloc, storage_options),
        (os.fsdecode(path), {k: v for k, v in opened.items() if v is not None}),
        columns,
    )


def arrow_reader(
    path: PathLike,
    columns: Optional[Columns] = None,
    *,
    object: int = 0,
    batch_rows: Optional[int] = None,
    dialect: Optional[str] = None,
    storage_options: Optional[dict[str, str]] = None,
) -> ArrowStream:
    """Object ``object`` of the file at ``path`` (or behind a URL, as :func:`open` takes
    it) as Arrow record batches read one at a time (:class:`ArrowStream`): only the
    ``columns`` picked (as in :func:`load`; a matrix's are ``c0``, ``c1``, ...), for DuckDB,
    Polars and pyarrow::

        s = dbdf.arrow_reader("s3://bucket/t.dbdf", ["c0", "c1"])
        duckdb.sql("select sum(c0), avg(c1) from s")

    ``open(path)[object].arrow(columns)`` is the same.
    """
    opened = open(path, dialect=dialect, storage_options=storage_options)
    return opened[object].arrow(columns, batch_rows=batch_rows)


def convert(
    src: PathLike,
    dst: PathLike,
    *,
    from_format: Optional[str] = None,
    to_format: Optional[str] = None,
    storage_options: Optional[dict[str, str]] = None,
    **options: Any,
) -> None:
    """Converts the file ``src`` to ``dst``, exactly as ``dbdf convert`` does (the same Rust
    code): between ``.dbdf``, MatrixMarket ``.mtx``, ``.csv``, ``.npy`` (record arrays as
    frames), Futhark ``.fut``, Binsparse ``.bsp.npz`` and ``.bsp.zarr`` (Zarr v2 and v3
    groups), SystemDS binary blocks, scipy's sparse ``.npz`` (``save_npz``: any format in,
    CSR out), numpy's ``.npz`` archives (``savez``: an object per array), Parquet and Arrow
    IPC (Feather v2) tables. Formats come from the extensions (a ``.npz`` input by its
    members; a ``.npz`` output is Binsparse) unless ``from_format``/``to_format`` name them
    (``"dbdf"``, ``"mtx"``, ``"csv"``, ``"npy"``, ``"futhark"``, ``"binsparse"``,
    ``"systemds"``, ``"scipy"``, ``"npz"``, ``"parquet"``, ``"arrow"``, ``"segments"``).

    Options (all keyword): ``dialect`` (``"spec"``/``"daphne"``), ``tile=(r, c)``,
    ``block``, ``narrow``, ``value_type`` (``"u8"`` ... ``"f64"``, converted exactly or not
    at all), ``data_type`` (``"dense"``/``"csr"``), ``unguarded_labels``,
    ``binsparse_format`` (``"CSR"``, ``"COO"``, ...), ``index_type``, ``iso``, ``bint8``,
    ``binsparse_version`` (``"0.1"``/``"0.1.0"``), ``zarr_format`` (``3``/``2``),
    ``keep_blocks``, ``systemds_block_size``, ``systemds_parts``, ``segments`` (DAPHNE's
    segmented layout, ``"segments"`` or a ``.hdfs`` folder: how many), ``compressed`` (scipy and
    npz output deflated, as ``save_npz`` and ``savez_compressed``), ``nulls``
    (Parquet and Arrow input: ``"error"``, ``"nan"`` or ``"zero"``), ``compression``
    (``"zstd"``, ``"snappy"``, ``"lz4"``, ``"none"``), ``row_group_rows``, ``labels`` (a
    matrix's column names), ``columns`` (a table input's columns to read, as ``--columns``:
    labels or positions; Parquet and Arrow read only those, beside columns of any type),
    ``mtx_layout`` (``"array"`` or ``"coordinate"``: MatrixMarket out, every matrix dense or
    sparse), ``duplicates`` (``"sum"``: a MatrixMarket or scipy COO cell given more than once
    summed in file order, as ``tocsr()`` sums it; refused by default), ``futhark_bool``,
    ``futhark_f16``, ``futhark_matrices``. Every pair of formats streams
    in bounded memory (a few bands of rows or a tile; a MatrixMarket coordinate file holds
    the CSR arrays it builds); the GIL is released meanwhile.

    ``src`` and ``dst`` may be URLs (see :func:`open`; ``storage_options`` as there): a
    remote input is read in place (by range requests or as a stream, never downloaded
    first); a remote output appears when complete (streamed up as it is written, where its
    format is written as one stream), a ``.dbdf`` one with its block index.

    What DAPHNE will make of the output, where it matters, comes as a ``UserWarning``.
    Raises :class:`DbdfError` (with ``file``, ``offset`` and ``kind``) or OSError; no output
    is left behind by a failure.
    """
    for warning in _dbdf.convert(
        os.fsdecode(src),
        os.fsdecode(dst),
        storage_options,
        from_format=from_format,
        to_format=to_format,
        **options,
    ):
        warnings.warn(warning, UserWarning, stacklevel=2)
