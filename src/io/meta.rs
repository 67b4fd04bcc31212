//! DAPHNE's `.meta` sidecars: the JSON file the runtime's `read` kernel needs beside every
//! `.dbdf` it reads, and that its `write` kernel writes.
//!
//! Written exactly as DAPHNE's `MetaDataParser` does: compact JSON, keys sorted, no trailing
//! newline: `{"numCols":4,"numRows":3,"valueType":"f64"}` for dense matrices,
//! `{"numCols":2,"numRows":3,"schema":[{"label":"a","valueType":"si64"},...]}` for frames.
//! CSR matrices also get `numNonZeros` (`{"numCols":6,"numNonZeros":7,"numRows":5,...}`),
//! which DAPHNE's own write kernel leaves out: without it DaphneDSL's `readMatrix` types
//! every `.dbdf` as a DenseMatrix and fails on a CSR file (`DT mismatch`); with it, a matrix
//! sparser than DAPHNE's threshold is typed CSR under `daphne --select-matrix-repr`.
//! Read leniently: any key order and whitespace, unknown keys ignored.

use crate::error::ErrorDetails;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::Meta;
use crate::wire::runtime::{meta_name, skim};
use crate::wire::{Header, ValueType};

/// The sidecar's path: the data file's path with `.meta` appended.
pub fn sidecar_path(path: impl AsRef<Path>) -> PathBuf {
    super::appended(path.as_ref(), ".meta")
}

/// Where a segmented object lives (DAPHNE's `HDFSMetaData`): the local sidecar of a
/// folder of segments names it.
#[derive(Serialize, Deserialize)]
struct HdfsMeta {
    #[serde(rename = "HDFSFilename")]
    filename: String,
    #[serde(rename = "isHDFS")]
    is_hdfs: bool,
}

#[derive(Serialize)]
struct MatrixMeta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    hdfs: Option<HdfsMeta>,
    #[serde(rename = "numCols")]
    num_cols: u64,
    #[serde(rename = "numNonZeros", skip_serializing_if = "Option::is_none")]
    num_non_zeros: Option<u64>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    hdfs: Option<HdfsMeta>,
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
    hdfs: Option<HdfsMeta>,
}

fn name_of(value_type: ValueType) -> Result<&'static str> {
    meta_name(value_type).ok_or_else(|| {
        Error::from(ErrorDetails::NotInDialect {
            what: format!("{value_type} values"),
            reason: "the runtime has no 16-bit value types",
        })
    })
}

fn type_of(name: &str) -> Option<ValueType> {
    ValueType::ALL
        .into_iter()
        .find(|&vt| meta_name(vt) == Some(name))
}

/// The sidecar for an object with this header; `nnz`, where given, is written as
/// `numNonZeros` (this crate gives it for CSR matrices); `None` for scalars, which DAPHNE
/// never writes to files.
///
/// # Errors
/// [`crate::ErrorKind::NotInDialect`] for value types the runtime lacks.
pub fn meta_json(header: &Header, nnz: Option<u64>) -> Result<Option<String>> {
    meta_json_with(header, nnz, None)
}

/// [`meta_json`], with the `hdfs` key of a segmented object's local sidecar when `hdfs` names
/// its folder.
fn meta_json_with(header: &Header, nnz: Option<u64>, hdfs: Option<&str>) -> Result<Option<String>> {
    let hdfs = hdfs.map(|filename| HdfsMeta {
        filename: filename.to_owned(),
        is_hdfs: true,
    });
    let json = match header {
        Header::Scalar { .. } => return Ok(None),
        Header::Frame { rows, columns } => serde_json::to_string(&FrameMeta {
            hdfs,
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
            hdfs,
            num_cols: *cols,
            num_non_zeros: nnz,
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
/// [`crate::ErrorKind::Sidecar`] for invalid JSON or missing fields.
pub fn parse_meta(text: &str, path: &Path) -> Result<Meta> {
    let fail = |message: String| {
        Error::from(ErrorDetails::Sidecar {
            path: path.display().to_string(),
            message,
        })
    };
    let meta: AnyMeta =
        serde_json::from_str(text).map_err(|e| fail(format!("is not a DAPHNE sidecar: {e}")))?;
    let (value_types, labels) = match (meta.value_type, meta.schema) {
        (_, Some(schema)) if schema.len() as u64 != meta.num_cols => {
            return Err(fail(format!(
                "has {} schema entries for numCols {}",
                schema.len(),
                meta.num_cols
            )))
        }
        (_, Some(schema)) => (
            schema.iter().map(|e| type_of(&e.value_type)).collect(),
            Some(schema.into_iter().map(|e| e.label).collect()),
        ),
        (Some(vt), None) => (vec![type_of(&vt)], None),
        (None, None) => return Err(fail("has neither valueType nor schema".into())),
    };
    Ok(Meta {
        path: path.display().to_string(),
        rows: meta.num_rows,
        cols: meta.num_cols,
        value_types,
        labels,
        nnz: meta.num_non_zeros.and_then(|n| u64::try_from(n).ok()),
        hdfs: meta.hdfs.filter(|h| h.is_hdfs).map(|h| h.filename),
    })
}

/// The sidecar for the runtime-dialect object whose encoding starts with `prefix` and is
/// `total` bytes long: from its header, with `numNonZeros` for CSR; `None` when the bytes are
/// not exactly one object DAPHNE reads from a file (several objects, a scalar).
pub(crate) fn runtime_meta_json(prefix: &[u8], total: u64) -> Result<Option<String>> {
    match skim(prefix).filter(|s| s.len == u128::from(total)) {
        Some(object) => meta_json(&object.header, object.nnz),
        None => Ok(None),
    }
}

/// The sidecar for the runtime-dialect file `file` (read from its start, whatever the
/// handle's position), as [`runtime_meta_json`] makes it.
pub(crate) fn runtime_meta_of(file: &std::fs::File) -> Result<Option<String>> {
    use std::io::{Read, Seek, SeekFrom};
    let total = file.metadata()?.len();
    let mut reader = file;
    reader.seek(SeekFrom::Start(0))?;
    let mut prefix = Vec::new();
    reader
        .take(super::PREFIX_LEN as u64)
        .read_to_end(&mut prefix)?;
    runtime_meta_json(&prefix, total)
}

/// The text of the local sidecar of the folder of segments at `path` (DAPHNE's segmented
/// layout, `NAME.hdfs/NAME.hdfs_segment_<i>`, its sidecar `NAME.hdfs.meta`): the whole
/// object's header, and the `hdfs` key naming the folder as DAPHNE's write kernel does,
/// `/NAME.hdfs` (the root of its HDFS):
/// `{"hdfs":{"HDFSFilename":"/m.dbdf.hdfs","isHDFS":true},"numCols":4,"numRows":3,"valueType":"f64"}`.
/// [`crate::lowlevel::FileSet::segments_sidecar`] writes it.
///
/// # Errors
/// [`crate::ErrorKind::NotInDialect`] for value types the runtime lacks;
/// [`crate::ErrorKind::InvalidValue`] for a scalar or a path without a file name.
pub fn segments_meta(path: impl AsRef<Path>, header: &Header) -> Result<String> {
    let path = path.as_ref();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::invalid(format!("{}: no folder name", path.display())))?;
    meta_json_with(header, None, Some(&format!("/{name}")))?
        .ok_or_else(|| Error::invalid("a scalar has no segments"))
}

/// Reads the sidecar beside `path`, if there is one.
///
/// # Errors
/// I/O errors other than a missing file; [`crate::ErrorKind::Sidecar`].
pub fn read_sidecar(path: impl AsRef<Path>) -> Result<Option<Meta>> {
    let meta = sidecar_path(path);
    match std::fs::read_to_string(&meta) {
        Ok(text) => parse_meta(&text, &meta).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ErrorDetails::Io(e).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local sidecar of DAPHNE's `doc/HDFSUsage.md` ("Writing to HDFS": `randomSet.csv.hdfs.meta`,
    /// compact as `MetaDataParser::writeMetaDataToString` dumps it), read back.
    #[test]
    fn segments_sidecar_as_daphne_writes_it() {
        let dir = std::env::temp_dir().join(format!("segments_meta_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let folder = dir.join("randomSet.csv.hdfs");
        let header = Header::matrix(crate::DataType::DenseMatrix, 10, 10, ValueType::F64);
        let text = segments_meta(&folder, &header).unwrap();
        std::fs::write(sidecar_path(&folder), &text).unwrap();
        assert_eq!(
            text,
            r#"{"hdfs":{"HDFSFilename":"/randomSet.csv.hdfs","isHDFS":true},"numCols":10,"numRows":10,"valueType":"f64"}"#
        );
        let meta = read_sidecar(&folder).unwrap().unwrap();
        assert_eq!(meta.hdfs.as_deref(), Some("/randomSet.csv.hdfs"));
        assert_eq!((meta.rows, meta.cols), (10, 10));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
