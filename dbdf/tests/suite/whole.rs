//! Files in a format named by the tests through `dbdf::convert` (every format's one codec,
//! its pipe): whole objects read and written, and sinks.

use std::path::Path;

use dbdf::convert::{self, ConvertOptions, FormatOptions};
use dbdf::pipe::Sink;
use serde_daphne::{Object, Result};

/// Conversion options holding `formats`' choices, the rest default.
fn options_of(formats: FormatOptions) -> ConvertOptions {
    ConvertOptions {
        formats,
        ..ConvertOptions::default()
    }
}

/// The first object of the file at `path` in `format`.
pub(crate) fn read(path: impl AsRef<Path>, format: &str) -> Result<Object> {
    read_with(path, format, FormatOptions::default())
}

/// The first object of the file at `path` in `format`, with the choices `formats` hold for it.
pub(crate) fn read_with(
    path: impl AsRef<Path>,
    format: &str,
    formats: FormatOptions,
) -> Result<Object> {
    let options = options_of(formats);
    first(convert::read(path.as_ref(), format.parse()?, &options)?)
}

fn first(objects: Vec<Object>) -> Result<Object> {
    let none = || serde_daphne::Error::invalid("the input holds no object");
    objects.into_iter().next().ok_or_else(none)
}

/// `object` written to `path` in `format`, as a conversion writes it.
pub(crate) fn write(path: impl AsRef<Path>, object: &Object, format: &str) -> Result<()> {
    write_with(path, object, format, FormatOptions::default())
}

/// The bytes of `object` as a file in `format`.
pub(crate) fn to_vec(object: &Object, format: &str) -> Result<Vec<u8>> {
    to_vec_with(object, format, FormatOptions::default())
}

/// The first object of `bytes`, a file in `format`.
pub(crate) fn from_slice(bytes: &[u8], format: &str) -> Result<Object> {
    let options = ConvertOptions::default();
    first(convert::from_slice(bytes, format.parse()?, &options)?)
}

/// Every object of a numpy archive at `path`, with the name its source gives it.
pub(crate) fn read_npz(path: impl AsRef<Path>) -> Result<Vec<(String, Object)>> {
    let (npz, options) = ("npz".parse()?, ConvertOptions::default());
    let names = convert::source(path.as_ref(), npz, &options)?
        .metadata()
        .names;
    let objects = convert::read(path.as_ref(), npz, &options)?;
    Ok(names.into_iter().zip(objects).collect())
}

/// Named objects written to a numpy archive at `path` with `options`, the names theirs.
pub(crate) fn write_npz(
    path: impl AsRef<Path>,
    named: &[(String, Object)],
    options: &dbdf::npz::WriteOptions,
) -> Result<()> {
    let (names, objects): (Vec<String>, Vec<Object>) = named.iter().cloned().unzip();
    let options = dbdf::npz::WriteOptions {
        names,
        ..options.clone()
    };
    let options = options_of(FormatOptions::default().with(options));
    convert::write(path.as_ref(), &objects, "npz".parse()?, &options)?;
    Ok(())
}

/// A sink writing `format` to `out` with the format's default choices.
pub(crate) fn sink<'w>(
    out: &'w mut (dyn std::io::Write + Send),
    format: &str,
) -> Box<dyn Sink + 'w> {
    sink_with(out, format, FormatOptions::default())
}

/// A sink writing `format` to `out` with the choices `formats` hold for it.
pub(crate) fn sink_with<'w>(
    out: &'w mut (dyn std::io::Write + Send),
    format: &str,
    formats: FormatOptions,
) -> Box<dyn Sink + 'w> {
    let options = options_of(formats);
    convert::sink(out, format.parse().unwrap(), &options).unwrap()
}

/// `object` written to `path` in `format` with the choices `formats` hold for it.
pub(crate) fn write_with(
    path: impl AsRef<Path>,
    object: &Object,
    format: &str,
    formats: FormatOptions,
) -> Result<()> {
    let options = options_of(formats);
    let objects = std::slice::from_ref(object);
    convert::write(path.as_ref(), objects, format.parse()?, &options)?;
    Ok(())
}

/// The bytes of `object` as a file in `format`, with the choices `formats` hold for it.
pub(crate) fn to_vec_with(
    object: &Object,
    format: &str,
    formats: FormatOptions,
) -> Result<Vec<u8>> {
    let options = options_of(formats);
    convert::to_vec(std::slice::from_ref(object), format.parse()?, &options)
}

/// A Binsparse file's matrix, with the format it was stored in and its user attributes (what
/// the source records of them), read through its source with `options`.
pub(crate) fn read_binsparse_with(
    path: impl AsRef<Path>,
    options: &dbdf::binsparse::ReadOptions,
) -> Result<dbdf::binsparse::Binsparse> {
    let options = options_of(FormatOptions::default().with(options.clone()));
    let mut source = convert::source(path.as_ref(), "binsparse".parse()?, &options)?;
    let metadata = source.metadata();
    let object = first(crate::pipe::try_collected(&mut *source)?)?;
    let layout = metadata
        .layout
        .ok_or_else(|| serde_daphne::Error::invalid("the Binsparse source records no format"))?;
    Ok(dbdf::binsparse::Binsparse {
        object,
        format: layout.parse()?,
        attributes: metadata.attributes,
    })
}

/// [`read_binsparse_with`] with the default options.
pub(crate) fn read_binsparse(path: impl AsRef<Path>) -> Result<dbdf::binsparse::Binsparse> {
    read_binsparse_with(path, &Default::default())
}

/// [`read_binsparse_with`] of the bytes of a Binsparse `.npz` archive (kept in a file of
/// their own while they are read).
pub(crate) fn binsparse_from_slice_with(
    bytes: &[u8],
    options: &dbdf::binsparse::ReadOptions,
) -> Result<dbdf::binsparse::Binsparse> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("dbdf_binsparse_bytes_{}_{k}.npz", std::process::id());
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, bytes)?;
    let read = read_binsparse_with(&path, options);
    std::fs::remove_file(&path)?;
    read
}

/// [`binsparse_from_slice_with`] with the default options.
pub(crate) fn binsparse_from_slice(bytes: &[u8]) -> Result<dbdf::binsparse::Binsparse> {
    binsparse_from_slice_with(bytes, &Default::default())
}
