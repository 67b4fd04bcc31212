"""Type stubs of the Rust core. The public API is the `dbdf` package around it.

CI checks them against the built module: `python -m mypy.stubtest dbdf._dbdf`.
"""

from os import PathLike
from typing import Any, Optional, Sequence, Union, final

__all__ = [
    "DbdfError",
    "DenseLayout",
    "abort_upload",
    "arrow_schema",
    "arrow_stream",
    "begin_upload",
    "complete_segments",
    "complete_upload",
    "put_segment",
    "Index",
    "VALUE_TYPE_KEY",
    "bands",
    "check_spark_column",
    "check_stamp",
    "commit_segments",
    "convert",
    "discard_scratch",
    "dumps",
    "is_url",
    "load",
    "loads",
    "matrix_column_names",
    "open",
    "open_bytes",
    "pick_columns",
    "redact",
    "save",
    "segment_files",
    "segment_name",
    "stamp",
    "stage_segments",
    "writes_segments",
]


_Path = Union[str, PathLike[str]]
# The field metadata key of a column's value type in the file (Spark's schemas).
VALUE_TYPE_KEY: str
# ("dense", ndarray) | ("csr", (rows, cols), data, indices, indptr) | ("frame", labels, columns)
_Raw = tuple

class DbdfError(ValueError):
    """A file or object the DAPHNE format cannot hold or does not describe."""

    offset: Optional[int]
    kind: str
    path: Optional[str]
    file: Optional[str]

@final
class Index:
    """An open file's index (headers only)."""

    closed: bool
    def objects(self) -> list[dict[str, Any]]: ...
    def read(self, index: int) -> _Raw: ...
    def window(self, index: int, rows: tuple[int, int], cols: tuple[int, int]) -> _Raw: ...
    def frame(self, index: int, rows: tuple[int, int], labels: list[str]) -> _Raw: ...
    def close(self) -> None: ...
    def requests(self) -> Optional[dict[str, int]]: ...
    def partitions(
        self, index: int, rows: int, segment_starts: list[int]
    ) -> tuple[list[int], list[int]]: ...
    def row_bytes(self, index: int) -> int: ...
    def spark_table(
        self,
        index: int,
        picked: list[str],
        layout: str,
        row_index: Optional[str],
        shown: str,
    ) -> tuple[list[int], str]: ...

@final
class DenseLayout:
    """A tiled dense file's layout: each tile's values at a fixed offset."""

    def __new__(
        cls, shape: tuple[int, int], value_type: str, tile: tuple[int, int]
    ) -> DenseLayout: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    @property
    def shape(self) -> tuple[int, int]: ...
    @property
    def tile(self) -> tuple[int, int]: ...
    @property
    def file_len(self) -> int: ...
    def create_scratch(self, target: _Path) -> PathLike[str]: ...
    def write_tile(self, scratch: _Path, row: int, col: int, array: Any) -> None: ...
    def commit(self, scratch: _Path, target: _Path, sync: bool) -> None: ...
    def part_rows(self) -> int: ...
    def parts_in(self, rows: int) -> int: ...
    def put_parts(
        self,
        url: str,
        storage_options: Optional[dict[str, str]],
        id: str,
        first: int,
        first_row: int,
        array: Any,
    ) -> tuple[list[str], Optional[bytes]]: ...
    def block_index(self, prefix: bytes) -> bytes: ...

def commit_segments(
    staged: _Path,
    folder: _Path,
    parts: Optional[list[tuple[_Path, int]]] = None,
    append: bool = False,
) -> None: ...
def redact(text: str) -> str: ...
def stamp(path: str) -> Optional[tuple[int, int]]: ...
def check_stamp(path: str, version: tuple[int, int]) -> None: ...
def stage_segments(target: _Path, writer: str) -> tuple[PathLike[str], PathLike[str]]: ...
def discard_scratch(scratch: _Path) -> None: ...
def segment_files(
    folder: _Path, storage_options: Optional[dict[str, str]] = None
) -> list[tuple[str, int, int]]: ...
def segment_name(folder_name: str, i: int) -> str: ...
def bands(n: int, per: int) -> list[int]: ...
def is_url(path: str) -> bool: ...
def matrix_column_names(n: int) -> list[str]: ...
def check_spark_column(name: str, sql_type: str) -> None: ...
def writes_segments(target: _Path, to_format: Optional[str] = None) -> bool: ...
def load(
    path: _Path,
    dialect: Optional[str] = None,
    object: Optional[int] = None,
    max_alloc: Optional[int] = None,
    storage_options: Optional[dict[str, str]] = None,
    columns: Union[str, Sequence[Union[str, int]], None] = None,
) -> list[_Raw]: ...
def pick_columns(labels: list[str], columns: Union[str, Sequence[Union[str, int]]]) -> list[int]: ...
def loads(
    data: bytes,
    dialect: Optional[str] = None,
    object: Optional[int] = None,
    max_alloc: Optional[int] = None,
) -> list[_Raw]: ...
def save(
    path: _Path,
    items: list[tuple],
    dialect: str = "spec",
    tile: Optional[tuple[int, int]] = None,
    block: str = "auto",
    narrow: bool = False,
    sync: bool = False,
    storage_options: Optional[dict[str, str]] = None,
) -> None: ...
def dumps(
    items: list[tuple],
    dialect: str = "spec",
    tile: Optional[tuple[int, int]] = None,
    block: str = "auto",
    narrow: bool = False,
) -> bytes: ...
def open(
    path: _Path,
    dialect: Optional[str] = None,
    max_alloc: Optional[int] = None,
    storage_options: Optional[dict[str, str]] = None,
) -> Index: ...
def open_bytes(
    data: bytes, dialect: Optional[str] = None, max_alloc: Optional[int] = None
) -> Index: ...
def convert(
    src: _Path, dst: _Path, storage_options: Optional[dict[str, str]] = None, **options: Any
) -> list[str]: ...

def arrow_stream(
    index: Index,
    object: int,
    columns: Union[str, Sequence[Union[str, int]], None] = None,
    batch_rows: Optional[int] = None,
) -> Any: ...
def arrow_schema(
    index: Index, object: int, columns: Union[str, Sequence[Union[str, int]], None] = None
) -> Any: ...
def begin_upload(url: str, storage_options: Optional[dict[str, str]] = None) -> str: ...
def complete_upload(
    url: str,
    storage_options: Optional[dict[str, str]],
    id: str,
    tags: list[str],
    index: Optional[bytes] = None,
) -> None: ...
def abort_upload(url: str, storage_options: Optional[dict[str, str]], id: str) -> None: ...
def put_segment(
    url: str, storage_options: Optional[dict[str, str]], id: str, value_type: str, array: Any
) -> tuple[list[str], bytes]: ...
def complete_segments(
    url: str,
    storage_options: Optional[dict[str, str]],
    segments: list[tuple[str, list[str], bytes]],
    shape: tuple[int, int],
    value_type: str,
) -> None: ...
