//! The DAPHNE binary data format as a serde data format, with ndarray and sprs adapters.
//!
//! DAPHNE stores matrices and frames as a header (data type, `u64` dimensions, value types,
//! frame labels) and a body of rectangular blocks, each empty, dense, sparse (CSR) or
//! ultra-sparse (COO), each with its own value type. This crate reads and writes that format
//! exactly as DAPHNE's `BinaryFormat.md` specifies it, and the dialect DAPHNE's C++ runtime
//! actually writes ([`Dialect::Runtime`], with its `.meta` sidecars), telling the two apart
//! when reading.
//!
//! ```
//! use ndarray::array;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Layer {
//!     #[serde(with = "serde_daphne::dense")]
//!     weights: ndarray::Array2<f64>,
//!     bias: Vec<f64>,
//! }
//!
//! let layer = Layer { weights: array![[0.5, -1.0], [2.0, 0.0]], bias: vec![0.1, 0.2] };
//! let bytes = serde_daphne::to_vec(&layer)?;
//! assert_eq!(serde_daphne::from_slice::<Layer>(&bytes)?, layer);
//! # Ok::<(), serde_daphne::Error>(())
//! ```
//!
//! # Contents
//!
//! - Writing: [`to_vec`], [`to_writer`], [`to_file`] (atomic), and with [`Options`] (block
//!   types, tiles, narrowing, dialect) [`Options::to_vec`], [`Options::to_writer`],
//!   [`Options::to_file`], [`Options::append_to_vec`], [`Options::to_stream`] (with its
//!   sidecars), [`Options::serialized_len`] and [`Options::to_uninit_slice`].
//! - Reading: [`from_slice`], [`from_reader`], [`from_file`], and with [`Options`] (limits,
//!   a forced dialect) [`Options::from_slice`], [`Options::from_reader`],
//!   [`Options::from_file`]; a stream of objects through [`Deserializer`] and
//!   [`StreamDeserializer`].
//! - Matrices and frames: the adapters [`dense`], [`csr`] and [`frame`] for
//!   `#[serde(with = ...)]`, the newtypes [`Dense`], [`Csr`], [`Frame`] and the borrowed
//!   [`DenseView`], [`CsrView`]; frames as typed columns, [`Columns`].
//! - Any object as stored: [`Object`] (its [`Header`], [`Block`]s and values), the codes
//!   [`DataType`], [`ValueType`], [`BlockType`], and values of any type, [`Value`], [`Values`].
//! - Files bigger than memory: [`DbdfFile`] (headers first, then windows, blocks, objects)
//!   and [`DbdfWriter`] (tile by tile).
//! - Errors: [`Error`], with its [`ErrorKind`], byte offset and field path, and its
//!   [`ErrorDetails`] field by field.
//! - Converters to and from other formats: [`lowlevel`] (value-type dispatch, little-endian
//!   coding, foreign-format errors, band and tile writes, CSR assembly, sidecars, progress).
//!
//! The neighbouring formats (MatrixMarket, CSV, NumPy, Futhark, Binsparse, SystemDS) and the
//! `dbdf` command-line tool are the `dbdf` crate beside this one. `ARCHITECTURE.md` shows the
//! layers and `docs/wire-format.md` describes the bytes.
// Unsafe code is denied except where a measured fast path allows it with a `SAFETY:` comment.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod adapter_protocol;
mod adapters;
mod codes;
mod de;
mod error;
mod io;
pub mod lowlevel;
mod model;
mod names;
mod options;
mod pages;
mod platform;
#[cfg(unix)]
mod positional;
mod ser;
#[cfg(feature = "proptest")]
pub mod strategies;
mod threads;
mod wire;

pub use adapters::{
    csr, dense, frame, Columns, ColumnsView, Csr, CsrView, Dense, DenseView, Frame,
};
pub use de::{from_reader, from_slice, Deserializer, StreamDeserializer};
pub use error::{Error, ErrorDetails, ErrorKind, Result};
pub use io::{
    from_file, to_file, BlockIndex, BlockInfo, DbdfFile, DbdfWriter, DenseLayout, FileReader,
    ObjectInfo,
};
pub use model::{Block, CsrIndex, CsrParts, Object};
pub use options::{BlockPolicy, Dialect, Options};
pub use ser::{to_vec, to_writer, Serializer};
pub use wire::read_at::{Positional, ReadAt};
pub use wire::{
    BlockData, BlockPlace, BlockType, Column, DataType, Element, Header, Value, ValueType, Values,
    ValuesRef,
};

/// The README's and the guides' Rust examples, compiled and run as doctests (`cargo test
/// --doc`), so that none of them can fall behind the crate.
#[cfg(doctest)]
mod documents {
    #[doc = include_str!("../README.md")]
    struct Readme;
    #[doc = include_str!("../docs/rust.md")]
    struct UsingTheCrate;
    #[doc = include_str!("../docs/daphne.md")]
    struct WorkingWithDaphne;
    #[doc = include_str!("../docs/out-of-core.md")]
    struct OutOfCore;
}
