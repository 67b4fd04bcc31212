//! `dbdf info` and `dbdf validate`, from the file's index: headers only, then (validate,
//! `--nnz`) block by block, so any file fits in memory.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use serde_daphne::__private::io::progress::Progress;

use serde_daphne::Header;
use serde_daphne::ObjectInfo;
use serde_daphne::{BlockType, DbdfFile, Dialect};
use serde_json::json;

use crate::{emit, Failure};

fn value_types(header: &Header) -> Vec<String> {
    match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.value_type.to_string()).collect(),
        header => vec![header
            .matrix_value_type()
            .map_or("?".into(), |vt| vt.to_string())],
    }
}

fn labels(header: &Header) -> Vec<&str> {
    match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.label.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// Opens a file lazily (plain reads), naming it in errors.
pub fn open(file: &Path) -> Result<DbdfFile<serde_daphne::__private::io::FileReader>, Failure> {
    DbdfFile::open(file).map_err(|e| Failure::at(file, e))
}

/// Non-zeros of object `index`, counted block by block, reporting the bytes read through.
fn count_nonzeros<R: std::io::Read + std::io::Seek>(
    file: &mut DbdfFile<R>,
    index: usize,
    report: Option<&Progress>,
) -> serde_daphne::Result<u64> {
    let (ends, total): (Vec<u64>, u64) = (
        file.objects()[index]
            .blocks
            .iter()
            .map(|b| b.range.end)
            .collect(),
        file.file_len(),
    );
    let mut nnz = 0;
    for (block, end) in file.blocks(index)?.zip(ends) {
        nnz += block?.data.nnz();
        if let Some(report) = report {
            report(end, total);
        }
    }
    Ok(nnz)
}

/// Prints every object of `file`: from headers alone, or with `count` also the non-zeros
/// (reading every block once).
pub fn run(file: &Path, as_json: bool, count: bool) -> Result<ExitCode, Failure> {
    let mut dbdf = open(file)?;
    let size = dbdf.file_len();
    let objects: Vec<ObjectInfo> = dbdf.objects().to_vec();
    let bar = match count {
        true => crate::files::progress_bar("counting non-zeros in", file),
        false => None,
    };
    let bar = bar.map(|b| Arc::new(b) as Progress);
    let nonzeros: Option<Vec<u64>> = match count {
        true => Some(
            (0..objects.len())
                .map(|i| count_nonzeros(&mut dbdf, i, bar.as_ref()))
                .collect::<serde_daphne::Result<_>>()
                .map_err(|e| Failure::at(file, e))?,
        ),
        false => None,
    };
    let stored: u64 = objects.iter().map(ObjectInfo::stored).sum();
    let per_value = (stored > 0).then(|| size as f64 / stored as f64);
    let mut text = format!(
        "{}: {size} bytes, {} object(s), {stored} stored values{}{}\n",
        file.display(),
        objects.len(),
        per_value.map_or(String::new(), |b| format!(" ({b:.2} bytes each)")),
        nonzeros.as_ref().map_or(String::new(), |n| format!(
            ", {} non-zeros",
            n.iter().sum::<u64>()
        )),
    );
    let mut documents = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        let header = &object.header;
        let (rows, cols) = header.shape();
        let types = value_types(header);
        let labels = labels(header);
        let range = &object.range;
        let nnz = nonzeros.as_ref().map(|n| n[index]);
        text += &format!(
            "object {index} at byte {} ({} bytes): {} {rows} x {cols}, {} dialect, {} stored values{}\n",
            range.start,
            range.end - range.start,
            header.data_type(),
            object.dialect,
            object.stored(),
            nnz.map_or(String::new(), |n| format!(", {n} non-zeros")),
        );
        if labels.is_empty() {
            text += &format!("  value type: {}\n", types.join(", "));
        } else {
            let columns: Vec<String> = labels
                .iter()
                .zip(&types)
                .map(|(l, t)| format!("{l:?}: {t}"))
                .collect();
            text += &format!("  columns: {}\n", columns.join(", "));
        }
        let runtime = object.dialect == Dialect::Runtime;
        let mut blocks = Vec::new();
        for (b, block) in object.blocks.iter().enumerate() {
            let p = block.place;
            let vt = block
                .value_type
                .map_or("-".to_string(), |vt| vt.to_string());
            let length = block.range.end - block.range.start;
            let at = match runtime {
                true => format!("the runtime's single body, byte {}", block.range.start),
                false => format!("byte {}, {length} bytes", block.range.start),
            };
            let stored = match block.block_type {
                BlockType::Sparse | BlockType::UltraSparse => {
                    format!(", {} stored", block.nnz.unwrap_or(0))
                }
                _ => String::new(),
            };
            text += &format!(
                "  block {b}: at ({}, {}), {} x {}, {}, {vt}{stored}, {at}\n",
                p.row, p.col, p.rows, p.cols, block.block_type,
            );
            blocks.push(json!({
                "row": p.row, "col": p.col, "rows": p.rows, "cols": p.cols,
                "block_type": block.block_type.to_string(),
                "value_type": block.value_type.map(|vt| vt.to_string()),
                "stored_nnz": block.nnz,
                "offset": block.range.start,
                "length": length,
            }));
        }
        documents.push(json!({
            "offset": range.start,
            "length": range.end - range.start,
            "data_type": header.data_type().to_string(),
            "rows": rows,
            "cols": cols,
            "value_types": types,
            "labels": (!labels.is_empty()).then_some(labels),
            "dialect": object.dialect.to_string(),
            "stored": object.stored(),
            "nnz": nnz,
            "blocks": blocks,
        }));
    }
    if as_json {
        let document = json!({
            "file": file.display().to_string(),
            "size": size,
            "stored": stored,
            "nnz": nonzeros.map(|n| n.iter().sum::<u64>()),
            "bytes_per_stored_value": per_value,
            "objects": documents,
        });
        emit(&format!("{document:#}\n"))?;
    } else {
        emit(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks `file` strictly, block by block: `ok`, or the first problem with its byte offset
/// and exit code 1.
pub fn validate(file: &Path) -> Result<ExitCode, Failure> {
    let bar = crate::files::progress_bar("validating", file).map(|b| Arc::new(b) as Progress);
    let checked = DbdfFile::open(file).and_then(|mut f| f.validate_with_progress(bar.as_ref()));
    match checked {
        Ok(()) => {
            emit("ok\n")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            emit(&format!("{}: {e}\n", file.display()))?;
            Ok(ExitCode::FAILURE)
        }
    }
}
