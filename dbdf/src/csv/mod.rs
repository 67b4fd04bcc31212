//! CSV: numbers, one row per record; frames with a header record of labels.
//!
//! A `.meta` sidecar beside the CSV (DAPHNE's JSON, as DAPHNE reads CSV, through
//! `serde_daphne::__private::io::meta`) gives the shape, value types and frame labels; without one, a
//! first record that is not all numbers is a header and makes a frame, and columns are typed
//! i64 when every field is an integer, f64 otherwise. Writing a CSV file also writes its
//! sidecar, so that types survive; in the runtime dialect frames get no header record (DAPHNE
//! takes the labels from the sidecar). Records are parsed and written by the `csv` crate
//! (RFC 4180 quoting, fields with line breaks), streamed: only the values are held, and
//! [`to_dbdf`] holds one band of them (it reads the file twice). The whole read is in
//! `read.rs`, the rules both share (header, width, typing) in `records.rs`.

use serde_daphne::__private::error::ErrorImpl;
use std::borrow::Cow;
use std::io::Write;

mod bands;
mod pipe;
mod read;
mod records;
mod stream;

pub use self::pipe::{CsvSink, CsvSource};
pub use self::read::read;
use self::records::CSV;
pub use self::stream::to_dbdf;
use crate::text::format_value;
use serde_daphne::{DataType, Error, Object, Result, Value, Values};

/// Writes an object as CSV; frames get a header record unless `for_daphne`.
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for values text cannot hold; objects too large for memory; I/O
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

fn write_labels<'a, W: Write>(
    writer: &mut csv::Writer<W>,
    labels: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    // The csv crate quotes what needs it, and writes a lone empty label as "".
    let labels: Vec<&str> = labels.into_iter().collect();
    writer
        .write_record(labels)
        .map_err(|e| Error::from(ErrorImpl::Io(e.into())))
}

/// Writes the rows of a matrix or frame, the first being row `first_row` of the object (for
/// errors).
fn write_records<W: Write>(
    writer: &mut csv::Writer<W>,
    object: &Object,
    first_row: u64,
) -> Result<()> {
    let (rows, cols) = object.shape();
    let io = |e: csv::Error| Error::from(ErrorImpl::Io(e.into()));
    let frame = object.data_type() == DataType::Frame;
    let columns: Vec<Cow<'_, Values>> = if frame {
        object.columns()?.into_iter().map(Cow::Owned).collect()
    } else {
        vec![object.dense_values_ref()?]
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
