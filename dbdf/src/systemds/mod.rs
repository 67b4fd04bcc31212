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
//! Read and written through [`crate::convert`], as every format:
//!
//! ```no_run
//! use dbdf::convert::{self, ConvertOptions, Format};
//! use std::path::Path;
//!
//! let systemds: Format = "systemds".parse()?;
//! let options = ConvertOptions::default();
//! let m = convert::read(Path::new("scores"), systemds, &options)?; // and scores.mtd
//! convert::write(Path::new("scores-copy"), &m, systemds, &options)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
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
pub use self::write::WriteOptions;
use serde_daphne::Result;

/// The SystemDS object at `path` as a source of the pipe (a boxed [`Source`](crate::pipe::Source)).
///
/// # Errors
/// As [`crate::convert::read`], for what opening finds.
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
