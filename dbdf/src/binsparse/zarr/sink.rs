//! Binsparse Zarr groups written from the pipe: the arrays of the formats that follow the
//! rows are written a chunk at a time as the bands come (memory holds one chunk per array,
//! at most [`CHUNK`] elements), the metadata last, when the lengths are known; a group at a
//! path is built beside it and swapped into place, one into [`OutputFiles`] (the objects
//! under a prefix) is put in place by their caller. Other formats are held whole.

use std::path::{Path, PathBuf};

use super::super::sink::{arrays_of, format_for, streams, write_arrays, Put, Written};
use super::super::{descriptor, WriteOptions};
use super::{
    chunk_key, is_zarr_group, write_array_meta, write_chunk, write_group, write_store, StoreMut,
    ZarrVersion, CHUNK,
};
use crate::input::write_le;
use crate::pipe::{Pieces, Sink};
use crate::storage::{LocalFolder, OutputFiles};
use serde_daphne::with_values;
use serde_daphne::Header;
use serde_daphne::{Result, ValueType, Values};

/// One array's chunks as they fill.
struct Chunks<'f> {
    files: &'f dyn OutputFiles,
    name: &'static str,
    v2: bool,
    /// The bytes of the chunk being filled.
    pending: Vec<u8>,
    chunk_bytes: usize,
    written: usize,
}

impl Put for Chunks<'_> {
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

impl Chunks<'_> {
    fn flush_chunk(&mut self) -> Result<()> {
        let key = chunk_key(self.name, self.written, self.v2);
        let mut files = Keys(self.files);
        write_chunk(&mut files, &key, &self.pending, self.pending.len())?;
        self.written += 1;
        Ok(())
    }
}

/// The files of a group as a Zarr store's keys.
struct Keys<'f>(&'f dyn OutputFiles);

impl StoreMut for Keys<'_> {
    fn set(&mut self, key: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.0.put(key, bytes).map_err(std::io::Error::other)
    }
}

/// Where a group is written.
enum Target<'f> {
    /// At a path, replacing a group there.
    Path(PathBuf),
    /// Into the files of an output (the objects under a prefix).
    Files(&'f dyn OutputFiles),
}

/// A Binsparse matrix as a Zarr group at a path or into an output's files.
pub struct ZarrSink<'f> {
    target: Target<'f>,
    options: WriteOptions,
}

impl<'f> ZarrSink<'f> {
    /// A sink writing the group at `path` with `options`.
    pub(crate) fn new(path: &Path, options: &WriteOptions) -> ZarrSink<'f> {
        ZarrSink {
            target: Target::Path(path.to_owned()),
            options: options.clone(),
        }
    }

    /// A sink writing the group into `files` with `options`.
    pub(crate) fn into_files(files: &'f dyn OutputFiles, options: &WriteOptions) -> Self {
        ZarrSink {
            target: Target::Files(files),
            options: options.clone(),
        }
    }
}

impl Sink for ZarrSink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("Binsparse")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let options = &self.options;
        let files = match &self.target {
            Target::Path(path) => {
                return serde_daphne::lowlevel::replace_directory(path, is_zarr_group, |dir| {
                    write_group_into(&LocalFolder(dir.to_owned()), header, pieces, options)
                })
            }
            Target::Files(files) => *files,
        };
        write_group_into(files, header, pieces, options)
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Writes the group of the object with `header` into `files`: chunk by chunk where its
/// format follows the rows, else held whole.
fn write_group_into(
    files: &dyn OutputFiles,
    header: &Header,
    pieces: &mut Pieces<'_>,
    options: &WriteOptions,
) -> Result<()> {
    let format = format_for(options, header);
    if !streams(format, header) {
        return write_store(&mut Keys(files), &pieces.collect()?, options);
    }
    let v2 = options.zarr_version == ZarrVersion::V2;
    let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
    let mut arrays = arrays_of(format, vt, options, |name, array_type| {
        let size = array_type.size();
        Ok(Chunks {
            files,
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
    let mut store = Keys(files);
    for array in &mut arrays {
        let mut len = array.len;
        if iso && array.name == "values" {
            // One value: the chunks written go, one chunk of the first replaces them.
            let size = array.value_type.size();
            let first = match array.to.written {
                0 => array.to.pending[..size].to_vec(),
                _ => first_value(files, array.to.name, v2, size)?,
            };
            remove_chunks(files, array.to.name, array.to.written, v2)?;
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
}

/// The first value's bytes of the array `name`, from its first chunk.
fn first_value(files: &dyn OutputFiles, name: &str, v2: bool, size: usize) -> Result<Vec<u8>> {
    let key = chunk_key(name, 0, v2);
    let bytes = files.read(&key)?;
    let raw = super::codecs::Codec::Zstd.decode(&bytes, CHUNK * size, &key)?;
    Ok(raw[..size].to_vec())
}

/// Removes the `count` chunks written of the array `name`.
fn remove_chunks(files: &dyn OutputFiles, name: &str, count: usize, v2: bool) -> Result<()> {
    for i in 0..count {
        files.remove(&chunk_key(name, i, v2))?;
    }
    Ok(())
}
