//! Moving DAPHNE objects between `.dbdf` files and the neighbouring formats: MatrixMarket,
//! CSV, Futhark's binary values, NumPy's `.npy` and `.npz` files, scipy's sparse `.npz`,
//! Binsparse (`.npz`, HDF5, Zarr), SystemDS binary blocks, Parquet and Arrow IPC, DAPHNE's
//! segmented layout; and
//! [`convert`], file to file between any two of them.
//!
//! The format itself is the [`serde_daphne`] crate; this crate builds on its public API (its
//! low-level layer, [`serde_daphne::lowlevel`], included) and on a few internals it shares
//! with its converters through a hidden, version-stamped module (atomic file replacement,
//! worker threads, page advice; listed in `ARCHITECTURE.md`), which is why it pins the
//! format crate's exact version.
//!
//! ```no_run
//! use dbdf::convert::{self, ConvertOptions};
//! use std::path::Path;
//!
//! convert::convert(Path::new("m.npy"), Path::new("m.dbdf"), &ConvertOptions::default())?;
//! # Ok::<(), dbdf::convert::ConvertError>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

/// The crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;

#[cfg(feature = "parquet")]
pub mod arrow;
pub mod binsparse;
pub mod convert;
pub mod csv;
pub mod driver;
pub mod futhark;
mod input;
pub mod mtx;
mod native;
pub mod npy;
pub mod npz;
pub mod pipe;
pub mod plan;
mod redact;
#[cfg(feature = "remote")]
pub mod remote;
pub mod scipy;
pub mod segments;
mod storage;
pub mod systemds;
mod tables;
mod text;
mod zip;
