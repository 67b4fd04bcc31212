//! URLs wherever a path is taken (`dbdf.open`, `load`, `save`, `convert`), with
//! `storage_options` as pandas and fsspec name them; the requests a handle made.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dbdf::remote::{self, Location, RemoteObject, RequestStats, Scratch, StorageOptions};
use serde_daphne::{BlockIndex, Options, Result};

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
    Ok((Source(opened.file), opened.stats))
}

/// Writes a file with `write` into a scratch folder under the object's name, then uploads it
/// with its sidecars and its block index.
pub fn save(
    url: &str,
    storage: &StorageOptions,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let object = RemoteObject::new(url, storage)?;
    let scratch = Scratch::new()?;
    let local: PathBuf = scratch.0.join(object.file_name());
    write(&local)?;
    let index = BlockIndex::of_file(&local, &Options::new())?;
    remote::upload_with_sidecars(&local, &object, Some(index))
}
