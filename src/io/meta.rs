//! DAPHNE's `.meta` sidecars: the JSON file the runtime's `read` kernel needs beside every
//! `.dbdf` it reads, and that its `write` kernel writes.
//!
//! Written exactly as DAPHNE does: compact JSON, keys sorted, no trailing newline, and no
//! `numNonZeros` (the write kernel never emits it):
//! `{"numCols":4,"numRows":3,"valueType":"f64"}` for matrices,
//! `{"numCols":2,"numRows":3,"schema":[{"label":"a","valueType":"si64"},...]}` for frames.
//! Read leniently: any key order and whitespace, unknown keys ignored.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::Hint;
use crate::wire::runtime::meta_name;
use crate::wire::{Header, ValueType};

/// The sidecar's path: the data file's path with `.meta` appended.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".meta");
    PathBuf::from(name)
}

#[derive(Serialize)]
struct MatrixMeta<'a> {
    #[serde(rename = "numCols")]
    num_cols: u64,
    #[serde(rename = "numRows")]
    num_rows: u64,
    #[serde(rename = "valueType")]
    value_type: &'a str,
}

#[derive(Serialize, Deserialize)]
struct SchemaEntry {
    label: String,
    #[serde(rename = "valueType")]
    value_type: String,
}

#[derive(Serialize)]
struct FrameMeta {
    #[serde(rename = "numCols")]
    num_cols: u64,
    #[serde(rename = "numRows")]
    num_rows: u64,
    schema: Vec<SchemaEntry>,
}

#[derive(Deserialize)]
struct AnyMeta {
    #[serde(rename = "numCols")]
    num_cols: u64,
    #[serde(rename = "numRows")]
    num_rows: u64,
    #[serde(rename = "valueType")]
    value_type: Option<String>,
    schema: Option<Vec<SchemaEntry>>,
    #[serde(rename = "numNonZeros")]
    num_non_zeros: Option<i64>,
}

fn name_of(value_type: ValueType) -> Result<&'static str> {
    meta_name(value_type).ok_or_else(|| Error::NotInDialect {
        what: format!("{value_type} values"),
        reason: "the runtime has no 16-bit value types",
    })
}

fn type_of(name: &str) -> Option<ValueType> {
    ValueType::ALL
        .into_iter()
        .find(|&vt| meta_name(vt) == Some(name))
}

/// The sidecar DAPHNE writes for an object with this header; `None` for scalars, which
/// DAPHNE never writes to files.
///
/// # Errors
/// [`Error::NotInDialect`] for value types the runtime lacks.
pub fn meta_json(header: &Header) -> Result<Option<String>> {
    let json = match header {
        Header::Scalar { .. } => return Ok(None),
        Header::Frame { rows, columns } => serde_json::to_string(&FrameMeta {
            num_cols: columns.len() as u64,
            num_rows: *rows,
            schema: columns
                .iter()
                .map(|c| {
                    Ok(SchemaEntry {
                        label: c.label.clone(),
                        value_type: name_of(c.value_type)?.to_owned(),
                    })
                })
                .collect::<Result<_>>()?,
        }),
        Header::DenseMatrix {
            rows,
            cols,
            value_type,
        }
        | Header::CsrMatrix {
            rows,
            cols,
            value_type,
        } => serde_json::to_string(&MatrixMeta {
            num_cols: *cols,
            num_rows: *rows,
            value_type: name_of(*value_type)?,
        }),
    };
    json.map(Some)
        .map_err(|e| Error::invalid(format!("internal: sidecar JSON: {e}")))
}

/// Parses a sidecar's text into what it says about the object.
///
/// # Errors
/// [`Error::Sidecar`] for invalid JSON or missing fields.
pub fn parse_meta(text: &str, path: &Path) -> Result<Hint> {
    let fail = |message: String| Error::Sidecar {
        path: path.display().to_string(),
        message,
    };
    let meta: AnyMeta =
        serde_json::from_str(text).map_err(|e| fail(format!("is not a DAPHNE sidecar: {e}")))?;
    let (value_types, labels) = match (meta.value_type, meta.schema) {
        (_, Some(schema)) => (
            schema.iter().map(|e| type_of(&e.value_type)).collect(),
            Some(schema.into_iter().map(|e| e.label).collect()),
        ),
        (Some(vt), None) => (vec![type_of(&vt)], None),
        (None, None) => return Err(fail("has neither valueType nor schema".into())),
    };
    Ok(Hint {
        path: path.display().to_string(),
        rows: meta.num_rows,
        cols: meta.num_cols,
        value_types,
        labels,
        nnz: meta.num_non_zeros.and_then(|n| u64::try_from(n).ok()),
    })
}

/// Writes the sidecar DAPHNE expects beside `path` for an object with this header
/// (atomically); scalars get none.
///
/// # Errors
/// I/O errors; [`Error::NotInDialect`] for value types the runtime lacks.
pub fn write_sidecar(path: &Path, header: &Header) -> Result<()> {
    if let Some(json) = meta_json(header)? {
        super::write_atomically(&sidecar_path(path), |f| {
            std::io::Write::write_all(f, json.as_bytes())?;
            Ok(())
        })?;
    }
    Ok(())
}

/// Reads the sidecar beside `path`, if there is one.
///
/// # Errors
/// I/O errors other than a missing file; [`Error::Sidecar`].
pub fn read_sidecar(path: &Path) -> Result<Option<Hint>> {
    let meta = sidecar_path(path);
    match std::fs::read_to_string(&meta) {
        Ok(text) => parse_meta(&text, &meta).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Io(e)),
    }
}
