//! The public shape every interop module shares: `read`/`read_with` and `write`/`write_with`
//! on paths (the container told by the extension: `.h5`/`.hdf5` HDF5, `.zarr` (or a
//! directory holding a Zarr group) Zarr, anything else NPZ),
//! and `from_slice`/`to_writer`/`to_vec` on NPZ bytes in memory.

use std::io::Write;
use std::path::Path;

#[cfg(any(not(feature = "hdf5"), not(feature = "zarr")))]
use super::BINSPARSE;
use super::{npz, Binsparse, WriteOptions};
use crate::pipe::{Collect, InputMetadata, Sink};
use crate::storage::OutputFiles;
use serde_daphne::Object;
use serde_daphne::Result;

/// How Binsparse files are read. Plain data, as every format's options: set the fields that
/// differ from [`ReadOptions::default`] (the matrix may take [`serde_daphne::Options::max_alloc`]'s
/// default of memory beyond the file's size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// The most memory the matrix may take beyond the file's size (a few bytes of descriptor
    /// can claim a huge matrix); exceeding it is [`serde_daphne::ErrorKind::AllocationLimit`].
    pub max_alloc: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_alloc: serde_daphne::Options::new().max_alloc,
        }
    }
}

/// Whether `path` names an HDF5 file (`.h5`, `.hdf5`, in any case), as opposed to an
/// `.npz` archive.
pub(crate) fn is_hdf5(path: impl AsRef<Path>) -> bool {
    let extension = path.as_ref().extension().and_then(|e| e.to_str());
    matches!(
        extension.map(str::to_lowercase).as_deref(),
        Some("h5" | "hdf5")
    )
}

/// Whether `path` names a Zarr group: a `.zarr` extension (`.bsp.zarr` too), or a directory
/// holding `zarr.json` or `.zgroup`.
pub(crate) fn is_zarr(path: impl AsRef<Path>) -> bool {
    let path = path.as_ref();
    let extension = path.extension().and_then(|e| e.to_str());
    extension.is_some_and(|e| e.eq_ignore_ascii_case("zarr"))
        || path.join("zarr.json").is_file()
        || path.join(".zgroup").is_file()
}

#[cfg(not(feature = "zarr"))]
fn no_zarr(path: &Path) -> serde_daphne::Error {
    BINSPARSE.in_file(
        path,
        "a Zarr group, and this build has no Zarr (cargo feature zarr); use .npz",
    )
}

#[cfg(not(feature = "hdf5"))]
fn no_hdf5(path: &Path) -> serde_daphne::Error {
    BINSPARSE.in_file(
        path,
        "an HDF5 file, and this build has no HDF5 (cargo feature hdf5); use .npz",
    )
}

/// Reads a Binsparse file: HDF5 for `.h5`/`.hdf5` (feature `hdf5`), a Zarr group for
/// `.zarr` paths and directories holding a Zarr group (feature `zarr`), an NPZ archive
/// otherwise.
///
/// # Errors
/// I/O errors; [`serde_daphne::ErrorKind::ForeignInput`] with the byte offset (NPZ) or the dataset's
/// name (HDF5) for a malformed archive, array or descriptor (unsorted or out-of-range
/// indices, wrong lengths); [`serde_daphne::ErrorKind::NotConvertible`] for what DAPHNE cannot hold
/// (complex values, a non-zero fill value, Hermitian structures, more than two dimensions);
/// [`serde_daphne::ErrorKind::AllocationLimit`] beyond [`ReadOptions::max_alloc`].
pub(crate) fn read_with(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Binsparse> {
    let path = path.as_ref();
    if is_zarr(path) {
        #[cfg(feature = "zarr")]
        return super::zarr::read(path, options);
        #[cfg(not(feature = "zarr"))]
        return Err(no_zarr(path));
    }
    if is_hdf5(path) {
        #[cfg(feature = "hdf5")]
        return super::hdf5::read(path, options.max_alloc);
        #[cfg(not(feature = "hdf5"))]
        return Err(no_hdf5(path));
    }
    from_slice_with(&serde_daphne::lowlevel::read_file(path)?, options)
}

/// Reads a Binsparse matrix from the bytes of an `.npz` archive.
///
/// # Errors
/// As [`read_with`].
pub(crate) fn from_slice_with(bytes: &[u8], options: &ReadOptions) -> Result<Binsparse> {
    npz::read(bytes, options.max_alloc)
}

/// Writes `object` as a Binsparse file, atomically: HDF5 for `.h5`/`.hdf5` (feature
/// `hdf5`), a Zarr group for `.zarr` (feature `zarr`), an NPZ archive otherwise.
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for a frame, a vector format for a matrix that is not
/// `n` x 1, or an index that does not fit the index type; I/O (and HDF5 library) errors.
pub(crate) fn write_with(
    path: impl AsRef<Path>,
    object: &Object,
    options: &WriteOptions,
) -> Result<()> {
    let path = path.as_ref();
    if is_zarr(path) {
        #[cfg(feature = "zarr")]
        return super::zarr::write(path, object, options);
        #[cfg(not(feature = "zarr"))]
        return Err(no_zarr(path));
    }
    if is_hdf5(path) {
        #[cfg(feature = "hdf5")]
        return super::hdf5::write(path, object, options);
        #[cfg(not(feature = "hdf5"))]
        return Err(no_hdf5(path));
    }
    serde_daphne::lowlevel::write_buffered(path, |out| to_writer(out, object, options))
}

/// A sink of the pipe writing a Binsparse `.npz` archive to `out` (a boxed [`Sink`](crate::pipe::Sink)).
pub(crate) fn sink<'w>(
    out: &'w mut dyn Write,
    options: &WriteOptions,
) -> Box<dyn crate::pipe::Sink + 'w> {
    Box::new(super::BinsparseSink::new(out, options))
}

/// A sink of the pipe writing a Binsparse file at `path`, by its extension: a Zarr group
/// or an HDF5 file streamed chunk by chunk (features `zarr`, `hdf5`), else the object held
/// whole for [`write_with`] (which refuses it).
pub(crate) fn path_sink<'p>(path: &'p Path, options: &WriteOptions) -> Box<dyn Sink + 'p> {
    #[cfg(feature = "zarr")]
    if is_zarr(path) {
        return super::zarr::sink(path, options);
    }
    #[cfg(feature = "hdf5")]
    if is_hdf5(path) {
        return Box::new(super::hdf5::Hdf5Sink::at(path, options));
    }
    let options = options.clone();
    let write = move |objects: Vec<Object>, _: InputMetadata| {
        let object = objects
            .first()
            .ok_or_else(|| serde_daphne::Error::invalid("no object to write"))?;
        write_with(path, object, &options)?;
        Ok(Vec::new())
    };
    Box::new(Collect::new(Some("Binsparse"), write))
}

/// A sink of the pipe writing a Binsparse Zarr group named `output` into `files`, or an
/// HDF5 file into their one file, its head last; `None` for an `.npz` archive (a stream) and
/// for HDF5 where `files` cannot hold a head back.
///
/// # Errors
/// I/O or request errors.
pub(crate) fn files_sink<'f>(
    files: &'f dyn OutputFiles,
    output: &Path,
    options: &WriteOptions,
) -> Result<Option<Box<dyn Sink + 'f>>> {
    #[cfg(feature = "zarr")]
    if is_zarr(output) {
        return Ok(Some(Box::new(super::zarr::ZarrSink::into_files(
            files, options,
        ))));
    }
    #[cfg(feature = "hdf5")]
    if is_hdf5(output) {
        let out = files.whole_head_last()?;
        return Ok(out.map(|out| -> Box<dyn Sink + 'f> {
            Box::new(super::hdf5::Hdf5Sink::into(out, output, options))
        }));
    }
    let _ = (files, output, options);
    Ok(None)
}

/// Writes `object` as a Binsparse `.npz` archive to `writer`.
///
/// # Errors
/// As [`write_with`].
pub(crate) fn to_writer<W: Write>(
    writer: W,
    object: &Object,
    options: &WriteOptions,
) -> Result<()> {
    npz::write(writer, object, options)
}
