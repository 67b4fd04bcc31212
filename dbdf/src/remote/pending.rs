//! A multipart upload begun ([`Pending`]): its parts sent as they come, then completed (the
//! object appears) or aborted, through the store's multipart API (S3, Azure, GCS; a plain
//! HTTP server has none, [`super::RemoteObject::multipart`]). The
//! upload's id is recorded while it runs, in the object `.dbdf-uploads/KEY` of the same
//! bucket: a process killed mid-upload leaves a pending upload, never visible, and the next
//! upload of the same key aborts it first (S3 keeps a pending upload's parts, and bills
//! them, until it is aborted; `object_store` cannot list pending uploads).

use std::sync::{Arc, Mutex};

use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjectPath;
use object_store::UploadPart;
use object_store::{MultipartId, ObjectStore, ObjectStoreExt, PutPayload};

/// Bytes per uploaded part.
pub(super) const PART: u64 = 16 << 20;

/// Where the ids of uploads under way are recorded, in each bucket.
const MARKERS: &str = ".dbdf-uploads";

/// A store's multipart API (its `Debug` is the store's, shown beside it).
#[derive(Clone)]
pub(super) struct Multipart(pub(super) Arc<dyn MultipartStore>);

impl std::fmt::Debug for Multipart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Multipart")
    }
}

/// A multipart upload begun through the store's multipart API, its id recorded.
#[derive(Debug)]
pub(super) struct Pending {
    multipart: Multipart,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    id: MultipartId,
    /// Each part's id once sent, by its index.
    parts: Arc<Mutex<Vec<Option<PartId>>>>,
}

/// The object that records the id of an upload of `path` under way.
fn marker_of(path: &ObjectPath) -> ObjectPath {
    ObjectPath::from(format!("{MARKERS}/{path}"))
}

impl Pending {
    /// Begins an upload of `path` through `multipart`, after aborting the upload a killed
    /// writer of `path` left (its id recorded), and records this one's id.
    ///
    /// # Errors
    /// A failed request (nothing is left pending then).
    pub(super) async fn begin(
        store: Arc<dyn ObjectStore>,
        Multipart(multipart): Multipart,
        path: ObjectPath,
    ) -> object_store::Result<Pending> {
        let marker = marker_of(&path);
        match store.get(&marker).await {
            Ok(got) => {
                let left = String::from_utf8_lossy(&got.bytes().await?).into_owned();
                // Gone already (completed, or expired by a lifecycle rule) is as good.
                let _ = multipart.abort_multipart(&path, &left).await;
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        let id = multipart.create_multipart(&path).await?;
        if let Err(e) = store.put(&marker, id.clone().into()).await {
            let _ = multipart.abort_multipart(&path, &id).await;
            return Err(e);
        }
        Ok(Pending {
            multipart: Multipart(multipart),
            store,
            path,
            id,
            parts: Arc::default(),
        })
    }

    /// The upload `id` of `path` through `multipart` that another process began
    /// ([`super::shared`]), with the parts sent so far.
    pub(super) fn resumed(
        store: Arc<dyn ObjectStore>,
        multipart: Multipart,
        path: ObjectPath,
        id: MultipartId,
        parts: Vec<PartId>,
    ) -> Pending {
        let parts = Arc::new(Mutex::new(parts.into_iter().map(Some).collect()));
        Pending {
            multipart,
            store,
            path,
            id,
            parts,
        }
    }

    /// The upload's id.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// Sends the next part (parts are numbered in the order they are handed over, whenever
    /// they land); with `first`, the first part, whose number was kept for it
    /// ([`Pending::keep_first`]).
    pub(super) fn put_part(&mut self, data: PutPayload, first: bool) -> UploadPart {
        let index = match first {
            true => 0,
            false => {
                let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
                parts.push(None);
                parts.len() - 1
            }
        };
        let (multipart, path) = (Arc::clone(&self.multipart.0), self.path.clone());
        let (id, parts) = (self.id.clone(), Arc::clone(&self.parts));
        Box::pin(async move {
            let part = multipart.put_part(&path, &id, index, data).await?;
            parts.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(part);
            Ok(())
        })
    }

    /// Keeps the first part's number for a part sent last (a header written after the
    /// body). Called before any part is sent.
    pub(super) fn keep_first(&mut self) {
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        parts.push(None);
    }

    /// Makes the parts sent the object, in one request, and forgets the upload's id.
    ///
    /// # Errors
    /// A failed request, or a part not sent.
    pub(super) async fn complete(&mut self) -> object_store::Result<()> {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let parts = parts
            .into_iter()
            .collect::<Option<Vec<PartId>>>()
            .ok_or_else(|| object_store::Error::Generic {
                store: "dbdf",
                source: "a part of the upload was not sent".into(),
            })?;
        let path = &self.path;
        self.multipart
            .0
            .complete_multipart(path, &self.id, parts)
            .await?;
        self.forget().await;
        Ok(())
    }

    /// Drops the parts sent, and forgets the upload's id.
    ///
    /// # Errors
    /// A failed request.
    pub(super) async fn abort(&mut self) -> object_store::Result<()> {
        self.multipart
            .0
            .abort_multipart(&self.path, &self.id)
            .await?;
        self.forget().await;
        Ok(())
    }

    /// Deletes the record of the upload (best effort: a record left names an upload that
    /// is gone, which the next upload of the key tries to abort in vain).
    async fn forget(&self) {
        let _ = self.store.delete(&marker_of(&self.path)).await;
    }
}
