//! `dbdf._dbdf`: the Rust core of the `dbdf` Python package, on top of `serde_daphne`.
//!
//! The Python package (`python/dbdf`) normalizes numpy, scipy and pandas values into plain
//! tuples of numpy arrays and wraps what comes back; this module reads and writes them with
//! the crate, releasing the GIL while it does I/O and decodes. No rule of the format lives
//! here.
//!
//! - [`errors`]: the crate's errors as `DbdfError`/`OSError`;
//! - [`decoded`]: decoded objects to numpy arrays, without copies;
//! - [`borrowed`]: numpy buffers borrowed for writing;
//! - [`bytes`]: new `bytes` objects filled without a copy;
//! - [`handle`]: the lazy index and window reads;
//! - [`convert`]: file-to-file conversions;
//! - [`remote`]: URLs of object storage and HTTP wherever a path is taken;
//! - [`layout`]: tiled dense files whose tiles any process writes (Dask's workers).

mod arrow_stream;
mod borrowed;
mod bytes;
mod columns;
mod convert;
mod decoded;
mod errors;
mod handle;
mod layout;
mod remote;

use dbdf::remote::Location;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyList};
use serde_daphne::{BlockPolicy, Dialect, Options};
use std::collections::HashMap;

use borrowed::{Borrowed, Objects};
use errors::{parse_name, IntoPy};
use handle::{read_options, Index, Source};

/// Every object of the file at `path` (or only object `object`), as tuples of numpy arrays.
#[pyfunction]
#[pyo3(signature = (path, dialect=None, object=None, max_alloc=None, storage_options=None, columns=None))]
fn load<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    dialect: Option<&str>,
    object: Option<usize>,
    max_alloc: Option<u64>,
    storage_options: Option<HashMap<String, String>>,
    columns: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let options = read_options(dialect, max_alloc)?;
    let columns = columns.map(|c| columns::columns_of(&c)).transpose()?;
    let storage = remote::storage(storage_options);
    let decoded = py.detach(|| {
        // Plain reads: a whole-file load touches every byte once, so a memory map only adds
        // page-table work.
        let options = Options {
            memory_map: false,
            ..options
        };
        open_source(&path, &options, &storage)
            .and_then(|(mut s, _)| s.decode_all(object, columns.as_ref()))
            .map_err(|e| errors::in_file(e, &path))
    })?;
    let items: Vec<_> = decoded
        .into_iter()
        .map(|d| d.into_py(py))
        .collect::<PyResult<_>>()?;
    PyList::new(py, items)
}

/// Every object of `data` (or only object `object`).
#[pyfunction]
#[pyo3(signature = (data, dialect=None, object=None, max_alloc=None))]
fn loads<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    dialect: Option<&str>,
    object: Option<usize>,
    max_alloc: Option<u64>,
) -> PyResult<Bound<'py, PyList>> {
    let options = read_options(dialect, max_alloc)?;
    let decoded = py.detach(|| {
        Source::from_bytes(data, &options)
            .and_then(|mut s| s.decode_all(object, None))
            .py_err()
    })?;
    let items: Vec<_> = decoded
        .into_iter()
        .map(|d| d.into_py(py))
        .collect::<PyResult<_>>()?;
    PyList::new(py, items)
}

/// Writing options from the Python keywords.
fn write_options(
    dialect: &str,
    tile: Option<(u32, u32)>,
    block: &str,
    narrow: bool,
    sync: bool,
) -> PyResult<Options> {
    let policy: BlockPolicy = parse_name(block)?;
    let mut options = Options {
        block_policy: policy,
        narrow,
        sync,
        ..Options::new()
    };
    if let Some((rows, cols)) = tile {
        if rows == 0 || cols == 0 {
            return Err(PyValueError::new_err("tile sizes must be positive"));
        }
        options.tile = Some((rows, cols));
    }
    // Spec is what writers write anyway; only DAPHNE's dialect is asked for.
    if parse_name::<Dialect>(dialect)? == Dialect::Runtime {
        options.dialect = Some(Dialect::Runtime);
    }
    Ok(options)
}

fn borrow_all<'py>(items: &[Bound<'py, PyAny>]) -> PyResult<Vec<Borrowed<'py>>> {
    items.iter().map(Borrowed::extract).collect()
}

/// Writes `items` to `path` atomically (with DAPHNE's `.meta` sidecar for `dialect="daphne"`),
/// synced to disk before the rename when `sync`.
#[pyfunction]
#[pyo3(signature = (path, items, dialect="spec", tile=None, block="auto", narrow=false, sync=false, storage_options=None))]
#[allow(clippy::too_many_arguments)]
fn save(
    py: Python<'_>,
    path: std::path::PathBuf,
    items: Vec<Bound<'_, PyAny>>,
    dialect: &str,
    tile: Option<(u32, u32)>,
    block: &str,
    narrow: bool,
    sync: bool,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    let options = write_options(dialect, tile, block, narrow, sync)?;
    let borrowed = borrow_all(&items)?;
    let views = Objects(
        borrowed
            .iter()
            .map(Borrowed::view)
            .collect::<PyResult<_>>()?,
    );
    let storage = remote::storage(storage_options);
    py.detach(|| {
        match remote::locate(&path) {
            Ok(Location::Remote(url)) => {
                remote::save(&url, &storage, |out| options.to_stream(out, &views))
            }
            Ok(Location::Local(local)) => options.to_file(&local, &views),
            Err(e) => Err(e),
        }
        .map_err(|e| errors::in_file(e, &path))
    })
}

/// `items` as the bytes of a `.dbdf` file: measured first, then encoded once, straight into
/// the new `bytes` object.
#[pyfunction]
#[pyo3(signature = (items, dialect="spec", tile=None, block="auto", narrow=false))]
fn dumps<'py>(
    py: Python<'py>,
    items: Vec<Bound<'py, PyAny>>,
    dialect: &str,
    tile: Option<(u32, u32)>,
    block: &str,
    narrow: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let options = write_options(dialect, tile, block, narrow, false)?;
    let borrowed = borrow_all(&items)?;
    let views = Objects(
        borrowed
            .iter()
            .map(Borrowed::view)
            .collect::<PyResult<_>>()?,
    );
    let len = py.detach(|| options.serialized_len(&views).py_err())?;
    let len = usize::try_from(len).map_err(|_| pyo3::exceptions::PyMemoryError::new_err(len))?;
    bytes::filled(py, len, |out| {
        py.detach(|| {
            let written = options.to_uninit_slice(out, &views).py_err()?;
            match written == len {
                true => Ok(()),
                false => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "internal: {written} bytes written where {len} were measured"
                ))),
            }
        })
    })
}

/// Indexes the file at `path` (headers only) for lazy reads.
#[pyfunction]
#[pyo3(signature = (path, dialect=None, max_alloc=None, storage_options=None))]
fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    dialect: Option<&str>,
    max_alloc: Option<u64>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Index> {
    let options = read_options(dialect, max_alloc)?;
    let storage = remote::storage(storage_options);
    let (source, stats) = py
        .detach(|| open_source(&path, &options, &storage).map_err(|e| errors::in_file(e, &path)))?;
    Ok(Index::new(source).with_stats(stats))
}

/// The file at `path` or behind a URL, indexed, and the requests a URL's reads make.
fn open_source(
    path: &std::path::Path,
    options: &Options,
    storage: &dbdf::remote::StorageOptions,
) -> serde_daphne::Result<(Source, Option<std::sync::Arc<dbdf::remote::RequestStats>>)> {
    match remote::locate(path)? {
        Location::Remote(url) => remote::open(&url, options, storage).map(|(s, r)| (s, Some(r))),
        Location::Local(local) => Source::open(&local, options).map(|s| (s, None)),
    }
}

/// Indexes `data` for lazy reads.
#[pyfunction]
#[pyo3(signature = (data, dialect=None, max_alloc=None))]
fn open_bytes(
    py: Python<'_>,
    data: PyBackedBytes,
    dialect: Option<&str>,
    max_alloc: Option<u64>,
) -> PyResult<Index> {
    let options = read_options(dialect, max_alloc)?;
    let source = py.detach(|| Source::from_bytes(data, &options).py_err())?;
    Ok(Index::new(source))
}

/// The module.
#[pymodule]
fn _dbdf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DbdfError", m.py().get_type::<errors::DbdfError>())?;
    m.add_class::<Index>()?;
    m.add_class::<layout::DenseLayout>()?;
    m.add_function(wrap_pyfunction!(layout::commit_segments, m)?)?;
    m.add_function(wrap_pyfunction!(remote::begin_upload, m)?)?;
    m.add_function(wrap_pyfunction!(layout::put_segment, m)?)?;
    m.add_function(wrap_pyfunction!(layout::complete_segments, m)?)?;
    m.add_function(wrap_pyfunction!(remote::complete_upload, m)?)?;
    m.add_function(wrap_pyfunction!(remote::abort_upload, m)?)?;
    m.add_function(wrap_pyfunction!(layout::stage_segments, m)?)?;
    m.add_function(wrap_pyfunction!(layout::discard_scratch, m)?)?;
    m.add_function(wrap_pyfunction!(layout::segment_files, m)?)?;
    m.add_function(wrap_pyfunction!(layout::segment_name, m)?)?;
    m.add_function(wrap_pyfunction!(layout::bands, m)?)?;
    m.add_function(wrap_pyfunction!(layout::stamp, m)?)?;
    m.add_function(wrap_pyfunction!(layout::redact, m)?)?;
    m.add_function(wrap_pyfunction!(layout::check_stamp, m)?)?;
    m.add_function(wrap_pyfunction!(layout::is_url, m)?)?;
    // The field metadata key of a column's value type in the file (Spark's schemas).
    m.add("VALUE_TYPE_KEY", dbdf::plan::VALUE_TYPE_KEY)?;
    m.add_function(wrap_pyfunction!(layout::matrix_column_names, m)?)?;
    m.add_function(wrap_pyfunction!(layout::check_spark_column, m)?)?;
    m.add_function(wrap_pyfunction!(layout::writes_segments, m)?)?;
    m.add_function(wrap_pyfunction!(columns::pick_columns, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(loads, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(dumps, m)?)?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(open_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(convert::convert, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_stream::arrow_stream, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_stream::arrow_schema, m)?)?;
    Ok(())
}
