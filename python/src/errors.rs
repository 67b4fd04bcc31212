//! The crate's errors as Python exceptions: `DbdfError` (a `ValueError`) with the message, the
//! byte offset and the kind; I/O failures as the `OSError` subclass Python would raise.

use dbdf::convert::ConvertError;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use serde_daphne::Error;

pyo3::create_exception!(
    dbdf,
    DbdfError,
    PyValueError,
    "A file or object the DAPHNE format cannot hold or does not describe.\n\n\
     Attributes: `offset` (the byte where the problem was found, or None), `kind` (the \
     error's name in the Rust crate, such as 'UnexpectedEof'), `path` (the field path, for \
     values that cannot be written, or None), `file` (for conversions, the file concerned)."
);

/// A failed conversion as a Python exception: the crate's error, with the file it concerns
/// in the message and as `file`.
pub fn convert_to_py(error: ConvertError) -> PyErr {
    let file = error.path().map(|p| shown(&p.display().to_string()));
    let message = shown(&error.to_string());
    let exception =
        io_in_file(error.error(), file.as_deref()).unwrap_or_else(|| to_py(error.into()));
    Python::attach(|py| {
        let value = exception.value(py);
        if value.is_instance_of::<DbdfError>() {
            let _ = value.setattr("file", file);
            let _ = value.setattr("args", (message,));
        }
    });
    exception
}

/// A message or a file name as an exception shows it: without the secrets of URLs
/// (`dbdf::remote::redact`).
fn shown(text: &str) -> String {
    dbdf::remote::redact(text).into_owned()
}

/// An I/O error about `file` as the `OSError` Python raises, with `filename` set.
pub fn io_in_file(error: &Error, file: Option<&str>) -> Option<PyErr> {
    let (Some(io), Some(file)) = (error.io_error(), file) else {
        return None;
    };
    let args = (
        io.raw_os_error().unwrap_or(0),
        shown(&io.to_string()),
        shown(file),
    );
    Some(match io.kind() {
        std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
        std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
        _ => PyOSError::new_err(args),
    })
}

/// `error` about the file at `path` as a Python exception.
pub fn in_file(error: Error, path: &std::path::Path) -> PyErr {
    io_in_file(&error, Some(&path.display().to_string())).unwrap_or_else(|| to_py(error))
}

/// `error` as a Python exception.
pub fn to_py(error: Error) -> PyErr {
    if let Some(io) = error.io_error() {
        let message = shown(&io.to_string());
        return match io.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
            _ => PyOSError::new_err(message),
        };
    }
    Python::attach(|py| {
        let exception = DbdfError::new_err(shown(&error.to_string()));
        let value = exception.value(py);
        // Setting an attribute on a fresh exception cannot fail short of memory; the message
        // alone is still a good exception then.
        let _ = value.setattr("offset", error.offset());
        // The kind's name, such as `UnexpectedEof`.
        let _ = value.setattr("kind", format!("{:?}", error.kind()));
        let _ = value.setattr("path", error.path());
        let _ = value.setattr("file", None::<String>);
        exception
    })
}

/// A name the crate parses (a dialect, block policy, value type, format), or a `ValueError`
/// with the crate's message, which lists the names it knows.
pub fn parse_name<T: std::str::FromStr<Err = Error>>(text: &str) -> PyResult<T> {
    text.parse()
        .map_err(|e: Error| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// [`parse_name`] of a keyword argument's value: the message starts with the keyword.
pub fn parse_argument<T: std::str::FromStr<Err = Error>>(keyword: &str, text: &str) -> PyResult<T> {
    text.parse()
        .map_err(|e: Error| pyo3::exceptions::PyValueError::new_err(format!("{keyword}: {e}")))
}

/// Wraps a crate result for Python.
pub trait IntoPy<T> {
    /// The value, or the error as a Python exception.
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
