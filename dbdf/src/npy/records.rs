//! Record arrays (structured dtypes of numeric fields) as frames: each field a column with
//! its name as the label, read from records aligned or packed, either byte order; written
//! packed and little-endian, as `numpy.save` writes `np.dtype([('a', '<f8'), ...])`.

use super::{descr, Descr, Record, NPY};
use crate::input::decode_values;
use serde_daphne::with_values;
use serde_daphne::Column;
use serde_daphne::Header;
use serde_daphne::Result;
use serde_daphne::Values;

/// The frame a record array of `rows` records is.
pub(crate) fn frame_header(rows: u64, record: &Record) -> Header {
    Header::Frame {
        rows,
        columns: record
            .fields
            .iter()
            .map(|f| Column {
                label: f.name.clone(),
                value_type: f.value_type(),
            })
            .collect(),
    }
}

/// The columns `fields` of whole records in `bytes` (which start at byte `offset` of the
/// input, for errors): each field gathered, put in the host's order, bools checked.
pub(crate) fn decode_columns(
    bytes: &[u8],
    record: &Record,
    fields: std::ops::Range<usize>,
    offset: u64,
) -> Result<Vec<Values>> {
    let rows = bytes.len() / record.size.max(1);
    record.fields[fields]
        .iter()
        .map(|field| {
            let size = field.descr.item_size();
            let mut raw = Vec::with_capacity(rows * size);
            for r in 0..rows {
                let at = r * record.size + field.offset;
                raw.extend_from_slice(&bytes[at..at + size]);
            }
            match field.descr {
                Descr::Number(vt, big) => {
                    if big && size > 1 {
                        raw.chunks_exact_mut(size).for_each(<[u8]>::reverse);
                    }
                    decode_values(vt, &raw)
                }
                _ => match raw.iter().position(|&b| b > 1) {
                    Some(r) => Err(NPY.at(
                        offset as usize + r * record.size + field.offset,
                        format!(
                            "the bool value {} of field {:?} is neither 0 nor 1",
                            raw[r], field.name
                        ),
                    )),
                    None => Ok(Values::U8(raw)),
                },
            }
        })
        .collect()
}

/// The `descr` of the packed record a frame's `columns` are written as.
pub(crate) fn frame_descr(columns: &[Column]) -> String {
    super::header::record_descr(
        columns
            .iter()
            .map(|c| (c.label.as_str(), descr(c.value_type))),
    )
}

/// Appends the records of equally long `columns` (packed, little-endian) to `out`.
pub(crate) fn encode_records(columns: &[Values], out: &mut Vec<u8>) {
    let rows = columns.first().map_or(0, Values::len);
    let sizes: Vec<usize> = columns.iter().map(|c| c.value_type().size()).collect();
    let record: usize = sizes.iter().sum();
    let start = out.len();
    out.resize(start + rows * record, 0);
    let mut offset = 0;
    for (column, size) in columns.iter().zip(sizes) {
        with_values!(column, v => {
            for (r, x) in v.iter().enumerate() {
                let at = start + r * record + offset;
                let bytes = bytemuck::bytes_of(x);
                out[at..at + size].copy_from_slice(bytes);
                if cfg!(target_endian = "big") {
                    out[at..at + size].reverse();
                }
            }
        });
        offset += size;
    }
}
