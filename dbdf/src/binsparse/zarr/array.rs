//! One Zarr array: its metadata (v3 `zarr.json` or v2 `.zarray`), read into what decoding
//! needs, and its chunks decoded one at a time into the values of a Binsparse array.

use serde_daphne::ErrorDetails;
use serde_json::{Map, Value as Json};

use super::codecs::Codec;
use super::{Store, ZARR};
use crate::binsparse::{parse_type, Array};
use crate::input::decode_values;
use crate::input::not_in_daphne;
use crate::npy::Descr;
use crate::text::parse_value;
use serde_daphne::lowlevel::check_alloc;
use serde_daphne::Value;
use serde_daphne::ValueType;
use serde_daphne::Values;
use serde_daphne::{Error, Result};

/// How many chunks beyond the store's size in bytes an array may have (missing chunks hold
/// the fill value and take no space).
const MISSING_CHUNKS: u64 = 1 << 16;

/// What reading an array's chunks needs from its metadata.
#[derive(Debug)]
pub(super) struct ArrayMeta {
    /// Elements in the array.
    pub(super) len: u64,
    /// Elements in each chunk (the last one padded).
    pub(super) chunk: u64,
    pub(super) value_type: ValueType,
    /// `bool` elements (one byte, 0 or 1), read as `u8`.
    pub(super) boolean: bool,
    pub(super) big_endian: bool,
    /// The value of elements whose chunk is missing; `None` when the array has none (v2's
    /// `null`), which makes a missing chunk an error.
    pub(super) fill: Option<Value>,
    /// The bytes-to-bytes codecs, in the order they were applied when writing.
    pub(super) codecs: Vec<Codec>,
    /// The chunk key of chunk `i` is `prefix` followed by `i`.
    pub(super) prefix: &'static str,
}

fn field<'a>(meta: &'a Map<String, Json>, key: &str, what: &str) -> Result<&'a Json> {
    meta.get(key)
        .ok_or_else(|| ZARR.error(format!("{what} has no \"{key}\"")))
}

/// The single dimension of a `shape`/`chunks` entry.
fn one_dimension(value: &Json, what: &str, key: &str) -> Result<u64> {
    match value.as_array().map(Vec::as_slice) {
        Some([n]) => n
            .as_u64()
            .ok_or_else(|| ZARR.error(format!("{what}: \"{key}\" holds {n}, not a size"))),
        _ => Err(ZARR.error(format!(
            "{what}: \"{key}\" is {value}; Binsparse arrays are 1-D"
        ))),
    }
}

/// A codec or compressor entry's name and configuration.
fn codec_entry<'a>(entry: &'a Json, name_key: &str) -> Option<(&'a str, Option<&'a Json>)> {
    match entry {
        Json::String(name) => Some((name, None)),
        Json::Object(o) => Some((o.get(name_key)?.as_str()?, o.get("configuration"))),
        _ => None,
    }
}

impl ArrayMeta {
    /// Reads the metadata of the array `name` (v3 `zarr.json`, or v2 `.zarray`).
    pub(super) fn read(store: &impl Store, name: &str, v2: bool) -> Result<ArrayMeta> {
        let key = format!("{name}/{}", if v2 { ".zarray" } else { "zarr.json" });
        let meta = super::read_json(store, &key)?.ok_or_else(|| {
            ZARR.error(format!("the group has no array {name} ({key} is missing)"))
        })?;
        let mut parsed = if v2 {
            Self::parse_v2(&meta, &key)?
        } else {
            Self::parse_v3(&meta, &key)?
        };
        if parsed.chunk == 0 {
            return Err(ZARR.error(format!("{key}: chunks of 0 elements cannot tile the array")));
        }
        parsed.fill = match meta.get("fill_value") {
            None | Some(Json::Null) => None,
            Some(fill) => Some(parse_fill(fill, parsed.value_type, parsed.boolean, &key)?),
        };
        Ok(parsed)
    }

    fn parse_v3(meta: &Map<String, Json>, key: &str) -> Result<ArrayMeta> {
        if meta.get("node_type").and_then(Json::as_str) != Some("array") {
            return Err(ZARR.error(format!("{key} does not describe an array")));
        }
        let len = one_dimension(field(meta, "shape", key)?, key, "shape")?;
        let type_name = field(meta, "data_type", key)?;
        let (value_type, boolean) = match type_name.as_str() {
            Some("bool") => (ValueType::U8, true),
            Some(t) => (
                parse_type(t).ok_or_else(|| unsupported_type(t, key))?,
                false,
            ),
            None => return Err(unsupported_type("an extension type", key)),
        };
        let grid = field(meta, "chunk_grid", key)?;
        if grid.get("name").and_then(Json::as_str) != Some("regular") {
            return Err(ZARR.error(format!(
                "{key}: the chunk grid {grid} is not read (only \"regular\")"
            )));
        }
        let chunk_shape = grid
            .get("configuration")
            .and_then(|c| c.get("chunk_shape"))
            .ok_or_else(|| ZARR.error(format!("{key}: the chunk grid has no chunk_shape")))?;
        let chunk = one_dimension(chunk_shape, key, "chunk_shape")?;
        let encoding = field(meta, "chunk_key_encoding", key)?;
        let separator = encoding
            .get("configuration")
            .and_then(|c| c.get("separator"))
            .and_then(Json::as_str);
        let prefix = match (encoding.get("name").and_then(Json::as_str), separator) {
            (Some("default"), None | Some("/")) => "c/",
            (Some("default"), Some(".")) => "c.",
            (Some("v2"), None | Some("." | "/")) => "",
            _ => {
                return Err(ZARR.error(format!(
                    "{key}: the chunk key encoding {encoding} is not read"
                )))
            }
        };
        if meta
            .get("storage_transformers")
            .and_then(Json::as_array)
            .is_some_and(|t| !t.is_empty())
        {
            return Err(ZARR.error(format!("{key}: storage transformers are not read")));
        }
        let mut big_endian = false;
        let mut codecs = Vec::new();
        let mut seen_bytes = false;
        let entries = field(meta, "codecs", key)?
            .as_array()
            .ok_or_else(|| ZARR.error(format!("{key}: \"codecs\" is not a list")))?;
        for entry in entries {
            let (name, config) = codec_entry(entry, "name")
                .ok_or_else(|| ZARR.error(format!("{key}: the codec {entry} has no name")))?;
            match name {
                // A transpose of one dimension is the identity.
                "transpose" if !seen_bytes => {}
                "bytes" if !seen_bytes => {
                    seen_bytes = true;
                    big_endian = match config.and_then(|c| c.get("endian")).and_then(Json::as_str) {
                        None | Some("little") => false,
                        Some("big") => true,
                        Some(other) => {
                            return Err(ZARR.error(format!("{key}: the endianness {other:?}")))
                        }
                    };
                }
                "sharding_indexed" => {
                    return Err(ZARR.error(format!(
                        "{key}: sharded arrays are not read; rewrite the group without sharding"
                    )))
                }
                _ => match Codec::named(name, false) {
                    Some(codec) if seen_bytes => codecs.push(codec),
                    _ => {
                        return Err(ZARR.error(format!(
                            "{key}: the codec {name:?} is not read here (bytes, transpose, \
                             zstd, gzip, blosc and crc32c are)"
                        )))
                    }
                },
            }
        }
        if !seen_bytes {
            return Err(ZARR.error(format!("{key}: no \"bytes\" codec")));
        }
        Ok(ArrayMeta {
            len,
            chunk,
            value_type,
            boolean,
            big_endian,
            fill: None,
            codecs,
            prefix,
        })
    }

    fn parse_v2(meta: &Map<String, Json>, key: &str) -> Result<ArrayMeta> {
        let len = one_dimension(field(meta, "shape", key)?, key, "shape")?;
        let chunk = one_dimension(field(meta, "chunks", key)?, key, "chunks")?;
        let dtype = field(meta, "dtype", key)?;
        let (value_type, boolean, big_endian) = match dtype.as_str().and_then(Descr::parse) {
            Some(Descr::Number(t, big)) => (t, false, big),
            Some(Descr::Bool) => (ValueType::U8, true, false),
            _ => return Err(unsupported_type(dtype.as_str().unwrap_or("?"), key)),
        };
        if let Some(filters) = meta
            .get("filters")
            .and_then(Json::as_array)
            .filter(|f| !f.is_empty())
        {
            return Err(ZARR.error(format!(
                "{key}: the filters {filters:?} are not read (only a compressor)"
            )));
        }
        let codecs = match meta.get("compressor") {
            None | Some(Json::Null) => Vec::new(),
            Some(compressor) => {
                let name = codec_entry(compressor, "id").map(|(n, _)| n);
                match name.and_then(|n| Codec::named(n, true)) {
                    Some(codec) => vec![codec],
                    None => {
                        return Err(ZARR.error(format!(
                            "{key}: the compressor {compressor} is not read here (zstd, gzip, \
                             zlib, blosc and crc32c are)"
                        )))
                    }
                }
            }
        };
        Ok(ArrayMeta {
            len,
            chunk,
            value_type,
            boolean,
            big_endian,
            fill: None,
            codecs,
            prefix: "",
        })
    }

    /// Reads every chunk of the array `name` into one vector of values, one chunk in memory
    /// at a time. The values may take `max_alloc` bytes beyond the store's `stored` bytes.
    pub(super) fn read_values(
        &self,
        store: &impl Store,
        name: &str,
        stored: u64,
        max_alloc: u64,
    ) -> Result<Array> {
        let size = self.value_type.size();
        let chunk_bytes = u128::from(self.chunk) * size as u128;
        check_alloc(0, u128::from(self.len) * size as u128, stored, max_alloc)?;
        check_alloc(0, chunk_bytes, stored, max_alloc)?;
        let len = usize::try_from(self.len).map_err(|_| {
            Error::from(ErrorDetails::OutOfMemory {
                bytes: u128::from(self.len) * size as u128,
            })
        })?;
        // Missing chunks cost a look-up each but no stored byte: their number is bounded too.
        let chunks = self.len.div_ceil(self.chunk);
        if chunks > stored.saturating_add(MISSING_CHUNKS) {
            return Err(ZARR.error(format!(
                "{name}: chunks of {} elements make {chunks} chunks, more than a store of \
                 {stored} bytes justifies",
                self.chunk
            )));
        }
        let chunk = self.chunk as usize;
        let mut values = Values::zeros(self.value_type, len)?;
        for (i, start) in (0..len).step_by(chunk).enumerate() {
            if let Some(decoded) = self.read_chunk(store, name, i)? {
                let copied = values.copy_from(start, &decoded);
                debug_assert!(copied, "chunk {i} lies inside the array");
            }
        }
        Ok(Array {
            values,
            name: name.to_owned(),
            offset: None,
            first: 0,
        })
    }

    /// The values of chunk `i` of the array `name` (the last one without its padding);
    /// `None` for a missing chunk of zeros (the array's fill value).
    ///
    /// # Errors
    /// A chunk that does not decode, or decodes to the wrong size; a bool other than 0 or 1;
    /// a missing chunk without a fill value.
    pub(super) fn read_chunk(
        &self,
        store: &impl Store,
        name: &str,
        i: usize,
    ) -> Result<Option<Values>> {
        let size = self.value_type.size();
        let chunk = self.chunk as usize;
        let start = i * chunk;
        let count = chunk.min(self.len as usize - start);
        let chunk_bytes = chunk * size;
        let key = format!("{name}/{}{i}", self.prefix);
        let Some(mut bytes) = store.get(&key)? else {
            return match self.fill {
                None => Err(ZARR.error(format!(
                    "the chunk {key} is missing and the array has no fill value"
                ))),
                Some(fill) if fill.is_zero() => Ok(None),
                Some(fill) => {
                    let mut values = Values::zeros(self.value_type, count)?;
                    (0..count).for_each(|k| {
                        values.set(k, fill);
                    });
                    Ok(Some(values))
                }
            };
        };
        let limit = chunk_bytes + 4 * self.codecs.len();
        for codec in self.codecs.iter().rev() {
            bytes = codec.decode(&bytes, limit, &key)?;
        }
        if bytes.len() != chunk_bytes {
            return Err(ZARR.error(format!(
                "{key}: decodes to {} bytes, a chunk of {chunk} {} elements is {chunk_bytes}",
                bytes.len(),
                self.value_type
            )));
        }
        let bytes = &mut bytes[..count * size];
        if self.big_endian {
            bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        }
        if self.boolean {
            if let Some(k) = bytes.iter().position(|&b| b > 1) {
                return Err(ZARR.at_in(
                    &key,
                    k,
                    format_args!("the bool {} is neither 0 nor 1", bytes[k]),
                ));
            }
        }
        decode_values(self.value_type, bytes).map(Some)
    }
}

fn unsupported_type(name: &str, key: &str) -> Error {
    // Zarr v3 spells complex types `complex64`, Zarr v2 (NumPy) `<c8`.
    if name.starts_with("complex") || name.get(1..2) == Some("c") {
        return not_in_daphne(
            format!("complex values ({key}: {name})"),
            "DAPHNE's value types are real",
        );
    }
    ZARR.error(format!(
        "{key}: the data type {name} is not read (integers, floats and bool are)"
    ))
}

/// An array's `fill_value`: a number, `"NaN"`/`"Infinity"`/`"-Infinity"`, a float's bits as
/// `"0x..."`, or a bool.
fn parse_fill(fill: &Json, value_type: ValueType, boolean: bool, key: &str) -> Result<Value> {
    let bad = || {
        ZARR.error(format!(
            "{key}: the fill value {fill} is not a {value_type}"
        ))
    };
    let text = match fill {
        Json::Bool(b) if boolean => return Ok(Value::U8(u8::from(*b))),
        Json::Number(n) => n.to_string(),
        Json::String(s) => match s.strip_prefix("0x") {
            Some(hex) => {
                let bits = u64::from_str_radix(hex, 16).map_err(|_| bad())?;
                return match value_type {
                    ValueType::F64 => Ok(Value::F64(f64::from_bits(bits))),
                    ValueType::F32 => u32::try_from(bits)
                        .map(|b| Value::F32(f32::from_bits(b)))
                        .map_err(|_| bad()),
                    _ => Err(bad()),
                };
            }
            None => s.clone(),
        },
        _ => return Err(bad()),
    };
    let value = parse_value(&text, value_type).ok_or_else(bad)?;
    if boolean && !matches!(value, Value::U8(0 | 1)) {
        return Err(bad());
    }
    Ok(value)
}
