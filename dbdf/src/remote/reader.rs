//! Remote objects read positionally ([`ObjectReader`], the format crate's [`ReadAt`]), and
//! `.dbdf` objects opened lazily through their block index when there is one.

use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_daphne::{DbdfFile, Error, ErrorKind, Options, ReadAt, Result};

use super::object::{ObjectChanged, RemoteObject, Version};
use super::{RequestStats, StorageOptions};
use crate::storage::{Fetch, Folder, Input, Sidecar, Sidecars};

/// Bytes below which a request costs as much as a request of this many: what readers read
/// ahead, and what opening fetches first.
const MIN_REQUEST: usize = 256 << 10;

/// An object read with range requests, each pinned to the version it had when opened.
#[derive(Debug)]
pub struct ObjectReader {
    object: RemoteObject,
    size: u64,
    version: Version,
    /// The object's first bytes, fetched by opening (which learns its size and version).
    first: Bytes,
}

impl ObjectReader {
    /// Opens `object` with one request: its first bytes, its size and its version.
    ///
    /// # Errors
    /// A missing object (`NotFound`), refused credentials, other request failures, each
    /// naming the URL.
    pub fn open(object: RemoteObject) -> Result<ObjectReader> {
        ObjectReader::open_pinned(object, None)
    }

    /// [`ObjectReader::open`], of the version `pinned` if given (as a listing saw it).
    fn open_pinned(object: RemoteObject, pinned: Option<Version>) -> Result<ObjectReader> {
        let (first, meta) = match object.get_range(0..MIN_REQUEST as u64, pinned.as_ref()) {
            Ok(got) => got,
            // An empty object has no range to ask for.
            Err(e) if e.kind() == ErrorKind::Io && !is_not_found(&e) => {
                let meta = object.head()?;
                if meta.size > 0 {
                    return Err(e);
                }
                (Bytes::new(), meta)
            }
            Err(e) => return Err(e),
        };
        Ok(ObjectReader {
            size: meta.size,
            version: Version::of(&meta),
            first,
            object,
        })
    }

    fn fetch(&self, offset: u64, len: usize) -> io::Result<Bytes> {
        let end = offset + len as u64;
        let held = self.first.len() as u64;
        if end <= held {
            return Ok(self.first.slice(offset as usize..end as usize));
        }
        if end > self.size {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        // What the first request brought is not asked for again.
        if offset < held {
            let rest = self.fetch(held, (end - held) as usize)?;
            let mut joined = Vec::with_capacity(len);
            joined.extend_from_slice(&self.first[offset as usize..]);
            joined.extend_from_slice(&rest);
            return Ok(Bytes::from(joined));
        }
        let (bytes, _) = self
            .object
            .get_range(offset..end, Some(&self.version))
            .map_err(into_io)?;
        if bytes.len() != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: asked for {len} bytes at {offset}, got {}",
                    self.object.url(),
                    bytes.len()
                ),
            ));
        }
        Ok(bytes)
    }
}

impl Fetch for ObjectReader {
    fn fetch(&self, offset: u64, len: usize) -> io::Result<Box<dyn AsRef<[u8]> + Send + Sync>> {
        Ok(Box::new(ObjectReader::fetch(self, offset, len)?))
    }
}

/// A remote input's sidecars: the objects named as it is, with a suffix.
#[derive(Debug)]
struct ObjectSidecars(RemoteObject);

impl Sidecars for ObjectSidecars {
    fn read(&self, suffix: &str) -> Result<Sidecar> {
        let got = self.0.sibling(suffix).get_optional()?;
        Ok(got.map(|bytes| bytes.map(|b| b.to_vec())))
    }
}

impl ObjectReader {
    /// `object`, opened ([`ObjectReader::open`]), as the input of a format read in place,
    /// with its sidecars fetched when asked for.
    ///
    /// # Errors
    /// As [`ObjectReader::open`].
    pub(crate) fn input(object: RemoteObject) -> Result<Input> {
        ObjectReader::input_pinned(object, None)
    }

    /// [`ObjectReader::input`], of the version `pinned` if given (as a listing saw it).
    fn input_pinned(object: RemoteObject, pinned: Option<Version>) -> Result<Input> {
        let name = object.url().to_owned();
        let sidecars = Arc::new(ObjectSidecars(object.clone()));
        let reader = Arc::new(ObjectReader::open_pinned(object, pinned)?);
        let fetch = Arc::clone(&reader) as Arc<dyn Fetch>;
        Ok(Input::new(reader, name, sidecars).fetched_by(fetch))
    }
}

/// A remote folder: the objects under a prefix `NAME/`, as listed when it was opened, each
/// read pinned to the version the listing saw (a file replaced since is an error, never a
/// mix of two writes).
#[derive(Debug)]
struct ObjectFolder {
    folder: RemoteObject,
    entries: Vec<(String, u64)>,
    versions: HashMap<String, Version>,
    /// Every object down the tree by its key under the folder (`values/c/0`), listed when
    /// first asked for.
    tree: OnceLock<HashMap<String, (u64, Version)>>,
}

impl ObjectFolder {
    /// The objects down the tree: a listing per folder.
    fn tree(&self) -> Result<&HashMap<String, (u64, Version)>> {
        if let Some(tree) = self.tree.get() {
            return Ok(tree);
        }
        let mut tree = HashMap::new();
        let mut pending = vec![String::new()];
        while let Some(key) = pending.pop() {
            let (files, folders) = match key.is_empty() {
                true => self.folder.list_folder()?,
                false => self.folder.child(&key).list_folder()?,
            };
            let at = |name: &str| match key.is_empty() {
                true => name.to_owned(),
                false => format!("{key}/{name}"),
            };
            for (name, size, version) in files {
                tree.insert(at(&name), (size, version));
            }
            pending.extend(folders.iter().map(|f| at(f)));
        }
        Ok(self.tree.get_or_init(|| tree))
    }
}

impl Folder for ObjectFolder {
    fn entries(&self) -> &[(String, u64)] {
        &self.entries
    }

    fn open(&self, name: &str) -> Result<Input> {
        let version = self.versions.get(name).cloned();
        ObjectReader::input_pinned(self.folder.child(name), version)
    }

    fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let Some((size, version)) = self.tree()?.get(key) else {
            return Ok(None);
        };
        let reader = ObjectReader::open_pinned(self.folder.child(key), Some(version.clone()))?;
        let mut bytes = vec![0; *size as usize];
        reader.read_exact_at(&mut bytes, 0).map_err(Error::from)?;
        Ok(Some(bytes))
    }

    fn stored_bytes(&self) -> Result<u64> {
        Ok(self.tree()?.values().map(|(size, _)| size).sum())
    }
}

impl ObjectReader {
    /// [`ObjectReader::input`], or where there is no object at the URL but objects under
    /// it as a prefix (`NAME/...`), that folder, listed: its objects are opened as they are
    /// read.
    ///
    /// # Errors
    /// As [`ObjectReader::input`]: `NotFound` where there is neither.
    pub(crate) fn input_or_folder(object: RemoteObject) -> Result<Input> {
        // Missing, or refused by a server that keeps a folder's objects in a directory of
        // that name (s3s-fs answers its HEAD with 500): the objects under the prefix, if any.
        let missing = match ObjectReader::input(object.clone()) {
            Err(e) if is_not_found(&e) || e.io_error().is_some() => e,
            opened => return opened,
        };
        let (listed, folders) = match object.list_folder() {
            Ok(listed) => listed,
            Err(_) if !is_not_found(&missing) => return Err(missing),
            Err(e) => return Err(e),
        };
        if listed.is_empty() && folders.is_empty() {
            return Err(missing);
        }
        let name = object.url().to_owned();
        let sidecars = Arc::new(ObjectSidecars(object.clone()));
        let folder = ObjectFolder {
            folder: object,
            entries: listed
                .iter()
                .map(|(n, size, _)| (n.clone(), *size))
                .collect(),
            versions: listed.into_iter().map(|(n, _, v)| (n, v)).collect(),
            tree: OnceLock::new(),
        };
        Ok(Input::folder(Arc::new(folder), name, sidecars))
    }
}

pub(super) fn is_not_found(e: &Error) -> bool {
    e.io_error()
        .is_some_and(|e| e.kind() == io::ErrorKind::NotFound)
}

/// The I/O error inside a request's error (requests fail as I/O errors).
fn into_io(e: Error) -> io::Error {
    match e.io_error() {
        Some(inner) => match inner
            .get_ref()
            .and_then(|r| r.downcast_ref::<ObjectChanged>())
        {
            Some(changed) => io::Error::other(ObjectChanged {
                url: changed.url.clone(),
            }),
            None => io::Error::new(inner.kind(), inner.to_string()),
        },
        None => io::Error::other(e.to_string()),
    }
}

impl ReadAt for ObjectReader {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        buf.copy_from_slice(&self.fetch(offset, buf.len())?);
        Ok(())
    }

    fn read_exact_vectored_at(&self, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<()> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let bytes = self.fetch(offset, len)?;
        let mut at = 0;
        for buf in bufs.iter_mut() {
            let n = buf.len();
            buf.copy_from_slice(&bytes[at..at + n]);
            at += n;
        }
        Ok(())
    }

    fn min_request(&self) -> usize {
        MIN_REQUEST
    }
}

/// A `.dbdf` object opened lazily, and how.
#[derive(Debug)]
pub struct OpenedDbdf {
    /// The file, read with range requests.
    pub file: DbdfFile,
    /// The requests made for it (and its sidecars), so far and from now on.
    pub stats: Arc<RequestStats>,
    /// Whether its block index (`URL.index`) opened it.
    pub indexed: bool,
    /// Why a block index beside it was not used, if one was there (it did not match the
    /// object, or the store refused it).
    pub stale_index: Option<String>,
    /// Optional objects the store refused (403), each a line: the object was read without
    /// them, as without missing ones.
    pub notes: Vec<String>,
}

/// Opens the `.dbdf` object at `url` lazily, as every `.dbdf` input read in place opens: its
/// block index (`URL.index`) if there is one, then its first bytes (two requests in all),
/// else a walk over its headers with read-ahead (at most one request per block), with its
/// `.meta` sidecar for a runtime-dialect object.
///
/// # Errors
/// As [`ObjectReader::open`] and [`serde_daphne::Options::open_at`].
pub fn open_dbdf(url: &str, storage: &StorageOptions, options: &Options) -> Result<OpenedDbdf> {
    let object = RemoteObject::new(url, storage)?;
    let stats = Arc::clone(object.stats());
    let input = ObjectReader::input(object)?;
    let opened = crate::native::open_input(&input, options)?;
    Ok(OpenedDbdf {
        file: opened.file,
        stats,
        indexed: opened.indexed,
        stale_index: opened.stale_index,
        notes: input.take_notes(),
    })
}
