//! Whole local files to objects: uploads in parts that become the object only when all are
//! there (a failed or killed upload leaves the old object, or none).

use std::fs::File;
use std::sync::Arc;

use object_store::{MultipartUpload, ObjectStoreExt};
use serde_daphne::{ReadAt, Result};

use super::object::RemoteObject;
use super::runtime;

/// Bytes per uploaded part.
pub(super) const PART: u64 = 16 << 20;
/// Requests in flight at once: enough to fill a link that a single stream does not.
pub(super) const IN_FLIGHT: usize = 4;

/// An object's new bytes, sent but not yet visible: [`Staged::complete`] makes them the
/// object in one step, [`Staged::abort`] (or a failed completion) drops them.
pub(super) enum Staged {
    /// A small object (its file), sent whole by its one request when completed.
    Whole(File),
    /// A small object's bytes, likewise.
    Bytes(Vec<u8>),
    /// Every part sent, in a multipart upload left pending.
    Parts(Box<dyn MultipartUpload>),
}

/// Sends the whole of `file` for the object without making it visible: a small file waits
/// to be sent in one request; a larger one goes up as the parts of a multipart upload (16 MiB, 4 at
/// once), left pending. Memory: those parts.
///
/// # Errors
/// A failed request (the upload is aborted); I/O errors reading `file`.
pub(super) fn stage(file: &File, object: &RemoteObject) -> Result<Staged> {
    let len = file.metadata()?.len();
    if len <= PART {
        return Ok(Staged::Whole(file.try_clone()?));
    }
    let (store, path) = (Arc::clone(&object.store), object.path.clone());
    let mut upload = object.run(async move { store.put_multipart(&path).await }, |_| (0, 0))?;
    let sent = runtime().block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        let mut at = 0;
        loop {
            while at < len && tasks.len() < IN_FLIGHT {
                let n = (len - at).min(PART);
                let mut buf = vec![0; n as usize];
                file.read_exact_at(&mut buf, at)
                    .map_err(|e| object_store::Error::Generic {
                        store: "the local file",
                        source: Box::new(e),
                    })?;
                // Parts are numbered in the order they are handed over, whenever they land.
                let part = upload.put_part(buf.into());
                tasks.spawn(async move { part.await.map(|()| n) });
                at += n;
            }
            let Some(done) = tasks.join_next().await else {
                return Ok(());
            };
            let n = done.map_err(|e| object_store::Error::Generic {
                store: "the upload",
                source: Box::new(e),
            })??;
            object.stats().request(0, n);
        }
    });
    match sent {
        Ok(()) => Ok(Staged::Parts(upload)),
        Err(e) => {
            // The parts sent are dropped; the object stays as it was.
            let _ = runtime().block_on(upload.abort());
            Err(object.error(e))
        }
    }
}

impl Staged {
    /// Makes the bytes sent the object, in one request.
    ///
    /// # Errors
    /// A failed request: the object stays as it was (the parts are dropped).
    pub(super) fn complete(self, object: &RemoteObject) -> Result<()> {
        match self {
            Staged::Whole(file) => {
                let mut bytes = vec![0; file.metadata()?.len() as usize];
                file.read_exact_at(&mut bytes, 0)?;
                object.put(bytes)
            }
            Staged::Bytes(bytes) => object.put(bytes),
            Staged::Parts(mut upload) => {
                let done = object.run(
                    async move {
                        let done = upload.complete().await;
                        if done.is_err() {
                            let _ = upload.abort().await;
                        }
                        done
                    },
                    |_| (0, 0),
                );
                done.map(drop)
            }
        }
    }

    /// Drops the bytes sent (best effort: a pending upload a failed abort leaves is never
    /// visible, and the store's lifecycle rules expire it).
    pub(super) fn abort(self, object: &RemoteObject) {
        if let Staged::Parts(mut upload) = self {
            let _ = object.run(async move { upload.abort().await }, |_| (0, 0));
        }
    }
}
