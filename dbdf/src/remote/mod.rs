//! Files in object storage and behind HTTP: `s3://`, `az://` (and `abfs://`, `adl://`,
//! `azure://`), `gs://`, `http(s)://` and `file://` URLs, through the Apache `object_store`
//! crate. A URL is taken wherever a path is (see [`Location`]).
//!
//! Credentials, endpoints and client settings come from the environment as `object_store`
//! reads them (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `AWS_ACCESS_KEY_ID`, `AZURE_*`,
//! `GOOGLE_*`), and from per-call [`StorageOptions`], which win. Every request is counted
//! ([`RequestStats`]); transient failures (5xx, resets, throttling) are retried with backoff
//! for at most [`StorageOptions`]' `retry_timeout` (15 s unless set); an object read is pinned
//! to the version (ETag) it had when opened, so that a replaced object is an error
//! ([`ObjectChanged`]), never a mix of two versions.

mod convert;
mod folders;
mod object;
mod pending;
mod reader;
mod sets;
mod shared;
mod transfer;
mod upload;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use object_store::multipart::MultipartStore;
use object_store::{ObjectStore, ObjectStoreScheme, RetryConfig};
use serde_daphne::{Error, Result};

pub use crate::redact::redact;
pub use convert::{convert_urls, open_input, OpenedInput};
pub use object::{ObjectChanged, RemoteObject};
pub use reader::{open_dbdf, ObjectReader, OpenedDbdf};
pub use sets::upload_dbdf_stream;
pub use shared::{
    abort_shared_upload, begin_shared_upload, complete_shared_segments, complete_shared_upload,
    put_shared_part,
};

/// Where a command's file is: a local path, standard input or output (`-`), or an object
/// behind a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A local path (`file://` URLs included).
    Local(std::path::PathBuf),
    /// A URL of an object store or HTTP server.
    Remote(String),
}

impl Location {
    /// Reads `text` as a URL where it has a scheme object storage knows, else as a path.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::InvalidValue`] for a `file://` URL that names no local path.
    pub fn parse(text: &str) -> Result<Location> {
        let Some((scheme, _)) = text.split_once("://") else {
            return Ok(Location::Local(text.into()));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                let url = url::Url::parse(text).map_err(|e| bad_url(text, e))?;
                let path = url
                    .to_file_path()
                    .map_err(|()| bad_url(text, "it names no local path"))?;
                Ok(Location::Local(path))
            }
            "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss" | "http" | "https" => {
                Ok(Location::Remote(text.to_owned()))
            }
            _ => Ok(Location::Local(text.into())),
        }
    }
}

impl Location {
    /// Where `path` is: a URL when it is text that reads as one, else the path as it is
    /// (names of raw bytes included).
    ///
    /// # Errors
    /// As [`Location::parse`].
    pub fn of_path(path: &std::path::Path) -> Result<Location> {
        match path.to_str() {
            Some(text) => Location::parse(text),
            None => Ok(Location::Local(path.to_path_buf())),
        }
    }
}

/// Whether `text` names an object behind a URL (not a local path).
pub fn is_url(text: &str) -> bool {
    matches!(Location::parse(text), Ok(Location::Remote(_)))
}

/// Settings for one call, by `object_store`'s names (`aws_endpoint_url`, `aws_allow_http`,
/// `azure_storage_account_name`, `google_service_account`, `timeout`...), over what the
/// environment sets; also `retry_timeout` (seconds) and `max_retries`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StorageOptions(pub Vec<(String, String)>);

/// The options with the values of secrets (by name) hidden.
impl std::fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self
            .0
            .iter()
            .map(|(k, v)| (k, crate::redact::option_value(k, v)));
        f.debug_tuple("StorageOptions")
            .field(&shown.collect::<Vec<_>>())
            .finish()
    }
}

impl StorageOptions {
    /// No options beyond the environment's.
    pub fn new() -> StorageOptions {
        StorageOptions::default()
    }

    /// `key=value` pairs, as the CLI's `--storage-option` takes them.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::InvalidValue`] for an item without `=`.
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>) -> Result<StorageOptions> {
        let pairs = items.into_iter().map(|item| {
            let (k, v) = item.split_once('=').ok_or_else(|| {
                let shown = crate::redact::option_value(item, item);
                Error::invalid(format!("storage option {shown:?} is not KEY=VALUE"))
            })?;
            Ok((k.trim().to_ascii_lowercase(), v.to_owned()))
        });
        Ok(StorageOptions(pairs.collect::<Result<_>>()?))
    }

    fn get(&self, key: &str) -> Option<&str> {
        let found = self
            .0
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key));
        found.map(|(_, v)| v.as_str())
    }

    fn retry(&self) -> Result<RetryConfig> {
        let number = |key: &str, default: u64| -> Result<u64> {
            self.get(key).map_or(Ok(default), |v| {
                v.parse().map_err(|_| {
                    Error::invalid(format!("storage option {key}={v} is not a number"))
                })
            })
        };
        // Backoff capped at 4 s: a server that stays away is reported within
        // `retry_timeout` and a backoff.
        Ok(RetryConfig {
            max_retries: number("max_retries", 10)? as usize,
            retry_timeout: Duration::from_secs(number("retry_timeout", 15)?),
            backoff: object_store::BackoffConfig {
                max_backoff: Duration::from_secs(4),
                ..object_store::BackoffConfig::default()
            },
        })
    }
}

/// Requests made and bytes fetched or sent, shared by every reader and writer of one object.
#[derive(Debug, Default)]
pub struct RequestStats {
    requests: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

impl RequestStats {
    /// Every request this process has made, to any object (failed ones included: what a
    /// command that failed cost).
    pub fn process() -> &'static RequestStats {
        static PROCESS: RequestStats = RequestStats {
            requests: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
        };
        &PROCESS
    }

    pub(crate) fn request(&self, bytes_in: u64, bytes_out: u64) {
        for stats in [self, RequestStats::process()] {
            stats.requests.fetch_add(1, Ordering::Relaxed);
            stats.bytes_in.fetch_add(bytes_in, Ordering::Relaxed);
            stats.bytes_out.fetch_add(bytes_out, Ordering::Relaxed);
        }
    }

    /// Requests so far (each GET, HEAD, PUT and multipart part, retries not counted twice).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Bytes received in response bodies.
    pub fn bytes_fetched(&self) -> u64 {
        self.bytes_in.load(Ordering::Relaxed)
    }

    /// Bytes sent in request bodies.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_out.load(Ordering::Relaxed)
    }
}

impl std::fmt::Display for RequestStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests, {} bytes fetched, {} bytes sent",
            self.requests(),
            self.bytes_fetched(),
            self.bytes_sent()
        )
    }
}

/// The runtime every request runs on: the rest of the crate is synchronous.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("dbdf-remote")
            .enable_all()
            .build()
            .expect("a runtime of two threads")
    })
}

fn bad_url(url: &str, why: impl std::fmt::Display) -> Error {
    let url = crate::redact::redact(url);
    Error::invalid(format!("{url} is not a URL this tool reads: {why}"))
}

/// The store and path `url` names, with the environment's settings and then `options`.
fn store_for(url: &str, options: &StorageOptions) -> Result<(Stores, object_store::path::Path)> {
    let parsed = url::Url::parse(url).map_err(|e| bad_url(url, e))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad_url(url, e))?;
    let retry = options.retry()?;
    let failed = |e: object_store::Error| bad_url(url, one_line(&e));
    // Each store's builder takes the keys it knows (by its own names) and skips the rest.
    macro_rules! build {
        ($builder:expr) => {{
            let mut builder = $builder;
            for (k, v) in &options.0 {
                if let Ok(key) = k.parse() {
                    builder = builder.with_config(key, v);
                }
            }
            Arc::new(builder.with_retry(retry).build().map_err(failed)?)
        }};
    }
    // The stores with a multipart API are kept as that too (see `pending.rs`).
    macro_rules! with_multipart {
        ($builder:expr) => {{
            let store = build!($builder);
            let multipart = pending::Multipart(store.clone() as Arc<dyn MultipartStore>);
            (store as Arc<dyn ObjectStore>, Some(multipart))
        }};
    }
    let stores = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            with_multipart!(object_store::aws::AmazonS3Builder::from_env().with_url(url))
        }
        ObjectStoreScheme::MicrosoftAzure => {
            with_multipart!(object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url))
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            with_multipart!(object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url))
        }
        ObjectStoreScheme::Http => {
            let base = &parsed[..url::Position::BeforePath];
            let builder = object_store::http::HttpBuilder::new().with_url(base);
            // An http:// URL asks for plain HTTP itself.
            let store: Arc<dyn ObjectStore> = build!(match parsed.scheme() {
                "http" => builder.with_config(object_store::ClientConfigKey::AllowHttp, "true"),
                _ => builder,
            });
            (store, None)
        }
        _ => return Err(bad_url(url, "not an object store's URL")),
    };
    Ok((stores, path))
}

/// A store, and the same store's multipart API where it has one.
type Stores = (Arc<dyn ObjectStore>, Option<pending::Multipart>);

/// An `object_store` error as one line: its message with every run of white space (a
/// server's HTML reply has many lines) as one space, and at most 400 characters of it.
fn one_line(e: &object_store::Error) -> String {
    let text = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // The store's own messages may hold the URL it was given.
    let text = crate::redact::redact(&text).into_owned();
    match text.char_indices().nth(400) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}
