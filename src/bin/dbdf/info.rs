//! `dbdf info` and `dbdf validate`.

use std::path::Path;
use std::process::ExitCode;

use serde_daphne::{Dialect, Object, Options};
use serde_json::json;

use crate::files::read_objects;
use crate::{emit, Failure};

fn value_types(object: &Object) -> Vec<String> {
    let (_, cols) = object.shape();
    match object.header() {
        serde_daphne::wire::Header::Frame { .. } => (0..cols)
            .map(|c| {
                object
                    .header()
                    .value_type_of(c)
                    .map_or("?".into(), |vt| vt.to_string())
            })
            .collect(),
        header => vec![header
            .matrix_value_type()
            .map_or("?".into(), |vt| vt.to_string())],
    }
}

/// Offsets and lengths of an object's blocks, where they exist in the file (spec dialect).
fn block_spans(object: &Object, end: u64) -> Vec<Option<(u64, u64)>> {
    let count = object.blocks().len();
    (0..count)
        .map(|i| {
            if object.dialect() == Dialect::Runtime {
                return None;
            }
            let start = object.block_offset(i)?;
            let next = if i + 1 < count {
                object.block_offset(i + 1)?
            } else {
                end
            };
            Some((start, next - start))
        })
        .collect()
}

/// Prints every object of `file`.
pub fn run(file: &Path, as_json: bool) -> Result<ExitCode, Failure> {
    let (objects, size) = read_objects(file, &Options::new())?;
    let nnz: u64 = objects.iter().map(|(o, _)| o.nnz()).sum();
    let per_nonzero = (nnz > 0).then(|| size as f64 / nnz as f64);
    let mut documents = Vec::new();
    let mut start = 0;
    let mut text = format!(
        "{}: {size} bytes, {} object(s), {nnz} non-zeros{}\n",
        file.display(),
        objects.len(),
        per_nonzero.map_or(String::new(), |b| format!(", {b:.2} bytes per non-zero"))
    );
    for (index, (object, end)) in objects.iter().enumerate() {
        let (rows, cols) = object.shape();
        let types = value_types(object);
        let labels = object.labels();
        let spans = block_spans(object, *end);
        text += &format!(
            "object {index} at byte {start} ({} bytes): {} {rows} x {cols}, {} dialect, {} non-zeros\n",
            end - start,
            object.data_type(),
            object.dialect(),
            object.nnz()
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
        let mut blocks = Vec::new();
        for (b, (block, span)) in object.blocks().iter().zip(&spans).enumerate() {
            let p = block.place;
            let vt = block
                .data
                .value_type()
                .map_or("-".to_string(), |vt| vt.to_string());
            let at = span.map_or("in the runtime's single body".to_string(), |(o, l)| {
                format!("byte {o}, {l} bytes")
            });
            text += &format!(
                "  block {b}: at ({}, {}), {} x {}, {}, {vt}, {} non-zeros, {at}\n",
                p.row,
                p.col,
                p.rows,
                p.cols,
                block.data.block_type(),
                block.data.nnz()
            );
            blocks.push(json!({
                "row": p.row, "col": p.col, "rows": p.rows, "cols": p.cols,
                "block_type": block.data.block_type().to_string(),
                "value_type": block.data.value_type().map(|vt| vt.to_string()),
                "nnz": block.data.nnz(),
                "offset": span.map(|(o, _)| o),
                "length": span.map(|(_, l)| l),
            }));
        }
        documents.push(json!({
            "offset": start,
            "length": end - start,
            "data_type": object.data_type().to_string(),
            "rows": rows,
            "cols": cols,
            "value_types": types,
            "labels": (!labels.is_empty()).then_some(labels),
            "dialect": match object.dialect() { Dialect::Spec => "spec", Dialect::Runtime => "daphne" },
            "nnz": object.nnz(),
            "blocks": blocks,
        }));
        start = *end;
    }
    if as_json {
        let document = json!({
            "file": file.display().to_string(),
            "size": size,
            "nnz": nnz,
            "bytes_per_nonzero": per_nonzero,
            "objects": documents,
        });
        emit(&format!("{document:#}\n"))?;
    } else {
        emit(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks `file` strictly: `ok`, or the first problem with its byte offset and exit code 1.
pub fn validate(file: &Path) -> Result<ExitCode, Failure> {
    match read_objects(file, &Options::new()) {
        Ok(_) => {
            emit("ok\n")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            emit(&format!("{}: {}\n", file.display(), failure.message()))?;
            Ok(ExitCode::FAILURE)
        }
    }
}
