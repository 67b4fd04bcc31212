//! What a conversion does besides moving values: the formats, type changes, and each format's
//! own options, nested.

use std::fmt;

use super::Format;
use crate::{binsparse, csv, futhark, npz, scipy, systemds};
use serde_daphne::lowlevel::Progress;
use serde_daphne::Options;
use serde_daphne::{DataType, ValueType};

/// What a conversion does besides moving values: the input and output formats (by default
/// from the extensions), value and data type changes, progress, and each format's own
/// options, as that format's module defines them. Plain data, as every format's options:
/// set the fields that differ from the defaults ([`ConvertOptions::default`]: formats from
/// the extensions, values and data types as they are, every format's default options,
/// outputs synced to disk).
///
/// ```
/// use dbdf::convert::ConvertOptions;
/// use serde_daphne::{Dialect, Options};
///
/// // For DAPHNE: `.dbdf` in its runtime dialect, CSV without a header record.
/// let options = ConvertOptions {
///     dbdf: Options { dialect: Some(Dialect::Runtime), ..Options::new() },
///     csv: dbdf::csv::WriteOptions { daphne: true },
///     ..Default::default()
/// };
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct ConvertOptions {
    /// The input format, instead of the input's extension.
    pub from: Option<Format>,
    /// The output format, instead of the output's extension.
    pub to: Option<Format>,
    /// The DAPHNE data type of output matrices (default: CSR for coordinate `.mtx` input,
    /// the input's otherwise). For `.dbdf` in DAPHNE's runtime dialect, a CSR matrix
    /// DaphneDSL would type as dense is written dense unless this asks for CSR.
    pub data_type: Option<DataType>,
    /// Converts every value to `value_type`, exactly or not at all.
    pub value_type: Option<ValueType>,
    /// Reads only these columns of a table input (a frame), in this order: Parquet and Arrow
    /// IPC inputs read only their bytes; a column DAPHNE cannot hold is no obstacle when it is
    /// not picked. An input holding a matrix is an error.
    pub columns: Option<crate::pipe::Projection>,
    /// Whether single-file outputs are synced to disk before they are renamed into place
    /// (default: yes; it overrides [`Options::sync`] of [`ConvertOptions::dbdf`]). Without
    /// the sync an output is still atomic for readers and survives the process being killed
    /// at any moment, but not always a power loss; directories (SystemDS, Zarr) are always
    /// synced.
    pub sync: bool,
    /// Hears how much of a large input has been read.
    pub progress: Option<Progress>,
    /// `.dbdf` output: blocks, tiles, narrowing, dialect (default [`Options::new`]).
    pub dbdf: Options,
    /// Whether a `.dbdf` output without a tile size of its own takes the input's tiles
    /// ([`InputMetadata::tile`](crate::pipe::InputMetadata::tile): SystemDS's blocks, a
    /// tiled `.dbdf` file's blocks). Default: no, the output is one block per object.
    pub keep_tiles: bool,
    /// CSV output.
    pub csv: csv::WriteOptions,
    /// MatrixMarket output: the layout, which decides the data type written (`array` dense,
    /// `coordinate` CSR; by default each matrix's own).
    pub mtx: crate::mtx::WriteOptions,
    /// Futhark output: how objects map onto Futhark values.
    pub futhark: futhark::WriteOptions,
    /// Binsparse output. Without a format of its own it takes the input's when that is
    /// Binsparse (whose user attributes are kept too), else CSR for CSR matrices and DMAT
    /// for dense ones.
    pub binsparse: binsparse::WriteOptions,
    /// SystemDS input.
    pub systemds_input: systemds::ReadOptions,
    /// SystemDS output.
    pub systemds: systemds::WriteOptions,
    /// numpy `.npz` output.
    pub npz: npz::WriteOptions,
    /// scipy's sparse `.npz` output.
    pub scipy: scipy::WriteOptions,
    /// DAPHNE's segmented layout as output: how many segments.
    pub segments: crate::segments::WriteOptions,
    /// Parquet and Arrow input (what becomes of nulls). The conversion's data and value
    /// types override the ones these options give.
    #[cfg(feature = "parquet")]
    pub table_input: crate::arrow::ReadOptions,
    /// Parquet and Arrow output (compression, row group size, a matrix's column names).
    #[cfg(feature = "parquet")]
    pub table: crate::arrow::WriteOptions,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            from: None,
            to: None,
            data_type: None,
            value_type: None,
            columns: None,
            sync: true,
            progress: None,
            dbdf: Options::new(),
            keep_tiles: false,
            csv: csv::WriteOptions::default(),
            mtx: crate::mtx::WriteOptions::default(),
            futhark: futhark::WriteOptions::default(),
            binsparse: binsparse::WriteOptions::default(),
            systemds_input: systemds::ReadOptions::default(),
            systemds: systemds::WriteOptions::default(),
            npz: npz::WriteOptions::default(),
            scipy: scipy::WriteOptions::default(),
            segments: crate::segments::WriteOptions::default(),
            #[cfg(feature = "parquet")]
            table_input: crate::arrow::ReadOptions::default(),
            #[cfg(feature = "parquet")]
            table: crate::arrow::WriteOptions::default(),
        }
    }
}

impl fmt::Debug for ConvertOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConvertOptions")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("data_type", &self.data_type)
            .field("value_type", &self.value_type)
            .field("columns", &self.columns)
            .field("sync", &self.sync)
            .field("dbdf", &self.dbdf)
            .field("keep_tiles", &self.keep_tiles)
            .finish_non_exhaustive()
    }
}

impl ConvertOptions {
    /// The options of `.dbdf` output: the asked ones, the input's tile size where none is
    /// asked and the input's are kept (the runtime dialect has none), the conversion's sync.
    pub(crate) fn dbdf_options(&self, input_tile: Option<(u32, u32)>) -> Options {
        let mut options = Options {
            sync: self.sync,
            ..self.dbdf.clone()
        };
        let runtime = options.dialect == Some(serde_daphne::Dialect::Runtime);
        if options.tile.is_none() && !runtime && self.keep_tiles {
            options.tile = input_tile;
        }
        options
    }
}
