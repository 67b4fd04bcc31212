//! An object and its sidecars (`.meta`, `.mtd`, `.index`) put in object storage together:
//! after a failed write the old set is there, whole. (An output of several files, DAPHNE's
//! segments among them, is [`super::folders`]'.)
//!
//! An object store replaces each object on its own, so the order and what is kept decide:
//! the new object is sent first but left invisible (a small one held back, a large one as the
//! parts of a pending multipart upload); the old sidecars are read into memory; the new
//! sidecars are put (stale ones deleted); the object is completed last, in one request. A
//! failure before that puts the old sidecars back and drops the parts. Unlike local files
//! (data first, `FileSet`), the data goes last here: the old object could only be kept aside
//! by copying it whole, while the new one can be held back for free.
//!
//! Readers between two of these requests see the new sidecars beside the old object (checked
//! by this crate's readers against the header). A completion whose reply is lost may have
//! happened: then the old sidecars put back describe the new object, and the next write
//! mends it.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use bytes::Bytes;
use serde_daphne::{BlockIndex, Result};

use super::transfer::Staged;
use super::upload::{stage, StreamingUpload};
use super::RemoteObject;
use crate::segments::segment_name;

/// Sidecars fetched and sent with a file: DAPHNE's `.meta` and SystemDS's `.mtd`.
pub(super) const SIDECARS: [&str; 2] = [".meta", ".mtd"];

/// Uploads the file at `local` as `object` with its sidecars as one set: the sidecars written
/// beside `local` (`.meta`, `.mtd`) and `index` as its block index (`.index`); a `.meta` or
/// an `.index` of an earlier object is deleted when the new one has none (for a `.dbdf`,
/// which `index` marks, and a CSV).
///
/// # Errors
/// A folder at `local`; a failed request ([`RemoteObject::put`]'s errors) or I/O errors
/// reading `local`. The old object and sidecars stay then.
pub(crate) fn upload_with_sidecars(
    local: &Path,
    object: &RemoteObject,
    index: Option<BlockIndex>,
) -> Result<()> {
    if local.is_dir() {
        return Err(serde_daphne::Error::invalid(format!(
            "{} would be a folder (a Zarr group, SystemDS parts): this sends one file",
            object.url()
        )));
    }
    let sidecars = new_sidecars(local, object, index)?;
    let staged = stage(&File::open(local)?, object)?;
    complete_with_sidecars(staged, object, sidecars)
}

/// Writes `object`, a `.dbdf` file, as a streaming upload with no local copy: `write` puts
/// its bytes into the upload and returns its sidecars as `(suffix, bytes)` (as
/// [`serde_daphne::Options::to_stream`] does); the object appears with them as one set, and a
/// `.meta` or `.index` of an earlier object is deleted where the new one has none.
///
/// # Errors
/// `write`'s errors and a failed request: the old object and sidecars stay then.
pub fn upload_dbdf_stream(
    object: &RemoteObject,
    write: impl FnOnce(&mut dyn Write) -> Result<Vec<(&'static str, Vec<u8>)>>,
) -> Result<()> {
    let mut upload = StreamingUpload::new(object);
    let written = write(&mut upload)?;
    let sidecars = crate::pipe::streamed_sidecars(written)
        .into_iter()
        .map(|(suffix, bytes)| (object.sibling(suffix), bytes))
        .collect();
    let staged = upload.finish()?;
    complete_with_sidecars(staged, object, sidecars)
}

/// A sidecar of an object and its new bytes (`None`: deleted where there is one).
pub(super) type NewSidecar = (RemoteObject, Option<Vec<u8>>);

/// The sidecars of `object` to put with it: those written beside `local` (`.meta`, `.mtd`)
/// and `index` as its block index; an earlier object's `.meta` or `.index` to delete where
/// the new one has none (for a `.dbdf`, which `index` marks, and a CSV).
///
/// # Errors
/// I/O errors reading them.
pub(super) fn new_sidecars(
    local: &Path,
    object: &RemoteObject,
    index: Option<BlockIndex>,
) -> Result<Vec<NewSidecar>> {
    let dbdf = index.is_some();
    let csv = object.file_name().ends_with(".csv");
    let mut sidecars = Vec::new();
    for suffix in SIDECARS {
        let written = std::fs::read(serde_daphne::lowlevel::appended(local, suffix));
        let new = match written {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        if new.is_some() || (suffix == ".meta" && (dbdf || csv)) {
            sidecars.push((object.sibling(suffix), new));
        }
    }
    if let Some(index) = index {
        sidecars.push((object.sibling(".index"), Some(index.to_vec())));
    }
    Ok(sidecars)
}

/// Makes `staged` (sent, held back) the object with `sidecars`, as one set (see the
/// module's notes).
///
/// # Errors
/// A failed request: the old object and sidecars stay then (the parts are dropped).
pub(super) fn complete_with_sidecars(
    staged: Staged,
    object: &RemoteObject,
    sidecars: Vec<NewSidecar>,
) -> Result<()> {
    let olds = match keep_old(&sidecars) {
        Ok(olds) => olds,
        Err(e) => {
            staged.abort(object);
            return Err(e);
        }
    };
    let mut changed = 0;
    let mut put_new = || -> Result<()> {
        for ((sidecar, new), old) in sidecars.iter().zip(&olds) {
            changed += 1;
            match new {
                Some(bytes) => sidecar.put(bytes.clone())?,
                None if old.is_some() => sidecar.delete_if_present()?,
                None => {}
            }
        }
        Ok(())
    };
    let done = match put_new() {
        Ok(()) => staged.complete(object),
        Err(e) => {
            staged.abort(object);
            Err(e)
        }
    };
    done.map_err(|e| {
        let olds = sidecars.iter().map(|(s, _)| s).zip(olds).take(changed);
        with_notes(e, put_back(olds))
    })
}

/// What each sidecar held before, if anything.
pub(super) fn keep_old(sidecars: &[NewSidecar]) -> Result<Vec<Option<Bytes>>> {
    sidecars.iter().map(|(s, _)| s.get_if_present()).collect()
}

/// Puts back each object's old bytes (deletes it where there were none), last first; returns
/// a note for each it could not.
pub(super) fn put_back<'a>(
    olds: impl DoubleEndedIterator<Item = (&'a RemoteObject, Option<Bytes>)>,
) -> Vec<String> {
    let mut notes = Vec::new();
    for (object, old) in olds.rev() {
        let back = match old {
            Some(bytes) => object.put(bytes.to_vec()),
            None => object.delete_if_present(),
        };
        if back.is_err() {
            notes.push(format!("{} could not be put back as it was", object.url()));
        }
    }
    notes
}

pub(super) fn with_notes(error: serde_daphne::Error, notes: Vec<String>) -> serde_daphne::Error {
    if notes.is_empty() {
        return error;
    }
    serde_daphne::Error::from(std::io::Error::other(format!(
        "{error}; {}",
        notes.join("; ")
    )))
}

/// The object of segment `i` of the folder of segments `folder` (`NAME.hdfs/NAME.hdfs_segment_i`).
pub(super) fn segment(folder: &RemoteObject, i: usize) -> RemoteObject {
    folder.sibling(&format!("/{}", segment_name(folder.file_name(), i)))
}
