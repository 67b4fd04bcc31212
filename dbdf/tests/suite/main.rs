//! Integration tests of the converters and the `dbdf` tool: one binary, one module per
//! format, against the reference files in `tests/data/` (provenance in its README).

// The format crate's, beside this one.
#[macro_use]
#[path = "../../../tests/common/assert_error.rs"]
mod assert_error;

#[cfg(feature = "parquet")]
mod batch_reader;
mod binsparse;
mod cli;
#[cfg(feature = "parquet")]
mod columns;
mod every_format;
mod futhark;
mod mtx;
mod npy_stream;
mod numpy_files;
#[cfg(feature = "parquet")]
mod peer_files;
mod pipe;
mod segments;
mod sets;
mod systemds;
#[cfg(feature = "parquet")]
mod tables;
mod torture;
mod whole;
#[cfg(feature = "zarr")]
mod zarr;
