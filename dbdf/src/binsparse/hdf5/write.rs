//! Binsparse HDF5 files written from the pipe, at a path (through the library's own file
//! driver) or as a stream into an output's one file ([`super::stream`]: with no local copy
//! and no seek back, its head written last). The arrays of the formats that follow the rows
//! are written as the bands come, a chunk at a time (each array a chunked dataset once it
//! fills its first chunk; memory holds a chunk per array, and a stream's head); shorter
//! arrays, and the descriptor, are written at the end. Other formats are held whole and
//! written the same way.

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use h5::plist::dataset_create::{FillTime, Layout};
use h5::types::{FloatSize, IntSize, TypeDescriptor, VarLenUnicode};
use hdf5_metno as h5;

use super::super::sink::{arrays_of, format_for, streams, write_arrays, Put, Written};
use super::super::{descriptor, encode, WriteOptions};
use super::stream::Streamed;
use crate::pipe::{Pieces, Sink};
use crate::storage::FileOut;
use serde_daphne::with_values;
use serde_daphne::{Error, Header, Object, Result, ValueType, Values};

/// The bytes of one chunk of an array (tests: a few KiB, so that small matrices have many).
const CHUNK_BYTES: usize = if cfg!(test) { 4 << 10 } else { 4 << 20 };

/// Metadata bytes kept before a stream's first raw block: a base, and per chunk a matrix's
/// arrays may have (their chunk indexes), for the most arrays a format has.
const META_BASE: u64 = 64 << 10;
const META_PER_CHUNK: u64 = 128;
const MOST_ARRAYS: u64 = 4;

/// A Binsparse matrix as an HDF5 file, written at a path or into one output file.
pub(crate) struct Hdf5Sink<'o> {
    target: Target<'o>,
    name: PathBuf,
    options: WriteOptions,
}

enum Target<'o> {
    /// At a path, replacing the file there.
    Path,
    /// Into an output's file, its head written last.
    Out(Option<Box<dyn FileOut + 'o>>),
}

impl<'o> Hdf5Sink<'o> {
    /// A sink writing the file at `path` with `options`.
    pub(crate) fn at(path: &Path, options: &WriteOptions) -> Hdf5Sink<'o> {
        Hdf5Sink {
            target: Target::Path,
            name: path.to_owned(),
            options: options.clone(),
        }
    }

    /// A sink writing the file (named `name`) into `out`, whose head is written last.
    pub(crate) fn into(out: Box<dyn FileOut + 'o>, name: &Path, options: &WriteOptions) -> Self {
        Hdf5Sink {
            target: Target::Out(Some(out)),
            name: name.to_owned(),
            options: options.clone(),
        }
    }
}

impl Sink for Hdf5Sink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("Binsparse")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let (name, options) = (&self.name, &self.options);
        match &mut self.target {
            Target::Path => at_path(name, |temp| {
                write_pieces(Writer::at(temp)?, header, pieces, options)
            }),
            Target::Out(out) => {
                let out = out.take().expect("one object");
                let writer = Writer::into(out, name, header)?;
                write_pieces(writer, header, pieces, options)
            }
        }
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Writes `object` as a Binsparse HDF5 file at `path`, atomically (under a temporary name
/// renamed into place; a kill leaves it to the next write of `path`, which removes it).
///
/// # Errors
/// What [`encode`] refuses; the library's errors; I/O errors.
pub(in crate::binsparse) fn write(
    path: &Path,
    object: &Object,
    options: &WriteOptions,
) -> Result<()> {
    at_path(path, |temp| {
        write_object(Writer::at(temp)?, object, options)
    })
}

/// Runs `write` on a temporary path beside `path`, renamed into place when it succeeds and
/// removed when not.
fn at_path(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    serde_daphne::lowlevel::remove_stale_temporaries(path);
    let temp = serde_daphne::lowlevel::temporary_path(path);
    let written = write(&temp).and_then(|()| Ok(std::fs::rename(&temp, path)?));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Writes the matrix `pieces` gives: array by array as the bands come where its format
/// follows the rows, else held whole.
fn write_pieces(
    writer: Writer<'_>,
    header: &Header,
    pieces: &mut Pieces<'_>,
    options: &WriteOptions,
) -> Result<()> {
    let format = format_for(options, header);
    if !streams(format, header) {
        return write_object(writer, &pieces.collect()?, options);
    }
    let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
    let mut arrays = arrays_of(format, vt, options, |name, vt| Ok(writer.array(name, vt)))?;
    let Written {
        nnz,
        shape,
        data_types,
        iso,
    } = write_arrays(format, header, pieces, &mut arrays, options)?;
    let text = descriptor(format, shape, nnz, data_types, options);
    let arrays = arrays.into_iter().map(|a| (a.to, a.len)).collect();
    writer.complete(arrays, iso, &text)?;
    writer.close()
}

/// Writes `object`'s arrays, whole, and its descriptor.
fn write_object(writer: Writer<'_>, object: &Object, options: &WriteOptions) -> Result<()> {
    let (text, values) = encode(object, options)?;
    let mut arrays = Vec::with_capacity(values.len());
    for (name, values) in &values {
        let mut array = writer.array(name, values.value_type());
        array.put(values)?;
        arrays.push((array, values.len() as u64));
    }
    writer.complete(arrays, false, &text)?;
    writer.close()
}

/// The metadata bytes a stream keeps before its first raw block, for a matrix with `header`:
/// its chunk indexes at their largest (every cell stored), within half the `head` (a
/// matrix whose metadata outgrows that fails, saying so).
fn reserve_for(header: &Header, head: u64) -> u64 {
    let (rows, cols) = header.shape();
    let chunks = |bytes: u64| bytes.div_ceil(CHUNK_BYTES as u64);
    let per_array = chunks(rows.saturating_mul(cols).saturating_mul(8))
        .saturating_add(chunks(rows.saturating_add(1).saturating_mul(8)));
    let chunks = per_array.saturating_mul(MOST_ARRAYS);
    META_BASE
        .saturating_add(chunks.saturating_mul(META_PER_CHUNK))
        .min(head / 2)
}

/// An HDF5 file being written: at a path, or as a stream into an output.
struct Writer<'o> {
    file: h5::File,
    stream: Option<Stream<'o>>,
}

/// A file written through the stream driver, and the output its bytes go to.
struct Stream<'o> {
    streamed: Arc<Streamed>,
    out: RefCell<Box<dyn FileOut + 'o>>,
}

impl<'o> Writer<'o> {
    /// A new file at `path`, through the library's own driver.
    fn at(path: &Path) -> Result<Writer<'o>> {
        let file = h5::File::create(path)
            .map_err(|e| Error::invalid(format!("HDF5: creating {}: {e}", path.display())))?;
        Ok(Writer { file, stream: None })
    }

    /// A new file (named `name`) for a matrix with `header`, written into `out`, whose head
    /// is written last.
    fn into(out: Box<dyn FileOut + 'o>, name: &Path, header: &Header) -> Result<Writer<'o>> {
        let (file, streamed) = Streamed::create(name, out.head())?;
        streamed.reserve(reserve_for(header, out.head()));
        let out = RefCell::new(out);
        Ok(Writer {
            file,
            stream: Some(Stream { streamed, out }),
        })
    }

    /// `done`'s value, or the error naming `what` failed (and why the driver refused); the
    /// bytes a stream wrote past its head go to its output.
    fn after<T>(&self, what: &str, done: h5::Result<T>) -> Result<T> {
        let Some(stream) = &self.stream else {
            return done.map_err(|e| Error::invalid(format!("HDF5: {what}: {e}")));
        };
        let value = done.map_err(|e| stream.streamed.error(&format!("HDF5: {what}: {e}")))?;
        let tail = stream.streamed.take_tail();
        if !tail.is_empty() {
            stream.out.borrow_mut().write_all(&tail)?;
        }
        Ok(value)
    }

    fn array<'w>(&'w self, name: &'static str, value_type: ValueType) -> Chunks<'w, 'o> {
        Chunks {
            writer: self,
            name,
            value_type,
            pending: Vec::new(),
            chunk_bytes: CHUNK_BYTES / value_type.size() * value_type.size(),
            chunks: 0,
            dataset: None,
            first: Vec::new(),
        }
    }

    /// A new dataset `name` of `value_type`: `len` values, or chunks of `chunk` values
    /// as many as written, or (`compact`) one value in its header.
    fn dataset(&self, name: &str, value_type: ValueType, shape: Shape) -> Result<h5::Dataset> {
        let builder = self
            .file
            .new_dataset_builder()
            .empty_as(&type_of(value_type));
        let made = match shape {
            Shape::Chunks(chunk) => builder
                .shape(0..)
                .chunk(chunk)
                .fill_time(FillTime::Never)
                .create(name),
            Shape::Values(len) => builder.shape(len).fill_time(FillTime::Never).create(name),
            Shape::Compact => builder.shape(1).layout(Layout::Compact).create(name),
        };
        self.after(&format!("the dataset {name}"), made)
    }

    /// Makes the arrays not yet written (shorter than a chunk) datasets, writes their values
    /// and the last chunk of the others (`iso`: the values array is one value), and the
    /// descriptor `text`.
    fn complete(&self, arrays: Vec<(Chunks<'_, 'o>, u64)>, iso: bool, text: &str) -> Result<()> {
        // Metadata first, so that a stream's reserve before its first raw block can be small.
        let mut writes = Vec::new();
        let mut one_value = None;
        for (mut array, len) in arrays {
            if iso && array.name == "values" {
                match array.dataset.take() {
                    // Replaced once no raw block is placed after it: the space its chunks
                    // give back is never handed out again, over bytes already sent.
                    Some(_) => one_value = Some(array),
                    None => self.one_value(&array)?,
                }
                continue;
            }
            if array.dataset.is_none() {
                let len = Shape::Values(len as usize);
                array.dataset = Some(self.dataset(array.name, array.value_type, len)?);
            }
            writes.push((array, len));
        }
        let text: VarLenUnicode = text
            .parse()
            .map_err(|e| Error::invalid(format!("the descriptor: {e}")))?;
        let attr = || {
            let attr = self.file.new_attr::<VarLenUnicode>().create("binsparse")?;
            attr.write_scalar(&text)
        };
        let attr = match &self.stream {
            Some(stream) => stream.streamed.heap(attr),
            None => attr(),
        };
        self.after("the descriptor", attr)?;
        if let Some(stream) = &self.stream {
            stream.streamed.reserve(0);
        }
        for (array, len) in writes {
            array.last(len)?;
        }
        if let Some(values) = one_value {
            self.after("removing the values", self.file.unlink("values"))?;
            self.one_value(&values)?;
        }
        Ok(())
    }

    /// The values array `values` as its first value alone, in the dataset's header.
    fn one_value(&self, values: &Chunks<'_, 'o>) -> Result<()> {
        let one = self.dataset("values", values.value_type, Shape::Compact)?;
        write_bytes(self, &one, &values.first)
    }

    /// Closes the file: a stream's bytes after its head go to its output, then the head.
    fn close(self) -> Result<()> {
        let Writer { file, stream } = self;
        let closed = file.close();
        let Some(Stream { streamed, out }) = stream else {
            return closed.map_err(|e| Error::invalid(format!("HDF5: closing the file: {e}")));
        };
        closed.map_err(|e| streamed.error(&format!("HDF5: closing the file: {e}")))?;
        let closed = streamed.closed();
        let mut out = out.into_inner();
        out.write_all(&closed.tail)?;
        out.finish_with_head(&closed.head)
    }
}

/// How a dataset is laid out.
enum Shape {
    Chunks(usize),
    Values(usize),
    Compact,
}

/// The HDF5 type of `value_type`'s values, as this machine holds them.
fn type_of(value_type: ValueType) -> TypeDescriptor {
    use TypeDescriptor::{Float, Integer, Unsigned};
    match value_type {
        ValueType::U8 => Unsigned(IntSize::U1),
        ValueType::U16 => Unsigned(IntSize::U2),
        ValueType::U32 => Unsigned(IntSize::U4),
        ValueType::U64 => Unsigned(IntSize::U8),
        ValueType::I8 => Integer(IntSize::U1),
        ValueType::I16 => Integer(IntSize::U2),
        ValueType::I32 => Integer(IntSize::U4),
        ValueType::I64 => Integer(IntSize::U8),
        ValueType::F32 => Float(FloatSize::U4),
        ValueType::F64 => Float(FloatSize::U8),
    }
}

/// Writes `bytes` (values as this machine holds them) as the whole of `dataset`.
fn write_bytes(writer: &Writer<'_>, dataset: &h5::Dataset, bytes: &[u8]) -> Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let written = h5::sync::sync(|| {
        use hdf5_metno_sys::{h5d, h5p, h5s, h5t};
        // SAFETY: `bytes` holds the dataset's values in its own type, whole: the type the
        // dataset was made with is this machine's (`type_of`), so nothing is converted.
        #[allow(unsafe_code)]
        unsafe {
            let kind = h5d::H5Dget_type(dataset.id());
            let done = h5d::H5Dwrite(
                dataset.id(),
                kind,
                h5s::H5S_ALL,
                h5s::H5S_ALL,
                h5p::H5P_DEFAULT,
                bytes.as_ptr().cast(),
            );
            h5t::H5Tclose(kind);
            done
        }
    });
    writer.after("writing values", status(written))
}

fn status(code: i32) -> h5::Result<()> {
    match code < 0 {
        true => Err(h5::Error::from("the library refused")),
        false => Ok(()),
    }
}

/// One array's values as they come: the chunk being filled (as this machine holds values),
/// its dataset once a chunk is full.
struct Chunks<'w, 'o> {
    writer: &'w Writer<'o>,
    name: &'static str,
    value_type: ValueType,
    pending: Vec<u8>,
    chunk_bytes: usize,
    /// Full chunks written.
    chunks: u64,
    dataset: Option<h5::Dataset>,
    /// The first value's bytes (for `iso`).
    first: Vec<u8>,
}

impl Put for Chunks<'_, '_> {
    fn put(&mut self, values: &Values) -> Result<()> {
        let size = self.value_type.size();
        if values.value_type() != self.value_type {
            return Err(Error::invalid(format!(
                "internal: {} values for the {} array {}",
                values.value_type(),
                self.value_type,
                self.name
            )));
        }
        with_values!(values, v => {
            let mut bytes: &[u8] = bytemuck::cast_slice(&v[..]);
            if self.first.is_empty() && !bytes.is_empty() {
                self.first = bytes[..size].to_vec();
            }
            while !bytes.is_empty() {
                let room = self.chunk_bytes - self.pending.len();
                let (piece, after) = bytes.split_at(room.min(bytes.len()));
                self.pending.extend_from_slice(piece);
                if self.pending.len() == self.chunk_bytes {
                    let len = (self.chunks + 1) * (self.chunk_bytes / size) as u64;
                    self.write_chunk(len)?;
                    self.pending.clear();
                }
                bytes = after;
            }
        });
        Ok(())
    }
}

impl Chunks<'_, '_> {
    /// Writes the chunk filled (padded to its length), the dataset then `len` values long.
    fn write_chunk(&mut self, len: u64) -> Result<()> {
        let writer = self.writer;
        let chunk = self.chunk_bytes / self.value_type.size();
        let dataset = match &self.dataset {
            Some(dataset) => dataset,
            None => {
                let made = writer.dataset(self.name, self.value_type, Shape::Chunks(chunk))?;
                self.dataset.insert(made)
            }
        };
        writer.after("growing a dataset", dataset.resize(len as usize))?;
        self.pending.resize(self.chunk_bytes, 0);
        let offset = [self.chunks * chunk as u64];
        let written = h5::sync::sync(|| {
            // SAFETY: a whole chunk of the dataset's values, unfiltered, at a chunk's offset
            // within its extent.
            #[allow(unsafe_code)]
            unsafe {
                hdf5_metno_sys::h5d::H5Dwrite_chunk(
                    dataset.id(),
                    hdf5_metno_sys::h5p::H5P_DEFAULT,
                    0,
                    offset.as_ptr(),
                    self.pending.len(),
                    self.pending.as_ptr().cast(),
                )
            }
        });
        writer.after("writing a chunk", status(written))?;
        self.chunks += 1;
        Ok(())
    }

    /// Writes what is left of the array, `len` values in all: its last chunk, or the whole
    /// of a dataset shorter than a chunk.
    fn last(mut self, len: u64) -> Result<()> {
        match (self.chunks, &self.dataset) {
            (0, Some(dataset)) => write_bytes(self.writer, dataset, &self.pending),
            _ if self.pending.is_empty() => Ok(()),
            _ => self.write_chunk(len),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use super::super::super::{Format, WriteOptions};
    use super::super::read;
    use super::Hdf5Sink;
    use crate::pipe::{Held, InputMetadata};
    use crate::storage::FileOut;
    use serde_daphne::{DataType, Object, Result, Value, Values};

    /// An output file in memory whose first `head` bytes come last, put before the others.
    struct HeadLast {
        head: u64,
        body: Vec<u8>,
        file: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for HeadLast {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.body.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl FileOut for HeadLast {
        fn finish(self: Box<Self>) -> Result<()> {
            unreachable!("a file written head last")
        }

        fn head(&self) -> u64 {
            self.head
        }

        fn finish_with_head(self: Box<Self>, head: &[u8]) -> Result<()> {
            assert!(self.body.is_empty() || head.len() as u64 == self.head);
            let mut file = self.file.lock().unwrap();
            *file = [head, &self.body].concat();
            Ok(())
        }
    }

    fn matrices() -> Vec<Object> {
        let cells = |n: usize| (0..n).map(|i| ((i % 7) * (i % 5)) as f64 / 3.0);
        let dense = |r: usize, c: usize| {
            Object::dense(r as u64, c as u64, Values::F64(cells(r * c).collect())).unwrap()
        };
        let big = dense(300, 200); // 480,000 bytes of values: past a 256 KiB head
        let twos = cells(300 * 200)
            .map(|x| if x == 0.0 { 0.0 } else { 2.0 })
            .collect();
        let iso = Object::dense(300, 200, Values::F64(twos)).unwrap();
        vec![
            dense(3, 2),
            big.clone(),
            big.with_data_type(DataType::CsrMatrix).unwrap(),
            iso.with_data_type(DataType::CsrMatrix).unwrap(),
            Object::dense(0, 4, Values::F64(Vec::new())).unwrap(),
        ]
    }

    fn cells(m: &Object) -> Vec<Option<Value>> {
        let (rows, cols) = m.shape();
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| m.get(r, c)))
            .collect()
    }

    /// Matrices within a stream's head and past it, in each layout (streamed as the bands
    /// come, or held whole), with `iso`: written as a stream (a second time the same bytes)
    /// and at a path, the HDF5 library reads back the same matrix.
    #[test]
    fn streamed_files_read_back_equal_and_make_the_same_bytes_again() {
        let dir = std::env::temp_dir().join(format!("dbdf_h5_stream_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.bsp.h5");
        let formats = [
            None,
            Some(Format::Coo),
            Some(Format::Dcsr),
            Some(Format::Csc),
        ];
        for (k, object) in matrices().into_iter().enumerate() {
            for (format, iso) in formats.iter().map(|f| (*f, false)).chain([(None, true)]) {
                let options = WriteOptions {
                    format,
                    iso,
                    ..Default::default()
                };
                let write = |stream: bool| {
                    let mut held = Held::new(vec![object.clone()], 0, InputMetadata::default())
                        .unwrap()
                        .band_rows(7);
                    let file = Arc::new(Mutex::new(Vec::new()));
                    let out = HeadLast {
                        head: 256 << 10,
                        body: Vec::new(),
                        file: Arc::clone(&file),
                    };
                    let sink = match stream {
                        true => Hdf5Sink::into(Box::new(out), Path::new("m.bsp.h5"), &options),
                        false => Hdf5Sink::at(&path, &options),
                    };
                    crate::pipe::copy(&mut held, Box::new(sink)).unwrap();
                    if stream {
                        std::fs::write(&path, &*file.lock().unwrap()).unwrap();
                    }
                    std::fs::read(&path).unwrap()
                };
                for stream in [true, false] {
                    let bytes = write(stream);
                    assert_eq!(&bytes[..8], b"\x89HDF\r\n\x1a\n");
                    let back = read(&path, u64::MAX).unwrap().object;
                    assert_eq!(back.shape(), object.shape());
                    let what = format!("matrix {k}, {format:?}, iso {iso}, stream {stream}");
                    assert_eq!(cells(&back), cells(&object), "{what}");
                    if stream {
                        assert!(write(true) == bytes, "{what}: other bytes");
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
