//! Writing CSV records: the header record of a frame's labels, and the rows of a matrix or
//! frame (what the whole write and the pipe's sink share).

use std::borrow::Cow;
use std::io::Write;

use super::records::CSV;
use crate::text::format_value;
use serde_daphne::{DataType, Error, Object, Result, Value, Values};

pub(super) fn write_labels<'a, W: Write>(
    writer: &mut csv::Writer<W>,
    labels: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    // The csv crate quotes what needs it, and writes a lone empty label as "".
    let labels: Vec<&str> = labels.into_iter().collect();
    writer
        .write_record(labels)
        .map_err(|e| Error::from(std::io::Error::from(e)))
}

/// Writes the rows of a matrix or frame, the first being row `first_row` of the object (for
/// errors).
pub(super) fn write_records<W: Write>(
    writer: &mut csv::Writer<W>,
    object: &Object,
    first_row: u64,
) -> Result<()> {
    let (rows, cols) = object.shape();
    let io = |e: csv::Error| Error::from(std::io::Error::from(e));
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
