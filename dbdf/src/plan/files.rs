//! A file's version as a plan names it, and open files kept per process: an engine's tasks
//! (a Spark executor's, a Dask worker's) read many batches of the same files, and opening one
//! walks its block headers.
//!
//! A file is named by path, size and modification time, as the driver saw it when it
//! planned the read: a file changed since is refused, never read as the plan's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use serde_daphne::{DbdfFile, Error, FileReader, Options, Result};

/// A version of a local file: its size and modification time in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// Its length in bytes.
    pub size: u64,
    /// Its modification time, in nanoseconds since the Unix epoch (0 where the file system
    /// keeps none).
    pub mtime_ns: i64,
}

impl Stamp {
    /// Whether the file at `path` is still this version.
    ///
    /// # Errors
    /// An I/O error (`OSError` in Python) naming the file when it changed since, or when its
    /// metadata cannot be read.
    pub fn check(self, path: &Path) -> Result<()> {
        // Checked at every read, also of a file open already: a file replaced since keeps its
        // old bytes behind an open handle, which is the plan's version no longer.
        if Stamp::of(path)? != self {
            return Err(Error::from(std::io::Error::other(format!(
                "{} changed after the read was planned (size, modification time): plan it again",
                path.display()
            ))));
        }
        Ok(())
    }

    /// The version of the file at `path` now.
    ///
    /// # Errors
    /// The file's metadata cannot be read.
    pub fn of(path: &Path) -> Result<Stamp> {
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::invalid(format!("{}: {e}", path.display())))?;
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        Ok(Stamp {
            size: meta.len(),
            mtime_ns,
        })
    }
}

type Key = (PathBuf, Stamp, Option<String>);

/// Idle handles by file and dialect; a handle in use is out of the pool, so that tasks
/// reading the same file on several threads never wait for one another.
static IDLE: Mutex<Vec<(Key, DbdfFile<FileReader>)>> = Mutex::new(Vec::new());

/// At most this many idle handles are kept (each holds an open file and its index).
const MOST_IDLE: usize = 64;

/// Runs `read` on the file at `path`, which must still be version `stamp`.
///
/// # Errors
/// A file changed since `stamp`; the file's own errors; `read`'s.
pub fn with_file<T>(
    path: &Path,
    stamp: Stamp,
    dialect: Option<&str>,
    read: impl FnOnce(&mut DbdfFile<FileReader>) -> Result<T>,
) -> Result<T> {
    stamp.check(path)?;
    let key: Key = (path.to_path_buf(), stamp, dialect.map(str::to_owned));
    let taken = {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        // Handles of the file's earlier versions go: each keeps a replaced file's disk space.
        idle.retain(|(k, _)| k.0 != key.0 || k.1 == stamp);
        let at = idle.iter().position(|(k, _)| *k == key);
        at.map(|i| idle.swap_remove(i).1)
    };
    let mut file = match taken {
        Some(file) => file,
        None => options(dialect)?.open(path)?,
    };
    let result = read(&mut file);
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    if idle.len() >= MOST_IDLE {
        idle.remove(0);
    }
    idle.push((key, file));
    result
}

/// Read options with `dialect` (a name `Dialect` parses) when given.
///
/// # Errors
/// An unknown dialect.
fn options(dialect: Option<&str>) -> Result<Options> {
    let mut options = Options::new();
    if let Some(name) = dialect {
        options.dialect = Some(name.parse()?);
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::{with_file, Stamp};

    #[test]
    fn a_file_changed_since_its_plan_is_refused() {
        let dir = std::env::temp_dir().join(format!("dbdf-plan-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.dbdf");
        let m = ndarray::Array2::<f64>::ones((3, 2));
        serde_daphne::to_file(&path, &serde_daphne::DenseView(m.view())).unwrap();
        let planned = Stamp::of(&path).unwrap();
        let rows = with_file(&path, planned, None, |f| Ok(f.objects()[0].header.rows()));
        assert_eq!(rows.unwrap(), 3);
        let m = ndarray::Array2::<f64>::zeros((4, 2));
        serde_daphne::to_file(&path, &serde_daphne::DenseView(m.view())).unwrap();
        let err = with_file(&path, planned, None, |_| Ok(())).unwrap_err();
        assert!(
            err.to_string()
                .contains("changed after the read was planned"),
            "{err}"
        );
        // The plan of the new version reads it; the old version's handle has left the pool.
        let now = Stamp::of(&path).unwrap();
        let rows = with_file(&path, now, None, |f| Ok(f.objects()[0].header.rows()));
        assert_eq!(rows.unwrap(), 4);
        let pooled = super::IDLE.lock().unwrap();
        let versions: Vec<Stamp> = pooled
            .iter()
            .filter(|(k, _)| k.0 == path)
            .map(|(k, _)| k.1)
            .collect();
        assert_eq!(versions, vec![now]);
        drop(pooled);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
