//! What a read of one object gives Spark, planned on the driver: its type and columns, the
//! files its rows are in, and the row counts of the partitions that read it in parallel.

use std::path::Path;

use serde_daphne::{Header, ObjectInfo, Result};
use serde_json::{json, Value};

use crate::files::{options, Stamp};

/// Rows per partition of an object stored as one block: about this many bytes of cells.
const BAND_BYTES: u64 = 128 << 20;

/// The plan of a read of object `object` of the file at `path`, or of the object of the
/// folder of DAPHNE's segments at `path`, as JSON:
/// `{"dataType", "rows", "cols", "labels" (frames), "valueTypes" (one per column; one for
/// a matrix), "pieces": [{"path", "object", "first", "rows", "size", "mtimeNs"}],
/// "parts": [rows, ...]}`.
///
/// # Errors
/// A file that is missing or malformed; an object index past the file's last; a folder
/// whose segments disagree.
pub fn describe(path: &Path, object: usize, dialect: Option<&str>) -> Result<String> {
    let options = options(dialect)?;
    let mut pieces = Vec::new();
    // A folder: where each segment's rows start, and the rows of all of them.
    let (first_file, position, segments) = if path.is_dir() {
        let source = dbdf::segments::source(path)?;
        let mut starts = Vec::new();
        let mut end = 0;
        for (k, rows) in source.segment_rows().into_iter().enumerate() {
            let file = dbdf::segments::segment_path(path, k + 1)?;
            pieces.push(piece(&file, 0, rows.start, rows.end - rows.start)?);
            starts.push(rows.start);
            end = rows.end;
        }
        (
            dbdf::segments::segment_path(path, 1)?,
            0,
            Some((starts, end)),
        )
    } else {
        (path.to_path_buf(), object, None)
    };
    let file = serde_daphne::DbdfFile::open_with(&first_file, &options)?;
    let info = file.objects().get(position).cloned().ok_or_else(|| {
        serde_daphne::Error::invalid(format!(
            "{}: no object {position}; the file holds {}",
            first_file.display(),
            file.objects().len()
        ))
    })?;
    let (rows, parts) = match segments {
        Some((starts, rows)) if starts.len() > 1 => (rows, grid(&starts, rows)),
        Some((_, rows)) => (rows, row_parts(&info, rows)),
        None => {
            let rows = info.header.rows();
            pieces.push(piece(path, object, 0, rows)?);
            (rows, row_parts(&info, rows))
        }
    };
    let mut plan = json!({
        "dataType": info.header.data_type().to_string(),
        "rows": rows,
        "cols": info.header.cols(),
        "pieces": pieces,
        "parts": parts,
    });
    match &info.header {
        Header::Frame { columns, .. } => {
            plan["labels"] = columns.iter().map(|c| c.label.clone()).collect();
            plan["valueTypes"] = columns.iter().map(|c| c.value_type.to_string()).collect();
        }
        header => {
            let vt = header.matrix_value_type().map(|vt| vt.to_string());
            plan["valueTypes"] = vt.into_iter().collect();
        }
    }
    Ok(plan.to_string())
}

fn piece(file: &Path, object: usize, first: u64, rows: u64) -> Result<Value> {
    let stamp = Stamp::of(file)?;
    Ok(json!({
        "path": file.to_string_lossy(),
        "object": object,
        "first": first,
        "rows": rows,
        "size": stamp.size,
        "mtimeNs": stamp.mtime_ns,
    }))
}

/// The rows of each partition: the file's rows of tiles where its blocks tile it, else bands
/// of about [`BAND_BYTES`].
fn row_parts(info: &ObjectInfo, rows: u64) -> Vec<u64> {
    let mut starts: Vec<u64> = info.blocks.iter().map(|b| b.place.row).collect();
    starts.sort_unstable();
    starts.dedup();
    if starts.len() > 1 {
        return grid(&starts, rows);
    }
    let per = (BAND_BYTES / row_bytes(info, rows)).max(1);
    let mut parts: Vec<u64> = (0..rows)
        .step_by(per as usize)
        .map(|s| per.min(rows - s))
        .collect();
    if parts.is_empty() {
        parts.push(0);
    }
    parts
}

/// Part sizes along `n` rows from the rows where blocks (or segments) start.
fn grid(starts: &[u64], n: u64) -> Vec<u64> {
    let mut edges: Vec<u64> = starts.iter().copied().filter(|&s| 0 < s && s < n).collect();
    edges.push(0);
    edges.push(n);
    edges.sort_unstable();
    edges.dedup();
    let parts: Vec<u64> = edges.windows(2).map(|w| w[1] - w[0]).collect();
    if parts.is_empty() {
        vec![0]
    } else {
        parts
    }
}

/// About how many bytes a row of the object takes.
fn row_bytes(info: &ObjectInfo, rows: u64) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::grid;

    #[test]
    fn parts_end_where_blocks_start() {
        assert_eq!(grid(&[0, 2048, 4096], 5000), vec![2048, 2048, 904]);
        assert_eq!(grid(&[0], 0), vec![0]);
        assert_eq!(grid(&[0, 10], 10), vec![10]);
    }
}
