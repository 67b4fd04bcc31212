//! Storage under the formats, as GDAL's virtual file systems are under its drivers: how an
//! input's bytes reach a format's reader, the same way for a local file and an object
//! behind a URL. An [`Input`] is read by position ([`ReadAt`]); a [`Stream`] walks a range of
//! it from start to end, with a few ranges fetched ahead when the input is remote; a
//! [`ReadAhead`] serves positional reads that run on from one to the next from chunks
//! fetched ahead. This layer knows no format (`.ci/check_architecture.py` checks that it
//! imports none).

#[cfg(test)]
mod fake;
mod folder;
mod output;
mod read_ahead;
mod stream;
mod transit;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_daphne::{ReadAt, Result};

#[cfg(feature = "zarr")]
pub(crate) use folder::bytes_under;
pub(crate) use folder::{Folder, Part};
pub(crate) use output::LocalFolder;
pub use output::{FileOut, OutputFiles};
pub(crate) use read_ahead::ReadAhead;
pub(crate) use stream::Stream;
pub(crate) use transit::{InTransit, Way};

/// An input's bytes and the sidecars beside it, wherever they are kept: a local file or an
/// object in a bucket, as formats read in place take it (`Driver::open_at`); or a folder (a
/// directory, the objects under a prefix), whose files are its parts.
#[derive(Clone, Debug)]
pub struct Input {
    /// The bytes, read by position: one request per read for a remote object (none for a
    /// folder).
    pub data: Arc<dyn ReadAt>,
    /// What errors call it: its path, or its URL with any secret taken out.
    pub name: String,
    sidecars: Arc<dyn Sidecars>,
    /// The folder's files, for an input that is a folder.
    folder: Option<Arc<dyn Folder>>,
    /// The bytes as their store hands them over, where it does (a remote object).
    fetch: Option<Arc<dyn Fetch>>,
    /// Lines on sidecars read as missing because the store refused them, shared by clones.
    notes: Arc<Mutex<Vec<String>>>,
}

/// A sidecar as its store answers: there (its bytes), missing, or refused (403: S3 answers
/// a missing key so to a caller who may not list the bucket), with the store's words.
pub(crate) type Sidecar = std::result::Result<Option<Vec<u8>>, String>;

/// Where an input's sidecars are read from: the files or objects named as it is, with a
/// suffix.
pub(crate) trait Sidecars: Send + Sync + std::fmt::Debug {
    /// The sidecar named with `suffix` (`.meta`).
    ///
    /// # Errors
    /// I/O errors; for a remote one, request errors naming its URL (but a refusal).
    fn read(&self, suffix: &str) -> Result<Sidecar>;
}

/// Reads that hand over the bytes a store sent (a response's buffer), where a copy into the
/// reader's buffer would hold every chunk fetched ahead twice while it is copied.
pub(crate) trait Fetch: Send + Sync + std::fmt::Debug {
    /// The `len` bytes at `offset`.
    ///
    /// # Errors
    /// As [`ReadAt::read_exact_at`].
    fn fetch(&self, offset: u64, len: usize)
        -> std::io::Result<Box<dyn AsRef<[u8]> + Send + Sync>>;
}

/// The sidecars of a local file, beside it.
#[derive(Debug)]
struct Beside(PathBuf);

impl Sidecars for Beside {
    fn read(&self, suffix: &str) -> Result<Sidecar> {
        let mut name = self.0.clone().into_os_string();
        name.push(suffix);
        match std::fs::read(name) {
            Ok(bytes) => Ok(Ok(Some(bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ok(None)),
            Err(e) => Err(e.into()),
        }
    }
}

/// No sidecars: an input in memory.
#[derive(Debug)]
struct NoSidecars;

impl Sidecars for NoSidecars {
    fn read(&self, _: &str) -> Result<Sidecar> {
        Ok(Ok(None))
    }
}

impl Input {
    /// `bytes` as an input called `name`, with no sidecars.
    pub(crate) fn in_memory(bytes: Vec<u8>, name: &str) -> Input {
        Input::new(Arc::new(bytes), name.to_owned(), Arc::new(NoSidecars))
    }

    /// `data`, called `name`, with its sidecars read from `sidecars`.
    pub(crate) fn new(data: Arc<dyn ReadAt>, name: String, sidecars: Arc<dyn Sidecars>) -> Input {
        Input {
            data,
            name,
            sidecars,
            folder: None,
            fetch: None,
            notes: Arc::default(),
        }
    }

    /// The same input, its bytes fetched by `fetch` where they are read ahead.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn fetched_by(self, fetch: Arc<dyn Fetch>) -> Input {
        let fetch = Some(fetch);
        Input { fetch, ..self }
    }

    /// Whether the bytes come from a store, a request per read ([`Input::fetched_by`]), not
    /// from a local file.
    pub(crate) fn is_fetched(&self) -> bool {
        self.fetch.is_some()
    }

    /// The folder `folder`, called `name`, with its sidecars (`NAME.mtd`) read from
    /// `sidecars`.
    pub(crate) fn folder(
        folder: Arc<dyn Folder>,
        name: String,
        sidecars: Arc<dyn Sidecars>,
    ) -> Input {
        Input {
            folder: Some(folder),
            ..Input::new(Arc::new(Vec::<u8>::new()), name, sidecars)
        }
    }

    /// The local file or directory at `path`, with the sidecars beside it.
    ///
    /// # Errors
    /// I/O errors opening the file or listing the directory.
    pub(crate) fn local(path: &Path) -> Result<Input> {
        let name = path.display().to_string();
        let beside = Arc::new(Beside(path.to_owned()));
        if path.is_dir() {
            let listed = folder::LocalFolder::list(path)?;
            return Ok(Input::folder(Arc::new(listed), name, beside));
        }
        let data = Arc::new(std::fs::File::open(path)?);
        Ok(Input::new(data, name, beside))
    }

    /// The same input read through `data` (the same bytes: a [`ReadAhead`] over its own).
    pub(crate) fn with_data(&self, data: Arc<dyn ReadAt>) -> Input {
        Input {
            data,
            fetch: None,
            ..self.clone()
        }
    }

    /// The same input read through a [`ReadAhead`]: reads that run on from one to the next
    /// (a whole conversion's bands) served from chunks fetched ahead, several at once.
    ///
    /// # Errors
    /// As the data's [`ReadAt::size`].
    pub(crate) fn read_ahead(&self) -> Result<Input> {
        let ahead = ReadAhead::new(Arc::clone(&self.data), self.fetch.clone())?;
        Ok(self.with_data(Arc::new(ahead)))
    }

    /// The sidecar named with `suffix`, as its store answers ([`Sidecar`]).
    ///
    /// # Errors
    /// As [`Sidecars::read`].
    pub(crate) fn sidecar(&self, suffix: &str) -> Result<Sidecar> {
        self.sidecars.read(suffix)
    }

    /// The text of the `.meta` sidecar beside the input (DAPHNE's JSON), if there is one:
    /// read from the disk or fetched when asked for. One the store refuses is read as
    /// missing, with a note for the user.
    ///
    /// # Errors
    /// I/O and request errors; a sidecar that is not UTF-8 text.
    pub fn meta(&self) -> Result<Option<String>> {
        let bytes = match self.sidecar(".meta")? {
            Ok(bytes) => bytes,
            Err(why) => {
                self.note(format!("{why}; read as without it"));
                None
            }
        };
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        String::from_utf8(bytes).map(Some).map_err(|_| {
            serde_daphne::Error::invalid(format!("{}.meta is not UTF-8 text", self.name))
        })
    }

    /// Adds a line for the user about how the input was read.
    pub(crate) fn note(&self, line: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    /// The notes so far, taken (this input's and its clones'): the remote layer shows them.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
