//! CSV: numbers, one row per line; frames with a header row of labels.
//!
//! A `.meta` sidecar beside the CSV (DAPHNE's JSON, as DAPHNE reads CSV) gives the shape,
//! value types and frame labels; without one, a first row that is not all numbers is a header
//! and makes a frame, and columns are typed i64 when every field is an integer, f64 otherwise.
//! Writing a CSV file also writes its sidecar, so that types survive; in the runtime dialect
//! frames get no header row (DAPHNE takes the labels from the sidecar).

use std::io::Write;

use serde_daphne::{DataType, Object, ValueType, Values};

use super::{format_value, infer_type, parse_value, type_from_name, type_name};

/// What a sidecar says: the shape, and the value type per column (or one for a matrix).
pub struct Sidecar {
    rows: u64,
    cols: u64,
    types: Vec<ValueType>,
    labels: Option<Vec<String>>,
}

/// Parses a sidecar's JSON.
///
/// # Errors
/// A message saying what is missing or unknown.
pub fn parse_sidecar(text: &str) -> Result<Sidecar, String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let number = |key: &str| {
        json[key]
            .as_u64()
            .ok_or_else(|| format!("no numeric {key:?}"))
    };
    let (rows, cols) = (number("numRows")?, number("numCols")?);
    let name_type = |name: &serde_json::Value| {
        let name = name.as_str().unwrap_or("");
        type_from_name(name).ok_or_else(|| format!("unknown value type {name:?}"))
    };
    if let Some(schema) = json["schema"].as_array() {
        let types = schema
            .iter()
            .map(|c| name_type(&c["valueType"]))
            .collect::<Result<_, _>>()?;
        let labels = schema
            .iter()
            .map(|c| c["label"].as_str().unwrap_or("").to_owned())
            .collect();
        return Ok(Sidecar {
            rows,
            cols,
            types,
            labels: Some(labels),
        });
    }
    Ok(Sidecar {
        rows,
        cols,
        types: vec![name_type(&json["valueType"])?],
        labels: None,
    })
}

/// The sidecar for an object written as CSV.
pub fn sidecar_for(object: &Object) -> String {
    let (rows, cols) = object.shape();
    let json = match object.header() {
        serde_daphne::wire::Header::Frame { columns, .. } => serde_json::json!({
            "numCols": cols,
            "numRows": rows,
            "schema": columns.iter().map(|c| serde_json::json!({
                "label": c.label,
                "valueType": type_name(c.value_type),
            })).collect::<Vec<_>>(),
        }),
        header => serde_json::json!({
            "numCols": cols,
            "numRows": rows,
            "valueType": type_name(header.matrix_value_type().unwrap_or(ValueType::F64)),
        }),
    };
    json.to_string()
}

/// Splits a CSV line into fields (RFC 4180 quotes).
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (ch, _) => out.last_mut().unwrap().push(ch),
        }
    }
    out
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) || field.trim() != field {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Reads CSV text, with its sidecar if there is one.
///
/// # Errors
/// A message naming the line (and column) and what is wrong.
pub fn read(text: &str, sidecar: Option<&Sidecar>) -> Result<Object, String> {
    let mut rows: Vec<(usize, Vec<String>)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, fields(l)))
        .collect();
    let numeric = |row: &[String]| row.iter().all(|f| f.trim().parse::<f64>().is_ok());
    let header = match sidecar {
        Some(s) => {
            if rows.len() as u64 == s.rows + 1 {
                let (n, first) = rows.remove(0);
                if let Some(labels) = &s.labels {
                    if &first != labels {
                        return Err(format!("line {n}: the header row {first:?} differs from the sidecar's labels {labels:?}"));
                    }
                }
            }
            if rows.len() as u64 != s.rows {
                return Err(format!(
                    "the sidecar says {} rows but {} follow",
                    s.rows,
                    rows.len()
                ));
            }
            s.labels.clone()
        }
        None => match rows.first() {
            Some((_, first)) if !numeric(first) => Some(rows.remove(0).1),
            _ => None,
        },
    };
    let width = match (sidecar, &header, rows.first()) {
        (Some(s), _, _) => s.cols as usize,
        (None, Some(labels), _) => labels.len(),
        (None, None, Some((_, first))) => first.len(),
        (None, None, None) => 0,
    };
    if let Some((n, row)) = rows.iter().find(|(_, r)| r.len() != width) {
        return Err(format!("line {n}: {} fields, expected {width}", row.len()));
    }
    let types: Vec<ValueType> = match sidecar {
        Some(s) if s.labels.is_some() => s.types.clone(),
        Some(s) => vec![s.types[0]; width],
        None => {
            let column_type = |c: usize| {
                infer_type(rows.iter().map(|(_, r)| r[c].as_str())).ok_or_else(|| {
                    let (n, _) = rows
                        .iter()
                        .find(|(_, r)| r[c].trim().parse::<f64>().is_err())
                        .expect("a field failed to parse");
                    format!("line {n}, column {}: not a number", c + 1)
                })
            };
            let per_column = (0..width).map(column_type).collect::<Result<Vec<_>, _>>()?;
            if header.is_none() {
                // A matrix has one value type: the widest of its columns'.
                let vt = per_column
                    .iter()
                    .copied()
                    .max_by_key(|&vt| vt == ValueType::F64);
                vec![vt.unwrap_or(ValueType::F64); width]
            } else {
                per_column
            }
        }
    };
    let parse = |n: usize, c: usize, field: &str, vt: ValueType| {
        parse_value(field, vt).ok_or_else(|| {
            format!(
                "line {n}, column {}: malformed {vt} number {field:?}",
                c + 1
            )
        })
    };
    if let Some(labels) = header {
        let mut columns: Vec<(String, Values)> = labels
            .into_iter()
            .zip(&types)
            .map(|(l, &vt)| (l, Values::new(vt)))
            .collect();
        for (n, row) in &rows {
            for (c, field) in row.iter().enumerate() {
                let value = parse(*n, c, field, types[c])?;
                columns[c].1.push(value);
            }
        }
        return Object::frame(columns).map_err(|e| e.to_string());
    }
    let vt = types.first().copied().unwrap_or(ValueType::F64);
    let mut values = Values::new(vt);
    for (n, row) in &rows {
        for (c, field) in row.iter().enumerate() {
            values.push(parse(*n, c, field, vt)?);
        }
    }
    Object::dense(rows.len() as u64, width as u64, values).map_err(|e| e.to_string())
}

/// Writes an object as CSV; frames get a header row unless `for_daphne`.
///
/// # Errors
/// Values text cannot hold; objects too large for memory.
pub fn write(object: &Object, out: &mut dyn Write, for_daphne: bool) -> Result<(), String> {
    let (rows, cols) = object.shape();
    let columns: Vec<Values> = if object.data_type() == DataType::Frame {
        if !for_daphne {
            let labels: Vec<String> = object.labels().iter().map(|l| quote(l)).collect();
            writeln!(out, "{}", labels.join(",")).map_err(|e| e.to_string())?;
        }
        object.columns().map_err(|e| e.to_string())?
    } else {
        let all = object.dense_values().map_err(|e| e.to_string())?;
        vec![all]
    };
    let frame = object.data_type() == DataType::Frame;
    let mut line = String::new();
    for r in 0..rows as usize {
        line.clear();
        for c in 0..cols as usize {
            let value = if frame {
                columns[c].get(r)
            } else {
                columns[0].get(r * cols as usize + c)
            };
            let value = value.ok_or("internal: cell out of range")?;
            if c > 0 {
                line.push(',');
            }
            line.push_str(&format_value(value).map_err(|e| format!("row {r}, column {c}: {e}"))?);
        }
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}
