//! Parquet's and Arrow IPC's entries in the registry: tables, through [`crate::arrow`]
//! (feature `parquet`; without it, each says so by name).

use std::io::Write;
use std::path::Path;

use serde_daphne::Error;

use crate::driver::{ConvertOptions, Driver, Input, OptionSpec, Stored};
use crate::pipe::{InputMetadata, Sink, Source};

/// Apache Parquet.
pub(crate) struct Parquet;

/// Arrow IPC files (Feather v2).
pub(crate) struct Arrow;

impl Driver for Parquet {
    fn names(&self) -> &'static [&'static str] {
        &["parquet"]
    }

    fn description(&self) -> &'static str {
        "Apache Parquet (.parquet, .pq)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["parquet", "pq"]
    }

    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }

    fn picks_columns(&self) -> bool {
        true
    }

    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        #[cfg(feature = "parquet")]
        return crate::arrow::parquet::source(path, &read_options(options));
        #[cfg(not(feature = "parquet"))]
        Err(without_tables((path, options)))
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// Its footer, then the row groups the columns picked need, by range.
    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        #[cfg(feature = "parquet")]
        return crate::arrow::parquet::source_at(input.data, &read_options(options));
        #[cfg(not(feature = "parquet"))]
        Err(without_tables((input, options)))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        #[cfg(feature = "parquet")]
        return Ok(crate::arrow::parquet::sink(
            out,
            &write_options(options, metadata),
        ));
        #[cfg(not(feature = "parquet"))]
        Err(without_tables((out, options, metadata)))
    }
}

impl Driver for Arrow {
    fn names(&self) -> &'static [&'static str] {
        &["arrow", "feather", "ipc"]
    }

    fn description(&self) -> &'static str {
        "Arrow IPC files, also called Feather v2 (.arrow, .feather, .ipc)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["arrow", "feather", "ipc"]
    }

    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }

    fn picks_columns(&self) -> bool {
        true
    }

    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        #[cfg(feature = "parquet")]
        return crate::arrow::feather::source(path, &read_options(options));
        #[cfg(not(feature = "parquet"))]
        Err(without_tables((path, options)))
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// Its ends and footer, each batch's header, then each batch as the bands need it.
    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        #[cfg(feature = "parquet")]
        return crate::arrow::feather::source_at(input.data, &read_options(options));
        #[cfg(not(feature = "parquet"))]
        Err(without_tables((input, options)))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        #[cfg(feature = "parquet")]
        return Ok(crate::arrow::feather::sink(
            out,
            &write_options(options, metadata),
        ));
        #[cfg(not(feature = "parquet"))]
        Err(without_tables((out, options, metadata)))
    }
}

/// How a table is read: the conversion's data and value types and columns over the tables'
/// own read options.
#[cfg(feature = "parquet")]
pub(crate) fn read_options(options: &ConvertOptions) -> crate::arrow::ReadOptions {
    crate::arrow::ReadOptions {
        data_type: options.data_type,
        value_type: options.value_type,
        columns: options.columns.clone(),
        ..options.formats.get()
    }
}

/// How a table is written: the input's attributes under the asked ones.
#[cfg(feature = "parquet")]
fn write_options(options: &ConvertOptions, metadata: &InputMetadata) -> crate::arrow::WriteOptions {
    options
        .formats
        .get::<crate::arrow::WriteOptions>()
        .keeping(metadata)
}

/// The error for Parquet and Arrow files in a build without them.
#[cfg(not(feature = "parquet"))]
fn without_tables<T>(_: T) -> Error {
    Error::invalid(
        "this build reads and writes Parquet and Arrow files only with the feature `parquet`",
    )
}

#[cfg(not(feature = "parquet"))]
const OPTIONS: &[OptionSpec] = &[];

#[cfg(feature = "parquet")]
const OPTIONS: &[OptionSpec] = {
    use crate::arrow::{Compression, Nulls, ReadOptions, WriteOptions};
    use crate::driver::Takes;
    &[
        OptionSpec {
            flag: "nulls",
            keyword: "nulls",
            help: "Parquet and Arrow input: what becomes of null cells: error (default; names \
                   the column and row), nan (floating columns) or zero.",
            takes: Takes::Value,
            set: |o, v| {
                o.formats.get_mut::<ReadOptions>().nulls = v.parse::<Nulls>()?;
                Ok(())
            },
        },
        OptionSpec {
            flag: "compression",
            keyword: "compression",
            help: "Parquet and Arrow output: zstd (Parquet's default), snappy, lz4 or none \
                   (Arrow's default, which readers memory-map).",
            takes: Takes::Value,
            set: |o, v| {
                o.formats.get_mut::<WriteOptions>().compression = Some(v.parse::<Compression>()?);
                Ok(())
            },
        },
        OptionSpec {
            flag: "row-group-rows",
            keyword: "row_group_rows",
            help: "Parquet output: rows per row group (default 1048576, or fewer where \
                   those would hold more than 64 MiB of values).",
            takes: Takes::Value,
            set: |o, v| match v.parse()? {
                0 => Err(serde_daphne::Error::invalid("must be positive")),
                rows => {
                    o.formats.get_mut::<WriteOptions>().row_group_rows = Some(rows);
                    Ok(())
                }
            },
        },
        OptionSpec {
            flag: "labels",
            keyword: "labels",
            help: "Parquet and Arrow output of a matrix: its column names, comma-separated \
                   (default c0, c1, ...).",
            takes: Takes::List,
            set: |o, v| {
                let labels = match v {
                    crate::driver::OptionValue::List(items) => items.clone(),
                    other => other.text().split(',').map(str::to_owned).collect(),
                };
                o.formats.get_mut::<WriteOptions>().labels = Some(labels);
                Ok(())
            },
        },
    ]
};
