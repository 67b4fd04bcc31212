//! What a read of one object gives Spark, planned on the driver: its type and columns, the
//! files its rows are in, and the row counts of the partitions that read it in parallel.

use std::path::Path;

use serde_daphne::{Header, Result, ValueType};
use serde_json::{json, Value};

use dbdf::plan::Stamp;

/// The plan of a read of object `object` of the file at `path`, or of the object of the
/// folder of DAPHNE's segments at `path`, as JSON:
/// `{"dataType", "rows", "cols", "names" (the columns' names, `dbdf::plan::column_names`),
/// "valueTypes" and "sparkTypes" (one per column; one for a matrix),
/// "pieces": [{"path", "object", "first", "rows", "size", "mtimeNs"}],
/// "parts": [rows, ...]}`.
///
/// # Errors
/// A file that is missing or malformed; an object index past the file's last; a folder
/// whose segments disagree.
pub fn describe(path: &Path, object: usize, dialect: Option<&str>) -> Result<String> {
    let options = serde_daphne::Options {
        dialect: dialect.map(str::parse).transpose()?,
        ..serde_daphne::Options::new()
    };
    let mut pieces = Vec::new();
    // A folder: where each segment's rows start, and the rows of all of them.
    let (first_file, position, segments) = if path.is_dir() {
        let source = dbdf::segments::source(path)?;
        let mut starts = Vec::new();
        let mut end = 0;
        for (file, rows) in dbdf::pipe::Source::files(&source).unwrap_or_default() {
            pieces.push(piece(
                Path::new(&file),
                0,
                rows.start,
                rows.end - rows.start,
            )?);
            starts.push(rows.start);
            end = rows.end;
        }
        (
            dbdf::segments::segment_path(path, 1)?,
            0,
            Some((end, starts)),
        )
    } else {
        (path.to_path_buf(), object, None)
    };
    let file = options.open(&first_file)?;
    let info = file.objects().get(position).cloned().ok_or_else(|| {
        serde_daphne::Error::invalid(format!(
            "{}: no object {position}; the file holds {}",
            first_file.display(),
            file.objects().len()
        ))
    })?;
    let (rows, starts) = match segments {
        Some(segments) => segments,
        None => {
            let rows = info.header.rows();
            pieces.push(piece(path, object, 0, rows)?);
            (rows, Vec::new())
        }
    };
    let parts = dbdf::plan::partitions(&info, rows, &starts).0;
    let mut plan = json!({
        "dataType": info.header.data_type().to_string(),
        "rows": rows,
        "cols": info.header.cols(),
        "pieces": pieces,
        "parts": parts,
    });
    dbdf::plan::check_table_width(&info.header, &path.display().to_string())?;
    let value_types: Vec<ValueType> = match &info.header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.value_type).collect(),
        header => header.matrix_value_type().into_iter().collect(),
    };
    plan["names"] = dbdf::plan::column_names(&info.header).into();
    plan["valueTypes"] = value_types.iter().map(ToString::to_string).collect();
    plan["sparkTypes"] = value_types
        .iter()
        .map(|&vt| dbdf::plan::spark_type(vt))
        .collect();
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
