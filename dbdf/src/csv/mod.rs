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
use std::io::{Read, Seek, Write};

mod bands;
mod read;
mod records;
mod stream;

pub use self::read::read;
use self::records::CSV;
pub use self::stream::to_dbdf;
pub(crate) use self::stream::to_dbdf_reporting;
use crate::text::format_value;
use serde_daphne::__private::io::progress::Progress;
use serde_daphne::__private::io::DbdfFile;
use serde_daphne::__private::wire::Header;
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
    write_file_in_bands(
        file,
        index,
        out,
        for_daphne,
        serde_daphne::__private::io::BAND_BYTES,
        None,
    )
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
        serde_daphne::__private::io::BAND_BYTES,
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
    let header = serde_daphne::__private::io::band_header(file.objects(), index)?;
    let mut writer = csv::WriterBuilder::new().from_writer(out);
    if let Header::Frame { columns, .. } = &header {
        if !for_daphne {
            write_labels(&mut writer, columns.iter().map(|c| c.label.as_str()))?;
        }
    }
    // Rows done, as shares of the object's stored bytes (what the bar shows).
    let (total, bytes) = (
        header.shape().0,
        serde_daphne::__private::io::stored_bytes(file.objects(), index),
    );
    for rows in serde_daphne::__private::io::row_bands(&header, bytes, band_bytes) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mtx::tests::band_fixtures;

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
}
