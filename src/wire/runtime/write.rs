//! Writing the runtime dialect: prefixes, the three layouts, scalars, and the label guard.

use crate::error::ErrorDetails;
use std::io::Write;

use super::runtime_code;
use crate::codes::{with_value, Value, ValueType};
use crate::error::{Error, Result};
use crate::wire::element::{with_values_ref, Element, ValuesRef};
use crate::wire::header::{Column, VERSION};
use crate::wire::sink::Sink;

fn check_dims(rows: u64, cols: u64) -> Result<()> {
    if rows > u64::from(u32::MAX) || cols > u64::from(u32::MAX) {
        return Err(ErrorDetails::NotInDialect {
            what: format!("a {rows} x {cols} object"),
            reason:
                "the runtime reads dimensions from u32 block headers (2^32 or more is truncated)",
        }
        .into());
    }
    Ok(())
}

fn code_of(value_type: ValueType) -> Result<u8> {
    runtime_code(value_type).ok_or_else(|| {
        Error::from(ErrorDetails::NotInDialect {
            what: format!("{value_type} values"),
            reason: "the runtime has no 16-bit value types",
        })
    })
}

fn write_prefix<W: Write>(
    sink: &mut Sink<W>,
    data_type: u8,
    rows: u64,
    cols: u64,
    code: u8,
    block_type: u8,
) -> Result<()> {
    sink.u8(VERSION)?;
    sink.u8(data_type)?;
    sink.u64(rows)?;
    sink.u64(cols)?;
    sink.u8(code)?;
    sink.u64(0)?;
    sink.u64(0)?;
    sink.u32(rows as u32)?;
    sink.u32(cols as u32)?;
    sink.u8(block_type)?;
    sink.u8(code)
}

/// Writes a dense matrix's prefix; its `rows * cols` row-major values of type `vt` follow.
pub(crate) fn start_dense<W: Write>(
    sink: &mut Sink<W>,
    rows: u64,
    cols: u64,
    vt: ValueType,
) -> Result<()> {
    check_dims(rows, cols)?;
    write_prefix(sink, 1, rows, cols, code_of(vt)?, 1)
}

/// Writes a dense matrix of `rows * cols` row-major values.
pub(crate) fn write_dense<T: Element, W: Write>(
    sink: &mut Sink<W>,
    rows: u64,
    cols: u64,
    values: &[T],
) -> Result<()> {
    start_dense(sink, rows, cols, T::VALUE_TYPE)?;
    sink.values(values)
}

/// Writes a CSR matrix's prefix and non-zero count; `rows + 1` row offsets, `nnz` column
/// indices and `nnz` values of type `vt` follow.
pub(crate) fn start_csr<W: Write>(
    sink: &mut Sink<W>,
    rows: u64,
    cols: u64,
    vt: ValueType,
    nnz: u64,
) -> Result<()> {
    check_dims(rows, cols)?;
    write_prefix(sink, 2, rows, cols, code_of(vt)?, 2)?;
    sink.u64(nnz)
}

/// The offset of a CSR matrix's non-zero count, from the object's start.
pub const CSR_NNZ_AT: u64 = 45;

/// Writes indices (row offsets or column indices, non-negative) as the runtime's `u64`s:
/// as they are when they have that width, else as the unsigned values of their bits,
/// widened by the sink a cache-sized piece at a time ([`Sink::values_as`]).
fn write_indices<I: sprs::SpIndex + bytemuck::Pod, W: Write>(
    sink: &mut Sink<W>,
    indices: &[I],
) -> Result<()> {
    use bytemuck::cast_slice;
    match std::mem::size_of::<I>() {
        8 => sink.values(cast_slice::<I, u64>(indices)),
        4 => sink.values_as(cast_slice::<I, u32>(indices), ValueType::U64),
        2 => sink.values_as(cast_slice::<I, u16>(indices), ValueType::U64),
        1 => sink.values_as(cast_slice::<I, u8>(indices), ValueType::U64),
        _ => indices
            .iter()
            .try_for_each(|i| sink.u64(i.index_unchecked() as u64)),
    }
}

/// Writes a CSR matrix from proper CSR arrays, indices of any type.
pub(crate) fn write_csr<T: Element, P, N, W: Write>(
    sink: &mut Sink<W>,
    rows: u64,
    cols: u64,
    row_offsets: &[P],
    col_indices: &[N],
    values: &[T],
) -> Result<()>
where
    P: sprs::SpIndex + bytemuck::Pod,
    N: sprs::SpIndex + bytemuck::Pod,
{
    start_csr(sink, rows, cols, T::VALUE_TYPE, values.len() as u64)?;
    write_indices(sink, row_offsets)?;
    write_indices(sink, col_indices)?;
    sink.values(values)
}

/// Writes a frame's header, label text and body position; its rows follow
/// ([`write_frame_rows`]).
pub(crate) fn start_frame<W: Write>(
    sink: &mut Sink<W>,
    rows: u64,
    columns: &[Column],
    guard_labels: bool,
) -> Result<()> {
    check_dims(rows, columns.len() as u64)?;
    if guard_labels {
        check_labels(columns.iter().map(|c| c.label.as_str()))?;
    }
    sink.u8(VERSION)?;
    sink.u8(3)?;
    sink.u64(rows)?;
    sink.u64(columns.len() as u64)?;
    for column in columns {
        sink.u8(code_of(column.value_type)?)?;
    }
    for (index, column) in columns.iter().enumerate() {
        let len = u16::try_from(column.label.len()).map_err(|_| {
            Error::from(ErrorDetails::LabelTooLong {
                column: index as u64,
                len: column.label.len(),
            })
        })?;
        sink.bytes(&len.to_le_bytes())?;
        sink.bytes(column.label.as_bytes())?;
    }
    sink.u64(0)?;
    sink.u64(0)
}

/// Writes rows of a frame, interleaving the columns (of equal lengths).
pub(crate) fn write_frame_rows<W: Write>(
    sink: &mut Sink<W>,
    columns: &[ValuesRef<'_>],
) -> Result<()> {
    for r in 0..columns.first().map_or(0, |v| v.len()) {
        for &values in columns {
            with_values_ref!(values, v => sink.value(v[r]))?;
        }
    }
    Ok(())
}

/// Writes a frame: schema, the real label text, then the rows interleaved.
pub(crate) fn write_frame<W: Write>(
    sink: &mut Sink<W>,
    rows: u64,
    columns: &[(&str, ValuesRef<'_>)],
    guard_labels: bool,
) -> Result<()> {
    let schema: Vec<Column> = columns
        .iter()
        .map(|&(label, values)| Column {
            label: label.to_owned(),
            value_type: values.value_type(),
        })
        .collect();
    start_frame(sink, rows, &schema, guard_labels)?;
    let values: Vec<ValuesRef<'_>> = columns.iter().map(|&(_, v)| v).collect();
    write_frame_rows(sink, &values)
}

/// The longest label DAPHNE's frame reader survives in column `col` of `cols`: it reads each
/// label into the raw bytes of a 32-byte `std::string` object of an array of them, so a
/// label may spill over the objects after it but not past the array's end (DAPHNE commit
/// 4c9835cd, `DaphneSerializer<Frame>::deserialize`).
pub(crate) const fn max_daphne_label_len(col: u64, cols: u64) -> u64 {
    32 * (cols - col)
}

/// Refuses labels that would overflow DAPHNE's frame reader.
fn check_labels<'a>(labels: impl ExactSizeIterator<Item = &'a str>) -> Result<()> {
    let cols = labels.len() as u64;
    for (col, label) in labels.enumerate() {
        let max = max_daphne_label_len(col as u64, cols);
        if label.len() as u64 > max {
            return Err(ErrorDetails::NotInDialect {
                what: format!(
                    "the label of frame column {col} ({} bytes, at most {max} here)",
                    label.len()
                ),
                reason: "DAPHNE's frame reader copies labels into the memory of its string \
                         objects and overflows its heap on longer ones (it drops labels \
                         anyway); shorten the label, or write it regardless with \
                         Options::guard_daphne_labels(false) (dbdf --unguarded-labels)",
            }
            .into());
        }
    }
    Ok(())
}

/// Writes a scalar (data type 4) with zeros in the bytes the runtime leaves undefined.
pub(crate) fn write_scalar<W: Write>(sink: &mut Sink<W>, value: Value) -> Result<()> {
    sink.u8(VERSION)?;
    sink.u8(4)?;
    sink.bytes(&[0; 16])?;
    sink.u8(code_of(value.value_type())?)?;
    with_value!(value, x => sink.value(x))
}
