//! The wire format: codes, values, the object header and the four block layouts, byte by byte.
//!
//! Everything here follows `doc/BinaryFormat.md` of DAPHNE (version 1, little-endian). This
//! layer knows nothing of objects as a whole (tiling, coverage) or of serde; see
//! [`crate::model`] for those. The full wire description, with the decisions taken where the
//! spec is silent, is in `docs/wire-format.md`.

pub mod block;
pub mod element;
pub(crate) mod extents;
pub mod header;
pub(crate) mod le;
pub(crate) mod probe;
pub mod read_at;
pub mod runtime;
pub mod seek;
pub(crate) mod sink;
pub mod source;
pub(crate) mod sparse_row;
pub mod values;

pub use crate::codes::{BlockType, DataType, Value, ValueType};
pub use block::{BlockData, BlockPlace};
pub use element::{Element, Values, ValuesRef};
pub use header::{Column, Header};
pub use seek::SeekSource;
pub use source::{IoSource, SliceSource, Source};
