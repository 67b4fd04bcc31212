//! An object and its sidecars, or DAPHNE's folder of segments and its local sidecar, put in
//! object storage together: after a failed write the old set is there, whole.
//!
//! An object store replaces each object on its own, so the order and what is kept decide:
//! - **A file and its sidecars** (`.meta`, `.mtd`, `.index`): the new object is sent first but
//!   left invisible (a small one held back, a large one as the parts of a pending multipart
//!   upload); the old sidecars are read into memory; the new sidecars are put (stale ones
//!   deleted); the object is completed last, in one request. A failure before that puts the
//!   old sidecars back and drops the parts. Unlike local files (data first, `FileSet`), the
//!   data goes last here: the old object could only be kept aside by copying it whole, while
//!   the new one can be held back for free.
//! - **A folder of segments**: every new segment is sent and held back as above; each old
//!   segment is copied aside on the server (`NAME.hdfs.old/`) and its sidecar kept in
//!   memory; the local sidecar is deleted (DAPHNE then sees no folder), the segments are
//!   completed and extra old ones deleted, and the local sidecar is put last. A failure puts
//!   the old segments back from their copies, and the copies go when the write ends (what a
//!   failure leaves of them, the next write of the folder removes first). Two writers of one
//!   folder at once are not supported.
//!
//! Readers between two of these requests see the new sidecars beside the old object (checked
//! by this crate's readers against the header), or a folder without its local sidecar. A
//! completion whose reply is lost may have happened: then the old sidecars put back describe
//! the new object, and the next write mends it.

use std::fs::File;
use std::path::Path;

use bytes::Bytes;
use serde_daphne::{BlockIndex, Result};

use super::transfer::Staged;
use super::upload::stage;
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
pub fn upload_with_sidecars(
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

/// An old segment kept while a folder is replaced: its copy aside and its sidecar's bytes.
struct Kept {
    copy: RemoteObject,
    meta: Bytes,
}

/// Uploads the folder of segments at `local` as the objects under `folder` (`NAME.hdfs/`),
/// with its local sidecar `NAME.hdfs.meta` last, as one set (see the module's notes): after a
/// failure the old folder is there, whole; segments an earlier, longer write left go.
///
/// # Errors
/// A failed request or a local file missing: the old folder stays then.
pub(super) fn upload_segments(local: &Path, folder: &RemoteObject) -> Result<()> {
    let name = folder.file_name().to_owned();
    let local_meta = folder.sibling(".meta");
    let aside = folder.sibling(".old");
    clear_copies(&aside, &name)?;
    let new_meta = std::fs::read(serde_daphne::lowlevel::appended(local, ".meta"))?;
    // Every new segment sent and held back, with its sidecar's bytes.
    let mut staged = Vec::new();
    let sent = (|| -> Result<()> {
        for i in 1.. {
            let path = local.join(segment_name(&name, i));
            let Ok(file) = File::open(&path) else {
                break;
            };
            let meta = std::fs::read(serde_daphne::lowlevel::appended(&path, ".meta"))?;
            staged.push((stage(&file, &segment(folder, i))?, meta));
        }
        Ok(())
    })();
    let abort_all = |staged: Vec<(Staged, Vec<u8>)>| {
        for (i, (s, _)) in staged.into_iter().enumerate() {
            s.abort(&segment(folder, i + 1));
        }
    };
    if let Err(e) = sent {
        abort_all(staged);
        return Err(e);
    }
    // Every old segment copied aside, its sidecar kept; the old local sidecar kept.
    let mut kept: Vec<Kept> = Vec::new();
    let old_meta = (|| -> Result<Option<Bytes>> {
        for i in 1.. {
            let old = segment(folder, i);
            let Some(meta) = old.sibling(".meta").get_if_present()? else {
                break;
            };
            let copy = aside.sibling(&format!("/{}", segment_name(&name, i)));
            old.copy_to(&copy)?;
            kept.push(Kept { copy, meta });
        }
        local_meta.get_if_present()
    })();
    let old_meta = match old_meta {
        Ok(m) => m,
        Err(e) => {
            abort_all(staged);
            drop_copies(&kept);
            return Err(e);
        }
    };
    let new_count = staged.len();
    let mut touched = 0;
    let replace = || -> Result<()> {
        local_meta.delete_if_present()?;
        for (i, (s, meta)) in staged.into_iter().enumerate() {
            let object = segment(folder, i + 1);
            touched = i + 1;
            s.complete(&object)?;
            object.sibling(".meta").put(meta)?;
        }
        for i in new_count + 1..=kept.len() {
            touched = i;
            segment(folder, i).delete_if_present()?;
            segment(folder, i).sibling(".meta").delete_if_present()?;
        }
        local_meta.put(new_meta.clone())
    };
    let done = replace();
    if let Err(e) = done {
        // Segments not reached were never completed; their parts went with the dropped
        // uploads, so only what was touched needs putting back.
        let mut notes = Vec::new();
        for i in 1..=touched {
            let object = segment(folder, i);
            let back = match kept.get(i - 1) {
                Some(k) => k
                    .copy
                    .copy_to(&object)
                    .and_then(|()| object.sibling(".meta").put(k.meta.to_vec())),
                None => object
                    .delete_if_present()
                    .and_then(|()| object.sibling(".meta").delete_if_present()),
            };
            if back.is_err() {
                notes.push(format!("{} could not be put back as it was", object.url()));
            }
        }
        notes.extend(put_back(std::iter::once((&local_meta, old_meta))));
        if notes.is_empty() {
            drop_copies(&kept);
        } else {
            notes.push(format!("the old segments are kept under {}/", aside.url()));
        }
        return Err(with_notes(e, notes));
    }
    drop_copies(&kept);
    Ok(())
}

/// Deletes the copies of old segments, last first, so that what a failure leaves is copies
/// 1 to j, which the next write of the folder finds ([`clear_copies`]). Best effort: a copy
/// left is beside the folder, never part of it.
fn drop_copies(kept: &[Kept]) {
    for k in kept.iter().rev() {
        if k.copy.delete_if_present().is_err() {
            return;
        }
    }
}

/// Deletes the copies an earlier write of the folder left under `aside` (`NAME.hdfs.old/`),
/// from the first on: [`drop_copies`] leaves only a first run of them.
fn clear_copies(aside: &RemoteObject, name: &str) -> Result<()> {
    for i in 1.. {
        let copy = aside.sibling(&format!("/{}", segment_name(name, i)));
        match copy.head() {
            Ok(_) => copy.delete_if_present()?,
            Err(e)
                if e.io_error()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
            {
                return Ok(())
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
