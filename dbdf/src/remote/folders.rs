//! An output of several files (a Zarr group, SystemDS part files) put in object storage as
//! the objects under the prefix `NAME/` (or as the object `NAME`), with its sidecars beside
//! it (`NAME.mtd`), as one set: after a failed write the old set is there, whole; a reader
//! sees the old set, the new one, or none (an error), never a mix.
//!
//! As DAPHNE's segments ([`super::sets`]), with the metadata deciding what a reader sees:
//! before the first new byte (for an output written as the one object `NAME`: once its bytes
//! are sent, left pending), every old object is copied aside on the server (`NAME.old/`,
//! and `NAME.old` for an object `NAME`), and the sidecars (`.meta`, `.mtd`: their bytes kept
//! in memory) and metadata documents (`zarr.json`, `.zgroup`, `.zarray`, `.zattrs`,
//! `.zmetadata`) are deleted (readers then see no set). The new data objects go up as they
//! are written, each a streaming upload; metadata documents are held until the commit. The
//! commit deletes old objects the new set lacks, completes the object `NAME` (written as one
//! file), then puts the metadata, the root's after its arrays', and the sidecars last. A
//! failure puts the old objects back from their copies; the copies go when the write ends
//! (what a failure leaves of them, the next write of the folder removes first). A reader
//! that listed the old set before and reads on meets objects replaced since: an error (each
//! read is pinned to the version listed), never a mix. Two writers of one folder at once are
//! not supported. A plain HTTP server may not list (nginx's WebDAV does not): there an
//! output written as the one object `NAME` is written without listing `NAME/`.

use std::collections::{BTreeSet, VecDeque};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;
use serde_daphne::Result;

use super::object::Sending;
use super::pending::PART;
use super::sets::{put_back, with_notes, SIDECARS};
use super::transfer::{Staged, IN_FLIGHT};
use super::upload::StreamingUpload;
use super::RemoteObject;
use crate::storage::{FileOut, OutputFiles};

/// The names of a Zarr group's metadata documents, put after every chunk.
const METADATA: [&str; 5] = ["zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"];

/// Whether the object at `key` (a path under the folder) is a metadata document.
fn is_metadata(key: &str) -> bool {
    METADATA.contains(&key.rsplit('/').next().unwrap_or(key))
}

/// The files of an output written into the objects of `folder` ([`OutputFiles`]), put in
/// place as one set by [`PrefixWrite::commit`] (see the module's notes). Nothing is changed
/// before the first file or sidecar is written; dropped uncommitted, it puts the old set
/// back.
pub(super) struct PrefixWrite<'o> {
    folder: &'o RemoteObject,
    state: Mutex<Option<Began>>,
    /// Whether the output is the one object `NAME` (asked for before it begins).
    whole: AtomicBool,
}

/// A write begun: the old set kept aside, and the new one so far.
struct Began {
    aside: RemoteObject,
    /// Whether `NAME/` and `NAME.old/` are listed (not for one object over plain HTTP).
    listed: bool,
    old_keys: BTreeSet<String>,
    old_file: bool,
    /// Each sidecar, its old bytes and its new ones.
    sidecars: Vec<(RemoteObject, Option<Bytes>, Option<Vec<u8>>)>,
    /// Keys under the prefix written (or begun), data and metadata.
    written: BTreeSet<String>,
    /// Metadata documents, put at the commit.
    metadata: Vec<(String, Vec<u8>)>,
    /// The object `NAME` written as one file, held back until the commit.
    whole: Option<Staged>,
    /// Objects under the prefix sent elsewhere (Dask's workers), completed at the commit.
    staged: Vec<(RemoteObject, Staged)>,
    /// Small objects' requests on their way, oldest first (a few at once: one at a time,
    /// Zarr's chunks would go at a request's round trip each).
    sending: VecDeque<Sending>,
}

impl<'o> PrefixWrite<'o> {
    /// A write of the output `folder`.
    pub(super) fn new(folder: &'o RemoteObject) -> PrefixWrite<'o> {
        PrefixWrite {
            folder,
            state: Mutex::new(None),
            whole: AtomicBool::new(false),
        }
    }

    /// The write's state, begun if it was not.
    fn began(&self) -> Result<MutexGuard<'_, Option<Began>>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.is_none() {
            let whole = self.whole.load(Ordering::Relaxed);
            *state = Some(Began::begin(self.folder, whole)?);
        }
        Ok(state)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Began) -> T) -> Result<T> {
        let mut state = self.began()?;
        Ok(f(state.as_mut().expect("begun")))
    }

    /// Makes `staged`, sent elsewhere and held back, the object `key` under the prefix at the
    /// commit (and drops it on a failure).
    ///
    /// # Errors
    /// A failed request keeping the old set aside.
    pub(super) fn staged(&self, key: &str, staged: Staged) -> Result<()> {
        let object = self.folder.child(key);
        self.with(|b| {
            b.written.insert(key.to_owned());
            b.staged.push((object, staged));
        })
    }

    /// Puts the new set in place (see the module's notes).
    ///
    /// # Errors
    /// A failed request: the old set is put back then.
    pub(super) fn commit(self) -> Result<()> {
        let mut state = self.began()?;
        let mut began = state.take().expect("begun");
        drop(state);
        match began.commit(self.folder) {
            Ok(()) => {
                // Copies a failure leaves here go with the next write.
                let _ = began.clear_aside();
                Ok(())
            }
            Err(e) => Err(with_notes(e, began.put_back(self.folder))),
        }
    }
}

impl Drop for PrefixWrite<'_> {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(mut began) = state.take() {
            let _ = began.put_back(self.folder);
        }
    }
}

impl Began {
    /// Keeps the old set aside and deletes what tells readers there is one; `whole` for an
    /// output written as the one object `NAME`.
    fn begin(folder: &RemoteObject, whole: bool) -> Result<Began> {
        let listed = !whole || folder.multipart.is_some();
        let mut began = Began {
            old_keys: BTreeSet::new(),
            old_file: folder.head().is_ok(),
            aside: folder.sibling(".old"),
            listed,
            sidecars: Vec::new(),
            written: BTreeSet::new(),
            metadata: Vec::new(),
            whole: None,
            staged: Vec::new(),
            sending: VecDeque::new(),
        };
        began.clear_aside()?;
        if listed {
            began.old_keys = folder.list_all()?.into_iter().collect();
        }
        let kept = (|| -> Result<()> {
            for key in &began.old_keys {
                folder.child(key).copy_to(&began.aside.child(key))?;
            }
            if began.old_file {
                folder.copy_to(&began.aside)?;
            }
            for suffix in SIDECARS {
                let sidecar = folder.sibling(suffix);
                let old = sidecar.get_if_present()?;
                began.sidecars.push((sidecar, old, None));
            }
            Ok(())
        })();
        if let Err(e) = kept {
            let _ = began.clear_aside();
            return Err(e);
        }
        let hidden = (|| -> Result<()> {
            for (sidecar, old, _) in &began.sidecars {
                if old.is_some() {
                    sidecar.delete_if_present()?;
                }
            }
            for key in began.old_keys.iter().filter(|k| is_metadata(k)) {
                folder.child(key).delete_if_present()?;
            }
            if began.old_file {
                folder.delete_if_present()?;
            }
            Ok(())
        })();
        match hidden {
            Ok(()) => Ok(began),
            Err(e) => Err(with_notes(e, began.put_back(folder))),
        }
    }

    /// Deletes the copies an earlier write left aside ([`clear`]; where nothing is listed,
    /// the object `NAME.old` alone).
    fn clear_aside(&self) -> Result<()> {
        match self.listed {
            true => clear(&self.aside),
            false => self.aside.delete_if_present(),
        }
    }

    /// Waits for every small object's request; the first error.
    fn sent(&mut self) -> Result<()> {
        let mut first = Ok(());
        for sending in self.sending.drain(..) {
            let answered = sending.wait();
            if first.is_ok() {
                first = answered;
            }
        }
        first
    }

    fn commit(&mut self, folder: &RemoteObject) -> Result<()> {
        self.sent()?;
        // Each a request of its own, a few at once; after a failure, those left are aborted
        // with the rest of the write.
        let mut staged = std::mem::take(&mut self.staged).into_iter();
        loop {
            let group: Vec<_> = staged.by_ref().take(IN_FLIGHT).collect();
            if group.is_empty() {
                break;
            }
            let completed = std::thread::scope(|scope| {
                let each: Vec<_> = group
                    .into_iter()
                    .map(|(object, staged)| scope.spawn(move || staged.complete(&object)))
                    .collect();
                each.into_iter()
                    .map(|h| h.join().expect("a completion's thread panicked"))
                    .collect::<Result<Vec<()>>>()
            });
            if let Err(e) = completed {
                self.staged = staged.collect();
                return Err(e);
            }
        }
        // What the old set had beyond the new goes before the metadata that would list it.
        for gone in self.old_keys.iter().filter(|k| !self.written.contains(*k)) {
            folder.child(gone).delete_if_present()?;
        }
        if let Some(whole) = self.whole.take() {
            whole.complete(folder)?;
        }
        // Deeper documents first: a group's root last.
        let mut metadata = std::mem::take(&mut self.metadata);
        metadata.sort_by_key(|(k, _)| std::cmp::Reverse(k.matches('/').count()));
        for (key, bytes) in metadata {
            folder.child(&key).put(bytes)?;
        }
        for (sidecar, _, new) in &mut self.sidecars {
            if let Some(bytes) = new.take() {
                sidecar.put(bytes)?;
            }
        }
        Ok(())
    }

    /// Puts the old set back from its copies; a note for each object it could not.
    fn put_back(&mut self, folder: &RemoteObject) -> Vec<String> {
        if let Some(whole) = self.whole.take() {
            whole.abort(folder);
        }
        for (object, staged) in self.staged.drain(..) {
            staged.abort(&object);
        }
        // None may land after the deletes below.
        let _ = self.sent();
        let mut notes = Vec::new();
        let mut back = |object: RemoteObject, from: Option<&RemoteObject>| {
            let put = match from {
                Some(copy) => copy.copy_to(&object),
                None => object.delete_if_present(),
            };
            if put.is_err() {
                notes.push(format!("{} could not be put back as it was", object.url()));
            }
        };
        for key in self.written.iter().filter(|k| !self.old_keys.contains(*k)) {
            back(folder.child(key), None);
        }
        for key in &self.old_keys {
            back(folder.child(key), Some(&self.aside.child(key)));
        }
        match self.old_file {
            true => back(folder.clone(), Some(&self.aside)),
            false => back(folder.clone(), None),
        }
        let olds = self.sidecars.iter().map(|(s, old, _)| (s, old.clone()));
        notes.extend(put_back(olds));
        match notes.is_empty() {
            true => {
                let _ = self.clear_aside();
            }
            false => notes.push(format!(
                "the old objects are kept under {}/",
                self.aside.url()
            )),
        }
        notes
    }
}

/// A file under the prefix as it is written: a data object's streaming upload (completed
/// when finished), or a metadata document's bytes (put at the commit).
struct PrefixFile<'w, 'o> {
    write: &'w PrefixWrite<'o>,
    key: Option<String>,
    to: To,
    /// The first bytes held back, for the whole file written head last.
    head: u64,
}

enum To {
    Object(RemoteObject, Box<StreamingUpload>),
    Held(Vec<u8>),
}

impl Write for PrefixFile<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match &mut self.to {
            To::Object(_, upload) => upload.write(bytes),
            To::Held(held) => held.write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl FileOut for PrefixFile<'_, '_> {
    fn finish(self: Box<Self>) -> Result<()> {
        let PrefixFile { write, key, to, .. } = *self;
        match (key, to) {
            (Some(_), To::Object(object, upload)) => match upload.finish()? {
                Staged::Bytes(bytes) => {
                    let sending = object.put_later(bytes);
                    let oldest = write.with(|b| {
                        b.sending.push_back(sending);
                        (b.sending.len() > IN_FLIGHT)
                            .then(|| b.sending.pop_front())
                            .flatten()
                    })?;
                    oldest.map_or(Ok(()), Sending::wait)
                }
                staged => staged.complete(&object),
            },
            (Some(key), To::Held(bytes)) => write.with(|b| b.metadata.push((key, bytes))),
            (None, To::Object(_, upload)) => {
                let staged = upload.finish()?;
                write.with(|b| b.whole = Some(staged))
            }
            (None, To::Held(_)) => Err(serde_daphne::Error::invalid("internal: a whole file held")),
        }
    }

    fn head(&self) -> u64 {
        self.head
    }

    fn finish_with_head(self: Box<Self>, head: &[u8]) -> Result<()> {
        match (self.key, self.to) {
            (None, To::Object(_, upload)) if self.head > 0 => {
                let staged = upload.finish_with_head(head.to_vec())?;
                self.write.with(|b| b.whole = Some(staged))
            }
            _ => Err(serde_daphne::Error::invalid(
                "internal: a file without a head",
            )),
        }
    }
}

impl OutputFiles for PrefixWrite<'_> {
    fn whole(&self) -> Result<Box<dyn FileOut + '_>> {
        self.whole.store(true, Ordering::Relaxed);
        // Begun once its bytes are sent, left pending (at its finish): until then the old set
        // is there as it was, and an upload stopped halfway (killed) leaves it so.
        let upload = Box::new(StreamingUpload::new(self.folder));
        let to = To::Object(self.folder.clone(), upload);
        Ok(Box::new(PrefixFile {
            write: self,
            key: None,
            to,
            head: 0,
        }))
    }

    fn whole_head_last(&self) -> Result<Option<Box<dyn FileOut + '_>>> {
        // As `whole`, its first part sent last.
        self.whole.store(true, Ordering::Relaxed);
        let upload = StreamingUpload::head_last(self.folder);
        let to = To::Object(self.folder.clone(), Box::new(upload));
        Ok(Some(Box::new(PrefixFile {
            write: self,
            key: None,
            to,
            head: PART,
        })))
    }

    fn create(&self, key: &str) -> Result<Box<dyn FileOut + '_>> {
        // Recorded before any byte goes: a failure removes what may have been put.
        self.with(|b| b.written.insert(key.to_owned()))?;
        let to = match is_metadata(key) {
            true => To::Held(Vec::new()),
            false => {
                let object = self.folder.child(key);
                let upload = Box::new(StreamingUpload::new(&object));
                To::Object(object, upload)
            }
        };
        let key = Some(key.to_owned());
        Ok(Box::new(PrefixFile {
            write: self,
            key,
            to,
            head: 0,
        }))
    }

    fn read(&self, key: &str) -> Result<Vec<u8>> {
        let object = self.folder.child(key);
        match object.get_if_present()? {
            Some(bytes) => Ok(bytes.to_vec()),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} is not there", object.url()),
            )
            .into()),
        }
    }

    fn remove(&self, key: &str) -> Result<()> {
        self.with(|b| b.metadata.retain(|(k, _)| k != key))?;
        self.folder.child(key).delete_if_present()
    }

    fn sidecar(&self, suffix: &'static str, bytes: Vec<u8>) -> Result<()> {
        let sibling = self.folder.sibling(suffix);
        self.with(|b| {
            match b
                .sidecars
                .iter_mut()
                .find(|(s, ..)| s.url() == sibling.url())
            {
                Some((_, _, new)) => {
                    *new = Some(bytes);
                    Ok(())
                }
                None => Err(serde_daphne::Error::invalid(format!(
                    "internal: {suffix} is not a sidecar kept with a folder"
                ))),
            }
        })?
    }
}

/// Uploads the folder at `local` as the objects under `folder` (`NAME/`), with the sidecars
/// written beside `local` (`.mtd`, `.meta`), as one set (see the module's notes).
///
/// # Errors
/// A failed request or a local file unread: the old set stays then.
pub(super) fn upload_folder(local: &Path, folder: &RemoteObject) -> Result<()> {
    let write = PrefixWrite::new(folder);
    for key in local_keys(local)? {
        let mut file = write.create(&key)?;
        std::io::copy(&mut File::open(local.join(&key))?, &mut file)?;
        file.finish()?;
    }
    for suffix in SIDECARS {
        match std::fs::read(serde_daphne::lowlevel::appended(local, suffix)) {
            Ok(bytes) => write.sidecar(suffix, bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    write.commit()
}

/// The files under `local`, as keys (paths with `/`), in order.
fn local_keys(local: &Path) -> Result<BTreeSet<String>> {
    let mut keys = BTreeSet::new();
    let mut folders = vec![(local.to_owned(), String::new())];
    while let Some((dir, prefix)) = folders.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            match entry.file_type()?.is_dir() {
                true => folders.push((entry.path(), format!("{prefix}{name}/"))),
                false => {
                    keys.insert(format!("{prefix}{name}"));
                }
            }
        }
    }
    Ok(keys)
}

/// Deletes the object `aside` and every object under it (`NAME.old/`): the copies an
/// earlier write left.
fn clear(aside: &RemoteObject) -> Result<()> {
    for key in aside.list_all()? {
        aside.child(&key).delete_if_present()?;
    }
    aside.delete_if_present()
}
