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
//! stream: a remote one in place, a few ranges in flight). Whole objects go through the
//! pipe too ([`crate::convert::read`], [`crate::convert::to_vec`], ...). The rules of
//! records (header, width, typing) are in `records.rs`, the pipe's source and sink in
//! `pipe.rs`.
//!
//! ```
//! use dbdf::convert::{self, ConvertOptions};
//! use serde_daphne::{Object, Values};
//!
//! let m = Object::dense(2, 2, Values::I64(vec![1, -2, 0, 4]))?;
//! let csv = "csv".parse()?;
//! let text = convert::to_vec(&[m.clone()], csv, &ConvertOptions::default())?;
//! assert_eq!(text, b"1,-2\n0,4\n");
//! assert_eq!(convert::from_slice(&text, csv, &ConvertOptions::default())?, [m]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) use driver::Csv;
use std::io::Write;
use std::path::Path;

mod bands;
mod driver;
mod pipe;
mod records;
mod write;

pub(crate) use self::pipe::{CsvSink, CsvSource};
use serde_daphne::lowlevel::meta_json;
use serde_daphne::{Header, Result, ValueType};

/// How CSV is written. Plain data, as every format's options: set the fields that differ
/// from [`WriteOptions::default`] (frames with a header record of their labels).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// For DAPHNE: frames without a header record (DAPHNE takes the labels from the
    /// `.meta` sidecar).
    pub daphne: bool,
}

/// The `.meta` sidecar of the CSV file at `path` holding an object with `header`, so that
/// its types survive; DAPHNE's sidecars name no 16-bit types, so those are named as the 32-bit
/// types that hold them (read back so), with a warning saying so.
///
/// # Errors
/// None but the sidecar's own rules (kept as an error type for the callers' `?`).
pub(crate) fn sidecar(path: &Path, header: &Header) -> Result<(Option<Vec<u8>>, Option<String>)> {
    let wide = |vt: ValueType| match vt {
        ValueType::U16 => ValueType::U32,
        ValueType::I16 => ValueType::I32,
        other => other,
    };
    let mut named = header.clone();
    match &mut named {
        Header::DenseMatrix { value_type, .. }
        | Header::CsrMatrix { value_type, .. }
        | Header::Scalar { value_type } => *value_type = wide(*value_type),
        Header::Frame { columns, .. } => {
            for column in columns {
                column.value_type = wide(column.value_type);
            }
        }
    }
    let warning = (named != *header).then(|| {
        format!(
            "{}: DAPHNE's .meta sidecars name no 16-bit types: this one names them as 32-bit \
             types, which they read back as",
            path.display()
        )
    });
    let json = meta_json(&named, None)?;
    Ok((json.map(String::into_bytes), warning))
}

/// The CSV file at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)).
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] naming the line (and column) and what is wrong
/// (the first pass finds every malformed record); I/O errors.
pub(crate) fn source(path: impl AsRef<Path>) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(CsvSource::open(path.as_ref())?))
}

/// A sink of the pipe writing CSV to `out` (a boxed [`Sink`](crate::pipe::Sink)).
pub(crate) fn sink<'w>(
    out: &'w mut dyn Write,
    options: &WriteOptions,
) -> Box<dyn crate::pipe::Sink + 'w> {
    Box::new(CsvSink::new(out, options.daphne))
}
