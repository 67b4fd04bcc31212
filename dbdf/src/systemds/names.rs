//! What SystemDS names and sizes: the record classes of its binary-block files, its default
//! block size, and where an object's `.mtd` lives.

use std::path::{Path, PathBuf};

use serde_daphne::lowlevel::appended;

pub(crate) const MATRIX_KEY: &str = "org.apache.sysds.runtime.matrix.data.MatrixIndexes";
pub(crate) const MATRIX_VALUE: &str = "org.apache.sysds.runtime.matrix.data.MatrixBlock";
pub(crate) const FRAME_KEY: &str = "org.apache.hadoop.io.LongWritable";
pub(crate) const FRAME_VALUE: &str = "org.apache.sysds.runtime.frame.data.FrameBlock";

/// SystemDS's default block size (rows and columns of a matrix block, rows of a frame block).
pub(crate) const BLOCK_SIZE: u32 = 1000;

/// The metadata file SystemDS keeps beside `path`: `path` with `.mtd` appended.
pub(crate) fn metadata_path(path: impl AsRef<Path>) -> PathBuf {
    appended(path.as_ref(), ".mtd")
}
