"""Where an object's rows are, for readers in other processes (Dask's workers, Spark's
executors): one file, or the segments of a folder of DAPHNE's segmented layout, named by
path and version so that a task carries a few hundred bytes, never an open handle.

Each process opens a file once and keeps it (as xarray's ``CachingFileManager`` does); a
file whose size or modification time is not the one the plan was made from is refused, so
a changed file is never read as the plan's.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Iterator, Optional

from . import _dbdf


def is_url(path: str) -> bool:
    """Whether ``path`` names an object behind a URL (``dbdf::remote::is_url``)."""
    return _dbdf.is_url(path)


def stamp(path: str) -> tuple:
    """What names a version of the file (``dbdf::plan::Stamp``; a URL: nothing here, the
    store pins each read to the version it opened)."""
    return tuple(_dbdf.stamp(path) or ())


class _Opened:
    """The files this process has open, by path and version: opened once per process."""

    lock = threading.Lock()
    files: dict = {}

    @classmethod
    def get(cls, path: str, version: tuple, options: dict) -> Any:
        from . import open as open_file

        key = (path, version, json.dumps(options, sort_keys=True))
        if version:
            _dbdf.check_stamp(path, version)
        with cls.lock:
            handle = cls.files.get(key)
        if handle is not None:
            return handle
        handle = open_file(path, **options)
        with cls.lock:
            return cls.files.setdefault(key, handle)


class ObjectFiles:
    """The rows of one object: object ``position`` of one file, or the one object of each
    segment of a folder. It pickles as names and numbers."""

    def __init__(self, files: list, position: int, rows: int, options: dict) -> None:
        # files: [(path, stamp, first_row)] (one entry, or one per segment).
        self.files = files
        self.position = position
        self.rows = rows
        self.options = options
        # The partitions an engine reads the object in (``dbdf::plan``): rows, then columns;
        # and about how many bytes a row takes. Set by ``locate``.
        self.parts: tuple[tuple, tuple] = ((rows,), ())
        self.row_bytes = 1

    def token(self) -> tuple:
        return ("dbdf", self.files, self.position, self.options)

    def starts(self) -> list[int]:
        """Where each file's rows start."""
        return [first for _, _, first in self.files]

    def pieces(self, r0: int, r1: int) -> Iterator[tuple[Any, int, int, int]]:
        """Rows ``r0:r1`` as ``(lazy object, start, stop, first)`` of each file they overlap,
        in order, ``first`` being where the file's rows start in the object; one empty piece
        where they overlap none (an empty range), so that a reader still gets the object's
        columns and types."""
        given = False
        for k, (path, version, first) in enumerate(self.files):
            end = self.files[k + 1][2] if k + 1 < len(self.files) else self.rows
            lo, hi = max(r0, first), min(r1, end)
            if lo < hi or (not given and k + 1 == len(self.files)):
                handle = _Opened.get(path, version, self.options)
                obj = handle[0 if len(self.files) > 1 else self.position]
                given = True
                yield obj, lo - first, max(lo, hi) - first, first


def bands(n: int, per: int) -> tuple:
    """Part sizes along an axis of ``n``: ``per`` each, the last what is left."""
    return tuple(_dbdf.bands(n, per))


def locate(path: str, i: int, options: dict,
           table: Optional[tuple] = None) -> tuple[ObjectFiles, Any]:
    """Object ``i`` of the file at ``path``, or the object of the folder of segments at
    ``path`` (a folder, or a URL named as one: ``NAME.hdfs``): where its rows are, and a lazy object that tells its type and columns (of the
    first segment, for a folder). With ``table`` (``picked, layout, row_index, shown``),
    ``where.table`` is the object read as a Spark table (``Index.spark_table``)."""
    from . import open as open_file

    if is_url(path) and _dbdf.writes_segments(path) or not is_url(path) and os.path.isdir(path):
        segments = _dbdf.segment_files(path, options.get("storage_options"))
        files = [(p, stamp(p), first) for p, first, _ in segments]
        rows = segments[-1][1] + segments[-1][2]
        position = 0
    else:
        files = [(path, stamp(path), 0)]
        position = i
        rows = -1
    where = ObjectFiles(files, position, rows, options)
    with open_file(files[0][0], **options) as f:
        obj = f[position]
        if rows < 0:
            where.rows = obj.shape[0]
        starts = where.starts() if len(files) > 1 else []
        row_parts, col_parts = obj._index.partitions(position, where.rows, starts)
        where.parts = (tuple(row_parts), tuple(col_parts))
        where.row_bytes = obj._index.row_bytes(position)
        if table is not None:
            where.table = obj._index.spark_table(position, *table)
    return where, obj


def open_options(dialect: Optional[str], storage_options: Optional[dict]) -> dict:
    options = {"dialect": dialect, "storage_options": storage_options}
    return {k: v for k, v in options.items() if v is not None}
