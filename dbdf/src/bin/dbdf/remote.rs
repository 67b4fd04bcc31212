//! URLs wherever a path is taken: the storage options of `--storage-option`, the requests
//! counted for `--stats`, and `.dbdf` files opened from a path or a URL alike.

use std::path::Path;
use std::sync::OnceLock;

use dbdf::remote::{self, Location, RequestStats, StorageOptions};
use serde_daphne::{DbdfFile, Options};

use crate::Failure;

static STORAGE: OnceLock<StorageOptions> = OnceLock::new();

/// Takes the global `--storage-option KEY=VALUE` items.
pub fn set_storage_options(items: &[String]) -> Result<(), Failure> {
    let options =
        StorageOptions::parse(items.iter().map(String::as_str)).map_err(Failure::plain)?;
    let _ = STORAGE.set(options);
    Ok(())
}

/// The storage options given.
pub fn storage() -> &'static StorageOptions {
    STORAGE.get_or_init(StorageOptions::default)
}

/// The requests made by this command (failed ones too), for `--stats`: one line.
pub fn summary() -> String {
    let all = RequestStats::process();
    format!(
        "requests: {}, bytes fetched: {}, bytes sent: {}",
        all.requests(),
        all.bytes_fetched(),
        all.bytes_sent()
    )
}

/// Whether `path` is a URL of an object (not a local path).
pub fn is_url(path: &Path) -> bool {
    path.to_str().is_some_and(remote::is_url)
}

/// Opens a `.dbdf` file lazily, from a path (plain reads) or a URL (its block index if it
/// has one), naming it in errors.
pub fn open(file: &Path) -> Result<DbdfFile, Failure> {
    match Location::of_path(file).map_err(|e| Failure::at(file, e))? {
        Location::Local(path) if path.is_dir() => Err(not_a_format(file)),
        Location::Local(path) => DbdfFile::open(&path).map_err(|e| Failure::at(file, e)),
        Location::Remote(url) => {
            let opened = remote::open_dbdf(&url, storage(), &Options::new())
                .map_err(|e| Failure::at(file, e))?;
            if let Some(why) = opened.stale_index {
                crate::say(format_args!("{url}: its block index was not used ({why})"));
            }
            for note in opened.notes {
                crate::say(format_args!("{note}"));
            }
            Ok(opened.file)
        }
    }
}

/// The failure for a folder that holds no format the tool reads.
pub fn not_a_format(folder: &Path) -> Failure {
    Failure::at(
        folder,
        "a folder of no format dbdf reads: DAPHNE's segments are a folder NAME.hdfs, a Zarr \
         group holds zarr.json or .zgroup, SystemDS's parts have a .mtd beside them (or name \
         the format with --from)",
    )
}
