//! An object's new bytes sent but held back ([`Staged`]): they become the object only when
//! completed (a failed or killed upload leaves the old object, or none).

use serde_daphne::{ReadAt, Result};
use std::fs::File;

use super::object::RemoteObject;
use super::pending::Pending;

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
    Parts(Pending),
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
