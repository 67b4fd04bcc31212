//! How `info` describes an object's header in text and JSON, for DAPHNE files
//! (`info.rs`) and every other format (`inputs.rs`) alike.

use serde_daphne::Header;

/// The value type of a matrix, or of each column of a frame.
pub fn value_types(header: &Header) -> Vec<String> {
    match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.value_type.to_string()).collect(),
        header => vec![header
            .matrix_value_type()
            .map_or("?".into(), |vt| vt.to_string())],
    }
}

/// The line of `info` that gives a matrix's value type or a frame's labelled columns.
pub fn types_line(header: &Header) -> String {
    let (labels, types) = (labels(header), value_types(header));
    if labels.is_empty() {
        return format!("  value type: {}\n", types.join(", "));
    }
    let columns: Vec<String> = labels
        .iter()
        .zip(&types)
        .map(|(l, t)| format!("{l:?}: {t}"))
        .collect();
    format!("  columns: {}\n", columns.join(", "))
}

/// A frame's column labels (none for a matrix).
pub fn labels(header: &Header) -> Vec<&str> {
    match header {
        Header::Frame { columns, .. } => columns.iter().map(|c| c.label.as_str()).collect(),
        _ => Vec::new(),
    }
}
