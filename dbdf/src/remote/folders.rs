//! A folder (a Zarr group, SystemDS part files) put in object storage as the objects under
//! the prefix `NAME/`, with its sidecars beside it (`NAME.mtd`), as one set: after a failed
//! write the old set is there, whole; a reader sees the old set, the new one, or none (an
//! error), never a mix.
//!
//! As DAPHNE's segments ([`super::sets`]), with the metadata deciding what a reader sees:
//! every old object is copied aside on the server (`NAME.old/`, and `NAME.old` for an
//! object `NAME` a file output left), the sidecars and metadata documents (`zarr.json`,
//! `.zgroup`, `.zarray`, `.zattrs`, `.zmetadata`) are deleted (readers then see no set), the
//! new data objects are put, old ones the new set lacks deleted, and the metadata put last,
//! the root's after its arrays', the sidecars after all. A failure puts the old objects back
//! from their copies; the copies go when the write ends (what a failure leaves of them, the
//! next write of the folder removes first). A reader that listed the old set before and
//! reads on meets objects replaced since: an error (each read is pinned to the version
//! listed), never a mix. Two writers of one folder at once are not supported.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

use serde_daphne::Result;

use super::sets::{keep_old, new_sidecars, put_back, with_notes};
use super::upload::stage;
use super::RemoteObject;

/// The names of a Zarr group's metadata documents, put after every chunk.
const METADATA: [&str; 5] = ["zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"];

/// Whether the object at `key` (a path under the folder) is a metadata document.
fn is_metadata(key: &str) -> bool {
    METADATA.contains(&key.rsplit('/').next().unwrap_or(key))
}

/// Uploads the folder at `local` as the objects under `folder` (`NAME/`), with the sidecars
/// written beside `local` (`.mtd`, `.meta`), as one set (see the module's notes).
///
/// # Errors
/// A failed request or a local file unread: the old set stays then.
pub(super) fn upload_folder(local: &Path, folder: &RemoteObject) -> Result<()> {
    let new_keys = local_keys(local)?;
    let (mut metadata, data): (Vec<&String>, Vec<&String>) =
        new_keys.iter().partition(|k| is_metadata(k));
    // Deeper documents first: a group's root last.
    metadata.sort_by_key(|k| std::cmp::Reverse(k.matches('/').count()));
    let sidecars = new_sidecars(local, folder, None)?;
    let aside = folder.sibling(".old");
    clear(&aside)?;
    // The old set: the objects under the prefix, and an object of the folder's own name.
    let old_keys = folder.list_all()?;
    let old_file = folder.head().is_ok();
    let copied = (|| -> Result<()> {
        for key in &old_keys {
            folder.child(key).copy_to(&aside.child(key))?;
        }
        if old_file {
            folder.copy_to(&aside)?;
        }
        Ok(())
    })();
    let olds = copied.and_then(|()| keep_old(&sidecars));
    let old_sidecars = match olds {
        Ok(olds) => olds,
        Err(e) => {
            let _ = clear(&aside);
            return Err(e);
        }
    };
    let mut written = Vec::new();
    let mut replace = || -> Result<()> {
        for (sidecar, _) in &sidecars {
            sidecar.delete_if_present()?;
        }
        for key in old_keys.iter().filter(|k| is_metadata(k)) {
            folder.child(key).delete_if_present()?;
        }
        if old_file {
            folder.delete_if_present()?;
        }
        let mut put = |key: &String| -> Result<()> {
            let object = folder.child(key);
            written.push(key.clone());
            stage(&File::open(local.join(key))?, &object)?.complete(&object)
        };
        for key in &data {
            put(key)?;
        }
        // What the old set had beyond the new goes before the metadata that would list it.
        for gone in old_keys.iter().filter(|k| !new_keys.contains(*k)) {
            folder.child(gone).delete_if_present()?;
        }
        for key in &metadata {
            put(key)?;
        }
        for (sidecar, new) in &sidecars {
            if let Some(bytes) = new {
                sidecar.put(bytes.clone())?;
            }
        }
        Ok(())
    };
    if let Err(e) = replace() {
        let mut notes = Vec::new();
        let mut back = |object: RemoteObject, from: Option<RemoteObject>| {
            let put = match from {
                Some(copy) => copy.copy_to(&object),
                None => object.delete_if_present(),
            };
            if put.is_err() {
                notes.push(format!("{} could not be put back as it was", object.url()));
            }
        };
        for key in written.iter().filter(|k| !old_keys.contains(*k)) {
            back(folder.child(key), None);
        }
        for key in &old_keys {
            back(folder.child(key), Some(aside.child(key)));
        }
        if old_file {
            back(folder.clone(), Some(aside.clone()));
        }
        let old_sidecars = sidecars.iter().map(|(s, _)| s).zip(old_sidecars);
        notes.extend(put_back(old_sidecars));
        match notes.is_empty() {
            true => {
                let _ = clear(&aside);
            }
            false => notes.push(format!("the old objects are kept under {}/", aside.url())),
        }
        return Err(with_notes(e, notes));
    }
    // The new set is in place: copies a failure leaves here go with the next write.
    let _ = clear(&aside);
    Ok(())
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
