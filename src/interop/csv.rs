//! CSV: numbers, one row per record; frames with a header record of labels.
//!
//! A `.meta` sidecar beside the CSV (DAPHNE's JSON, as DAPHNE reads CSV, through
//! `serde_daphne::io::meta`) gives the shape, value types and frame labels; without one, a
//! first record that is not all numbers is a header and makes a frame, and columns are typed
//! i64 when every field is an integer, f64 otherwise. Writing a CSV file also writes its
//! sidecar, so that types survive; in the runtime dialect frames get no header record (DAPHNE
//! takes the labels from the sidecar). Records are parsed and written by the `csv` crate
//! (RFC 4180 quoting, fields with line breaks), streamed: only the values are held.

use std::io::{Read, Seek, Write};

use crate::interop::input::Foreign;
use crate::interop::text::{format_value, parse_value};
use crate::io::progress::Progress;
use crate::io::DbdfFile;
use crate::model::Hint;
use crate::wire::Header;
use crate::{DataType, Error, Object, Result, Value, ValueType, Values};

const CSV: Foreign = Foreign("CSV");

/// A column (or a whole matrix, row-major) of untyped numbers: integers while every field is
/// one, then floats.
enum Numbers {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Numbers {
    fn push(&mut self, field: &str) -> Result<(), &'static str> {
        let field = field.trim();
        if let Numbers::Int(ints) = self {
            if let Ok(i) = field.parse::<i64>() {
                ints.push(i);
                return Ok(());
            }
            // Integers become floats only where the float holds them exactly.
            // (`i as f64` rounds; back to i64 it saturates, so 2^63 needs its own check.)
            let floats = ints
                .iter()
                .map(|&i| Some(i as f64).filter(|&f| f != 2f64.powi(63) && f as i64 == i))
                .collect::<Option<Vec<f64>>>()
                .ok_or("integers too large for f64 share a column with decimals; give a sidecar")?;
            *self = Numbers::Float(floats);
        }
        match self {
            Numbers::Float(floats) => floats.push(field.parse().map_err(|_| "not a number")?),
            Numbers::Int(_) => unreachable!("turned into floats above"),
        }
        Ok(())
    }

    fn into_values(self) -> Values {
        match self {
            Numbers::Int(v) => Values::I64(v),
            Numbers::Float(v) => Values::F64(v),
        }
    }
}

/// Where the values of a CSV go while it is read.
enum Columns {
    /// Typed by a sidecar: one vector per column (frames) or one row-major vector.
    Typed(Vec<Values>),
    /// Untyped: one per column (frames) or one row-major (matrices).
    Inferred(Vec<Numbers>),
}

fn is_numeric(record: &csv::StringRecord) -> bool {
    record.iter().all(|f| f.trim().parse::<f64>().is_ok())
}

/// Reads CSV, with the sidecar beside it if there is one ([`crate::io::read_sidecar`]).
///
/// # Errors
/// [`Error::ForeignInput`] naming the line (and column) and what is wrong.
pub fn read(input: impl Read, sidecar: Option<&Hint>) -> Result<Object> {
    read_text(input, sidecar).map_err(|message| CSV.error(message))
}

fn read_text(input: impl Read, sidecar: Option<&Hint>) -> Result<Object, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let mut records = reader.records().filter(|r| {
        // A line of blanks is no record (the csv crate skips empty lines itself; `""`, a
        // lone empty field, stays).
        !matches!(r, Ok(record) if record.len() == 1
            && !record[0].is_empty() && record[0].trim().is_empty())
    });
    let line_of = |record: &csv::StringRecord| record.position().map_or(0, |p| p.line());
    let next = |records: &mut dyn Iterator<Item = csv::Result<csv::StringRecord>>| {
        records
            .next()
            .transpose()
            .map_err(|e| format!("not CSV: {e}"))
    };
    let types: Option<Vec<ValueType>> = match sidecar {
        Some(hint) => Some(
            hint.value_types
                .iter()
                .map(|vt| vt.ok_or("the sidecar names a value type this tool cannot read"))
                .collect::<Result<_, _>>()?,
        ),
        None => None,
    };
    let mut first = next(&mut records)?;
    // The header: the sidecar's labels (whose record, if present, must match), or a first
    // record that is not all numbers.
    let labels: Option<Vec<String>> = match (sidecar, &first) {
        (Some(hint), Some(record))
            if hint
                .labels
                .as_ref()
                .is_some_and(|l| record.iter().eq(l.iter().map(String::as_str)))
                || !is_numeric(record) =>
        {
            if let Some(labels) = &hint.labels {
                let found: Vec<&str> = record.iter().collect();
                if found != *labels {
                    return Err(format!(
                        "line {}: the header row {found:?} differs from the sidecar's labels {labels:?}",
                        line_of(record)
                    ));
                }
            }
            first = next(&mut records)?;
            hint.labels.clone()
        }
        (Some(hint), _) => hint.labels.clone(),
        (None, Some(record)) if !is_numeric(record) => {
            let labels = record.iter().map(str::to_owned).collect();
            first = next(&mut records)?;
            Some(labels)
        }
        (None, _) => None,
    };
    let width = match (sidecar, &labels, &first) {
        (Some(hint), _, _) => hint.cols as usize,
        (None, Some(labels), _) => labels.len(),
        (None, None, Some(record)) => record.len(),
        (None, None, None) => 0,
    };
    let frame = labels.is_some();
    let lanes = if frame { width } else { 1 };
    let mut columns = match &types {
        Some(types) => Columns::Typed(
            (0..lanes)
                .map(|c| Values::new(types[if frame { c } else { 0 }]))
                .collect(),
        ),
        None => Columns::Inferred((0..lanes).map(|_| Numbers::Int(Vec::new())).collect()),
    };
    let mut rows = 0u64;
    let mut record = first;
    while let Some(fields) = record {
        let n = line_of(&fields);
        if fields.len() != width {
            return Err(format!(
                "line {n}: {} fields, expected {width}",
                fields.len()
            ));
        }
        for (c, field) in fields.iter().enumerate() {
            let lane = if frame { c } else { 0 };
            let at = |message: String| format!("line {n}, column {}: {message}", c + 1);
            match &mut columns {
                Columns::Typed(values) => {
                    let vt = values[lane].value_type();
                    let value = parse_value(field, vt)
                        .ok_or_else(|| at(format!("malformed {vt} number {field:?}")))?;
                    values[lane].push(value);
                }
                Columns::Inferred(numbers) => numbers[lane]
                    .push(field)
                    .map_err(|message| at(message.into()))?,
            }
        }
        rows += 1;
        record = next(&mut records)?;
    }
    if let Some(hint) = sidecar {
        if rows != hint.rows {
            return Err(format!(
                "the sidecar says {} rows but {rows} follow",
                hint.rows
            ));
        }
    }
    let values: Vec<Values> = match columns {
        Columns::Typed(values) => values,
        Columns::Inferred(numbers) => numbers.into_iter().map(Numbers::into_values).collect(),
    };
    match labels {
        Some(labels) => Object::frame(labels.into_iter().zip(values).collect()),
        None => {
            let values = values.into_iter().next().unwrap_or(Values::F64(Vec::new()));
            Object::dense(rows, width as u64, values)
        }
    }
    .map_err(|e| e.to_string())
}

/// Writes an object as CSV; frames get a header record unless `for_daphne`.
///
/// # Errors
/// [`Error::NotConvertible`] for values text cannot hold; objects too large for memory; I/O
/// errors.
pub fn write(object: &Object, out: &mut dyn Write, for_daphne: bool) -> Result<()> {
    let mut writer = csv::WriterBuilder::new().from_writer(out);
    if object.data_type() == DataType::Frame && !for_daphne {
        write_labels(&mut writer, object.labels())?;
    }
    write_records(&mut writer, object, 0)?;
    writer.flush()?;
    Ok(())
}

/// Writes object `index` of a lazily opened file as CSV, exactly as [`write()`] writes the
/// whole object, reading a band of about 16 MiB of rows at a time (as
/// [`DbdfFile::read_window_object`] reads them), so memory holds one band.
///
/// # Errors
/// As [`write()`], and the reads' errors.
pub fn write_file<R: Read + Seek>(
    file: &mut DbdfFile<R>,
    index: usize,
    out: &mut dyn Write,
    for_daphne: bool,
) -> Result<()> {
    write_file_in_bands(file, index, out, for_daphne, crate::io::BAND_BYTES, None)
}

/// [`write_file`], reporting the share of the object's rows written.
pub(crate) fn write_file_reporting<R: Read + Seek>(
    file: &mut DbdfFile<R>,
    index: usize,
    out: &mut dyn Write,
    for_daphne: bool,
    progress: Option<&Progress>,
) -> Result<()> {
    write_file_in_bands(
        file,
        index,
        out,
        for_daphne,
        crate::io::BAND_BYTES,
        progress,
    )
}

fn write_file_in_bands<R: Read + Seek>(
    file: &mut DbdfFile<R>,
    index: usize,
    out: &mut dyn Write,
    for_daphne: bool,
    band_bytes: u64,
    progress: Option<&Progress>,
) -> Result<()> {
    let header = crate::io::band_header(file.objects(), index)?;
    let mut writer = csv::WriterBuilder::new().from_writer(out);
    if let Header::Frame { columns, .. } = &header {
        if !for_daphne {
            write_labels(&mut writer, columns.iter().map(|c| c.label.as_str()))?;
        }
    }
    // Rows done, as shares of the object's stored bytes (what the bar shows).
    let (total, bytes) = (
        header.shape().0,
        crate::io::stored_bytes(file.objects(), index),
    );
    for rows in crate::io::row_bands(&header, band_bytes) {
        let band = file.read_window_object(index, rows.clone(), 0..header.shape().1)?;
        write_records(&mut writer, &band, rows.start)?;
        if let Some(report) = progress {
            report(
                (u128::from(bytes) * u128::from(rows.end) / u128::from(total)) as u64,
                bytes,
            );
        }
    }
    writer.flush()?;
    Ok(())
}

fn write_labels<'a, W: Write>(
    writer: &mut csv::Writer<W>,
    labels: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    // The csv crate quotes what needs it, and writes a lone empty label as "".
    let labels: Vec<&str> = labels.into_iter().collect();
    writer.write_record(labels).map_err(|e| Error::Io(e.into()))
}

/// Writes the rows of a matrix or frame, the first being row `first_row` of the object (for
/// errors).
fn write_records<W: Write>(
    writer: &mut csv::Writer<W>,
    object: &Object,
    first_row: u64,
) -> Result<()> {
    let (rows, cols) = object.shape();
    let io = |e: csv::Error| Error::Io(e.into());
    let frame = object.data_type() == DataType::Frame;
    let columns: Vec<Values> = if frame {
        object.columns()?
    } else {
        vec![object.dense_values()?]
    };
    let cell = |r: usize, c: usize| -> Option<Value> {
        match frame {
            true => columns[c].get(r),
            false => columns[0].get(r * cols as usize + c),
        }
    };
    for r in 0..rows as usize {
        for c in 0..cols as usize {
            let value = cell(r, c).ok_or_else(|| Error::invalid("a cell out of range"))?;
            let text = format_value(value).map_err(|e| {
                let r = first_row + r as u64;
                CSV.cannot_hold(format!("the value at row {r}, column {c}"), e)
            })?;
            writer.write_field(text).map_err(io)?;
        }
        writer.write_record(None::<&[u8]>).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::mtx::tests::band_fixtures;

    #[test]
    fn files_write_band_by_band_as_whole_objects_do() {
        for (name, bytes, whole) in band_fixtures() {
            for for_daphne in [false, true] {
                let mut expected = Vec::new();
                write(&whole, &mut expected, for_daphne).unwrap();
                for band_bytes in [1, 16, 40, 1 << 20] {
                    let mut file = DbdfFile::from_reader(std::io::Cursor::new(&bytes)).unwrap();
                    let mut got = Vec::new();
                    write_file_in_bands(&mut file, 0, &mut got, for_daphne, band_bytes, None)
                        .unwrap();
                    assert_eq!(got, expected, "{name} {band_bytes}");
                }
            }
        }
    }

    #[test]
    fn integer_columns_become_floats_only_exactly() {
        let mut column = Numbers::Int(Vec::new());
        for field in ["1", " -2 ", "0.5"] {
            column.push(field).unwrap();
        }
        assert_eq!(column.into_values(), Values::F64(vec![1.0, -2.0, 0.5]));
        for big in [i64::MAX, (1 << 53) + 1] {
            let mut column = Numbers::Int(Vec::new());
            column.push(&big.to_string()).unwrap();
            assert!(column.push("0.5").is_err(), "{big} became a float");
        }
        let mut exact = Numbers::Int(Vec::new());
        exact.push(&(1i64 << 60).to_string()).unwrap();
        exact.push("1.5").unwrap();
        assert_eq!(exact.into_values(), Values::F64(vec![2f64.powi(60), 1.5]));
        assert!(Numbers::Int(Vec::new()).push("x").is_err());
    }
}
