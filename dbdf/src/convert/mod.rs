//! Conversions between `.dbdf` files and the neighbouring formats: MatrixMarket, CSV, NumPy
//! `.npy` and `.npz`, scipy's sparse `.npz`, Futhark binary data, Binsparse, SystemDS binary
//! blocks, Parquet and Arrow IPC. What `dbdf convert` and the Python package's
//! `dbdf.convert` do, with one set of rules.
//!
//! ```
//! use dbdf::convert::{convert, ConvertOptions};
//!
//! let dir = std::env::temp_dir();
//! let (mtx, dbdf) = (dir.join("doc_convert.mtx"), dir.join("doc_convert.dbdf"));
//! std::fs::write(&mtx, "%%MatrixMarket matrix coordinate real general\n2 3 1\n2 3 -1.5\n")?;
//! convert(&mtx, &dbdf, &ConvertOptions::default())?;
//! let m: sprs::CsMat<f64> = serde_daphne::from_file::<_, serde_daphne::Csr<f64>>(&dbdf)?.0;
//! assert_eq!(m.get(1, 2), Some(&-1.5));
//! # std::fs::remove_file(&mtx).ok(); std::fs::remove_file(&dbdf).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every conversion is a source, the pipe and a sink ([`crate::pipe`]); most stream in memory
//! bounded by a tile or a band of rows (see [`source`] and [`convert_from`]), the others hold
//! the object.

mod formats;
mod sinks;
mod whole;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::pipe::{Projected, Source};
use serde_daphne::Error;

pub use crate::driver::{ConvertOptions, Format, FormatOptions};
pub use formats::options;
pub use sinks::{convert_from, write_output};
#[cfg(feature = "remote")]
pub(crate) use sinks::{convert_into, convert_into_files};
pub use whole::{from_slice, read, to_vec, write};

/// A failed conversion: which file it concerns and the error.
#[derive(Debug)]
pub struct ConvertError {
    path: Option<PathBuf>,
    error: Error,
}

impl ConvertError {
    pub(crate) fn at(path: &Path, error: impl Into<Error>) -> Self {
        ConvertError {
            path: Some(path.to_owned()),
            error: error.into(),
        }
    }

    pub(crate) fn message(path: &Path, message: impl Into<String>) -> Self {
        ConvertError::at(path, Error::invalid(message))
    }

    /// The file the error concerns, if one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The error.
    pub fn error(&self) -> &Error {
        &self.error
    }
}

/// The error, without the file.
impl From<ConvertError> for Error {
    fn from(error: ConvertError) -> Error {
        error.error
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(
                f,
                "{}: {}",
                crate::redact::redact(&path.display().to_string()),
                self.error
            ),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for ConvertError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What a conversion has to say beyond success, such as what DAPHNE will make of the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// One line each, naming the file.
    pub warnings: Vec<String>,
}

/// The format of `path`: `given`, or its extension's.
///
/// # Errors
/// A message asking for the format when the extension names none.
pub(crate) fn format_of(
    path: &Path,
    given: Option<Format>,
    input: bool,
) -> Result<Format, ConvertError> {
    given
        .or_else(|| Format::of_path(path, input))
        .ok_or_else(|| untold(path, input))
}

/// The error for an input (or output) at `path` whose format nothing tells.
pub(crate) fn untold(path: &Path, input: bool) -> ConvertError {
    let (role, flag) = if input {
        ("input", "from")
    } else {
        ("output", "to")
    };
    ConvertError::message(
        path,
        format!("cannot tell the {role} format from the extension: name it (--{flag})"),
    )
}

/// Converts the file at `input` to `output` (`-` is standard output, for formats that are
/// one file) through the pipe: [`source`] of the input's format, then the output format's
/// sink (see [`crate::pipe`]). Memory is bounded by a band of rows where source and sink
/// stream (see each format's source and sink); formats read or written whole hold the
/// object.
///
/// # Errors
/// [`ConvertError`] naming the file and carrying the crate's error: malformed input, values
/// the target cannot hold exactly, I/O errors. No output file is left behind by a failure.
pub fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
) -> Result<Report, ConvertError> {
    let from = format_of(input, options.from, true)?;
    // Both formats are known before anything is read.
    format_of(output, options.to, false)?;
    let mut source = source(input, from, options)?;
    convert_from(&mut *source, input, output, options)
}

/// The file at `path` in `format` as a source of the pipe (that format's [`Driver::open`]),
/// picking [`ConvertOptions::columns`] from whole rows where the format does not read only
/// those itself.
///
/// [`Driver::open`]: crate::driver::Driver::open
///
/// # Errors
/// As [`convert`], for what opening the input finds.
pub fn source(
    path: &Path,
    format: Format,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>, ConvertError> {
    let fail = |e: Error| ConvertError::at(path, e);
    let driver = format.driver();
    let source = driver.open(path, options).map_err(fail)?;
    projected(source, driver, options).map_err(fail)
}

/// A sink writing `format` to `out` (that format's [`Driver::sink`]): a format written as one
/// stream, with the choices `options` hold for it. [`pipe::copy`](crate::pipe::copy) pumps a
/// source into it.
///
/// [`Driver::sink`]: crate::driver::Driver::sink
///
/// ```
/// use dbdf::convert::{self, ConvertOptions, Format};
/// use serde_daphne::{Object, Values};
///
/// let m = Object::dense(1, 2, Values::F64(vec![1.5, 2.0]))?;
/// let (path, mut out) = (std::env::temp_dir().join("doc_sink.npy"), Vec::new());
/// let npy: Format = "npy".parse()?;
/// convert::write(&path, &[m], npy, &ConvertOptions::default())?;
/// let mut source = convert::source(&path, npy, &ConvertOptions::default())?;
/// let csv = convert::sink(&mut out, "csv".parse()?, &ConvertOptions::default())?;
/// dbdf::pipe::copy(&mut *source, csv)?;
/// assert_eq!(out, b"1.5,2.0\n");
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// Options the format cannot honour; a format written as files of its own
/// ([`Written::Set`](crate::driver::Written::Set)).
pub fn sink<'w>(
    out: &'w mut (dyn std::io::Write + Send),
    format: Format,
    options: &ConvertOptions,
) -> Result<Box<dyn crate::pipe::Sink + 'w>, Error> {
    let metadata = crate::pipe::InputMetadata::default();
    format.driver().sink(out, options, &metadata)
}

/// `source` with only [`ConvertOptions::columns`], where its driver does not pick them itself.
pub(crate) fn projected(
    source: Box<dyn Source>,
    driver: &dyn crate::driver::Driver,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>, Error> {
    match &options.columns {
        Some(columns) if !driver.picks_columns() => Ok(Box::new(Projected::new(source, columns)?)),
        _ => Ok(source),
    }
}
