//! Arrow IPC files of big-endian data (written on big-endian machines), made little-endian in
//! memory as pyarrow reads them: every fixed-width value, offset and dictionary index has its
//! bytes reversed, and the footer's schema then says little-endian. The Arrow crate reads only
//! the host's byte order, so the file is held whole, swapped, and read from memory.

use arrow_schema::{DataType, Field, IntervalUnit, Schema, UnionMode};

use super::IPC;
use serde_daphne::Result;

/// The bytes of the IPC file `bytes` (checked by the source: blocks and buffers lie inside
/// it), its footer of `footer_len` bytes at `footer_at` and its `schema`, made little-endian.
///
/// # Errors
/// Compressed buffers, dictionary batches and types whose values have no one width
/// (month-day-nanosecond intervals, views), each named; a batch whose buffers do not match
/// its schema.
pub(super) fn to_little_endian(
    bytes: &mut [u8],
    schema: &Schema,
    footer_at: usize,
    footer_len: usize,
) -> Result<()> {
    let footer_bytes = &bytes[footer_at..footer_at + footer_len];
    let footer = arrow_ipc::root_as_footer(footer_bytes)
        .map_err(|e| IPC.at(footer_at, format!("a malformed footer: {e}")))?;
    let fb_schema = footer
        .schema()
        .ok_or_else(|| IPC.at(footer_at, "a footer without a schema"))?;
    // Unions of metadata version 4 have a validity buffer; later ones have none.
    let v4 = footer.version() < arrow_ipc::MetadataVersion::V5;
    let mut widths = Vec::new();
    for field in schema.fields() {
        field_widths(field, v4, &mut widths)?;
    }
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err(unswapped("dictionary-encoded columns"));
    }
    // Where the schema's endianness is, in the file (absent: little-endian already).
    let at = fb_schema
        ._tab
        .vtable()
        .get(arrow_ipc::Schema::VT_ENDIANNESS) as usize;
    let endianness = footer_at + fb_schema._tab.loc() + at;
    let blocks: Vec<(i64, i32)> = footer
        .recordBatches()
        .into_iter()
        .flatten()
        .map(|b| (b.offset(), b.metaDataLength()))
        .collect();
    for (offset, meta) in blocks {
        let (offset, meta) = (offset as usize, meta as usize);
        let message = &bytes[offset..offset + meta];
        let skip = if message[..4] == [0xff; 4] { 8 } else { 4 };
        let batch = arrow_ipc::root_as_message(&message[skip..])
            .ok()
            .and_then(|m| m.header_as_record_batch())
            .ok_or_else(|| IPC.at(offset, "a block that is not a record batch"))?;
        if batch.compression().is_some() {
            return Err(unswapped("compressed buffers"));
        }
        let buffers: Vec<(usize, usize)> = batch
            .buffers()
            .into_iter()
            .flatten()
            .map(|b| (b.offset() as usize, b.length() as usize))
            .collect();
        if buffers.len() != widths.len() {
            return Err(IPC.at(
                offset,
                format!(
                    "a record batch of {} buffers, where its schema has {}",
                    buffers.len(),
                    widths.len()
                ),
            ));
        }
        let body = offset + meta;
        for ((at, len), &width) in buffers.into_iter().zip(&widths) {
            if width > 1 {
                let values = &mut bytes[body + at..body + at + len];
                values.chunks_exact_mut(width).for_each(<[u8]>::reverse);
            }
        }
    }
    if at != 0 {
        bytes[endianness..endianness + 2].copy_from_slice(&0i16.to_le_bytes());
    }
    Ok(())
}

/// The refusal of big-endian data the swap does not cover.
fn unswapped(what: &str) -> serde_daphne::Error {
    IPC.error(format!(
        "big-endian data with {what}, which this reader does not swap to the host's order"
    ))
}

/// Appends the width (in bytes) of the values of each buffer `field` has in a record batch, in
/// the order the batch lists them (as the Arrow crate's reader takes them): 0 for validity
/// bits, bytes and type ids, which have no byte order.
fn field_widths(field: &Field, v4: bool, out: &mut Vec<usize>) -> Result<()> {
    match field.data_type() {
        DataType::Null => {}
        DataType::Boolean | DataType::FixedSizeBinary(_) => out.extend([0, 0]),
        DataType::Utf8 | DataType::Binary => out.extend([0, 4, 0]),
        DataType::LargeUtf8 | DataType::LargeBinary => out.extend([0, 8, 0]),
        DataType::List(child) | DataType::Map(child, _) => {
            out.extend([0, 4]);
            field_widths(child, v4, out)?;
        }
        DataType::LargeList(child) => {
            out.extend([0, 8]);
            field_widths(child, v4, out)?;
        }
        DataType::FixedSizeList(child, _) => {
            out.push(0);
            field_widths(child, v4, out)?;
        }
        DataType::Struct(children) => {
            out.push(0);
            for child in children {
                field_widths(child, v4, out)?;
            }
        }
        DataType::RunEndEncoded(ends, values) => {
            field_widths(ends, v4, out)?;
            field_widths(values, v4, out)?;
        }
        DataType::Union(children, mode) => {
            if v4 {
                out.push(0);
            }
            out.push(0);
            if *mode == UnionMode::Dense {
                out.push(4);
            }
            for (_, child) in children.iter() {
                field_widths(child, v4, out)?;
            }
        }
        DataType::Dictionary(..) => return Err(unswapped("dictionary-encoded columns")),
        DataType::Interval(IntervalUnit::DayTime) => out.extend([0, 4]),
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            return Err(unswapped("month-day-nanosecond intervals"))
        }
        DataType::Decimal32(..) => out.extend([0, 4]),
        DataType::Decimal64(..) => out.extend([0, 8]),
        DataType::Decimal128(..) => out.extend([0, 16]),
        DataType::Decimal256(..) => out.extend([0, 32]),
        other => match other.primitive_width() {
            Some(width) => out.extend([0, width]),
            None => return Err(unswapped(&format!("columns of type {other}"))),
        },
    }
    Ok(())
}
