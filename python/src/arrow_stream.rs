//! Arrow's stream interface (the PyCapsule protocol: `__arrow_c_stream__`,
//! `__arrow_c_schema__`) over an object of an open file, by `dbdf::arrow::DbdfBatchReader`:
//! DuckDB, Polars and pyarrow pull its record batches; memory holds one.

use ::arrow_schema::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::RecordBatchReader;
use dbdf::arrow::DbdfBatchReader;
use dbdf::pipe::Projection;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::columns::columns_of;
use crate::handle::Index;

/// The batches of object `object` of `index`'s file, on a handle of their own.
fn reader(
    py: Python<'_>,
    index: &Index,
    object: usize,
    columns: Option<&Bound<'_, PyAny>>,
    batch_rows: Option<u64>,
) -> PyResult<DbdfBatchReader> {
    let columns: Option<Projection> = columns.map(columns_of).transpose()?;
    index.with(py, |source| {
        DbdfBatchReader::new(source.handle()?, object, columns.as_ref(), batch_rows)
    })
}

/// A capsule `arrow_array_stream` of object `object`'s record batches: the columns
/// `columns` (as `columns=` takes them: labels, a matrix's `c<j>`, or positions; all by
/// default), `batch_rows` rows
/// each (by default about 8 MiB of cells).
#[pyfunction]
#[pyo3(signature = (index, object, columns=None, batch_rows=None))]
pub fn arrow_stream<'py>(
    py: Python<'py>,
    index: PyRef<'py, Index>,
    object: usize,
    columns: Option<&Bound<'py, PyAny>>,
    batch_rows: Option<u64>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let reader = reader(py, &index, object, columns, batch_rows)?;
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
}

/// A capsule `arrow_schema` of the table [`arrow_stream`] gives.
#[pyfunction]
#[pyo3(signature = (index, object, columns=None))]
pub fn arrow_schema<'py>(
    py: Python<'py>,
    index: PyRef<'py, Index>,
    object: usize,
    columns: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let schema = reader(py, &index, object, columns, None)?.schema();
    let schema = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    PyCapsule::new_with_value(py, schema, c"arrow_schema")
}
