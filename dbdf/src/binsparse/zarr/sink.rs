//! Binsparse Zarr groups written from the pipe: the arrays of the formats that follow the
//! rows are written a chunk at a time as the bands come (memory holds one chunk per array,
//! at most [`CHUNK`] elements), the metadata last, when the lengths are known; the group is
//! built beside its path and swapped into place. Other formats are held whole. The files
//! are the whole write's.

use std::path::{Path, PathBuf};

use super::super::sink::{arrays_of, format_for, streams, write_arrays, Put, Written};
use super::super::{descriptor, WriteOptions};
use super::{
    chunk_key, is_zarr_group, write_array_meta, write_chunk, write_group, Directory, ZarrVersion,
    CHUNK,
};
use crate::input::write_le;
use crate::pipe::{Pieces, Sink};
use serde_daphne::with_values;
use serde_daphne::Header;
use serde_daphne::{Result, ValueType, Values};

/// One array's chunks as they fill.
struct Chunks {
    dir: PathBuf,
    name: &'static str,
    v2: bool,
    /// The bytes of the chunk being filled.
    pending: Vec<u8>,
    chunk_bytes: usize,
    written: usize,
}

impl Put for Chunks {
    fn put(&mut self, values: &Values) -> Result<()> {
        let size = values.value_type().size();
        with_values!(values, v => {
            let mut rest = &v[..];
            while !rest.is_empty() {
                // What fits the chunk being filled; a full chunk is written at once.
                let room = (self.chunk_bytes - self.pending.len()) / size;
                let (piece, after) = rest.split_at(room.min(rest.len()));
                write_le(&mut self.pending, piece)?;
                if self.pending.len() == self.chunk_bytes {
                    self.flush_chunk()?;
                    self.pending.clear();
                }
                rest = after;
            }
        });
        Ok(())
    }
}

impl Chunks {
    fn flush_chunk(&mut self) -> Result<()> {
        let key = chunk_key(self.name, self.written, self.v2);
        write_chunk(
            &mut Directory(self.dir.clone()),
            &key,
            &self.pending,
            self.pending.len(),
        )?;
        self.written += 1;
        Ok(())
    }
}

/// A Binsparse matrix as a Zarr group at a path.
pub struct ZarrSink {
    path: PathBuf,
    options: WriteOptions,
}

impl ZarrSink {
    /// A sink writing the group at `path` with `options`.
    pub(crate) fn new(path: &Path, options: &WriteOptions) -> ZarrSink {
        ZarrSink {
            path: path.to_owned(),
            options: options.clone(),
        }
    }
}

impl Sink for ZarrSink {
    fn holds_one(&self) -> Option<&'static str> {
        Some("Binsparse")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let format = format_for(&self.options, header);
        if !streams(format, header) {
            return super::write(&self.path, &pieces.collect()?, &self.options);
        }
        let options = &self.options;
        let v2 = options.zarr_version == ZarrVersion::V2;
        let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
        serde_daphne::lowlevel::replace_directory(&self.path, is_zarr_group, |dir| {
            let mut arrays = arrays_of(format, vt, options, |name| {
                let size = if name == "values" {
                    vt
                } else {
                    options.index_type
                }
                .size();
                Ok(Chunks {
                    dir: dir.to_owned(),
                    name,
                    v2,
                    pending: Vec::new(),
                    chunk_bytes: CHUNK * size,
                    written: 0,
                })
            })?;
            let Written {
                nnz,
                shape,
                data_types,
                iso,
            } = write_arrays(format, header, pieces, &mut arrays, options)?;
            let mut store = Directory(dir.to_owned());
            for array in &mut arrays {
                let mut len = array.len;
                if iso && array.name == "values" {
                    // One value: the chunks written go, one chunk of the first replaces them.
                    let size = array.value_type.size();
                    let first = match array.to.written {
                        0 => array.to.pending[..size].to_vec(),
                        _ => first_value(dir, array.to.name, v2, size)?,
                    };
                    remove_chunks(dir, array.to.name, array.to.written, v2)?;
                    array.to.written = 0;
                    array.to.pending = first;
                    len = 1;
                }
                let chunks = &mut array.to;
                if len < CHUNK as u64 {
                    // One chunk, as long as the array.
                    if len > 0 {
                        chunks.flush_chunk()?;
                    }
                } else if !chunks.pending.is_empty() {
                    chunks.pending.resize(chunks.chunk_bytes, 0);
                    chunks.flush_chunk()?;
                }
                write_array_meta(&mut store, array.name, len, array.value_type, v2)?;
            }
            let text = descriptor(format, shape, nnz, data_types, options);
            write_group(&mut store, &text, v2)
        })
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// The first value's bytes of the array `name`, from its first chunk.
fn first_value(dir: &Path, name: &str, v2: bool, size: usize) -> Result<Vec<u8>> {
    let key = chunk_key(name, 0, v2);
    let bytes = std::fs::read(dir.join(&key))?;
    let raw = super::codecs::Codec::Zstd.decode(&bytes, CHUNK * size, &key)?;
    Ok(raw[..size].to_vec())
}

/// Removes the `count` chunks written of the array `name`.
fn remove_chunks(dir: &Path, name: &str, count: usize, v2: bool) -> Result<()> {
    for i in 0..count {
        std::fs::remove_file(dir.join(chunk_key(name, i, v2)))?;
    }
    Ok(())
}
