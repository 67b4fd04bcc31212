//! An object read as a Spark table: which of its columns, in which layout, and the schema
//! that gives (in Spark's JSON form, which `StructType.fromJson` and `DataType.fromJson`
//! read), for the Python source; the JVM source plans its own from [`super::column_names`]
//! and [`super::spark_type`].

use std::str::FromStr;

use serde_daphne::{Error, Header, Result, ValueType};
use serde_json::{json, Value};

use super::{column_names, spark_type};

/// The most columns of a matrix read as a table: a schema holds a field per column.
const MAX_MATRIX_COLUMNS: u64 = 1 << 20;

/// The field metadata key that keeps a column's value type in the file, where writes find
/// an unsigned type again after Spark widened it.
pub const VALUE_TYPE_KEY: &str = "dbdf.value_type";

/// How a matrix's cells become a table's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A column per matrix column (`c0`, `c1`, ...): a frame's only layout.
    Columns,
    /// One array column `values` per row.
    Array,
    /// A row `(row, col, value)` per non-zero cell.
    Triples,
}

/// Each layout and its name, as options give it.
const LAYOUTS: [(Layout, &str); 3] = [
    (Layout::Columns, "columns"),
    (Layout::Array, "array"),
    (Layout::Triples, "triples"),
];

impl FromStr for Layout {
    type Err = Error;

    fn from_str(name: &str) -> Result<Layout> {
        let lower = name.to_ascii_lowercase();
        match LAYOUTS.iter().find(|(_, n)| *n == lower) {
            Some(&(layout, _)) => Ok(layout),
            None => Err(Error::invalid(format!(
                "layout must be one of columns, array, triples, not '{name}'"
            ))),
        }
    }
}

/// The name options give `layout` by.
fn layout_name(layout: Layout) -> &'static str {
    LAYOUTS
        .iter()
        .find(|(l, _)| *l == layout)
        .map_or("columns", |(_, n)| n)
}

/// What a read of an object as a table takes and gives.
#[derive(Clone, Debug, PartialEq)]
pub struct SparkTable {
    /// The positions of the columns read, in the order asked.
    pub columns: Vec<u64>,
    /// The table's schema, as Spark's JSON: a struct of non-null fields, each column's
    /// value type in its metadata ([`VALUE_TYPE_KEY`]).
    pub schema: Value,
}

/// The table of the object `header` describes: the columns `picked` (a frame's labels; a
/// matrix's names `c<j>` or positions; none: all of them) in `layout`, with a first column
/// of row numbers named `row_index`. `shown` names the object in errors.
///
/// # Errors
/// A column the object lacks (naming those it has), a layout other than `Columns` for a
/// frame, an object that is not a matrix or a frame, a matrix too wide
/// ([`check_table_width`]).
pub fn spark_table(
    header: &Header,
    picked: &[&str],
    layout: Layout,
    row_index: Option<&str>,
    shown: &str,
) -> Result<SparkTable> {
    check_table_width(header, shown)?;
    let names = column_names(header);
    let (columns, value_types): (Vec<u64>, Vec<ValueType>) = match header {
        Header::Frame { columns, .. } => {
            if layout != Layout::Columns {
                return Err(Error::invalid(format!(
                    "layout '{}' is for matrices; {shown} holds a frame",
                    layout_name(layout)
                )));
            }
            let found: Vec<Option<usize>> = picked
                .iter()
                .map(|p| names.iter().position(|n| n == p))
                .collect();
            let missing: Vec<&str> = picked
                .iter()
                .zip(&found)
                .filter(|(_, at)| at.is_none())
                .map(|(p, _)| *p)
                .collect();
            if !missing.is_empty() {
                return Err(Error::invalid(format!(
                    "{shown}: no columns {}; the frame has {}",
                    listed(&missing),
                    listed(&names)
                )));
            }
            let positions: Vec<usize> = match picked {
                [] => (0..columns.len()).collect(),
                _ => found.into_iter().flatten().collect(),
            };
            positions
                .into_iter()
                .map(|j| (j as u64, columns[j].value_type))
                .unzip()
        }
        Header::DenseMatrix {
            cols, value_type, ..
        }
        | Header::CsrMatrix {
            cols, value_type, ..
        } => {
            let positions = match picked {
                [] => (0..*cols).collect(),
                picked => picked
                    .iter()
                    .map(|p| matrix_column(p, &names, shown))
                    .collect::<Result<Vec<u64>>>()?,
            };
            let n = positions.len();
            (positions, vec![*value_type; n])
        }
        header => {
            return Err(Error::invalid(format!(
                "{shown}: a {} is not a table",
                header.data_type()
            )))
        }
    };
    let mut fields = Vec::new();
    if let Some(name) = row_index {
        fields.push(field(name, json!("long"), None));
    }
    match (layout, value_types.first()) {
        (Layout::Columns, _) => fields.extend(
            columns
                .iter()
                .zip(&value_types)
                .map(|(&j, &vt)| field(&names[j as usize], spark_json(vt), Some(vt))),
        ),
        (Layout::Array, first) => {
            let vt = first.copied().unwrap_or(ValueType::F64);
            let array =
                json!({"type": "array", "elementType": spark_json(vt), "containsNull": false});
            fields.push(field("values", array, Some(vt)));
        }
        (Layout::Triples, first) => {
            let vt = first.copied().unwrap_or(ValueType::F64);
            fields.push(field("row", json!("long"), None));
            fields.push(field("col", json!("long"), None));
            fields.push(field("value", spark_json(vt), Some(vt)));
        }
    }
    Ok(SparkTable {
        columns,
        schema: json!({"type": "struct", "fields": fields}),
    })
}

/// Refuses a matrix wider than a Spark schema can hold (a field per column, at most 2^20):
/// the JVM source's plan and [`spark_table`] both ask. `shown` names the object.
///
/// # Errors
/// The matrix's width and the most a table takes.
pub fn check_table_width(header: &Header, shown: &str) -> Result<()> {
    match header {
        Header::DenseMatrix { cols, .. } | Header::CsrMatrix { cols, .. }
            if *cols > MAX_MATRIX_COLUMNS =>
        {
            Err(Error::invalid(format!(
                "{shown}: a matrix of {cols} columns is too wide for a Spark table (at most \
                 {MAX_MATRIX_COLUMNS})"
            )))
        }
        _ => Ok(()),
    }
}

/// Refuses, naming it, a Spark column `name` of SQL type `sql_type` (Spark's
/// `simpleString`) that no segment can hold, before any task writes one: Spark's types that
/// DAPHNE's value types hold are the ones [`spark_type`] gives, booleans (as `u8`) and
/// `decimal(20,0)` (a `u64` widened) aside. A column whose field keeps its file type
/// ([`VALUE_TYPE_KEY`]) goes back to that type instead and is not asked about.
///
/// # Errors
/// A type DAPHNE lacks, saying what to cast it to.
pub fn check_spark_column(name: &str, sql_type: &str) -> Result<()> {
    let why = match sql_type {
        "boolean" | "tinyint" | "int" | "bigint" | "float" | "double" => return Ok(()),
        "smallint" => "DAPHNE's runtime has no 16-bit integers: cast it to int",
        _ => {
            "DAPHNE's binary format holds integers and floats only (booleans as u8): drop it, \
             or cast it to double or an integer type"
        }
    };
    Err(Error::invalid(format!(
        "column '{name}' is a {sql_type}: {why}"
    )))
}

/// A matrix's column by its name (`c<j>`) or its position.
fn matrix_column(picked: &str, names: &[String], shown: &str) -> Result<u64> {
    if let Some(j) = names.iter().position(|n| n == picked) {
        return Ok(j as u64);
    }
    match picked.parse::<u64>() {
        Ok(j) if j < names.len() as u64 => Ok(j),
        _ => Err(Error::invalid(match (names.first(), names.last()) {
            (Some(first), Some(last)) => {
                format!("{shown}: no column '{picked}'; the matrix has {first} to {last}")
            }
            _ => format!("{shown}: no column '{picked}'; the matrix has none"),
        })),
    }
}

/// Names as a list in messages: `['a', 'b']`, as Python shows one.
fn listed(names: &[impl AsRef<str>]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{}'", n.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

/// A non-null field of Spark's JSON schema, the file's value type in its metadata.
fn field(name: &str, kind: Value, value_type: Option<ValueType>) -> Value {
    let metadata = match value_type {
        Some(vt) => json!({ VALUE_TYPE_KEY: vt.to_string() }),
        None => json!({}),
    };
    json!({"name": name, "type": kind, "nullable": false, "metadata": metadata})
}

/// A value type's Spark type in Spark's JSON names ([`spark_type`] gives the SQL ones).
fn spark_json(value_type: ValueType) -> Value {
    let name = match spark_type(value_type) {
        "tinyint" => "byte",
        "smallint" => "short",
        "int" => "integer",
        "bigint" => "long",
        other => other,
    };
    json!(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_daphne::Column;

    fn frame() -> Header {
        let column = |label: &str, value_type| Column {
            label: label.into(),
            value_type,
        };
        Header::Frame {
            rows: 3,
            columns: vec![column("id", ValueType::U64), column("x", ValueType::F32)],
        }
    }

    #[test]
    fn a_frame_gives_its_labels_widened_with_the_file_type_kept() {
        let table = spark_table(&frame(), &["x", "id"], Layout::Columns, Some("i"), "f").unwrap();
        assert_eq!(table.columns, [1, 0]);
        let expected = json!({"type": "struct", "fields": [
            {"name": "i", "type": "long", "nullable": false, "metadata": {}},
            {"name": "x", "type": "float", "nullable": false,
             "metadata": {"dbdf.value_type": "f32"}},
            {"name": "id", "type": "decimal(20,0)", "nullable": false,
             "metadata": {"dbdf.value_type": "u64"}},
        ]});
        assert_eq!(table.schema, expected);
        let missing = spark_table(&frame(), &["y"], Layout::Columns, None, "f").unwrap_err();
        assert_eq!(
            missing.to_string(),
            "f: no columns ['y']; the frame has ['id', 'x']"
        );
        assert!(spark_table(&frame(), &[], Layout::Array, None, "f").is_err());
    }

    #[test]
    fn a_matrix_takes_names_or_positions_in_each_layout() {
        let m = Header::matrix(serde_daphne::DataType::DenseMatrix, 2, 12, ValueType::U8);
        let table = spark_table(&m, &["c11", "3"], Layout::Columns, None, "m").unwrap();
        assert_eq!(table.columns, [11, 3]);
        assert_eq!(table.schema["fields"][0]["name"], "c11");
        assert_eq!(table.schema["fields"][1]["type"], "short");
        let array = spark_table(&m, &[], Layout::Array, None, "m").unwrap();
        assert_eq!(array.columns.len(), 12);
        assert_eq!(
            array.schema["fields"][0]["type"],
            json!({"type": "array", "elementType": "short", "containsNull": false})
        );
        let triples = spark_table(&m, &[], "TRIPLES".parse().unwrap(), None, "m").unwrap();
        let names: Vec<&str> = triples.schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["row", "col", "value"]);
        let wrong = spark_table(&m, &["c12"], Layout::Columns, None, "m").unwrap_err();
        assert_eq!(
            wrong.to_string(),
            "m: no column 'c12'; the matrix has c0 to c11"
        );
        assert!("rows".parse::<Layout>().is_err());
        let wide = Header::matrix(
            serde_daphne::DataType::CsrMatrix,
            1,
            (1 << 20) + 1,
            ValueType::F64,
        );
        assert_eq!(
            spark_table(&wide, &[], Layout::Array, None, "w")
                .unwrap_err()
                .to_string(),
            "w: a matrix of 1048577 columns is too wide for a Spark table (at most 1048576)"
        );
    }

    #[test]
    fn spark_columns_daphne_lacks_are_refused_by_name() {
        for ok in ["boolean", "tinyint", "int", "bigint", "float", "double"] {
            assert!(check_spark_column("a", ok).is_ok(), "{ok}");
        }
        let short = check_spark_column("s", "smallint").unwrap_err().to_string();
        assert_eq!(
            short,
            "column 's' is a smallint: DAPHNE's runtime has no 16-bit integers: cast it to int"
        );
        let text = check_spark_column("t", "string").unwrap_err().to_string();
        assert!(text.starts_with("column 't' is a string: DAPHNE's binary format holds"));
    }
}
