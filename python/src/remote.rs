//! URLs wherever a path is taken (`dbdf.open`, `load`, `save`, `convert`), with
//! `storage_options` as pandas and fsspec name them; the requests a handle made.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use dbdf::remote::{self, Location, RemoteObject, RequestStats, StorageOptions};
use serde_daphne::{Options, Result};

use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::handle::Source;

/// The per-call options, over the environment's.
pub fn storage(options: Option<HashMap<String, String>>) -> StorageOptions {
    let mut pairs: Vec<(String, String)> = options.unwrap_or_default().into_iter().collect();
    pairs.sort();
    StorageOptions(pairs)
}

/// Where `path` is.
pub fn locate(path: &Path) -> Result<Location> {
    Location::of_path(path)
}

/// The `.dbdf` file at `url`, opened lazily (through its block index if it has one), and the
/// requests it makes.
pub fn open(
    url: &str,
    options: &Options,
    storage: &StorageOptions,
) -> Result<(Source, Arc<RequestStats>)> {
    let opened = remote::open_dbdf(url, storage, options)?;
    Ok((Source(opened.file, None), opened.stats))
}

/// Writes a `.dbdf` object with `write` straight into a streaming upload, with the sidecars
/// it returns (its `.meta` or its block index).
pub fn save(
    url: &str,
    storage: &StorageOptions,
    write: impl FnOnce(&mut dyn Write) -> Result<Vec<(&'static str, Vec<u8>)>>,
) -> Result<()> {
    let object = RemoteObject::new(url, storage)?;
    remote::upload_dbdf_stream(&object, write)
}

/// Begins a multipart upload of `url` whose parts any process sends; its id
/// (`dbdf::remote::begin_shared_upload`).
#[pyfunction]
#[pyo3(signature = (url, storage_options=None))]
pub fn begin_upload(
    py: Python<'_>,
    url: &str,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<String> {
    let storage = storage(storage_options);
    py.detach(|| remote::begin_shared_upload(url, &storage))
        .py_err()
}

/// Completes the upload `id` of `url` from its parts' tags, in order, with its block index
/// (`dbdf::remote::complete_shared_upload`).
#[pyfunction]
#[pyo3(signature = (url, storage_options, id, tags, index=None))]
pub fn complete_upload(
    py: Python<'_>,
    url: &str,
    storage_options: Option<HashMap<String, String>>,
    id: &str,
    tags: Vec<String>,
    index: Option<Vec<u8>>,
) -> PyResult<()> {
    let storage = storage(storage_options);
    py.detach(|| remote::complete_shared_upload(url, &storage, id, tags, index))
        .py_err()
}

/// Aborts the upload `id` of `url` (`dbdf::remote::abort_shared_upload`).
#[pyfunction]
#[pyo3(signature = (url, storage_options, id))]
pub fn abort_upload(
    py: Python<'_>,
    url: &str,
    storage_options: Option<HashMap<String, String>>,
    id: &str,
) -> PyResult<()> {
    let storage = storage(storage_options);
    py.detach(|| remote::abort_shared_upload(url, &storage, id))
        .py_err()
}
