"""Python values to and from the plain tuples of numpy arrays the Rust core reads and writes.

The core (``dbdf._dbdf``) knows the format; this module only knows numpy, scipy and pandas.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _dbdf

# numpy dtype (kind, itemsize) -> the DAPHNE value type's name.
_VALUE_TYPES = {
    ("u", 1): "u8",
    ("u", 2): "u16",
    ("u", 4): "u32",
    ("u", 8): "u64",
    ("i", 1): "i8",
    ("i", 2): "i16",
    ("i", 4): "i32",
    ("i", 8): "i64",
    ("f", 4): "f32",
    ("f", 8): "f64",
}


def value_type(array: np.ndarray, what: str) -> tuple[str, np.ndarray]:
    """The DAPHNE value type of ``array`` and the array to write (bool viewed as uint8,
    non-native byte order swapped); TypeError for dtypes the format has no type for."""
    dtype = array.dtype
    if dtype == np.bool_:
        return "u8", array.view(np.uint8)
    name = _VALUE_TYPES.get((dtype.kind, dtype.itemsize))
    if name is None:
        raise TypeError(
            f"{what} has dtype {dtype}, which DAPHNE cannot store: use one of uint8..uint64, "
            "int8..int64, float32, float64 or bool"
        )
    if not dtype.isnative:
        array = array.astype(dtype.newbyteorder("="))
    # An array at an odd address (Dask and pickle hand them over from inside a buffer) is
    # copied: the core borrows buffers as typed slices, which must be aligned.
    return name, np.require(array, requirements="A")


def _is_sparse(obj: Any) -> bool:
    # scipy is only consulted when it is already imported: a sparse value implies it is.
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(obj)


def _is_dataframe(obj: Any) -> bool:
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def _arrow_table(obj: Any) -> Any:
    """``obj`` as a ``pyarrow.Table`` when it is a table of pyarrow or polars, else None."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None and isinstance(obj, (pyarrow.Table, pyarrow.RecordBatch)):
        return pyarrow.table(obj)
    polars = sys.modules.get("polars")
    if polars is not None and isinstance(obj, polars.DataFrame):
        return obj.to_arrow()
    return None


# The schema metadata that records the DAPHNE data type a table was (as in Parquet and Arrow
# files the Rust core writes).
DATA_TYPE_KEY = b"daphne:data_type"


def _table_item(table: Any) -> tuple:
    """A pyarrow table as a frame (or the matrix its metadata records), its column buffers
    borrowed where they are one chunk without nulls."""
    import pyarrow

    columns = {}
    for name, column in zip(table.column_names, table.columns):
        if column.null_count:
            raise ValueError(
                f"column {name!r} has {column.null_count} nulls: DAPHNE has no nulls; fill them "
                "first (e.g. table.column(...).fill_null(0))"
            )
        if pyarrow.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        array = column.to_numpy()
        if array.dtype == object:
            raise TypeError(
                f"column {name!r} has type {column.type}, which DAPHNE cannot store: its binary "
                "format holds numbers only"
            )
        columns[name] = array
    recorded = (table.schema.metadata or {}).get(DATA_TYPE_KEY)
    if recorded in (b"DenseMatrix", b"CSRMatrix") and columns:
        matrix = np.column_stack(list(columns.values()))
        if recorded == b"CSRMatrix":
            from scipy.sparse import csr_array

            return _csr_item(csr_array(matrix))
        return _dense_item(matrix)
    return _frame_item(columns)


def item(obj: Any) -> tuple:
    """One object to write, as the core takes it."""
    if _is_sparse(obj):
        return _csr_item(obj)
    if _is_dataframe(obj):
        return _frame_item({str(c): obj[c].to_numpy() for c in obj.columns})
    table = _arrow_table(obj)
    if table is not None:
        return _table_item(table)
    if isinstance(obj, dict):
        return _frame_item(obj)
    if isinstance(obj, (list, tuple)):
        raise TypeError(
            "a list or tuple inside the objects to save: pass numpy.asarray(...) for a nested "
            "list of numbers"
        )
    array = np.asarray(obj)
    if array.dtype.names is not None:
        return _frame_item(record_columns(array))
    return _dense_item(array)


def record_columns(array: np.ndarray) -> dict:
    """A record array's fields as a frame's columns (a record per row)."""
    if array.ndim > 1:
        raise ValueError(
            f"a {array.ndim}-D record array: a frame is 1-D, a record per row"
        )
    array = array.reshape(-1)
    columns = {}
    for name in array.dtype.names:
        field = array.dtype.fields[name][0]
        if field.names is not None:
            raise TypeError(f"the field {name!r} is a nested record (frames have flat columns)")
        if field.subdtype is not None:
            raise TypeError(f"the field {name!r} holds an array in each record")
        columns[name] = np.ascontiguousarray(array[name])
    return columns


def records(frame: dict) -> np.ndarray:
    """A frame's columns as a packed record array, a field per column."""
    rows = len(next(iter(frame.values()))) if frame else 0
    out = np.empty(rows, dtype=[(label, column.dtype) for label, column in frame.items()])
    for label, column in frame.items():
        out[label] = column
    return out


def items(obj: Any) -> list:
    """The objects to write: a list or tuple is several objects, anything else one."""
    if isinstance(obj, (list, tuple)):
        return [item(o) for o in obj]
    return [item(obj)]


def _dense_item(array: np.ndarray) -> tuple:
    if array.ndim == 0:
        array = array.reshape(1, 1)
    elif array.ndim == 1:
        # A 1-D array is a column vector, as the Rust crate writes a Vec.
        array = array.reshape(-1, 1)
    elif array.ndim != 2:
        raise ValueError(f"DAPHNE matrices have 2 dimensions, this array has {array.ndim}")
    name, array = value_type(array, "the array")
    return ("dense", name, array)


def _csr_item(matrix: Any) -> tuple:
    csr = matrix.tocsr()
    if csr.ndim != 2:
        raise ValueError(f"DAPHNE matrices have 2 dimensions, this one has {csr.ndim}")
    if not csr.has_canonical_format:
        # Duplicates are summed (scipy's meaning of them) and indices sorted, on a copy.
        csr = csr.copy()
        csr.sum_duplicates()
    name, data = value_type(np.ascontiguousarray(csr.data), "the sparse matrix")
    rows, cols = csr.shape
    # Both index arrays of one type (scipy keeps int32 or int64), borrowed as they are.
    index_dtype = np.promote_types(csr.indices.dtype, csr.indptr.dtype)
    if index_dtype not in (np.int32, np.int64):
        index_dtype = np.dtype(np.int64)
    indices = np.require(csr.indices, dtype=index_dtype, requirements="CA")
    indptr = np.require(csr.indptr, dtype=index_dtype, requirements="CA")
    return ("csr", name, (rows, cols), data, indices, indptr)


def _frame_item(columns: dict) -> tuple:
    labels, typed = [], []
    for label, column in columns.items():
        if not isinstance(label, str):
            raise TypeError(f"frame column labels must be str, not {type(label).__name__}")
        array = np.asarray(column)
        if array.ndim != 1:
            raise ValueError(f"frame column {label!r} must be 1-D, it has {array.ndim} dimensions")
        typed.append(value_type(array, f"frame column {label!r}"))
        labels.append(label)
    lengths = {len(a) for _, a in typed}
    if len(lengths) > 1:
        raise ValueError(f"frame columns have different lengths: {sorted(lengths)}")
    return ("frame", labels, typed)


def arrow_table(raw: tuple) -> Any:
    """A decoded frame or dense matrix as a ``pyarrow.Table`` over the same buffers (a
    matrix's columns copied out of its rows), the DAPHNE data type in its metadata."""
    try:
        import pyarrow
    except ImportError as e:
        raise ImportError("as_arrow=True needs pyarrow: pip install pyarrow") from e
    kind = raw[0]
    if kind == "frame":
        _, labels, columns = raw
        arrays, data_type = [pyarrow.array(c) for c in columns], b"Frame"
    elif kind == "dense":
        matrix = raw[1]
        labels = _dbdf.matrix_column_names(matrix.shape[1])
        arrays = [pyarrow.array(np.ascontiguousarray(matrix[:, c])) for c in range(matrix.shape[1])]
        data_type = b"DenseMatrix"
    else:
        raise TypeError(
            "a CSRMatrix has no Arrow table form here: load it as scipy (as_arrow=False), or "
            "dbdf.convert(..., data_type='dense') first"
        )
    schema = pyarrow.schema(
        [pyarrow.field(label, a.type, nullable=False) for label, a in zip(labels, arrays)],
        metadata={DATA_TYPE_KEY: data_type},
    )
    return pyarrow.Table.from_arrays(arrays, schema=schema)


def wrap(
    raw: tuple, as_pandas: bool = False, as_records: bool = False, as_arrow: bool = False
) -> Any:
    """A decoded object as numpy, scipy or pandas values (frames as record arrays with
    ``as_records``, tables with ``as_arrow``)."""
    kind = raw[0]
    if as_arrow:
        return arrow_table(raw)
    if kind == "dense":
        return raw[1]
    if kind == "csr":
        _, shape, data, indices, indptr = raw
        try:
            from scipy.sparse import csr_array
        except ImportError as e:
            raise ImportError("reading a CSRMatrix needs scipy: pip install scipy") from e
        return csr_array((data, indices, indptr), shape=shape, copy=False)
    _, labels, columns = raw
    frame = dict(zip(labels, columns))
    if as_records:
        return records(frame)
    if as_pandas:
        import pandas

        return pandas.DataFrame(frame, copy=False)
    return frame
