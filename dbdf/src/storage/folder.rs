//! Inputs that are folders: a local directory, or the objects under a prefix `NAME/` in a
//! bucket, as GDAL's virtual file systems read a directory. A folder's files are listed once,
//! when it is opened, and each is opened only when a format reads it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_daphne::Result;

use super::Input;

/// The files directly in a folder, each opened when read.
pub(crate) trait Folder: Send + Sync + std::fmt::Debug {
    /// The files' names (in the folder) and sizes, sorted by name.
    fn entries(&self) -> &[(String, u64)];

    /// Opens the file called `name` in the folder.
    ///
    /// # Errors
    /// I/O errors; for a remote one, request errors naming its URL.
    fn open(&self, name: &str) -> Result<Input>;

    /// The whole file at `key` under the folder (`values/c/0`: in its subfolders too), or
    /// `None` where there is none: a key-value store, as Zarr reads one.
    ///
    /// # Errors
    /// As [`Folder::open`], but for a missing file.
    fn read(&self, key: &str) -> Result<Option<Vec<u8>>>;

    /// The bytes of every file under the folder, its subfolders' too.
    ///
    /// # Errors
    /// As [`Folder::open`].
    #[cfg_attr(not(feature = "zarr"), allow(dead_code))]
    fn stored_bytes(&self) -> Result<u64>;
}

/// One file of an input: the input itself, or one of the files of the folder it is.
#[derive(Clone, Debug)]
pub(crate) struct Part {
    /// What errors call it: its path or its URL (without secrets).
    pub name: String,
    /// Its name in its folder (the last part of `name`).
    pub file_name: String,
    /// Its length in bytes.
    pub size: u64,
    opened: Opened,
}

#[derive(Clone, Debug)]
enum Opened {
    Now(Input),
    Later(Arc<dyn Folder>),
}

impl Part {
    /// The part's bytes, opened now if they were not yet.
    ///
    /// # Errors
    /// As [`Folder::open`].
    pub(crate) fn open(&self) -> Result<Input> {
        match &self.opened {
            Opened::Now(input) => Ok(input.clone()),
            Opened::Later(folder) => folder.open(&self.file_name),
        }
    }
}

impl Input {
    /// The files the input holds: itself, or each file of the folder it is, by name.
    ///
    /// # Errors
    /// I/O errors reading a file's size.
    pub(crate) fn parts(&self) -> Result<Vec<Part>> {
        let Some(folder) = &self.folder else {
            let file_name = self.name.rsplit(['/', '\\']).next().unwrap_or(&self.name);
            return Ok(vec![Part {
                name: self.name.clone(),
                file_name: file_name.to_owned(),
                size: self.data.size()?,
                opened: Opened::Now(self.clone()),
            }]);
        };
        let separator = if self.name.ends_with('/') { "" } else { "/" };
        Ok(folder
            .entries()
            .iter()
            .map(|(file_name, size)| Part {
                name: format!("{}{separator}{file_name}", self.name),
                file_name: file_name.clone(),
                size: *size,
                opened: Opened::Later(Arc::clone(folder)),
            })
            .collect())
    }

    /// Whether the input is a folder (its bytes are none: its files are its [`Input::parts`]).
    pub(crate) fn is_folder(&self) -> bool {
        self.folder.is_some()
    }

    /// The folder the input is, if it is one.
    pub(crate) fn as_folder(&self) -> Option<&dyn Folder> {
        self.folder.as_deref()
    }
}

/// A local directory's files (not its subdirectories).
#[derive(Debug)]
pub(super) struct LocalFolder {
    path: PathBuf,
    entries: Vec<(String, u64)>,
}

impl LocalFolder {
    /// Lists the directory at `path`.
    pub(super) fn list(path: &Path) -> Result<LocalFolder> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let meta = std::fs::metadata(entry.path())?;
            if let (true, Some(name)) = (meta.is_file(), entry.file_name().to_str()) {
                entries.push((name.to_owned(), meta.len()));
            }
        }
        entries.sort();
        Ok(LocalFolder {
            path: path.to_owned(),
            entries,
        })
    }
}

impl Folder for LocalFolder {
    fn entries(&self) -> &[(String, u64)] {
        &self.entries
    }

    fn open(&self, name: &str) -> Result<Input> {
        Input::local(&self.path.join(name))
    }

    fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match std::fs::read(self.path.join(key)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn stored_bytes(&self) -> Result<u64> {
        Ok(bytes_under(&self.path)?)
    }
}

/// The bytes of every file under the directory at `path`, its subdirectories' too.
///
/// # Errors
/// I/O errors listing them.
#[cfg_attr(not(feature = "zarr"), allow(dead_code))]
pub(crate) fn bytes_under(path: &Path) -> std::io::Result<u64> {
    // Symbolic links are not followed, so a link loop cannot make this run forever.
    let mut total = 0;
    let mut pending = vec![path.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                total += entry.metadata()?.len();
            }
        }
    }
    Ok(total)
}
