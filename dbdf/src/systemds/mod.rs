//! SystemDS binary-block files: Hadoop SequenceFiles of matrix blocks (`MatrixIndexes` keys,
//! `MatrixBlock` values) or frame blocks (`LongWritable` first rows, `FrameBlock` values),
//! a single file or a directory of part files, described by a JSON `.mtd` file beside it.
//!
//! Reading gives a DenseMatrix or CSRMatrix of f64 (CSR when fewer than 40 % of the cells
//! are non-zero, SystemDS's own turn point) in one block, or with SystemDS's blocking kept
//! as DAPHNE blocks ([`ReadOptions::keep_blocks`]). Files are read a record at a time and
//! each block is copied into place as it is read (sparse matrices take a counting pass
//! first), so a matrix is held once. Frames of FP64, FP32, INT64, INT32 and BOOLEAN
//! (as u8) columns keep their names; string columns and missing values are refused by name.
//! Writing produces matrices with every grid block (1000 x 1000 by default) encoded as
//! SystemDS encodes it, and frames of FP64, FP32, INT64 and INT32 columns in blocks of rows,
//! as one file or a directory of part files written in parallel ([`WriteOptions::parts`]),
//! with the `.mtd`.
//!
//! ```no_run
//! use dbdf::systemds;
//! use std::path::Path;
//!
//! let m = systemds::read(Path::new("scores"))?; // and scores.mtd
//! systemds::write(Path::new("scores-copy"), &m)?;
//! # Ok::<(), serde_daphne::Error>(())
//! ```

mod cells;
mod decode;
mod driver;
mod frame;
mod matrix;
mod names;
mod read;
mod records;
mod seqfile;
mod source;
mod write;

pub(crate) use driver::Systemds;
use std::path::Path;

pub(crate) use self::names::metadata_path;
pub use self::read::ReadOptions;
pub(crate) use self::source::SystemdsSource;
pub(crate) use self::write::SystemdsSink;
pub use self::write::{write, write_with, WriteOptions};
use serde_daphne::Object;
use serde_daphne::Result;

/// The SystemDS object at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)).
///
/// # Errors
/// As [`read_with`], for what opening finds.
pub fn source(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Box<dyn crate::pipe::Source>> {
    let input = records::local(path.as_ref())?;
    Ok(Box::new(SystemdsSource::open_at(&input, options)?))
}

/// A sink of the pipe writing SystemDS binary blocks and the `.mtd` at `path`
/// (a boxed [`Sink`](crate::pipe::Sink)).
pub fn sink(path: impl AsRef<Path>, options: &WriteOptions) -> Box<dyn crate::pipe::Sink> {
    Box::new(SystemdsSink::new(path.as_ref(), options))
}

/// Reads a SystemDS binary matrix or frame (a file or a directory of part files, with its
/// `.mtd`) into one-block objects.
///
/// # Errors
/// As [`read_with`].
pub fn read(path: impl AsRef<Path>) -> Result<Object> {
    read_with(path, &ReadOptions::default())
}

/// Reads a SystemDS binary matrix or frame with `options`.
///
/// # Errors
/// [`ErrorKind::ForeignInput`](serde_daphne::ErrorKind::ForeignInput) with the file and byte offset for anything malformed (also
/// compressed SequenceFiles and block kinds this crate does not read);
/// [`ErrorKind::NotConvertible`](serde_daphne::ErrorKind::NotConvertible) for string columns and missing values; [`ErrorKind::AllocationLimit`](serde_daphne::ErrorKind::AllocationLimit)
/// for a matrix larger than the files justify; I/O errors.
pub fn read_with(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Object> {
    read::read_whole(&records::local(path.as_ref())?, options)
}
