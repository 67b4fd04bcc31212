//! Decoded objects handed to Python without copies: the vectors the crate decodes become the
//! numpy arrays' memory.
//!
//! What Python receives (the `dbdf` package wraps it for scipy and pandas):
//! - a DenseMatrix (or a runtime scalar, as 1 x 1): `("dense", ndarray)`, 2-D, C order;
//! - a CSRMatrix: `("csr", (rows, cols), data, indices, indptr)`;
//! - a Frame: `("frame", [label, ...], [column, ...])`, 1-D columns.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_daphne::CsrIndex;
use serde_daphne::CsrParts;
use serde_daphne::ErrorDetails;
use serde_daphne::Header;
use serde_daphne::{with_value_type, Element, Error, Object, Result, ValueType, Values};

/// An object decoded, ready to become Python objects (built with the GIL released).
pub enum Decoded {
    /// Row-major values of a `rows x cols` matrix.
    Dense {
        rows: usize,
        cols: usize,
        values: Values,
    },
    /// CSR arrays.
    Csr {
        rows: usize,
        cols: usize,
        values: Values,
        indices: Index,
        indptr: Index,
    },
    /// Labelled columns.
    Frame {
        labels: Vec<String>,
        columns: Vec<Values>,
    },
}

/// Index arrays as scipy keeps them: `int32` when every index and dimension fits (scipy
/// would otherwise narrow `int64` arrays itself, with a copy), else `int64`.
pub enum Index {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Index {
    fn into_py(self, py: Python<'_>) -> Bound<'_, PyAny> {
        match self {
            Index::I32(v) => PyArray1::from_vec(py, v).into_any(),
            Index::I64(v) => PyArray1::from_vec(py, v).into_any(),
        }
    }
}

/// The Python-facing form of `object`, moving its vectors.
///
/// # Errors
/// A matrix or frame that does not fit this machine's memory; values that do not convert to
/// the header's value type (blocks of other types are widened exactly).
pub fn decode(object: Object) -> Result<Decoded> {
    // At least the entries the CSR arrays will hold (dense blocks count every cell).
    let stored: usize = object.blocks().iter().map(|b| b.data.stored()).sum();
    let (rows, cols) = dims(object.shape(), object.offset())?;
    match object.header().clone() {
        Header::Frame { columns, .. } => Ok(Decoded::Frame {
            labels: columns.into_iter().map(|c| c.label).collect(),
            columns: object.into_columns()?,
        }),
        Header::CsrMatrix { value_type, .. } => {
            with_value_type!(value_type, T => csr::<T>((rows, cols), stored as u64, object))
        }
        header => {
            let value_type = header.matrix_value_type().unwrap_or(ValueType::F64);
            let values = with_value_type!(value_type, T =>
                T::into_values(object.into_dense_vec::<T>()?));
            Ok(Decoded::Dense { rows, cols, values })
        }
    }
}

/// `shape` in `usize`s.
///
/// # Errors
/// A `TooLarge` error (at `offset`) where this machine cannot address it.
pub fn dims((rows, cols): (u64, u64), offset: u64) -> Result<(usize, usize)> {
    let size = |n: u64| {
        usize::try_from(n).map_err(|_| {
            Error::from(ErrorDetails::TooLarge {
                offset,
                what: "the object",
                bytes: u128::from(n),
            })
        })
    };
    Ok((size(rows)?, size(cols)?))
}

/// What reads a matrix as CSR arrays with the index type asked for.
pub trait CsrSource {
    /// The arrays, values as `T`, indices as `I`.
    fn read<T: Element, I: CsrIndex>(self) -> Result<CsrParts<T, I>>;
}

impl CsrSource for Object {
    fn read<T: Element, I: CsrIndex>(self) -> Result<CsrParts<T, I>> {
        self.into_csr_parts_as()
    }
}

/// A CSR matrix of `shape` with `stored` entries read from `source` into `int32` indices
/// when every index and dimension fits, else into `int64`.
///
/// # Errors
/// Whatever the source returns.
pub fn csr<T: Element>(
    shape: (usize, usize),
    stored: u64,
    source: impl CsrSource,
) -> Result<Decoded> {
    let limit = i32::MAX as u64;
    // The stored entries bound the row offsets; the index tells their number.
    let fits = shape.0 as u64 <= limit && shape.1 as u64 <= limit && stored <= limit;
    let (indptr, indices, values) = if fits {
        let p = source.read::<T, i32>()?;
        (
            Index::I32(p.row_offsets),
            Index::I32(p.col_indices),
            p.values,
        )
    } else {
        let p = source.read::<T, i64>()?;
        (
            Index::I64(p.row_offsets),
            Index::I64(p.col_indices),
            p.values,
        )
    };
    Ok(Decoded::Csr {
        rows: shape.0,
        cols: shape.1,
        values: T::into_values(values),
        indices,
        indptr,
    })
}

/// A 1-D numpy array owning `values`' memory.
pub fn values_to_py(py: Python<'_>, values: Values) -> Bound<'_, PyAny> {
    with_value_type!(values.value_type(), T => {
        // The type is the vector's own: a move, never a conversion.
        let vec = values.into_vec::<T>().unwrap_or_default();
        PyArray1::from_vec(py, vec).into_any()
    })
}

impl Decoded {
    /// The tuple Python receives.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        Ok(match self {
            Decoded::Dense { rows, cols, values } => {
                let array = with_value_type!(values.value_type(), T => {
                    let vec = values.into_vec::<T>().unwrap_or_default();
                    ndarray::Array2::from_shape_vec((rows, cols), vec)
                        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?
                        .into_pyarray(py)
                        .into_any()
                });
                PyTuple::new(
                    py,
                    [pyo3::types::PyString::new(py, "dense").into_any(), array],
                )?
                .into_any()
            }
            Decoded::Csr {
                rows,
                cols,
                values,
                indices,
                indptr,
            } => (
                "csr",
                (rows, cols),
                values_to_py(py, values),
                indices.into_py(py),
                indptr.into_py(py),
            )
                .into_pyobject(py)?
                .into_any(),
            Decoded::Frame { labels, columns } => {
                let columns: Vec<_> = columns.into_iter().map(|c| values_to_py(py, c)).collect();
                ("frame", labels, columns).into_pyobject(py)?.into_any()
            }
        })
    }
}
