//! Files: atomic writes and reads sized by the file's length.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::de::Deserializer;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::ser::to_writer_with;
use crate::wire::IoSource;

/// Serializes `value` to the file at `path`, atomically, with the default options.
///
/// The bytes go to a temporary file in the same folder, which is synced and then renamed
/// over `path`; on any failure the temporary file is removed and `path` is left as it was.
///
/// ```
/// let path = std::env::temp_dir().join("serde_daphne_doc_to_file.dbdf");
/// serde_daphne::to_file(&path, &vec![1.0f64, 2.0])?;
/// let back: Vec<f64> = serde_daphne::from_file(&path)?;
/// assert_eq!(back, vec![1.0, 2.0]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// I/O errors, and the errors of [`crate::to_writer`].
pub fn to_file<P: AsRef<Path>, T: ?Sized + Serialize>(path: P, value: &T) -> Result<()> {
    to_file_with(path, value, &Options::new())
}

/// Serializes `value` to the file at `path`, atomically, with the given options.
///
/// # Errors
/// As [`to_file`].
pub fn to_file_with<P: AsRef<Path>, T: ?Sized + Serialize>(
    path: P,
    value: &T,
    options: &Options,
) -> Result<()> {
    write_atomically(path.as_ref(), |file| {
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        to_writer_with(&mut writer, value, options)?;
        writer.flush()?;
        Ok(())
    })
}

/// Writes a file through `write`, atomically: temporary file, sync, rename.
///
/// # Errors
/// Whatever `write` returns, and I/O errors creating, syncing or renaming the file.
pub fn write_atomically(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let temp = temporary_path(path);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let result = write(&mut file)
        .and_then(|()| file.sync_all().map_err(Error::from))
        .and_then(|()| {
            drop(file);
            fs::rename(&temp, path).map_err(Error::from)
        });
    if result.is_err() {
        let _ = fs::remove_file(&temp);
        return result;
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Make the rename itself durable where the platform allows it.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// A name for a temporary file beside `path` that no other writer uses.
fn temporary_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map_or_else(
        || "serde_daphne".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{unique}", std::process::id()))
}

/// Deserializes a `T` from the file at `path`, which must hold exactly its objects.
///
/// # Errors
/// I/O errors, and the errors of [`crate::from_slice`].
pub fn from_file<P: AsRef<Path>, T: DeserializeOwned>(path: P) -> Result<T> {
    from_file_with(path, &Options::new())
}

/// Deserializes a `T` from the file at `path` with options (such as [`Options::max_bytes`]).
///
/// # Errors
/// As [`from_file`].
pub fn from_file_with<P: AsRef<Path>, T: DeserializeOwned>(
    path: P,
    options: &Options,
) -> Result<T> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let src = IoSource::new(file, options.max_bytes).with_known_len(len);
    let mut de = Deserializer::from_source(src);
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}
