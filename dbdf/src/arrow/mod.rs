//! Parquet and Arrow IPC (Feather v2) files on the pipe, through the Apache Arrow crates; this
//! module is the one mapping between DAPHNE's objects and Arrow's tables that both use:
//!
//! - a **frame** is a table: its labels are the column names, each column of its value type
//!   (`UInt8`..`UInt64`, `Int8`..`Int64`, `Float32`, `Float64`). Read, `Boolean` columns
//!   become `u8` (0 or 1) and dictionary-encoded numeric columns are decoded;
//! - a **matrix** is a table of one column per matrix column, named `c0`, `c1`, ... (or as
//!   given: [`WriteOptions::labels`]), all of the matrix's value type;
//! - the schema's metadata key `daphne:data_type` records which DAPHNE data type the table was
//!   (`DenseMatrix`, `CSRMatrix` or `Frame`), so that a round trip gives the same object back.
//!   A table without it reads as a frame, or as a matrix when one is asked for
//!   ([`ReadOptions::data_type`]) and its columns share a value type (or one is given);
//! - the schema's **other metadata** (Parquet's key-value metadata) are the table's user
//!   attributes, kept on the pipe by outputs that hold attributes (Parquet, Arrow IPC and
//!   Binsparse): read as strings; written as they are when strings, else as their JSON text.
//!   Keys that describe the table's own schema are its writer's and are not kept
//!   (keys from `ARROW:`, `daphne:` and `org.apache.spark.`, and `pandas`);
//! - **nulls** are refused, naming the column and the row, unless [`Nulls`] says to fill them;
//! - strings, dates, times, decimals, half floats and nested columns are refused, naming the
//!   column and its type: DAPHNE's binary format holds numbers only.
//!
//! Row groups (Parquet) and record batches (IPC) are the bands: memory holds a band or two,
//! not the table.

mod big_endian;
pub mod feather;
pub mod parquet;
mod parquet_file;
mod parquet_footer;
mod parquet_writer;
mod reader;
mod table_plan;

pub use reader::DbdfBatchReader;

pub(crate) use table_plan::{stream_bands, Batches, TablePlan, Unit};

use std::fmt;
use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{ArrayRef, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};

use crate::input::Foreign;
use crate::pipe::{Band, Cells, Projection};
use serde_daphne::lowlevel::first_name;
use serde_daphne::lowlevel::parse_name;
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::{DataType, Error, Result, ValueType, Values};

/// Errors of Arrow IPC input.
pub(crate) const IPC: Foreign = Foreign("Arrow IPC");

/// The key of the schema metadata that records the DAPHNE data type a table was.
pub(crate) const DATA_TYPE_KEY: &str = "daphne:data_type";

/// More matrix columns than this are refused on output: Parquet and Arrow keep per-column
/// state (and pyarrow, pandas and DuckDB choke long before); a wide sparse matrix belongs in
/// scipy's `.npz` or Binsparse.
pub(crate) const MAX_MATRIX_COLUMNS: u64 = 1 << 16;

/// What becomes of a null cell on input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nulls {
    /// An error naming the column and the row (the default): DAPHNE has no nulls.
    #[default]
    Refuse,
    /// NaN in floating-point columns (nulls elsewhere are still refused).
    Nan,
    /// Zero (in bool columns, 0).
    Zero,
}

const NULLS_NAMES: &[(&str, Nulls)] = &[
    ("error", Nulls::Refuse),
    ("nan", Nulls::Nan),
    ("zero", Nulls::Zero),
];

/// `error`, `nan` or `zero`.
impl std::str::FromStr for Nulls {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        parse_name(text, "a null policy", NULLS_NAMES)
    }
}

impl fmt::Display for Nulls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(first_name(NULLS_NAMES, self))
    }
}

/// How a table is read. Plain data, as every format's options: set the fields that differ
/// from [`ReadOptions::default`] (nulls refused, a frame unless the metadata records a
/// matrix).
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// What becomes of null cells.
    pub nulls: Nulls,
    /// Reads the table as this data type: a matrix (dense or CSR) needs every column numeric
    /// and of one value type (or [`ReadOptions::value_type`]).
    pub data_type: Option<DataType>,
    /// The value type of a matrix read from columns of several types (each value converted
    /// exactly, or an error).
    pub value_type: Option<ValueType>,
    /// Reads only these columns, in this order (and only their bytes, from Parquet); the
    /// others need not be of a type DAPHNE holds.
    pub columns: Option<Projection>,
}

/// Compression of Parquet pages or Arrow IPC buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Zstandard (Parquet's default here; IPC's too when compressing).
    Zstd,
    /// Snappy (Parquet only; pyarrow's default).
    Snappy,
    /// LZ4 (Parquet's `LZ4_RAW`, IPC's `LZ4_FRAME`).
    Lz4,
    /// None: IPC files that readers memory-map without copying.
    None,
}

const COMPRESSION_NAMES: &[(&str, Compression)] = &[
    ("zstd", Compression::Zstd),
    ("snappy", Compression::Snappy),
    ("lz4", Compression::Lz4),
    ("none", Compression::None),
    ("uncompressed", Compression::None),
];

/// `zstd`, `snappy`, `lz4` or `none`.
impl std::str::FromStr for Compression {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        parse_name(text, "a compression", COMPRESSION_NAMES)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(first_name(COMPRESSION_NAMES, self))
    }
}

/// How a table is written. Plain data, as every format's options: set the fields that
/// differ from [`WriteOptions::default`] (Parquet zstd, IPC uncompressed; row groups of
/// 1,048,576 rows or 64 MiB of values, whichever is fewer; matrix columns `c0`, `c1`, ...).
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// The compression (default: zstd for Parquet, none for IPC).
    pub compression: Option<Compression>,
    /// Rows per Parquet row group (default 1,048,576, or fewer where those would hold more
    /// than 64 MiB of values: the writer holds a row group; 0 counts as 1).
    pub row_group_rows: Option<usize>,
    /// The column names of a matrix (one per column) instead of `c0`, `c1`, ...
    pub labels: Option<Vec<String>>,
    /// User attributes, written as the schema's metadata (strings as they are, other values
    /// as their JSON text) beside the data type's key.
    pub attributes: serde_json::Map<String, serde_json::Value>,
}

/// Whether a key of a schema's metadata describes the table's schema itself, for its writer
/// (Arrow's own schema, pandas', Spark's and ours): such keys are not user attributes, and
/// would be wrong for a table of other columns.
fn is_schema_key(key: &str) -> bool {
    ["ARROW:", "daphne:", "org.apache.spark."]
        .iter()
        .any(|prefix| key.starts_with(prefix))
        || key == "pandas"
}

/// A schema's user attributes (its metadata but for the schema's own keys), as strings.
fn attributes_of(schema: &Schema) -> serde_json::Map<String, serde_json::Value> {
    schema
        .metadata()
        .iter()
        .filter(|(key, _)| !is_schema_key(key))
        .map(|(key, value)| (key.clone(), serde_json::Value::String(value.clone())))
        .collect()
}

impl WriteOptions {
    /// These options with an input's user attributes under the asked ones.
    pub(crate) fn keeping(mut self, metadata: &crate::pipe::InputMetadata) -> Self {
        self.attributes = metadata.attributes_under(&self.attributes);
        self
    }

    /// Rows per Parquet row group, for rows of `row_bytes` bytes of values.
    pub(crate) fn rows_per_group(&self, row_bytes: u64) -> usize {
        const GROUP_BYTES: u64 = 64 << 20;
        let bounded = || (GROUP_BYTES / row_bytes.max(1)).clamp(1, 1 << 20) as usize;
        self.row_group_rows.unwrap_or_else(bounded).max(1)
    }
}

/// The Arrow type of a value type.
pub(crate) fn arrow_type(value_type: ValueType) -> ArrowType {
    match value_type {
        ValueType::U8 => ArrowType::UInt8,
        ValueType::U16 => ArrowType::UInt16,
        ValueType::U32 => ArrowType::UInt32,
        ValueType::U64 => ArrowType::UInt64,
        ValueType::I8 => ArrowType::Int8,
        ValueType::I16 => ArrowType::Int16,
        ValueType::I32 => ArrowType::Int32,
        ValueType::I64 => ArrowType::Int64,
        ValueType::F32 => ArrowType::Float32,
        ValueType::F64 => ArrowType::Float64,
    }
}

/// The Arrow schema an object with `header` is written as.
///
/// # Errors
/// Labels that do not match a matrix's columns; a matrix wider than [`MAX_MATRIX_COLUMNS`].
pub(crate) fn schema_for(
    header: &Header,
    options: &WriteOptions,
    format: Foreign,
) -> Result<SchemaRef> {
    let (rows, cols) = header.shape();
    if rows > 0 && cols == 0 {
        // Readers count a table's rows by its columns' values.
        return Err(format.cannot_hold(
            format!("{rows} rows of no columns"),
            "a table's rows are its columns' values",
        ));
    }
    let fields: Vec<Field> = match header {
        Header::Frame { columns, .. } => columns
            .iter()
            .map(|c| Field::new(&c.label, arrow_type(c.value_type), false))
            .collect(),
        Header::Scalar { .. } => {
            return Err(format.cannot_hold("a scalar", "a table holds columns"))
        }
        _ => {
            if cols > MAX_MATRIX_COLUMNS {
                return Err(format.cannot_hold(
                    format!("a {rows} x {cols} matrix"),
                    format!(
                        "a column per matrix column, and more than {MAX_MATRIX_COLUMNS} is \
                         more than Parquet and Arrow readers handle: write scipy's .npz or \
                         Binsparse"
                    ),
                ));
            }
            let vt = arrow_type(header.matrix_value_type().unwrap_or(ValueType::F64));
            let names: Vec<String> = match &options.labels {
                Some(labels) if labels.len() as u64 == cols => labels.clone(),
                Some(labels) => {
                    return Err(Error::invalid(format!(
                        "{} labels for a matrix of {cols} columns",
                        labels.len()
                    )))
                }
                None => crate::plan::column_names(header),
            };
            names
                .iter()
                .map(|n| Field::new(n, vt.clone(), false))
                .collect()
        }
    };
    let attributes = options.attributes.iter().map(|(key, value)| {
        let text = match value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        (key.clone(), text)
    });
    let data_type = (DATA_TYPE_KEY.to_owned(), header.data_type().to_string());
    let metadata: std::collections::HashMap<String, String> =
        attributes.chain([data_type]).collect();
    Ok(Arc::new(Schema::new(fields).with_metadata(metadata)))
}

/// A band as a record batch of `schema` (columns moved into Arrow's buffers, not copied;
/// a matrix's rows split into its columns).
///
/// # Errors
/// Cells that do not match the schema.
pub(crate) fn batch_of(band: Band, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns: Vec<Values> = match band.cells {
        Cells::Frame(columns) => columns,
        cells => {
            let cols = band.cols as usize;
            let band = Band { cells, ..band };
            let values = band.dense_values()?;
            with_values!(&values, v => {
                (0..cols)
                    .map(|c| Element::into_values(v.iter().skip(c).step_by(cols.max(1)).copied().collect::<Vec<_>>()))
                    .collect()
            })
        }
    };
    let arrays: Vec<ArrayRef> = columns.into_iter().map(array_of).collect();
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(band.rows as usize));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &options)
        .map_err(|e| Error::invalid(format!("a band does not fit the table: {e}")))
}

/// Values as an Arrow array, without copying them.
fn array_of(values: Values) -> ArrayRef {
    match values {
        Values::U8(v) => Arc::new(PrimitiveArray::<UInt8Type>::from(v)),
        Values::U16(v) => Arc::new(PrimitiveArray::<UInt16Type>::from(v)),
        Values::U32(v) => Arc::new(PrimitiveArray::<UInt32Type>::from(v)),
        Values::U64(v) => Arc::new(PrimitiveArray::<UInt64Type>::from(v)),
        Values::I8(v) => Arc::new(PrimitiveArray::<Int8Type>::from(v)),
        Values::I16(v) => Arc::new(PrimitiveArray::<Int16Type>::from(v)),
        Values::I32(v) => Arc::new(PrimitiveArray::<Int32Type>::from(v)),
        Values::I64(v) => Arc::new(PrimitiveArray::<Int64Type>::from(v)),
        Values::F32(v) => Arc::new(PrimitiveArray::<Float32Type>::from(v)),
        Values::F64(v) => Arc::new(PrimitiveArray::<Float64Type>::from(v)),
    }
}

thread_local! {
    /// Whether this thread runs [`guarded`] code, whose panics are errors, not messages.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic of the Arrow crates on malformed input into an error of
/// `format` (the Parquet reader panics on some malformed definition levels instead of
/// failing): bad input must not crash the process. The panic's message is kept for the
/// error, not printed.
///
/// # Errors
/// `f`'s, and the panic's.
pub(crate) fn guarded<T>(format: Foreign, f: impl FnOnce() -> Result<T>) -> Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let outer = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(outer));
    result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(format.error(format!(
            "the Arrow crates' reader failed on this file ({message})"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::WriteOptions;

    /// A row group holds 1,048,576 rows, or 64 MiB of values where that is fewer (the
    /// writer holds one whole: a wide matrix's would be the file), or the rows asked for.
    #[test]
    fn row_groups_hold_at_most_64_mib_unless_asked() {
        let default = WriteOptions::default();
        assert_eq!(default.rows_per_group(8), 1 << 20);
        assert_eq!(default.rows_per_group(8192 * 8), 1024);
        assert_eq!(default.rows_per_group(1 << 30), 1);
        let asked = WriteOptions {
            row_group_rows: Some(5),
            ..WriteOptions::default()
        };
        assert_eq!(asked.rows_per_group(8192 * 8), 5);
    }
}
