//! Binsparse in Zarr (feature `zarr`): a group whose attribute `binsparse` holds the
//! descriptor, with one 1-D array per Binsparse array (`pointers_to_1`, `indices_1`,
//! `values`, ...), as the Binsparse Python reference writes it through zarr-python.
//!
//! Read: Zarr v3 (`zarr.json`) and v2 (`.zgroup`, `.zattrs`, `.zarray`) groups, regular
//! chunk grids, either chunk key encoding, little- and big-endian values, the codecs
//! `bytes`, `transpose` (of one dimension), `zstd`, `gzip`, `zlib` (v2), `blosc` (any inner
//! compressor and shuffle) and `crc32c`; missing chunks hold the array's fill value. Chunks
//! are decoded one at a time into the final values. Sharding, filters and other codecs are
//! refused by name. Written: Zarr v3 (or v2 with [`ZarrVersion::V2`]) with zstd, as
//! zarr-python writes by default, in chunks of at most 2^20 elements.
//!
//! ```
//! use std::collections::BTreeMap;
//! use dbdf::binsparse::{zarr, WriteOptions};
//! use serde_daphne::{Object, Values};
//!
//! let m = Object::csr(2, 3, vec![0, 1, 2], vec![2, 0], Values::F64(vec![1.5, -2.0]))?;
//! let mut store = BTreeMap::new();
//! zarr::write_store(&mut store, &m, &WriteOptions::default())?;
//! assert!(store.contains_key("values/c/0"));
//! let back = zarr::read_store(&store, &Default::default())?;
//! assert_eq!(back.object, m);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

mod array;
mod codecs;
mod sink;
pub(super) mod source;

pub(crate) use sink::ZarrSink;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value as Json};

use self::array::ArrayMeta;
use super::{decode, encode, type_name, Binsparse, ReadOptions, WriteOptions};
use crate::input::Foreign;
use crate::npy;
use crate::storage::Input;
use serde_daphne::Object;
use serde_daphne::{Error, Result};

const ZARR: Foreign = Foreign("Binsparse (Zarr)");

/// The most elements in one chunk the crate writes: 8 MiB of `f64`, which zarr-python
/// reads in one piece and compresses on one core.
pub(crate) const CHUNK: usize = 1 << 20;

/// The largest metadata document read (`zarr.json`, `.zarray`, `.zattrs`).
const METADATA_MAX: usize = 1 << 20;

/// The Zarr format version to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ZarrVersion {
    /// Zarr v2 (`.zgroup`, `.zattrs`, `.zarray`, chunks `0`, `1`, ...), as zarr-python 2
    /// writes it.
    V2,
    /// Zarr v3 (`zarr.json`, chunks `c/0`, `c/1`, ...), zarr-python 3's default.
    #[default]
    V3,
}

/// `2` or `3`.
impl std::str::FromStr for ZarrVersion {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let table = [("2", ZarrVersion::V2), ("3", ZarrVersion::V3)];
        serde_daphne::lowlevel::parse_name(text, "a Zarr format", &table)
    }
}

/// Where a Zarr hierarchy's keys (`zarr.json`, `values/c/0`, ...) are read from.
pub trait Store {
    /// The bytes under `key`, or `None` when there are none.
    ///
    /// # Errors
    /// I/O errors other than the key's absence.
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>>;

    /// The bytes the store holds in all: what justifies the memory a read takes (with
    /// [`ReadOptions::max_alloc`]).
    ///
    /// # Errors
    /// I/O errors.
    fn stored_bytes(&self) -> io::Result<u64>;
}

/// Where a Zarr hierarchy is written.
pub trait StoreMut {
    /// Stores `bytes` under `key`.
    ///
    /// # Errors
    /// I/O errors.
    fn set(&mut self, key: &str, bytes: &[u8]) -> io::Result<()>;
}

/// A Zarr hierarchy in memory, keyed as in a directory (`values/c/0`).
impl Store for BTreeMap<String, Vec<u8>> {
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(BTreeMap::get(self, key).cloned())
    }

    fn stored_bytes(&self) -> io::Result<u64> {
        Ok(self.values().map(|v| v.len() as u64).sum())
    }
}

impl StoreMut for BTreeMap<String, Vec<u8>> {
    fn set(&mut self, key: &str, bytes: &[u8]) -> io::Result<()> {
        self.insert(key.to_owned(), bytes.to_vec());
        Ok(())
    }
}

/// A Zarr hierarchy in a folder wherever it is kept (a directory, the objects under a
/// prefix): each key a file, read whole when asked for.
#[derive(Clone, Debug)]
pub(crate) struct FolderStore(pub(crate) Input);

impl Store for FolderStore {
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        let folder = self.0.as_folder().ok_or_else(|| not_a_folder(&self.0))?;
        folder.read(key).map_err(io::Error::other)
    }

    fn stored_bytes(&self) -> io::Result<u64> {
        let folder = self.0.as_folder().ok_or_else(|| not_a_folder(&self.0))?;
        folder.stored_bytes().map_err(io::Error::other)
    }
}

fn not_a_folder(input: &Input) -> io::Error {
    let why = format!("{} is a file, not a Zarr group (a folder)", input.name);
    io::Error::new(io::ErrorKind::InvalidInput, why)
}

/// A Zarr hierarchy in a directory of the file system.
#[derive(Clone, Debug)]
pub struct Directory(pub PathBuf);

impl Store for Directory {
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.0.join(key)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn stored_bytes(&self) -> io::Result<u64> {
        crate::storage::bytes_under(&self.0)
    }
}

impl StoreMut for Directory {
    fn set(&mut self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.0.join(key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)
    }
}

/// A metadata document as a JSON object, or `None` when `key` is missing.
fn read_json(store: &impl Store, key: &str) -> Result<Option<Map<String, Json>>> {
    let Some(bytes) = store.get(key)? else {
        return Ok(None);
    };
    if bytes.len() > METADATA_MAX {
        return Err(ZARR.error(format!(
            "{key} is {} bytes, more than the {METADATA_MAX} metadata may take",
            bytes.len()
        )));
    }
    match serde_json::from_slice(&bytes) {
        Ok(Json::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(ZARR.error(format!("{key} holds {other}, not a JSON object"))),
        Err(e) => Err(ZARR.error(format!("{key} is not valid JSON: {e}"))),
    }
}

/// The group's Zarr version and the Binsparse descriptor in its attributes, as JSON text.
fn descriptor(store: &impl Store) -> Result<(bool, String)> {
    let (v2, attributes) = if let Some(group) = read_json(store, "zarr.json")? {
        match group.get("node_type").and_then(Json::as_str) {
            Some("group") => {}
            _ => return Err(ZARR.error("zarr.json does not describe a group")),
        }
        (false, group.get("attributes").cloned())
    } else if store.get(".zgroup")?.is_some() {
        (true, read_json(store, ".zattrs")?.map(Json::Object))
    } else {
        return Err(ZARR.error(
            "neither zarr.json (Zarr v3) nor .zgroup (Zarr v2) is there: not a Zarr group",
        ));
    };
    let mut attributes = match attributes {
        Some(Json::Object(map)) => map,
        _ => Map::new(),
    };
    // The reference stores the whole descriptor, `{"binsparse": {...}}`, under the key
    // `binsparse`; the descriptor's inner object alone is read too.
    let mut top =
        match attributes.remove("binsparse") {
            Some(Json::Object(d)) if d.contains_key("binsparse") => d,
            Some(inner @ Json::Object(_)) => Map::from_iter([("binsparse".to_owned(), inner)]),
            _ => return Err(ZARR.error(
                "the group's attributes hold no \"binsparse\" descriptor (not a Binsparse group)",
            )),
        };
    // Other group attributes travel as user attributes.
    for (key, value) in attributes {
        top.entry(key).or_insert(value);
    }
    Ok((v2, Json::Object(top).to_string()))
}

/// Reads a Binsparse matrix from a Zarr group in `store`.
///
/// # Errors
/// I/O errors; [`serde_daphne::ErrorKind::ForeignInput`] naming the metadata document or chunk (such as
/// `values/c/3`) for malformed metadata, a chunk that decodes to the wrong size or fails
/// its checksum, or a codec, data type or layout this reader refuses;
/// [`serde_daphne::ErrorKind::NotConvertible`] for what DAPHNE cannot hold (complex values,
/// a non-zero fill value, Hermitian structures, more than two dimensions);
/// [`serde_daphne::ErrorKind::AllocationLimit`] beyond [`ReadOptions::max_alloc`].
pub fn read_store(store: &impl Store, options: &ReadOptions) -> Result<Binsparse> {
    let (v2, text) = descriptor(store)?;
    let stored = store.stored_bytes()?;
    decode(&text, stored, options.max_alloc, |name| {
        ArrayMeta::read(store, name, v2)?.read_values(store, name, stored, options.max_alloc)
    })
}

/// Reads a Binsparse matrix from the Zarr group in the directory `path`.
///
/// # Errors
/// As [`read_store`].
pub(crate) fn read(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Binsparse> {
    read_store(&Directory(path.as_ref().to_owned()), options)
        .map_err(|e| e.with_context(path.as_ref().display()))
}

/// Writes `object` as a Binsparse group into `store`.
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for a frame, a vector format for a matrix
/// that is not `n` x 1, or an index that does not fit the index type; the store's I/O errors.
pub fn write_store(
    store: &mut impl StoreMut,
    object: &Object,
    options: &WriteOptions,
) -> Result<()> {
    let (text, arrays) = encode(object, options)?;
    let v2 = options.zarr_version == ZarrVersion::V2;
    write_group(store, &text, v2)?;
    for (name, values) in &arrays {
        let len = values.len();
        let chunk = len.clamp(1, CHUNK);
        write_array_meta(store, name, len as u64, values.value_type(), v2)?;
        let bytes = values.le_bytes();
        let chunk_bytes = chunk * values.value_type().size();
        for (i, piece) in bytes.chunks(chunk_bytes).enumerate() {
            write_chunk(store, &chunk_key(name, i, v2), piece, chunk_bytes)?;
        }
    }
    Ok(())
}

/// Writes the group's metadata, with the descriptor `text` in its attributes.
fn write_group(store: &mut impl StoreMut, text: &str, v2: bool) -> Result<()> {
    let descriptor: Json = serde_json::from_str(text).expect("descriptors are JSON");
    if v2 {
        store.set(".zgroup", &pretty(&json!({ "zarr_format": 2 })))?;
        store.set(".zattrs", &pretty(&json!({ "binsparse": descriptor })))?;
    } else {
        let group = json!({
            "attributes": { "binsparse": descriptor },
            "zarr_format": 3,
            "node_type": "group",
        });
        store.set("zarr.json", &pretty(&group))?;
    }
    Ok(())
}

fn pretty(value: &Json) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("JSON values serialize")
}

/// Writes the metadata of the array `name` of `len` elements of `value_type`, in chunks of
/// at most [`CHUNK`] elements.
fn write_array_meta(
    store: &mut impl StoreMut,
    name: &str,
    len: u64,
    value_type: serde_daphne::ValueType,
    v2: bool,
) -> Result<()> {
    let chunk = len.clamp(1, CHUNK as u64);
    let meta = if v2 {
        json!({
            "zarr_format": 2,
            "shape": [len],
            "chunks": [chunk],
            "dtype": npy::descr(value_type),
            "compressor": { "id": "zstd", "level": 0, "checksum": false },
            "fill_value": 0,
            "filters": null,
            "order": "C",
            "dimension_separator": ".",
        })
    } else {
        json!({
            "shape": [len],
            "data_type": type_name(value_type),
            "chunk_grid": { "name": "regular", "configuration": { "chunk_shape": [chunk] } },
            "chunk_key_encoding": { "name": "default", "configuration": { "separator": "/" } },
            "fill_value": 0,
            "codecs": [
                { "name": "bytes", "configuration": { "endian": "little" } },
                { "name": "zstd", "configuration": { "level": 0, "checksum": false } },
            ],
            "attributes": {},
            "zarr_format": 3,
            "node_type": "array",
            "storage_transformers": [],
        })
    };
    let meta_key = if v2 { ".zarray" } else { "zarr.json" };
    store.set(&format!("{name}/{meta_key}"), &pretty(&meta))?;
    Ok(())
}

/// The key of chunk `i` of the array `name`.
fn chunk_key(name: &str, i: usize, v2: bool) -> String {
    let prefix = if v2 { "" } else { "c/" };
    format!("{name}/{prefix}{i}")
}

/// Writes one chunk, compressed: `piece` padded with zeros to `chunk_bytes`, as Zarr stores
/// the last chunk.
fn write_chunk(
    store: &mut impl StoreMut,
    key: &str,
    piece: &[u8],
    chunk_bytes: usize,
) -> Result<()> {
    let mut padded;
    let piece = if piece.len() < chunk_bytes {
        padded = piece.to_vec();
        padded.resize(chunk_bytes, 0);
        &padded[..]
    } else {
        piece
    };
    store.set(key, &codecs::compress(piece)?)?;
    Ok(())
}

/// A sink of the pipe writing a Binsparse group at `path` (a boxed [`Sink`](crate::pipe::Sink)).
pub fn sink(path: impl AsRef<Path>, options: &WriteOptions) -> Box<dyn crate::pipe::Sink> {
    Box::new(ZarrSink::new(path.as_ref(), options))
}

/// Writes `object` as a Binsparse group in the directory `path`, atomically: the group is
/// written beside it and renamed into place, replacing an earlier Zarr group there.
///
/// # Errors
/// As [`write_store`]; [`serde_daphne::ErrorKind::Io`] when `path` exists and is neither a Zarr group nor an
/// empty directory (it is left as it is).
pub(crate) fn write(path: impl AsRef<Path>, object: &Object, options: &WriteOptions) -> Result<()> {
    let path = path.as_ref();
    serde_daphne::lowlevel::replace_directory(path, is_zarr_group, |dir| {
        write_store(&mut Directory(dir.to_owned()), object, options)
    })
}

/// Whether the existing directory `path` holds a Zarr group, which a write may replace.
fn is_zarr_group(path: &Path) -> bool {
    path.join("zarr.json").is_file() || path.join(".zgroup").is_file()
}
