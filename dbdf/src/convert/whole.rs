//! Whole objects in any format, read and written through the format's own source and sink
//! (the pipe): the one whole-object codec for every format a [`Format`] names.

use std::path::Path;

use serde_daphne::{Error, Object};

use super::{convert_from, source, ConvertError, ConvertOptions, Format, Report};
use crate::driver::Written;
use crate::pipe::{self, Held, InputMetadata};
use crate::storage::Input;

/// What the messages of a write from objects in memory call its input.
const IN_MEMORY: &str = "the objects in memory";

/// Every object of the file at `path` in `format`, read whole through the format's source:
/// memory holds the objects.
///
/// ```
/// use dbdf::convert::{self, ConvertOptions, Format};
/// use serde_daphne::{Object, Values};
///
/// let path = std::env::temp_dir().join("doc_whole_read.npy");
/// let npy: Format = "npy".parse()?;
/// let m = Object::dense(2, 2, Values::F64(vec![1.0, 2.0, 3.0, 4.0]))?;
/// convert::write(&path, &[m.clone()], npy, &ConvertOptions::default())?;
/// assert_eq!(convert::read(&path, npy, &ConvertOptions::default())?, [m]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`super::convert`], for what reading the input finds.
pub fn read(
    path: &Path,
    format: Format,
    options: &ConvertOptions,
) -> Result<Vec<Object>, ConvertError> {
    let mut source = source(path, format, options)?;
    pipe::read_objects(&mut *source).map_err(|e| ConvertError::at(path, e))
}

/// Every object of `bytes`, a file in `format`, read whole through the format's source as
/// it reads a file in place ([`crate::driver::Driver::open_at`]); no sidecar is read.
///
/// # Errors
/// As [`read`]; a format that reads local files only.
pub fn from_slice(
    bytes: &[u8],
    format: Format,
    options: &ConvertOptions,
) -> Result<Vec<Object>, Error> {
    let input = Input::in_memory(bytes.to_vec(), "the bytes given");
    let driver = format.driver();
    let source = driver.open_at(input, options)?;
    let mut source = super::projected(source, driver, options)?;
    pipe::read_objects(&mut *source)
}

/// Writes `objects` to `path` in `format` through the format's sink, as a conversion writes
/// its output: atomically, with its sidecars. Memory holds a copy of the objects.
///
/// # Errors
/// As [`super::convert`], for what the format cannot hold.
pub fn write(
    path: &Path,
    objects: &[Object],
    format: Format,
    options: &ConvertOptions,
) -> Result<Report, ConvertError> {
    let held = Held::new(objects.to_vec(), 0, InputMetadata::default());
    let mut held = held.map_err(|e| ConvertError::at(path, e))?;
    let options = ConvertOptions {
        to: Some(format),
        ..options.clone()
    };
    convert_from(&mut held, Path::new(IN_MEMORY), path, &options)
}

/// The bytes of `objects` as a file in `format`, a format written as one stream, without
/// its sidecars. Memory holds a copy of the objects.
///
/// # Errors
/// What the format cannot hold; a format written as files ([`Written::Set`]).
pub fn to_vec(
    objects: &[Object],
    format: Format,
    options: &ConvertOptions,
) -> Result<Vec<u8>, Error> {
    if let Written::Set(what) = format.driver().written(Path::new("")) {
        return Err(Error::invalid(format!(
            "{what}: it is not one stream of bytes"
        )));
    }
    let mut out = Vec::new();
    let sink = format
        .driver()
        .sink(&mut out, options, &InputMetadata::default())?;
    pipe::write_objects(objects, sink)?;
    Ok(out)
}
