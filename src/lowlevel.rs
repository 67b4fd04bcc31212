//! The low-level layer: what a converter between DAPHNE files and another format needs
//! beyond serde and whole [`Object`](crate::Object)s. The `dbdf` crate's converters are
//! built on it and the rest of the public API alone, as `examples/toy_converter` is.
//!
//! - Values of a type known at run time: the macros [`with_values!`](crate::with_values)
//!   and [`with_value_type!`](crate::with_value_type) (one generic body for all ten value
//!   types), and [`Element`](crate::Element)'s little-endian coding
//!   ([`read_le`](crate::Element::read_le), [`decode_le`](crate::Element::decode_le),
//!   [`write_le`](crate::Element::write_le), [`count_nonzero`](crate::Element::count_nonzero)),
//!   and new vectors: [`zeroed_vec`].
//! - Errors of a foreign format: [`Error::foreign`](crate::Error::foreign),
//!   [`Error::not_convertible`](crate::Error::not_convertible),
//!   [`Error::invalid`](crate::Error::invalid), placed with
//!   [`Error::relocated`](crate::Error::relocated) and
//!   [`Error::with_context`](crate::Error::with_context).
//! - Headers: [`Header::matrix`](crate::Header::matrix), and the `Header` variants.
//! - Writing a `.dbdf` band by band or tile by tile: [`MatrixRef`], [`RowBands`],
//!   [`tile_dims`], [`DbdfWriter::write_tile`](crate::DbdfWriter::write_tile) and
//!   [`DbdfWriter::write_untiled`](crate::DbdfWriter::write_untiled); reading one:
//!   [`DbdfFile::read_window_object`](crate::DbdfFile::read_window_object),
//!   [`DbdfFile::blocks`](crate::DbdfFile::blocks) and
//!   [`DbdfFile::try_clone`](crate::DbdfFile::try_clone).
//! - CSR arrays from entries in any order: [`RowCounts`], then [`CsrFill`], and
//!   [`sort_rows`].
//! - DAPHNE's `.meta` sidecars: [`Meta`], [`read_sidecar`] (or [`parse_meta`], for a
//!   sidecar fetched from elsewhere), [`meta_json`] (one's text),
//!   [`sidecar_path`], and the local one of a folder of segments, [`segments_meta`].
//! - Progress of long reads and writes: [`Progress`].
//! - Formats that are folders (segments, part files, Zarr groups), written whole or not at
//!   all: [`replace_directory`]; a file (or folder) and its sidecars replaced together, the
//!   old set kept whole on any failure: [`FileSet`]; one file written whole or not at all,
//!   [`write_buffered`], by way of a [`temporary_path`] or a [`scratch_file`] beside it
//!   (what a killed writer left there goes with [`remove_stale_temporaries`]); names beside a
//!   file, [`appended`]; a whole file read on every core, [`read_file`]; a file written
//!   with its disk reserved ahead, [`Preallocating`].
//! - Limits: the allocation check every reader applies before allocating, [`check_alloc`].
//! - Names of values in a table, as `FromStr` and `Display` use them: [`parse_name`],
//!   [`first_name`].
//! - Threads and pages: a producer thread feeding its consumer, [`pipeline`] and
//!   [`Producer`]; large new buffers faulted in by every core, [`fault_in_on_every_core`]
//!   and [`fault_in_spare`]; the huge-page switch, [`set_huge_pages`]; whether the portable
//!   paths are asked for (`SERDE_DAPHNE_PORTABLE`), [`portable`].
//!
//! ```
//! use serde_daphne::lowlevel::{MatrixRef, RowCounts, CsrFill};
//! use serde_daphne::{DataType, DbdfWriter, Header, ValueType};
//!
//! // A toy format's entries, (row, col, value), in any order.
//! let entries = [(1usize, 0usize, 7i32), (0, 1, 5)];
//! let mut counts = RowCounts::new(2)?;
//! entries.iter().for_each(|&(r, _, _)| counts.add(r));
//! let mut fill = CsrFill::new(counts.into_offsets())?;
//! entries.iter().for_each(|&(r, c, v)| assert!(fill.push(r, c, v)));
//! let (offsets, cols, values) = fill.finish().expect("as counted");
//!
//! let path = std::env::temp_dir().join("serde_daphne_doc_lowlevel.dbdf");
//! let mut writer = DbdfWriter::create(&path)?;
//! writer.begin(Header::matrix(DataType::CsrMatrix, 2, 2, ValueType::I32))?;
//! writer.write_tile(0, 0, &MatrixRef::csr(2, 2, &offsets, &cols, &values)?)?;
//! writer.finish()?;
//! let m = serde_daphne::from_file::<_, serde_daphne::Csr<i32>>(&path)?.0;
//! assert_eq!(m.get(1, 0), Some(&7));
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), serde_daphne::Error>(())
//! ```
//!
//! # Stability
//! These items follow semantic versioning as the rest of the public face does.

pub use crate::io::meta::{meta_json, parse_meta, read_sidecar, segments_meta, sidecar_path};
pub use crate::io::progress::Progress;
pub use crate::io::{
    appended, read_file, remove_stale_temporaries, replace_directory, scratch_file, temporary_path,
    write_buffered, FileSet, Preallocating,
};
pub use crate::model::csr::{sort_rows, CsrFill, RowCounts};
pub use crate::model::encode::{tile_dims, MatrixRef, RowBands};
pub use crate::model::Meta;
pub use crate::names::{first_name, parse_name};
pub use crate::options::check_alloc;
pub use crate::pages::{fault_in_on_every_core, fault_in_spare, set_huge_pages};
pub use crate::platform::portable;
pub use crate::threads::{pipeline, workers, Producer};
pub use crate::wire::le::zeroed_vec;
