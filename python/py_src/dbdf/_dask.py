"""Dask over ``.dbdf`` files: arrays and data frames whose chunks are the file's tiles (or
segments), read on the workers, and writes of Dask arrays without a lock.

What a task carries is where the object's rows are (``_files.ObjectFiles``: names and
numbers, never an open handle). Graphs are named by the paths, the files' sizes and their
modification times, and a worker refuses a file whose size or time is not the graph's: a
changed file is never served from a stale graph.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import numpy as np

from . import _dbdf
from ._files import (
    ObjectFiles,
    bands,
    is_url,
    locate,
    open_options,
)
from ._values import value_type as _value_type

class _ObjectChunks:
    """One matrix of a file, or of a folder of segments, as the array-like ``da.from_array``
    slices: ``shape``, ``dtype``, ``ndim``, ``__getitem__`` with slices. It pickles as
    names and numbers."""

    def __init__(self, where: ObjectFiles, shape: tuple, dtype: np.dtype,
                 sparse: bool) -> None:
        self.where = where
        self.shape = shape
        self.dtype = dtype
        self.ndim = 2
        self.sparse = sparse

    def __dask_tokenize__(self) -> tuple:
        return self.where.token()

    def __getitem__(self, key: tuple) -> Any:
        rows, cols = key
        r0, r1, _ = rows.indices(self.shape[0])
        parts = [obj[lo:hi, cols] for obj, lo, hi, _ in self.where.pieces(r0, r1)]
        if self.sparse:
            import scipy.sparse as sp

            value = parts[0] if len(parts) == 1 else sp.vstack(parts, format="csr")
            return _csr_chunk_type()(value)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


_CSR_CHUNK = None


def _csr_chunk_type() -> type:
    """``scipy.sparse.csr_array`` with the one keyword Dask's reductions pass that scipy's
    ``sum`` lacks (``keepdims``): chunks Dask can sum."""
    global _CSR_CHUNK
    if _CSR_CHUNK is None:
        import scipy.sparse as sp

        class CsrChunk(sp.csr_array):
            """A ``csr_array`` chunk of a Dask array (``sum`` takes ``keepdims``)."""

            def sum(self, axis: Any = None, dtype: Any = None, out: Any = None,
                    keepdims: bool = False) -> Any:
                total = sp.csr_array.sum(self, axis=axis, dtype=dtype)
                if not keepdims:
                    return total
                if isinstance(axis, tuple):
                    axis = axis[0] if len(axis) == 1 else None
                shape = {None: (1, 1), 0: (1, -1), 1: (-1, 1), -1: (-1, 1), -2: (1, -1)}[axis]
                return np.asarray(total).reshape(shape)

        CsrChunk.__module__ = __name__
        CsrChunk.__qualname__ = "CsrChunk"
        _CSR_CHUNK = CsrChunk
    return _CSR_CHUNK


def __getattr__(name: str) -> Any:
    # Chunks pickle by the name of their class, which is made on first use.
    if name == "CsrChunk":
        return _csr_chunk_type()
    raise AttributeError(name)


def to_dask(path: Any, i: int = 0, *, chunks: Any = None, dialect: Optional[str] = None,
            storage_options: Optional[dict] = None, columns: Any = None) -> Any:
    """Object ``i`` of the ``.dbdf`` file at ``path`` (or the object of a folder of DAPHNE's
    segments, ``NAME.hdfs``) as a ``dask.array.Array`` or, for a frame, a
    ``dask.dataframe.DataFrame``, read lazily on Dask's workers.

    Chunks are the file's tiles (where its blocks tile it), else row bands of about 128 MiB;
    for segments, the segments. Dense matrices give numpy chunks, CSR matrices
    ``scipy.sparse.csr_array`` chunks (``meta`` says so; ``sum`` works), frames pandas
    partitions of rows with their row numbers as index. ``chunks`` asks for others (as
    ``dask.array.from_array`` takes them; for a frame, rows per partition or each
    partition's rows). ``columns`` (labels or positions, as in :func:`dbdf.load`) gives a
    frame's partitions only those columns, read alone. Needs the ``dask`` extra.
    """
    path = os.fsdecode(path)
    where, obj = locate(path, i, open_options(dialect, storage_options))
    shape = (where.rows, obj.shape[1])
    if obj.data_type == "Frame":
        labels = obj.labels
        if columns is not None:
            labels = [labels[p] for p in _dbdf.pick_columns(labels, columns)]
        return _frame(where, obj, chunks, labels)
    if columns is not None:
        raise ValueError(f"columns are picked from a table (a frame); object {i} is a {obj.data_type}")
    sparse = obj.data_type == "CSRMatrix"
    import dask.array as da

    dtype = obj.dtype
    if sparse:
        meta = _csr_chunk_type()((0, 0), dtype=dtype)
    else:
        meta = np.empty((0, 0), dtype=dtype)
    source = _ObjectChunks(where, shape, dtype, sparse)
    return da.from_array(source, chunks=chunks or where.parts, meta=meta, asarray=False, fancy=False,
                         lock=False, inline_array=True, name="dbdf-" + _token(source))


def _token(source: Any) -> str:
    from dask.base import tokenize

    return tokenize(source)


def _frame(where: ObjectFiles, obj: Any, chunks: Any, labels: list) -> Any:
    import dask.dataframe as dd
    import pandas as pd

    rows = where.rows
    if isinstance(chunks, int):
        sizes = bands(rows, chunks)
    else:
        sizes = tuple(chunks) if chunks is not None else where.parts[0]
    starts = [int(s) for s in np.cumsum((0,) + sizes[:-1])]
    ends = starts[1:] + [rows]
    dtypes = obj.dtype
    meta = pd.DataFrame({k: pd.Series([], dtype=dtypes[k]) for k in labels})
    parts = [(where, a, b, labels) for a, b in zip(starts, ends)]
    divisions = tuple(starts) + (max(rows - 1, 0),)
    return dd.from_map(_read_rows, parts, meta=meta, divisions=divisions, enforce_metadata=False)


def _read_rows(part: tuple) -> Any:
    import pandas as pd

    where, r0, r1, labels = part
    columns: dict = {}
    for obj, lo, hi, _ in where.pieces(r0, r1):
        for label, values in obj.rows(lo, hi, labels).items():
            columns.setdefault(label, []).append(values)
    frame = pd.DataFrame({k: np.concatenate(v) for k, v in columns.items()})
    frame.index = pd.RangeIndex(r0, r0 + len(frame))
    return frame


def _write_tile(layout: Any, scratch: str, row: int, col: int, block: np.ndarray) -> int:
    _, block = _value_type(np.ascontiguousarray(block), "a chunk")
    layout.write_tile(scratch, row, col, block)
    return 0


def _write_segment(staged: str, k: int, block: np.ndarray) -> int:
    from . import save

    name = _dbdf.segment_name(os.path.basename(staged), k)
    save(os.path.join(staged, name), np.ascontiguousarray(block),
         dialect="daphne")
    return 0


def _put_parts(layout: Any, url: str, storage_options: Optional[dict], upload: str,
               first: int, first_row: int, block: np.ndarray) -> tuple:
    _, block = _value_type(np.ascontiguousarray(block), "a chunk")
    return layout.put_parts(url, storage_options, upload, first, first_row, block)


def _store_to_bucket(array: Any, url: str, tile: tuple[int, int], kind: str,
                     storage_options: Optional[dict]) -> None:
    """A tiled ``.dbdf`` in a bucket as one multipart upload: each task sends the parts of its
    whole rows of tiles; the caller completes the upload with the block index, or aborts it."""
    import dask

    layout = _dbdf.DenseLayout(tuple(int(n) for n in array.shape), kind, tile)
    part_rows = layout.part_rows()
    array = array.rechunk({0: part_rows, 1: -1})
    # Begun here: a missing bucket or refused credentials fail before any task runs.
    upload = _dbdf.begin_upload(url, storage_options)
    try:
        blocks = array.to_delayed().ravel()
        # Each task's parts numbered after those of the rows before it.
        firsts = np.cumsum([0] + [layout.parts_in(n) for n in array.chunks[0]])
        tasks = [dask.delayed(_put_parts)(layout, url, storage_options, upload, int(firsts[k]),
                                          k * part_rows, b) for k, b in enumerate(blocks)]
        sent = dask.compute(*tasks)
        index = layout.block_index(sent[0][1])
        tags = [tag for part_tags, _ in sent for tag in part_tags]
        _dbdf.complete_upload(url, storage_options, upload, tags, index)
    except BaseException:
        try:
            _dbdf.abort_upload(url, storage_options, upload)
        except Exception:
            pass  # Never visible; the next write of the key aborts it (its id is recorded).
        raise


def _put_segment(url: str, storage_options: Optional[dict], upload: str, kind: str,
                 block: np.ndarray) -> tuple:
    _, block = _value_type(np.ascontiguousarray(block), "a chunk")
    return _dbdf.put_segment(url, storage_options, upload, kind, block)


def _store_segments_to_bucket(array: Any, url: str, kind: str,
                              storage_options: Optional[dict]) -> None:
    """DAPHNE's segments in a bucket: a multipart upload per row chunk, begun here, whose
    parts its task sends; the caller completes them all with the folder's sidecar last, as
    one set in place of an older folder, or aborts them."""
    import dask

    array = array.rechunk({1: -1})
    url = url.rstrip("/")
    name = url.rsplit("/", 1)[-1]
    urls = [f"{url}/{_dbdf.segment_name(name, k + 1)}" for k in range(len(array.chunks[0]))]
    begun: list = []
    try:
        # Begun here (a few at once): a missing bucket or refused credentials fail before
        # any task runs.
        with ThreadPoolExecutor(4) as pool:
            begun = [(u, pool.submit(_dbdf.begin_upload, u, storage_options)) for u in urls]
        uploads = [f.result() for _, f in begun]
        blocks = array.to_delayed().ravel()
        tasks = [dask.delayed(_put_segment)(u, storage_options, i, kind, b)
                 for u, i, b in zip(urls, uploads, blocks)]
        sent = dask.compute(*tasks)
        segments = [(i, tags, meta) for i, (tags, meta) in zip(uploads, sent)]
        _dbdf.complete_segments(url, storage_options, segments,
                                tuple(int(n) for n in array.shape), kind)
    except BaseException:
        for segment, f in begun:
            try:
                if f.exception() is None:
                    _dbdf.abort_upload(segment, storage_options, f.result())
            except Exception:
                pass  # Completed, or never visible (the next write of the key aborts it).
        raise


def store(array: Any, target: Any, *, tile: Optional[tuple[int, int]] = None,
          to_format: Optional[str] = None, sync: bool = False,
          storage_options: Optional[dict] = None) -> None:
    """Writes the 2-D ``dask.array.Array`` ``array`` to ``target`` from Dask's workers,
    without a lock: each task writes its chunk where it belongs.

    - A ``.dbdf`` file, tiled (``tile``, default the array's chunk size; chunks are made to
      match it): every tile's place in the file is fixed before any worker starts, so tasks
      write in any order, in any process, with positional writes.
    - DAPHNE's segmented layout (``to_format="segments"``, or a ``target`` ending in
      ``.hdfs``): one segment per row chunk (chunks are made full width), each written by its
      task with its sidecar, then the local sidecar.

    The result appears under ``target`` only once every chunk is written (synced to disk
    first when ``sync``); a failed or cancelled computation leaves neither ``target`` nor
    temporary files. Workers must see the same file system as the caller.

    A URL (``s3://``, ``az://``, ``gs://``, with ``storage_options`` as pandas and zarr take
    them) takes a tiled ``.dbdf`` as one multipart upload whose parts the tasks send, each
    whole rows of tiles (chunks are made so: at least 5 MiB each), with its block index; the
    object appears when the caller completes the upload, and a failed computation aborts
    it. DAPHNE's segments go up likewise, a multipart upload per segment, completed together
    with the folder's sidecar last, in place of an older folder. A URL is never taken for a
    local folder named ``s3:``.
    """
    import dask

    target = os.fsdecode(target)
    if array.ndim != 2:
        raise ValueError(f"store writes 2-D arrays; this one has {array.ndim} dimensions")
    kind, _ = _value_type(np.empty(0, dtype=array.dtype), "the array")
    segments = _dbdf.writes_segments(target, to_format)
    if is_url(target) and 0 in array.shape:
        raise ValueError(
            f"{_dbdf.redact(target)}: store writes an empty array to local files only; save "
            "it with dbdf.save"
        )
    if is_url(target) and segments:
        _store_segments_to_bucket(array, target, kind, storage_options)
        return
    if is_url(target):
        tile = array.chunksize if tile is None else tile
        tile = (max(1, int(tile[0])), max(1, int(tile[1])))
        _store_to_bucket(array, target, tile, kind, storage_options)
        return
    if 0 in array.shape:
        from . import convert, save

        # Nothing to write in parallel: the empty matrix is written whole.
        if segments:
            scratch, _ = map(os.fspath, _dbdf.stage_segments(target, "dask"))
            try:
                empty = os.path.join(scratch, "empty.dbdf")
                save(empty, np.empty(array.shape, dtype=array.dtype))
                convert(empty, target, to_format="segments", segments=1)
            finally:
                _dbdf.discard_scratch(scratch)
        else:
            save(target, np.empty(array.shape, dtype=array.dtype), sync=sync)
        return
    if segments:
        array = array.rechunk({1: -1})
        scratch, staged = map(os.fspath, _dbdf.stage_segments(target, "dask"))
        try:
            blocks = array.to_delayed().ravel()
            tasks = [dask.delayed(_write_segment)(staged, k + 1, b) for k, b in enumerate(blocks)]
            dask.compute(*tasks)
            _dbdf.commit_segments(staged, target)
        finally:
            _dbdf.discard_scratch(scratch)
        return
    if tile is None:
        tile = (array.chunksize[0], array.chunksize[1])
    tile = (max(1, int(tile[0])), max(1, int(tile[1])))
    array = array.rechunk(tile)
    layout = _dbdf.DenseLayout(tuple(int(n) for n in array.shape), kind, tile)
    scratch = str(layout.create_scratch(target))
    try:
        blocks = array.to_delayed()
        tasks = [
            dask.delayed(_write_tile)(layout, scratch, i * tile[0], j * tile[1], blocks[i, j])
            for i in range(blocks.shape[0])
            for j in range(blocks.shape[1])
        ]
        dask.compute(*tasks)
        layout.commit(scratch, target, sync)
    except BaseException:
        try:
            os.remove(scratch)
        except FileNotFoundError:
            pass
        raise
