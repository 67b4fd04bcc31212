//! One object behind a URL: its requests, counted, and their errors, in one line naming it.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt};
use serde_daphne::{Error, Result};

use super::pending::{Multipart, PART};
use super::{one_line, runtime, store_for, RequestStats, StorageOptions};
use crate::redact::redact;

/// An object behind a URL, in a store built from the URL, the environment and the call's
/// options; the requests of it and of its sidecars are counted together.
#[derive(Clone, Debug)]
pub struct RemoteObject {
    pub(super) store: Arc<dyn ObjectStore>,
    /// The store's multipart API, where it has one.
    pub(super) multipart: Option<Multipart>,
    pub(super) path: ObjectPath,
    url: String,
    stats: Arc<RequestStats>,
    options: StorageOptions,
}

/// An object as a listing names it: its name in its folder, its size and its version.
pub(super) type Listed = (String, u64, Version);

/// What pins reads to one version of an object: its ETag, else its modification time.
#[derive(Clone, Debug)]
pub(super) struct Version {
    e_tag: Option<String>,
    last_modified: chrono::DateTime<chrono::Utc>,
}

impl Version {
    pub(super) fn of(meta: &ObjectMeta) -> Version {
        Version {
            e_tag: meta.e_tag.clone(),
            last_modified: meta.last_modified,
        }
    }

    /// Whether a response's metadata is of this version: a server that ignores the pin
    /// (`If-Match`) still names the version it sent. Times are compared to the second, as
    /// HTTP dates give them (a listing may give milliseconds and no ETag: s3s-fs).
    fn sent(&self, meta: &ObjectMeta) -> bool {
        match (&self.e_tag, &meta.e_tag) {
            (Some(pinned), Some(sent)) => pinned == sent,
            _ => self.last_modified.timestamp() == meta.last_modified.timestamp(),
        }
    }

    fn pin(&self, options: &mut GetOptions) {
        match &self.e_tag {
            Some(tag) => options.if_match = Some(tag.clone()),
            None => {
                // The header holds whole seconds: a time within a second is rounded up, or
                // the object would seem modified after it.
                let t = self.last_modified;
                let whole = chrono::DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t);
                let up = match whole < t {
                    true => whole + chrono::TimeDelta::seconds(1),
                    false => whole,
                };
                options.if_unmodified_since = Some(up);
            }
        }
    }
}

/// Bytes `range` of the object at `path` (fewer at its end), with its metadata, from the
/// version `pinned` if given: asked for with the pin, and the reply's version checked too
/// (a server that ignores `If-Match` still names the version it sends).
pub(super) async fn get_pinned(
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    range: Range<u64>,
    pinned: Option<Version>,
) -> object_store::Result<(Bytes, ObjectMeta)> {
    let mut options = GetOptions {
        range: Some(GetRange::Bounded(range)),
        ..GetOptions::default()
    };
    if let Some(version) = &pinned {
        version.pin(&mut options);
    }
    let got = store.get_opts(&path, options).await?;
    let meta = got.meta.clone();
    if pinned.is_some_and(|v| !v.sent(&meta)) {
        return Err(object_store::Error::Precondition {
            path: path.to_string(),
            source: "the server sent another version than the one pinned".into(),
        });
    }
    Ok((got.bytes().await?, meta))
}

/// The error of an object replaced while it was read (reads are pinned to the version opened):
/// an I/O error whose inner error is this type.
#[derive(Debug)]
pub struct ObjectChanged {
    /// The object's URL.
    pub url: String,
}

impl std::fmt::Display for ObjectChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} was replaced while it was read (its ETag changed): nothing read from it is used; read it again",
            self.url
        )
    }
}

impl std::error::Error for ObjectChanged {}

/// A request on its way ([`RemoteObject::put_later`]).
pub(super) struct Sending {
    object: RemoteObject,
    put: tokio::task::JoinHandle<object_store::Result<object_store::PutResult>>,
    len: u64,
}

impl Sending {
    /// Waits for the request's answer.
    ///
    /// # Errors
    /// A failed request, in one line naming the URL.
    pub(super) fn wait(self) -> Result<()> {
        let Sending { object, put, len } = self;
        let answered = runtime().block_on(put).map_err(io::Error::other)?;
        object.run(async move { answered }, |_| (0, len)).map(drop)
    }
}

impl RemoteObject {
    /// The object at `url`, with the environment's settings and `options`; no request yet.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::InvalidValue`] for a URL no store reads, or settings the
    /// store refuses.
    pub fn new(url: &str, options: &StorageOptions) -> Result<RemoteObject> {
        let ((store, multipart), path) = store_for(url, options)?;
        Ok(RemoteObject {
            store,
            multipart,
            path,
            // Kept for messages only (requests go to `store` and `path`), so without secrets.
            url: redact(url).into_owned(),
            stats: Arc::default(),
            options: options.clone(),
        })
    }

    /// The store's multipart API, which an object written in parts needs.
    ///
    /// # Errors
    /// A store without one (a plain HTTP server), in one line naming the URL.
    pub(super) fn multipart(&self) -> Result<Multipart> {
        self.multipart.clone().ok_or_else(|| {
            Error::from(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{}: a plain HTTP server has no multipart uploads, which an output of more \
                     than {} MiB or of several processes needs: write to object storage or a \
                     local file",
                    self.url,
                    PART >> 20
                ),
            ))
        })
    }

    /// The object whose URL is this one's with `suffix` added (a sidecar), in the same store,
    /// its requests counted with this one's.
    pub fn sibling(&self, suffix: &str) -> RemoteObject {
        RemoteObject {
            store: Arc::clone(&self.store),
            multipart: self.multipart.clone(),
            path: ObjectPath::from(format!("{}{suffix}", self.path)),
            url: format!("{}{suffix}", self.url),
            stats: Arc::clone(&self.stats),
            options: self.options.clone(),
        }
    }

    /// The object's URL, as messages show it: its password and query-string secrets hidden.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests made so far.
    pub fn stats(&self) -> &Arc<RequestStats> {
        &self.stats
    }

    /// The last part of the URL's path (the object's file name).
    pub fn file_name(&self) -> &str {
        self.path.filename().unwrap_or("object")
    }

    /// Runs one request, counting it.
    pub(super) fn run<T>(
        &self,
        request: impl std::future::Future<Output = object_store::Result<T>> + Send,
        bytes: impl FnOnce(&T) -> (u64, u64),
    ) -> Result<T>
    where
        T: Send,
    {
        let result = runtime().block_on(request);
        match &result {
            Ok(value) => {
                let (fetched, sent) = bytes(value);
                self.stats.request(fetched, sent)
            }
            Err(_) => self.stats.request(0, 0),
        }
        result.map_err(|e| self.error(e))
    }

    /// The whole object, or `None` where there is none.
    ///
    /// # Errors
    /// A failed request, in one line naming the URL (other than a missing object).
    pub fn get_if_present(&self) -> Result<Option<Bytes>> {
        let store = Arc::clone(&self.store);
        let path = self.path.clone();
        let got = self.run(async move { store.get(&path).await?.bytes().await }, |b| {
            (b.len() as u64, 0)
        });
        match got {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e)
                if e.io_error()
                    .is_some_and(|e| e.kind() == io::ErrorKind::NotFound) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The object's bytes where it is optional (a sidecar, a block index, read to be used):
    /// `Ok(Err(why))` where the store refuses it (403: S3 answers a missing key so to a
    /// caller who may not list the bucket), which the caller takes as missing, with a note.
    ///
    /// # Errors
    /// As [`RemoteObject::get_if_present`], but for a refusal.
    pub(crate) fn get_optional(&self) -> Result<std::result::Result<Option<Bytes>, String>> {
        match self.get_if_present() {
            Ok(got) => Ok(Ok(got)),
            Err(e)
                if e.io_error()
                    .is_some_and(|e| e.kind() == io::ErrorKind::PermissionDenied) =>
            {
                Ok(Err(e.to_string()))
            }
            Err(e) => Err(e),
        }
    }

    /// Bytes `range` of the object (fewer at its end), with its metadata, from the version
    /// `pinned` if given.
    pub(super) fn get_range(
        &self,
        range: Range<u64>,
        pinned: Option<&Version>,
    ) -> Result<(Bytes, ObjectMeta)> {
        let get = get_pinned(
            Arc::clone(&self.store),
            self.path.clone(),
            range,
            pinned.cloned(),
        );
        self.run(get, |(b, _)| (b.len() as u64, 0))
    }

    /// The object's metadata (a HEAD request).
    pub(super) fn head(&self) -> Result<ObjectMeta> {
        let store = Arc::clone(&self.store);
        let path = self.path.clone();
        self.run(async move { store.head(&path).await }, |_| (0, 0))
    }

    /// Writes `bytes` as the whole object, in one request.
    ///
    /// # Errors
    /// A failed request, in one line naming the URL.
    pub fn put(&self, bytes: Vec<u8>) -> Result<()> {
        let store = Arc::clone(&self.store);
        let path = self.path.clone();
        let len = bytes.len() as u64;
        self.run(async move { store.put(&path, bytes.into()).await }, |_| {
            (0, len)
        })?;
        Ok(())
    }

    /// [`RemoteObject::put`] on its way while the caller goes on: [`Sending::wait`] gives its
    /// outcome.
    pub(super) fn put_later(&self, bytes: Vec<u8>) -> Sending {
        let (store, path) = (Arc::clone(&self.store), self.path.clone());
        let len = bytes.len() as u64;
        let share = crate::storage::InTransit::wait_for(crate::storage::Way::Sent, len);
        let put = runtime().spawn(async move {
            let put = store.put(&path, bytes.into()).await;
            drop(share);
            put
        });
        Sending {
            object: self.clone(),
            put,
            len,
        }
    }

    /// The object called `name` in the folder this object's URL names (the prefix `NAME/`).
    pub(crate) fn child(&self, name: &str) -> RemoteObject {
        self.sibling(&format!("/{name}"))
    }

    /// The objects directly in the folder this object's URL names (under the prefix
    /// `NAME/`): their names, sizes and versions, sorted by name, and the names of the
    /// folders in it (the prefixes one level down); none where the store cannot list (an
    /// HTTP server) or nothing is there.
    ///
    /// # Errors
    /// A failed request, in one line naming the URL (but a store that cannot list).
    pub(super) fn list_folder(&self) -> Result<(Vec<Listed>, Vec<String>)> {
        let store = Arc::clone(&self.store);
        let prefix = self.path.clone();
        let listed = self.run(
            async move { store.list_with_delimiter(Some(&prefix)).await },
            |_| (0, 0),
        );
        let listed = match listed {
            Ok(listed) => listed,
            Err(e)
                if e.io_error().is_some_and(|e| {
                    matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::Unsupported
                    )
                }) =>
            {
                return Ok((Vec::new(), Vec::new()))
            }
            Err(e) => return Err(e),
        };
        let mut entries: Vec<Listed> = listed
            .objects
            .iter()
            .filter_map(|o| Some((o.location.filename()?.to_owned(), o.size, Version::of(o))))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let folders = listed
            .common_prefixes
            .iter()
            .filter_map(|p| Some(p.filename()?.to_owned()))
            .collect();
        Ok((entries, folders))
    }

    /// The objects under the folder this object's URL names (the prefix `NAME/`), at every
    /// depth: their paths below it, in order (a request per folder).
    ///
    /// # Errors
    /// As [`RemoteObject::list_folder`].
    pub(super) fn list_all(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut folders = vec![(self.clone(), String::new())];
        while let Some((folder, prefix)) = folders.pop() {
            let (files, subfolders) = folder.list_folder()?;
            keys.extend(
                files
                    .into_iter()
                    .map(|(name, ..)| format!("{prefix}{name}")),
            );
            for sub in subfolders {
                folders.push((folder.child(&sub), format!("{prefix}{sub}/")));
            }
        }
        keys.sort();
        Ok(keys)
    }

    /// Copies the object to `to` (in the same store), on the server.
    ///
    /// # Errors
    /// A failed request, in one line naming the URL.
    pub(super) fn copy_to(&self, to: &RemoteObject) -> Result<()> {
        let store = Arc::clone(&self.store);
        let (from, to) = (self.path.clone(), to.path.clone());
        self.run(async move { store.copy(&from, &to).await }, |_| (0, 0))
    }

    /// Deletes the object; none there is no error.
    ///
    /// # Errors
    /// A failed request, in one line naming the URL.
    pub(crate) fn delete_if_present(&self) -> Result<()> {
        let store = Arc::clone(&self.store);
        let path = self.path.clone();
        match self.run(async move { store.delete(&path).await }, |_| (0, 0)) {
            Err(e)
                if e.io_error()
                    .is_some_and(|e| e.kind() == io::ErrorKind::NotFound) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// An `object_store` error as this crate's, naming the URL in one line: a missing
    /// object is `NotFound`, refused credentials `PermissionDenied`, a replaced object
    /// [`ObjectChanged`].
    pub(super) fn error(&self, e: object_store::Error) -> Error {
        use object_store::Error as E;
        let url = &self.url;
        let io = match &e {
            E::NotFound { .. } => {
                io::Error::new(io::ErrorKind::NotFound, format!("no object at {url}"))
            }
            E::Precondition { .. } => io::Error::other(ObjectChanged { url: url.clone() }),
            E::NotImplemented { .. } | E::NotSupported { .. } => io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{url}: {}", one_line(&e)),
            ),
            E::PermissionDenied { .. } => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{url}: forbidden ({})", one_line(&e)),
            ),
            E::Unauthenticated { .. } => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{url}: no valid credentials ({}); set them in the environment or as storage options",
                    one_line(&e)
                ),
            ),
            _ => io::Error::other(format!("{url}: {}", one_line(&e))),
        };
        io.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listing without ETags and with milliseconds (s3s-fs), against a response's HTTP
    /// dates in whole seconds: the same version, and a pin the server keeps.
    #[test]
    fn a_version_of_milliseconds_is_pinned_to_the_next_whole_second() {
        let at = |ms| chrono::DateTime::from_timestamp_millis(ms).unwrap();
        let listed = Version {
            e_tag: None,
            last_modified: at(1_000_434),
        };
        let meta = |ms| ObjectMeta {
            location: ObjectPath::from("a"),
            last_modified: at(ms),
            size: 1,
            e_tag: Some("\"e\"".into()),
            version: None,
        };
        assert!(listed.sent(&meta(1_000_000)));
        assert!(!listed.sent(&meta(1_001_000)));
        let mut options = GetOptions::default();
        listed.pin(&mut options);
        assert_eq!(options.if_unmodified_since, Some(at(1_001_000)));
        let whole = Version {
            e_tag: None,
            last_modified: at(1_000_000),
        };
        whole.pin(&mut options);
        assert_eq!(options.if_unmodified_since, Some(at(1_000_000)));
    }
}
