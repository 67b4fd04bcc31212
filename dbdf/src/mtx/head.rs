//! The lines before a MatrixMarket file's data: the banner, comments (ours may name the
//! exact value type) and the size line.

use std::io::BufRead;

use super::entries::Symmetry;
use crate::input::Foreign;
use serde_daphne::ValueType;

pub(super) const MTX: Foreign = Foreign("MatrixMarket");

/// The comment with which this crate's output names the exact value type.
pub(super) const TYPE_COMMENT: &str = "% serde_daphne value type: ";

/// Reads the banner, comments and size line: their text, the bytes and the lines read.
pub(super) fn read_head(reader: &mut impl BufRead) -> Result<(String, u64, usize), String> {
    let mut head = String::new();
    let (mut at, mut lines) = (0u64, 0usize);
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        at += n as u64;
        lines += 1;
        head.push_str(&line);
        let text = line.trim();
        if lines > 1 && !text.starts_with('%') && !text.is_empty() {
            break;
        }
    }
    Ok((head, at, lines))
}

/// What the lines before the data say.
pub(super) struct Head {
    pub(super) coordinate: bool,
    pub(super) value_type: ValueType,
    pub(super) typed_by_comment: bool,
    pub(super) pattern: bool,
    pub(super) symmetry: Symmetry,
    pub(super) size_line: usize,
    pub(super) dims: Vec<u64>,
}

/// Parses the banner, comments (ours may name the exact value type) and the size line.
pub(super) fn parse_head(text: &str) -> Result<Head, String> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (_, banner) = lines.next().ok_or("empty file: no %%MatrixMarket banner")?;
    let words: Vec<String> = banner.split_whitespace().map(str::to_lowercase).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(format!(
            "line 1: not a MatrixMarket matrix banner: {banner:?}"
        ));
    }
    let coordinate = match words[2].as_str() {
        "coordinate" => true,
        "array" => false,
        other => return Err(format!("line 1: unknown format {other:?}")),
    };
    let mut value_type = match words[3].as_str() {
        "real" | "double" => ValueType::F64,
        "integer" => ValueType::I64,
        "pattern" if coordinate => ValueType::U8,
        "complex" => return Err("line 1: complex values have no DAPHNE value type".into()),
        other => return Err(format!("line 1: unknown field {other:?}")),
    };
    let pattern = words[3] == "pattern";
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" | "hermitian" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::Skew,
        other => return Err(format!("line 1: unknown symmetry {other:?}")),
    };
    let mut typed_by_comment = false;
    let (size_line, size) = loop {
        let (n, line) = lines.next().ok_or("no size line")?;
        if let Some(name) = line.strip_prefix(TYPE_COMMENT) {
            if !pattern {
                value_type = name
                    .trim()
                    .parse::<ValueType>()
                    .map_err(|_| format!("line {n}: unknown value type {name:?}"))?;
                typed_by_comment = true;
            }
        } else if !line.starts_with('%') && !line.trim().is_empty() {
            break (n, line);
        }
    };
    let dims: Vec<u64> = size
        .split_whitespace()
        .map(|w| w.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("line {size_line}: malformed size line {size:?}"))?;
    Ok(Head {
        coordinate,
        value_type,
        typed_by_comment,
        pattern,
        symmetry,
        size_line,
        dims,
    })
}
