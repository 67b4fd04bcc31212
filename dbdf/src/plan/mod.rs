//! How an engine that reads one object on many workers (Spark, Dask) sees it: its
//! partitions (the segments of a folder of DAPHNE's segments, else the file's rows and
//! columns of tiles where its blocks tile it, else bands of rows of about 128 MiB), its
//! columns' names ([`column_names`]) and the engine's type of each
//! value type ([`Widened`]), and the version of each file a plan names with the handles each
//! process keeps open ([`Stamp`], [`with_file`]). The Spark source (Rust and JVM) and the
//! Python package (Dask, Spark's Python source) all plan here.

mod files;
mod table;

pub use files::{with_file, Stamp};
pub use table::{
    check_spark_column, check_table_width, spark_table, Layout, SparkTable, VALUE_TYPE_KEY,
};

use serde_daphne::{with_value_type, Element, Header, ObjectInfo, ValueType};

/// Bytes of cells per partition of an object stored as one block.
const PARTITION_BYTES: u64 = 128 << 20;

/// The sizes of the partitions of the object `info`, `rows` rows in all: rows, then columns.
/// `segment_starts` are the first rows of a folder's segments, where the object is one (its
/// first segment's `info`); more than one, and the segments are the row partitions and the
/// columns are not split. Otherwise the file's rows and columns of tiles where its blocks
/// start at more than one row (column), else row bands of about 128 MiB and all
/// columns. An empty axis is one partition of 0.
pub fn partitions(info: &ObjectInfo, rows: u64, segment_starts: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let cols = info.header.cols();
    if segment_starts.len() > 1 {
        return (grid(segment_starts, rows), vec![cols]);
    }
    let starts = |axis: fn(&serde_daphne::BlockPlace) -> u64| {
        let mut starts: Vec<u64> = info.blocks.iter().map(|b| axis(&b.place)).collect();
        starts.sort_unstable();
        starts.dedup();
        starts
    };
    let row_starts = starts(|p| p.row);
    let row_parts = match row_starts.len() {
        2.. => grid(&row_starts, rows),
        _ => bands(rows, PARTITION_BYTES / row_bytes(info, rows)),
    };
    let col_starts = starts(|p| p.col);
    let col_parts = match col_starts.len() {
        2.. => grid(&col_starts, cols),
        _ => vec![cols],
    };
    (row_parts, col_parts)
}

/// Part sizes along an axis of `n` from the positions where blocks (or segments) start.
fn grid(starts: &[u64], n: u64) -> Vec<u64> {
    let mut edges: Vec<u64> = starts.iter().copied().filter(|&s| 0 < s && s < n).collect();
    edges.extend([0, n]);
    edges.sort_unstable();
    edges.dedup();
    match edges.windows(2).map(|w| w[1] - w[0]).collect::<Vec<u64>>() {
        parts if parts.is_empty() => vec![0],
        parts => parts,
    }
}

/// Part sizes along an axis of `n`: `per` each (at least 1), the last what is left; one part
/// of 0 for an empty axis.
pub fn bands(n: u64, per: u64) -> Vec<u64> {
    let per = per.max(1);
    match n {
        0 => vec![0],
        n => (0..n.div_ceil(per)).map(|k| per.min(n - k * per)).collect(),
    }
}

/// About how many bytes a row of the object takes (`rows` rows in all): cells of dense
/// matrices and frames, the stored bytes over the rows of CSR matrices.
pub fn row_bytes(info: &ObjectInfo, rows: u64) -> u64 {
    let bytes = match &info.header {
        Header::CsrMatrix { .. } => (info.range.end - info.range.start) / rows.max(1),
        Header::Frame { columns, .. } => columns.iter().map(|c| c.value_type.size() as u64).sum(),
        header => {
            let size = header.matrix_value_type().map_or(8, |vt| vt.size() as u64);
            header.cols() * size
        }
    };
    bytes.max(1)
}

/// The names of an object's columns as engines see them: a frame's labels, a matrix's
/// `c0`, `c1`, ... (as Parquet and Arrow outputs of a matrix name them).
pub fn column_names(header: &Header) -> Vec<String> {
    match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.label.clone()).collect(),
        header => (0..header.cols()).map(matrix_column_name).collect(),
    }
}

/// The name of column `j` of a matrix seen as a table: `c0`, `c1`, ...
fn matrix_column_name(j: u64) -> String {
    format!("c{j}")
}

/// A value type and the type of Spark's column of it: DAPHNE's unsigned types widen to the
/// next signed type that holds them exactly (`u64` to a 128-bit decimal's unscaled value),
/// as Spark has no unsigned types.
pub trait Widened: Element {
    /// The column's type in Spark's SQL (`DataType.fromDDL` parses it).
    const SPARK: &'static str;
    /// The column's type in memory (little-endian, as the JVM's off-heap vectors hold it).
    type Out: bytemuck::Pod;
    /// The value in the column's type, exactly, little-endian.
    fn widened(self) -> Self::Out;
}

macro_rules! widened {
    ($($t:ty => $out:ty, $spark:literal);*) => {$(
        impl Widened for $t {
            const SPARK: &'static str = $spark;
            type Out = $out;
            fn widened(self) -> $out {
                <$out>::from(self).to_le()
            }
        }
    )*};
}

widened!(u8 => i16, "smallint"; u16 => i32, "int"; u32 => i64, "bigint";
    u64 => i128, "decimal(20,0)"; i8 => i8, "tinyint"; i16 => i16, "smallint";
    i32 => i32, "int"; i64 => i64, "bigint");

impl Widened for f32 {
    const SPARK: &'static str = "float";
    type Out = u32;
    fn widened(self) -> u32 {
        self.to_bits().to_le()
    }
}

impl Widened for f64 {
    const SPARK: &'static str = "double";
    type Out = u64;
    fn widened(self) -> u64 {
        self.to_bits().to_le()
    }
}

/// Spark's SQL type of a column of `value_type` ([`Widened::SPARK`]).
pub fn spark_type(value_type: ValueType) -> &'static str {
    with_value_type!(value_type, T => <T as Widened>::SPARK)
}

#[cfg(test)]
mod tests {
    use super::{bands, grid, spark_type};
    use serde_daphne::ValueType;

    #[test]
    fn unsigned_types_widen_to_signed_ones() {
        let types = ValueType::ALL.iter().map(|&vt| spark_type(vt));
        let names = [
            "smallint",
            "int",
            "bigint",
            "decimal(20,0)",
            "tinyint",
            "smallint",
            "int",
        ];
        let expected: Vec<&str> = names
            .into_iter()
            .chain(["bigint", "float", "double"])
            .collect();
        let order: Vec<String> = ValueType::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(
            order,
            ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64"]
        );
        assert_eq!(types.collect::<Vec<_>>(), expected);
    }

    #[test]
    fn parts_end_where_blocks_start() {
        assert_eq!(grid(&[0, 2048, 4096], 5000), vec![2048, 2048, 904]);
        assert_eq!(grid(&[0], 0), vec![0]);
        assert_eq!(grid(&[0, 10], 10), vec![10]);
    }

    #[test]
    fn bands_leave_the_rest_last() {
        assert_eq!(bands(10, 4), vec![4, 4, 2]);
        assert_eq!(bands(8, 4), vec![4, 4]);
        assert_eq!(bands(0, 4), vec![0]);
        assert_eq!(bands(3, 0), vec![1, 1, 1]);
    }
}
