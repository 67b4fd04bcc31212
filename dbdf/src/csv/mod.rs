//! CSV: numbers, one row per record; frames with a header record of labels.
//!
//! A `.meta` sidecar beside the CSV (DAPHNE's JSON, as DAPHNE reads CSV, through
//! `serde_daphne::lowlevel`) gives the shape, value types and frame labels; without one, a
//! first record that is not all numbers is a header and makes a frame, and columns are typed
//! i64 when every field is an integer, f64 otherwise. Writing a CSV file also writes its
//! sidecar, so that types survive; in the runtime dialect frames get no header record (DAPHNE
//! takes the labels from the sidecar). Records are parsed and written by the `csv` crate
//! (RFC 4180 quoting, fields with line breaks), streamed: only the values are held, and
//! its source on the pipe holds a few bands of them (it reads the file twice, each time as a
//! stream: a remote one in place, a few ranges in flight). The
//! whole read is in `read.rs`, the rules both share (header, width, typing) in
//! `records.rs`, the pipe's source and sink in `pipe.rs`.
//!
//! ```
//! use dbdf::csv::{self, WriteOptions};
//! use serde_daphne::{Object, Values};
//!
//! let m = Object::dense(2, 2, Values::I64(vec![1, -2, 0, 4]))?;
//! let text = csv::to_vec(&m, &WriteOptions::default())?;
//! assert_eq!(text, b"1,-2\n0,4\n");
//! assert_eq!(csv::from_slice(&text)?, m);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

pub(crate) use driver::Csv;
use serde_daphne::ErrorDetails;
use std::io::Write;
use std::path::Path;

mod bands;
mod driver;
mod pipe;
mod read;
mod records;
mod write;

pub(crate) use self::pipe::{CsvSink, CsvSource};
use self::write::{write_labels, write_records};
use serde_daphne::lowlevel::{meta_json, read_sidecar, sidecar_path, FileSet};
use serde_daphne::{DataType, Error, Header, Object, Result};

/// How CSV is written. Plain data, as every format's options: set the fields that differ
/// from [`WriteOptions::default`] (frames with a header record of their labels).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// For DAPHNE: frames without a header record (DAPHNE takes the labels from the
    /// `.meta` sidecar).
    pub daphne: bool,
}

/// Reads the CSV file at `path`, with its `.meta` sidecar if there is one.
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] naming the line (and column) and what is wrong;
/// I/O errors.
pub fn read(path: impl AsRef<Path>) -> Result<Object> {
    let path = path.as_ref();
    let sidecar = read_sidecar(path)?;
    let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    read::from_reader(file, sidecar.as_ref())
}

/// Reads CSV text (no sidecar: types are inferred).
///
/// # Errors
/// As [`read()`].
pub fn from_slice(bytes: &[u8]) -> Result<Object> {
    read::from_reader(bytes, None)
}

/// Writes an object as a CSV file (atomically) and its `.meta` sidecar, so that its types
/// survive (none where DAPHNE's sidecars cannot name them: 16-bit types).
///
/// # Errors
/// As [`to_writer`]; I/O errors.
pub fn write_with(path: impl AsRef<Path>, object: &Object, options: &WriteOptions) -> Result<()> {
    let path = path.as_ref();
    let mut set = FileSet::new(true);
    set.buffered(path, |out| to_writer(out, object, options))?;
    match sidecar(path, object.header())?.0 {
        Some(json) => set.bytes(sidecar_path(path), &json)?,
        None => set.remove(sidecar_path(path)),
    }
    set.commit()
}

/// The `.meta` sidecar of the CSV file at `path` holding an object with `header`, so that
/// its types survive; where DAPHNE's sidecars cannot name them (16-bit types), none (an
/// older one is removed) and a warning saying so.
///
/// # Errors
/// None but the sidecar's own rules (kept as an error type for the callers' `?`).
pub(crate) fn sidecar(path: &Path, header: &Header) -> Result<(Option<Vec<u8>>, Option<String>)> {
    match meta_json(header, None).map_err(serde_daphne::Error::into_details) {
        Err(ErrorDetails::NotInDialect { what, .. }) => Ok((
            None,
            Some(format!(
                "{}: no .meta sidecar: DAPHNE's sidecars cannot name {what}, so the values \
                 read back as i64",
                path.display()
            )),
        )),
        Ok(json) => Ok((json.map(String::into_bytes), None)),
        Err(other) => Err(Error::from(other)),
    }
}

/// [`write_with`] the default options.
///
/// # Errors
/// As [`write_with`].
pub fn write(path: impl AsRef<Path>, object: &Object) -> Result<()> {
    write_with(path, object, &WriteOptions::default())
}

/// Writes an object as CSV to `out`; frames get a header record unless written for DAPHNE.
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for values text cannot hold; objects too large
/// for memory; I/O errors.
pub fn to_writer<W: Write>(out: W, object: &Object, options: &WriteOptions) -> Result<()> {
    let mut writer = csv::WriterBuilder::new().from_writer(out);
    if object.data_type() == DataType::Frame && !options.daphne {
        write_labels(&mut writer, object.labels())?;
    }
    write_records(&mut writer, object, 0)?;
    writer.flush()?;
    Ok(())
}

/// [`to_writer`] into a new vector.
///
/// # Errors
/// As [`to_writer`].
pub fn to_vec(object: &Object, options: &WriteOptions) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    to_writer(&mut out, object, options)?;
    Ok(out)
}

/// The CSV file at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)).
///
/// # Errors
/// As [`read()`]: the first pass finds every malformed record.
pub(crate) fn source(path: impl AsRef<Path>) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(CsvSource::open(path.as_ref())?))
}

/// A sink of the pipe writing CSV to `out` (a boxed [`Sink`](crate::pipe::Sink)).
pub fn sink<'w>(out: &'w mut dyn Write, options: &WriteOptions) -> Box<dyn crate::pipe::Sink + 'w> {
    Box::new(CsvSink::new(out, options.daphne))
}
