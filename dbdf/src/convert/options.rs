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
/// options, as that format's module defines them. Built with chained calls, as [`Options`].
///
/// ```
/// use dbdf::convert::ConvertOptions;
/// use serde_daphne::{Dialect, Options};
///
/// // For DAPHNE: `.dbdf` in its runtime dialect, CSV without a header record.
/// let options = ConvertOptions::new()
///     .dbdf(Options::new().dialect(Dialect::Runtime))
///     .csv(dbdf::csv::WriteOptions::new().daphne(true));
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct ConvertOptions {
    pub(crate) from: Option<Format>,
    pub(crate) to: Option<Format>,
    pub(crate) data_type: Option<DataType>,
    pub(crate) value_type: Option<ValueType>,
    pub(crate) sync: bool,
    pub(crate) progress: Option<Progress>,
    pub(crate) dbdf: Options,
    pub(crate) csv: csv::WriteOptions,
    pub(crate) futhark: futhark::WriteOptions,
    pub(crate) binsparse: binsparse::WriteOptions,
    pub(crate) systemds_input: systemds::ReadOptions,
    pub(crate) systemds: systemds::WriteOptions,
    pub(crate) npz: npz::WriteOptions,
    pub(crate) scipy: scipy::WriteOptions,
    #[cfg(feature = "parquet")]
    pub(crate) table_input: crate::arrow::ReadOptions,
    #[cfg(feature = "parquet")]
    pub(crate) table: crate::arrow::WriteOptions,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            from: None,
            to: None,
            data_type: None,
            value_type: None,
            sync: true,
            progress: None,
            dbdf: Options::new(),
            csv: csv::WriteOptions::new(),
            futhark: futhark::WriteOptions::new(),
            binsparse: binsparse::WriteOptions::new(),
            systemds_input: systemds::ReadOptions::new(),
            systemds: systemds::WriteOptions::new(),
            npz: npz::WriteOptions::new(),
            scipy: scipy::WriteOptions::new(),
            #[cfg(feature = "parquet")]
            table_input: crate::arrow::ReadOptions::new(),
            #[cfg(feature = "parquet")]
            table: crate::arrow::WriteOptions::new(),
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
            .field("sync", &self.sync)
            .field("dbdf", &self.dbdf)
            .finish_non_exhaustive()
    }
}

impl ConvertOptions {
    /// The defaults: formats from the extensions, values and data types as they are, every
    /// format's default options (`.dbdf` in the spec's dialect with automatic blocks), outputs
    /// synced to disk.
    pub fn new() -> Self {
        ConvertOptions::default()
    }

    /// The input format, instead of the input's extension.
    pub fn from(mut self, format: Format) -> Self {
        self.from = Some(format);
        self
    }

    /// The output format, instead of the output's extension.
    pub fn to(mut self, format: Format) -> Self {
        self.to = Some(format);
        self
    }

    /// The DAPHNE data type of output matrices (default: CSR for coordinate `.mtx` input,
    /// the input's otherwise). For `.dbdf` in DAPHNE's runtime dialect, a CSR matrix
    /// DaphneDSL would type as dense is written dense unless this asks for CSR.
    pub fn data_type(mut self, data_type: DataType) -> Self {
        self.data_type = Some(data_type);
        self
    }

    /// Converts every value to `value_type`, exactly or not at all.
    pub fn value_type(mut self, value_type: ValueType) -> Self {
        self.value_type = Some(value_type);
        self
    }

    /// Whether single-file outputs are synced to disk before they are renamed into place
    /// (default: yes; it overrides [`Options::sync`] of [`ConvertOptions::dbdf`]). Without
    /// the sync an output is still atomic for readers and survives the process being killed
    /// at any moment, but not always a power loss; directories (SystemDS, Zarr) are always
    /// synced.
    pub fn sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// Hears how much of a large input has been read.
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// `.dbdf` output: blocks, tiles, narrowing, dialect (default [`Options::new`]). Without
    /// a tile size, a SystemDS input's kept blocks are the tiles.
    pub fn dbdf(mut self, options: Options) -> Self {
        self.dbdf = options;
        self
    }

    /// CSV output.
    pub fn csv(mut self, options: csv::WriteOptions) -> Self {
        self.csv = options;
        self
    }

    /// Futhark output: how objects map onto Futhark values.
    pub fn futhark(mut self, options: futhark::WriteOptions) -> Self {
        self.futhark = options;
        self
    }

    /// Binsparse output. Without a format of its own it takes the input's when that is
    /// Binsparse (whose user attributes are kept too), else CSR for CSR matrices and DMAT
    /// for dense ones.
    pub fn binsparse(mut self, options: binsparse::WriteOptions) -> Self {
        self.binsparse = options;
        self
    }

    /// SystemDS input.
    pub fn systemds_input(mut self, options: systemds::ReadOptions) -> Self {
        self.systemds_input = options;
        self
    }

    /// SystemDS output.
    pub fn systemds(mut self, options: systemds::WriteOptions) -> Self {
        self.systemds = options;
        self
    }

    /// numpy `.npz` output.
    pub fn npz(mut self, options: npz::WriteOptions) -> Self {
        self.npz = options;
        self
    }

    /// scipy's sparse `.npz` output.
    pub fn scipy(mut self, options: scipy::WriteOptions) -> Self {
        self.scipy = options;
        self
    }

    /// Parquet and Arrow input (what becomes of nulls). The conversion's data and value
    /// types override the ones these options give.
    #[cfg(feature = "parquet")]
    pub fn table_input(mut self, options: crate::arrow::ReadOptions) -> Self {
        self.table_input = options;
        self
    }

    /// Parquet and Arrow output (compression, row group size, a matrix's column names).
    #[cfg(feature = "parquet")]
    pub fn table(mut self, options: crate::arrow::WriteOptions) -> Self {
        self.table = options;
        self
    }

    /// The options of `.dbdf` output: the asked ones, the input's tile size where none is
    /// asked (the runtime dialect has none), the conversion's sync.
    pub(crate) fn dbdf_options(&self, input_tile: Option<(u32, u32)>) -> Options {
        let mut options = self.dbdf.clone().sync(self.sync);
        let runtime = options.dialect == Some(serde_daphne::Dialect::Runtime);
        if let (None, Some((r, c)), false) = (options.tile, input_tile, runtime) {
            options = options.tile(r, c);
        }
        options
    }
}
