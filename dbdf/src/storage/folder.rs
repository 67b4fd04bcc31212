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
}
