//! Python objects to serialize, borrowed from their numpy buffers where the crate can write
//! them as they are.
//!
//! What Python hands over (the `dbdf` package normalizes numpy, scipy and pandas inputs):
//! - `("dense", type_name, ndarray)`: a 2-D array of the named type, any memory order;
//! - `("csr", type_name, (rows, cols), data, indices, indptr)`: canonical CSR arrays
//!   (sorted, no duplicates), indices both `int32` or both `int64`;
//! - `("frame", [label, ...], [(type_name, column), ...])`: 1-D columns.

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde::ser::{Serialize, SerializeTupleStruct, Serializer};
use serde_daphne::{with_value_type, ColumnsView, CsrIndex, CsrView, DenseView, Element};
use serde_daphne::{ValueType, Values, ValuesRef};

/// Borrowed numpy arrays, kept alive (and locked against writes from Rust) while serializing.
pub enum Borrowed<'py> {
    Dense(AnyDense<'py>),
    Csr {
        rows: usize,
        cols: usize,
        data: AnyValues<'py>,
        indexes: IndexArrays<'py>,
    },
    Frame {
        labels: Vec<String>,
        columns: Vec<FrameColumn<'py>>,
    },
}

/// A frame's column: borrowed when contiguous, else copied (numpy's strided views).
pub enum FrameColumn<'py> {
    Borrowed(AnyValues<'py>),
    Copied(Values),
}

impl<'py> FrameColumn<'py> {
    fn extract(column: &Bound<'py, PyAny>) -> PyResult<Self> {
        let vt = value_type(&column.get_item(0)?.extract::<String>()?)?;
        let array = column.get_item(1)?;
        let values = AnyValues::extract(vt, &array)?;
        if values.values_ref().is_ok() {
            return Ok(FrameColumn::Borrowed(values));
        }
        with_value_type!(vt, T => {
            let a: PyReadonlyArray1<'py, T> = array.extract()?;
            Ok(FrameColumn::Copied(T::into_values(a.as_array().to_vec())))
        })
    }

    fn values_ref(&self) -> PyResult<ValuesRef<'_>> {
        match self {
            FrameColumn::Borrowed(values) => values.values_ref(),
            FrameColumn::Copied(values) => Ok(values.as_values_ref()),
        }
    }
}

macro_rules! typed_enums {
    ($($variant:ident($t:ty)),*) => {
        /// A borrowed 2-D array of one of the ten value types.
        pub enum AnyDense<'py> { $($variant(PyReadonlyArray2<'py, $t>)),* }
        /// A borrowed 1-D array of one of the ten value types.
        pub enum AnyValues<'py> { $($variant(PyReadonlyArray1<'py, $t>)),* }
        /// A view of one borrowed object, ready to serialize.
        pub enum View<'a> {
            $($variant(DenseView<'a, $t>),)*
            Csr32(CsrAny<'a, i32>),
            Csr64(CsrAny<'a, i64>),
            Frame(ColumnsView<'a>),
        }
        /// A borrowed CSR matrix of one of the ten value types, with scipy's indices.
        pub enum CsrAny<'a, I: CsrIndex> { $($variant(CsrView<'a, $t, I>)),* }

        impl<I: CsrIndex> Serialize for CsrAny<'_, I> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self { $(CsrAny::$variant(v) => v.serialize(s)),* }
            }
        }

        impl Serialize for View<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(View::$variant(v) => v.serialize(s),)*
                    View::Csr32(c) => c.serialize(s),
                    View::Csr64(c) => c.serialize(s),
                    View::Frame(f) => f.serialize(s),
                }
            }
        }

        impl<'py> AnyDense<'py> {
            fn extract(value_type: ValueType, array: &Bound<'py, PyAny>) -> PyResult<Self> {
                Ok(match value_type { $(ValueType::$variant => AnyDense::$variant(array.extract()?),)* })
            }
            fn view(&self) -> View<'_> {
                match self { $(AnyDense::$variant(a) => View::$variant(DenseView(a.as_array())),)* }
            }
        }

        impl<'py> AnyValues<'py> {
            fn extract(value_type: ValueType, array: &Bound<'py, PyAny>) -> PyResult<Self> {
                Ok(match value_type { $(ValueType::$variant => AnyValues::$variant(array.extract()?),)* })
            }
            /// The values, when contiguous.
            fn values_ref(&self) -> PyResult<ValuesRef<'_>> {
                Ok(match self { $(AnyValues::$variant(a) => ValuesRef::from(contiguous(a)?),)* })
            }
            fn csr<'a, I: CsrIndex>(&'a self, shape: (usize, usize), indptr: &'a [I], indices: &'a [I]) -> PyResult<CsrAny<'a, I>> {
                Ok(match self {
                    $(AnyValues::$variant(a) => CsrAny::$variant(csr_view(shape, indptr, indices, contiguous(a)?)?),)*
                })
            }
        }
    };
}

typed_enums!(
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64)
);

fn contiguous<'a, T: numpy::Element>(array: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    array
        .as_slice()
        .map_err(|_| PyValueError::new_err("CSR arrays must be contiguous"))
}

/// The arrays as a view, checked once (sorted, in range) on their own index type, on every
/// core.
fn csr_view<'a, T: Element, I: CsrIndex>(
    shape: (usize, usize),
    indptr: &'a [I],
    indices: &'a [I],
    data: &'a [T],
) -> PyResult<CsrView<'a, T, I>> {
    CsrView::try_from_arrays(shape, indptr, indices, data)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// scipy's index arrays, borrowed as they are (both `int32` or both `int64`).
pub enum IndexArrays<'py> {
    I32(PyReadonlyArray1<'py, i32>, PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>),
}

impl<'py> IndexArrays<'py> {
    fn extract(indptr: &Bound<'py, PyAny>, indices: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let (Ok(p), Ok(i)) = (indptr.extract(), indices.extract()) {
            return Ok(IndexArrays::I32(p, i));
        }
        match (indptr.extract(), indices.extract()) {
            (Ok(p), Ok(i)) => Ok(IndexArrays::I64(p, i)),
            _ => Err(PyTypeError::new_err(
                "CSR index arrays must be both int32 or both int64 numpy arrays",
            )),
        }
    }
}

fn value_type(name: &str) -> PyResult<ValueType> {
    name.parse()
        .map_err(|_| PyTypeError::new_err(format!("{name:?} is not a DAPHNE value type")))
}

impl<'py> Borrowed<'py> {
    /// Borrows one item as the `dbdf` package hands it over.
    pub fn extract(item: &Bound<'py, PyAny>) -> PyResult<Self> {
        let kind: String = item.get_item(0)?.extract()?;
        match kind.as_str() {
            "dense" => {
                let vt = value_type(&item.get_item(1)?.extract::<String>()?)?;
                Ok(Borrowed::Dense(AnyDense::extract(vt, &item.get_item(2)?)?))
            }
            "csr" => {
                let vt = value_type(&item.get_item(1)?.extract::<String>()?)?;
                let (rows, cols): (usize, usize) = item.get_item(2)?.extract()?;
                Ok(Borrowed::Csr {
                    rows,
                    cols,
                    data: AnyValues::extract(vt, &item.get_item(3)?)?,
                    indexes: IndexArrays::extract(&item.get_item(5)?, &item.get_item(4)?)?,
                })
            }
            "frame" => {
                let labels: Vec<String> = item.get_item(1)?.extract()?;
                let columns: Vec<Bound<'py, PyAny>> = item.get_item(2)?.extract()?;
                let columns = columns
                    .iter()
                    .map(FrameColumn::extract)
                    .collect::<PyResult<_>>()?;
                Ok(Borrowed::Frame { labels, columns })
            }
            other => Err(PyTypeError::new_err(format!("unknown item kind {other:?}"))),
        }
    }

    /// The serializable view.
    pub fn view(&self) -> PyResult<View<'_>> {
        match self {
            Borrowed::Dense(d) => Ok(d.view()),
            Borrowed::Csr {
                rows,
                cols,
                data,
                indexes,
            } => {
                let shape = (*rows, *cols);
                Ok(match indexes {
                    IndexArrays::I32(p, i) => {
                        View::Csr32(data.csr(shape, contiguous(p)?, contiguous(i)?)?)
                    }
                    IndexArrays::I64(p, i) => {
                        View::Csr64(data.csr(shape, contiguous(p)?, contiguous(i)?)?)
                    }
                })
            }
            Borrowed::Frame { labels, columns } => {
                let mut view = ColumnsView::new();
                for (label, column) in labels.iter().zip(columns) {
                    view.push(label, column.values_ref()?)
                        .map_err(crate::errors::to_py)?;
                }
                Ok(View::Frame(view))
            }
        }
    }
}

/// Several objects written back to back (one object is written alone).
pub struct Objects<'a>(pub Vec<View<'a>>);

impl Serialize for Objects<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let [one] = self.0.as_slice() {
            return one.serialize(s);
        }
        let mut tuple = s.serialize_tuple_struct("Objects", self.0.len())?;
        for view in &self.0 {
            tuple.serialize_field(view)?;
        }
        tuple.end()
    }
}
