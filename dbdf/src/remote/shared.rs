//! A multipart upload shared by processes (Dask's workers), as S3's committers share one: the
//! caller begins it ([`begin_shared_upload`]: its id recorded, as every upload's, so that a
//! killed caller's upload is aborted by the next write of the key), hands the URL and the id
//! to the workers, each sends its parts ([`put_shared_part`]) and hands back their tags, and
//! the caller completes it with the object's sidecars as one set
//! ([`complete_shared_upload`]) or aborts it ([`abort_shared_upload`]). Nothing is visible
//! under the URL until the completion.

use object_store::multipart::PartId;
use serde_daphne::{Header, Result};

use super::folders::PrefixWrite;
use super::pending::Pending;
use super::sets::complete_with_sidecars;
use super::transfer::Staged;
use super::{RemoteObject, StorageOptions};

/// The object at `url`, refused where its store has no multipart API.
fn multipart_object(url: &str, storage: &StorageOptions) -> Result<RemoteObject> {
    let object = RemoteObject::new(url, storage)?;
    object.multipart()?;
    Ok(object)
}

/// The upload `id` of `object` begun elsewhere, with the parts whose tags are `tags`.
fn resumed(object: &RemoteObject, id: &str, tags: Vec<String>) -> Result<Pending> {
    let parts = tags
        .into_iter()
        .map(|content_id| PartId { content_id })
        .collect();
    let (store, path) = (std::sync::Arc::clone(&object.store), object.path.clone());
    Ok(Pending::resumed(
        store,
        object.multipart()?,
        path,
        id.to_owned(),
        parts,
    ))
}

/// Begins a multipart upload of the object at `url` whose parts any process may send;
/// returns its id. A pending upload a killed writer of the same key left is aborted first.
///
/// # Errors
/// A store without multipart uploads (an HTTP server); a failed request (a missing bucket,
/// refused credentials), in one line naming the URL, secrets hidden.
pub fn begin_shared_upload(url: &str, storage: &StorageOptions) -> Result<String> {
    let object = multipart_object(url, storage)?;
    let (store, path) = (std::sync::Arc::clone(&object.store), object.path.clone());
    let begin = Pending::begin(store, object.multipart()?, path);
    Ok(object.run(begin, |_| (0, 0))?.id().to_owned())
}

/// Sends part `index` (from 0, in the object's order) of the upload `id` of `url`: at least
/// 5 MiB unless it is the last (S3's rule); returns the tag [`complete_shared_upload`] takes.
///
/// # Errors
/// As [`begin_shared_upload`]; an upload completed or aborted.
pub fn put_shared_part(
    url: &str,
    storage: &StorageOptions,
    id: &str,
    index: usize,
    bytes: Vec<u8>,
) -> Result<String> {
    let object = multipart_object(url, storage)?;
    let multipart = object.multipart()?.0;
    let (path, id, len) = (object.path.clone(), id.to_owned(), bytes.len() as u64);
    let put = async move { multipart.put_part(&path, &id, index, bytes.into()).await };
    let part = object.run(put, |_| (0, len))?;
    Ok(part.content_id)
}

/// Completes the upload `id` of `url` from its parts' tags, in order, with the object's
/// sidecars as one set: `index` its new block index (`None`: an old one goes), and an old
/// `.meta` going. Until then the old object (or none) is there; after a failure too.
///
/// # Errors
/// A failed request, or a part missing: the upload is aborted then, and the old set stays.
pub fn complete_shared_upload(
    url: &str,
    storage: &StorageOptions,
    id: &str,
    tags: Vec<String>,
    index: Option<Vec<u8>>,
) -> Result<()> {
    let object = multipart_object(url, storage)?;
    let pending = resumed(&object, id, tags)?;
    let sidecars = vec![
        (object.sibling(".meta"), None),
        (object.sibling(".index"), index),
    ];
    complete_with_sidecars(Staged::Parts(pending), &object, sidecars)
}

/// Aborts the upload `id` of `url`: its parts are dropped, nothing appears.
///
/// # Errors
/// A failed request, in one line naming the URL.
pub fn abort_shared_upload(url: &str, storage: &StorageOptions, id: &str) -> Result<()> {
    let object = multipart_object(url, storage)?;
    let mut pending = resumed(&object, id, Vec::new())?;
    object.run(async move { pending.abort().await }, |_| (0, 0))
}

/// Completes the uploads of the segments of the folder of DAPHNE's segments at `folder` (the
/// URLs `FOLDER/` + [`crate::segments::segment_name`], from 1): each `(id, its parts'
/// tags, its `.meta`)`, in row order, with the folder's sidecar (of an object with `header`)
/// last, as one set in place of an older folder (its extra segments deleted; see
/// `docs/remote.md`). A failure aborts the uploads and puts the old set back.
///
/// # Errors
/// A failed request, or a part missing.
pub fn complete_shared_segments(
    folder: &str,
    storage: &StorageOptions,
    segments: Vec<(String, Vec<String>, Vec<u8>)>,
    header: &Header,
) -> Result<()> {
    let object = multipart_object(folder, storage)?;
    let name = object.file_name().to_owned();
    let sidecar = serde_daphne::lowlevel::segments_meta(std::path::Path::new(&name), header)?;
    let write = PrefixWrite::new(&object);
    let staging = || -> Result<()> {
        for (k, (id, tags, meta)) in (1..).zip(segments) {
            let key = crate::segments::segment_name(&name, k);
            let segment = object.child(&key);
            write.staged(&key, Staged::Parts(resumed(&segment, &id, tags)?))?;
            crate::storage::OutputFiles::put(&write, &format!("{key}.meta"), &meta)?;
        }
        crate::storage::OutputFiles::sidecar(&write, ".meta", sidecar.into_bytes())
    };
    staging()?;
    write.commit()
}
