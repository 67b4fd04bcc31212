"""Dask over ``.dbdf`` files: arrays and data frames whose chunks are the file's tiles (or
segments), read on the workers, and writes of Dask arrays without a lock.

What a task carries is the file's name and how to open it (a few hundred bytes, never an open
handle); each worker process opens a file once and keeps it (as xarray's
``CachingFileManager`` does). Graphs are named by the path, the file's size and its
modification time, and a worker refuses a file whose size or time is not the graph's: a
changed file is never served from a stale graph.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from typing import Any, Optional, Sequence

import numpy as np

from . import _dbdf
from ._values import value_type as _value_type

# Rows per chunk of an object stored as one block: about this many bytes of cells.
_BAND_BYTES = 128 << 20

_SEGMENT = re.compile(r"_segment_(\d+)$")


def _is_url(path: str) -> bool:
    return "://" in path


def _stamp(path: str) -> tuple:
    """What names a version of the file: its size and modification time (a URL: nothing
    here; the store pins each read to the version it opened)."""
    if _is_url(path):
        return ()
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns)


def _segments(folder: str) -> list[str]:
    """The segment files of a folder of DAPHNE's segmented layout, in order."""
    name = os.path.basename(os.path.normpath(folder))
    found = {}
    for entry in os.listdir(folder):
        if entry.startswith(name + "_segment_"):
            m = _SEGMENT.search(entry)
            if m:
                found[int(m.group(1))] = os.path.join(folder, entry)
    if not found or sorted(found) != list(range(1, len(found) + 1)):
        raise ValueError(f"{folder}: not a folder of segments numbered from 1 without gaps")
    return [found[i] for i in range(1, len(found) + 1)]


class _Opened:
    """The files this process has open, by path and version: opened once per process."""

    lock = threading.Lock()
    files: dict = {}

    @classmethod
    def get(cls, path: str, stamp: tuple, options: dict) -> Any:
        from . import open as open_file

        key = (path, stamp, json.dumps(options, sort_keys=True))
        # Checked at every read, also of a file open already: a file replaced since keeps
        # its old bytes behind an open handle, which is the graph's version no longer.
        if stamp and _stamp(path) != stamp:
            raise OSError(
                f"{path} changed after the graph was built (size, modification time): "
                "build it again"
            )
        with cls.lock:
            handle = cls.files.get(key)
        if handle is not None:
            return handle
        handle = open_file(path, **options)
        with cls.lock:
            return cls.files.setdefault(key, handle)


class _ObjectChunks:
    """One matrix of a file, or of a folder of segments, as the array-like ``da.from_array``
    slices: ``shape``, ``dtype``, ``ndim``, ``__getitem__`` with slices. It pickles as
    names and numbers."""

    def __init__(self, files: list, position: int, shape: tuple, dtype: np.dtype,
                 sparse: bool, options: dict) -> None:
        # files: [(path, stamp, first_row)] (one entry, or one per segment).
        self.files = files
        self.position = position
        self.shape = shape
        self.dtype = dtype
        self.ndim = 2
        self.sparse = sparse
        self.options = options

    def __dask_tokenize__(self) -> tuple:
        return ("dbdf", self.files, self.position, self.options)

    def _read(self, k: int, rows: slice, cols: slice) -> Any:
        path, stamp, _ = self.files[k]
        handle = _Opened.get(path, stamp, self.options)
        return handle[0 if len(self.files) > 1 else self.position][rows, cols]

    def __getitem__(self, key: tuple) -> Any:
        rows, cols = key
        r0, r1, _ = rows.indices(self.shape[0])
        parts = []
        for k, (_, _, start) in enumerate(self.files):
            end = self.files[k + 1][2] if k + 1 < len(self.files) else self.shape[0]
            lo, hi = max(r0, start), min(r1, end)
            if lo < hi or (not parts and k + 1 == len(self.files)):
                parts.append(self._read(k, slice(lo - start, max(lo, hi) - start), cols))
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


def _grid(starts: Sequence[int], n: int) -> tuple:
    """Chunk sizes along an axis of ``n`` from the positions where blocks start."""
    edges = sorted({s for s in starts if 0 < s < n} | {0, n})
    return tuple(b - a for a, b in zip(edges, edges[1:])) or (0,)


def _bands(n: int, per: int) -> tuple:
    per = max(1, per)
    return tuple(min(per, n - s) for s in range(0, n, per)) or (0,)


def _chunks(obj: Any) -> tuple:
    rows, cols = obj.shape
    blocks = obj.blocks
    if len(blocks) > 1:
        return (_grid([b["row"] for b in blocks], rows), _grid([b["col"] for b in blocks], cols))
    if obj.data_type == "CSRMatrix":
        per_row = max(1, obj.nbytes_on_disk // max(1, rows))
    else:
        per_row = max(1, cols * obj.dtype.itemsize)
    return (_bands(rows, _BAND_BYTES // per_row), (cols,))


def to_dask(path: Any, i: int = 0, *, chunks: Any = None, dialect: Optional[str] = None,
            storage_options: Optional[dict] = None) -> Any:
    """Object ``i`` of the ``.dbdf`` file at ``path`` (or the object of a folder of DAPHNE's
    segments, ``NAME.hdfs``) as a ``dask.array.Array`` or, for a frame, a
    ``dask.dataframe.DataFrame``, read lazily on Dask's workers.

    Chunks are the file's tiles (where its blocks tile it), else row bands of about 128 MiB;
    for segments, the segments. Dense matrices give numpy chunks, CSR matrices
    ``scipy.sparse.csr_array`` chunks (``meta`` says so; ``sum`` works), frames pandas
    partitions of rows with their row numbers as index. ``chunks`` asks for others (as
    ``dask.array.from_array`` takes them; for a frame, rows per partition or each
    partition's rows). Needs the ``dask`` extra.
    """
    from . import open as open_file

    path = os.fsdecode(path)
    options = {"dialect": dialect, "storage_options": storage_options}
    options = {k: v for k, v in options.items() if v is not None}
    if not _is_url(path) and os.path.isdir(path):
        files, first = [], 0
        for segment in _segments(path):
            with open_file(segment, **options) as f:
                files.append((segment, _stamp(segment), first))
                first += f[0].shape[0]
                obj_info = f[0]
        obj = obj_info
        shape = (first, obj.shape[1])
        if chunks is None:
            chunks = (tuple(b - a for a, b in zip([s for _, _, s in files], [s for _, _, s in files[1:]] + [first])), (shape[1],))
        position = 0
    else:
        with open_file(path, **options) as f:
            obj = f[i]
            files = [(path, _stamp(path), 0)]
            shape = obj.shape
            if chunks is None and obj.data_type != "Frame":
                chunks = _chunks(obj)
        position = i
    if obj.data_type == "Frame":
        return _frame(files, position, obj, shape, options, chunks)
    sparse = obj.data_type == "CSRMatrix"
    import dask.array as da

    dtype = obj.dtype
    if sparse:
        meta = _csr_chunk_type()((0, 0), dtype=dtype)
    else:
        meta = np.empty((0, 0), dtype=dtype)
    source = _ObjectChunks(files, position, shape, dtype, sparse, options)
    return da.from_array(source, chunks=chunks, meta=meta, asarray=False, fancy=False,
                         lock=False, inline_array=True, name="dbdf-" + _token(source))


def _token(source: Any) -> str:
    from dask.base import tokenize

    return tokenize(source)


def _frame(files: list, position: int, obj: Any, shape: tuple, options: dict,
           chunks: Any) -> Any:
    import dask.dataframe as dd
    import pandas as pd

    rows = shape[0]
    if isinstance(chunks, int):
        starts = list(range(0, rows, max(1, chunks))) or [0]
    elif chunks is not None:
        starts = [int(s) for s in np.cumsum((0,) + tuple(chunks)[:-1])]
    elif len(files) > 1:
        starts = [s for _, _, s in files]
    else:
        row_starts = [b["row"] for b in obj.blocks]
        sizes = _grid(row_starts, rows) if len(set(row_starts)) > 1 else _bands(
            rows, _BAND_BYTES // max(1, sum(np.dtype(t).itemsize for t in obj.dtype.values())))
        starts = list(np.cumsum((0,) + sizes[:-1]))
    ends = starts[1:] + [rows]
    meta = pd.DataFrame({k: pd.Series([], dtype=t) for k, t in obj.dtype.items()})
    parts = [(files, position, int(a), int(b), options) for a, b in zip(starts, ends)]
    divisions = tuple(int(s) for s in starts) + (max(rows - 1, 0),)
    return dd.from_map(_read_rows, parts, meta=meta, divisions=divisions, enforce_metadata=False)


def _read_rows(part: tuple) -> Any:
    import pandas as pd

    files, position, r0, r1, options = part
    columns: dict = {}
    for k, (path, stamp, start) in enumerate(files):
        end = files[k + 1][2] if k + 1 < len(files) else None
        lo = max(r0, start)
        hi = r1 if end is None else min(r1, end)
        if lo >= hi and columns:
            continue
        handle = _Opened.get(path, stamp, options)
        got = handle[0 if len(files) > 1 else position].rows(lo - start, max(lo, hi) - start)
        for label, values in got.items():
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

    name = os.path.basename(staged)
    save(os.path.join(staged, f"{name}_segment_{k}"), np.ascontiguousarray(block),
         dialect="daphne")
    return 0


def store(array: Any, target: Any, *, tile: Optional[tuple[int, int]] = None,
          to_format: Optional[str] = None, sync: bool = False) -> None:
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
    """
    import dask

    target = os.fsdecode(target)
    if array.ndim != 2:
        raise ValueError(f"store writes 2-D arrays; this one has {array.ndim} dimensions")
    kind, _ = _value_type(np.empty(0, dtype=array.dtype), "the array")
    if 0 in array.shape:
        from . import convert, save

        # Nothing to write in parallel: the empty matrix is written whole.
        if (to_format or "").lower() in ("segments", "daphne-segments", "hdfs") or (
                to_format is None and target.endswith(".hdfs")):
            tmp = f"{target}.tmp-{os.getpid()}.dbdf"
            save(tmp, np.empty(array.shape, dtype=array.dtype))
            try:
                convert(tmp, target, to_format="segments", segments=1)
            finally:
                os.remove(tmp)
        else:
            save(target, np.empty(array.shape, dtype=array.dtype), sync=sync)
        return
    segments = (to_format or "").lower() in ("segments", "daphne-segments", "hdfs") or (
        to_format is None and target.endswith(".hdfs"))
    if segments:
        array = array.rechunk({1: -1})
        parent = os.path.dirname(os.path.abspath(target))
        scratch = os.path.join(parent, f".{os.path.basename(target)}.tmp-{os.getpid()}-dask")
        staged = os.path.join(scratch, os.path.basename(target))
        os.makedirs(staged)
        try:
            blocks = array.to_delayed().ravel()
            tasks = [dask.delayed(_write_segment)(staged, k + 1, b) for k, b in enumerate(blocks)]
            dask.compute(*tasks)
            _dbdf.commit_segments(staged, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
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
