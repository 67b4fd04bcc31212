//! SystemDS `FrameBlock` values: a block of rows of a frame, keyed by its 1-based first row.
//!
//! A value is `int rows, int cols, boolean default-meta`, then per column a type byte (the
//! value type's ordinal + 1, negative when the column holds no data), its name (Java
//! modified UTF-8) and metadata (`long` distinct count, a UTF string) unless the metadata
//! is the default, and its array: an array-type byte and the values (big-endian). Writing
//! produces the same layout with names (distinct count -1, no missing-value marker, as
//! SystemDS writes them) and the four numeric arrays.

use std::ops::Range;

use super::seqfile::SYSTEMDS;
use crate::input::{not_in_daphne, Cursor};
use serde_daphne::ValueType;
use serde_daphne::Values;
use serde_daphne::{Error, Result};

/// SystemDS value types by `ordinal + 1` (the frame's type byte).
fn value_type_name(code: i8) -> &'static str {
    match code.unsigned_abs() {
        1 => "UINT4",
        2 => "UINT8",
        3 => "FP32",
        4 => "FP64",
        5 => "INT32",
        6 => "INT64",
        7 => "BOOLEAN",
        8 => "STRING",
        9 => "UNKNOWN",
        10 => "HASH64",
        11 => "HASH32",
        12 => "CHARACTER",
        _ => "an unknown type",
    }
}

/// Array encodings (`FrameArrayType` ordinals).
const STRING: u8 = 0;
const BOOLEAN: u8 = 1;
const BITSET: u8 = 2;
const INT32: u8 = 3;
const INT64: u8 = 4;
const FP32: u8 = 5;
const FP64: u8 = 6;
const OPTIONAL: u8 = 9;

fn array_name(code: u8) -> &'static str {
    match code {
        STRING => "STRING",
        BOOLEAN => "BOOLEAN",
        BITSET => "BITSET",
        INT32 => "INT32",
        INT64 => "INT64",
        FP32 => "FP32",
        FP64 => "FP64",
        7 => "CHARACTER",
        8 => "RAGGED",
        OPTIONAL => "OPTIONAL",
        10 => "DDC (compressed)",
        11 => "HASH64",
        12 => "HASH32",
        _ => "unknown",
    }
}

/// Java's modified UTF-8 (`DataInput.readUTF`): a `u16` length, then 1- to 3-byte units.
fn read_utf(reader: &mut Cursor<'_>, what: &str) -> Result<String> {
    let at = reader.pos;
    let len = u16::from_be_bytes(reader.take(2, what)?.try_into().unwrap()) as usize;
    let bytes = reader.take(len, what)?;
    let bad = || reader.error(at, format!("{what} is not modified UTF-8"));
    let mut units = Vec::with_capacity(len);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (unit, n) = match b {
            0x00..=0x7f => (u16::from(b), 1),
            0xc0..=0xdf => {
                let b2 = *bytes.get(i + 1).ok_or_else(bad)?;
                ((u16::from(b & 0x1f) << 6) | u16::from(b2 & 0x3f), 2)
            }
            0xe0..=0xef => {
                let (b2, b3) = (
                    *bytes.get(i + 1).ok_or_else(bad)?,
                    *bytes.get(i + 2).ok_or_else(bad)?,
                );
                (
                    (u16::from(b & 0x0f) << 12)
                        | (u16::from(b2 & 0x3f) << 6)
                        | u16::from(b3 & 0x3f),
                    3,
                )
            }
            _ => return Err(bad()),
        };
        units.push(unit);
        i += n;
    }
    String::from_utf16(&units).map_err(|_| bad())
}

/// One frame block: its rows and, per column, name and values.
pub(crate) struct FrameBlock {
    pub(crate) rows: usize,
    /// `None` where the block keeps SystemDS's default names (`C1`, `C2`, ...).
    pub(crate) names: Option<Vec<String>>,
    pub(crate) columns: Vec<Values>,
}

/// Reads one array of `rows` values as DAPHNE values (booleans as `u8`).
fn read_array(reader: &mut Cursor<'_>, rows: usize, column: &str) -> Result<Values> {
    let at = reader.pos;
    let code = reader.u8("an array type")?;
    Ok(match code {
        FP64 => Values::F64(fixed(reader, rows, 8, column)?.chunks_exact(8).map(|b| f64::from_bits(u64::from_be_bytes(b.try_into().unwrap()))).collect()),
        FP32 => Values::F32(fixed(reader, rows, 4, column)?.chunks_exact(4).map(|b| f32::from_bits(u32::from_be_bytes(b.try_into().unwrap()))).collect()),
        INT64 => Values::I64(fixed(reader, rows, 8, column)?.chunks_exact(8).map(|b| i64::from_be_bytes(b.try_into().unwrap())).collect()),
        INT32 => Values::I32(fixed(reader, rows, 4, column)?.chunks_exact(4).map(|b| i32::from_be_bytes(b.try_into().unwrap())).collect()),
        // Java's readBoolean: any non-zero byte is true.
        BOOLEAN => Values::U8(fixed(reader, rows, 1, column)?.iter().map(|&b| u8::from(b != 0)).collect()),
        BITSET => {
            let size_at = reader.pos;
            let size = reader.len32_be("a bit set's size")?;
            let words = reader.len32_be("a bit set's length")?;
            if size != rows || words.checked_mul(64).is_none_or(|bits| bits < rows) {
                return Err(reader.error(size_at, format!("column {column}: a bit set of {size} bits in {words} words for {rows} rows")));
            }
            let data = fixed_words(reader, words, column)?;
            Values::U8((0..rows).map(|i| ((data[i >> 6] >> (i & 63)) & 1) as u8).collect())
        }
        OPTIONAL => {
            let values = read_array(reader, rows, column)?;
            let present = read_array(reader, rows, column)?;
            let Values::U8(present) = present else {
                return Err(reader.error(at, format!("column {column}: an optional array without a boolean presence mask")));
            };
            if let Some(row) = present.iter().position(|&p| p == 0) {
                return Err(not_in_daphne(
                    format!("the frame column {column:?}, which is missing a value in row {row} of its block"),
                    "DAPHNE frames have no missing values",
                ));
            }
            values
        }
        STRING => {
            return Err(not_in_daphne(
                format!("the frame column {column:?} of strings"),
                "DAPHNE frames hold numbers only; drop or encode the column in SystemDS (e.g. transformencode)",
            ))
        }
        other => {
            return Err(reader.error(at, format!("column {column}: a {} array, which this crate does not read", array_name(other))))
        }
    })
}

/// The bytes of `rows` values of `size` bytes each.
fn fixed<'a>(reader: &mut Cursor<'a>, rows: usize, size: usize, column: &str) -> Result<&'a [u8]> {
    match rows.checked_mul(size).filter(|&n| n <= reader.remaining()) {
        Some(n) => reader.take(n, "column values"),
        None => Err(reader.error(
            reader.pos,
            format!(
                "column {column}: {rows} values do not fit the {} bytes left",
                reader.remaining()
            ),
        )),
    }
}

fn fixed_words(reader: &mut Cursor<'_>, words: usize, column: &str) -> Result<Vec<u64>> {
    let bytes = words
        .checked_mul(8)
        .filter(|&n| n <= reader.remaining())
        .ok_or_else(|| {
            reader.error(
                reader.pos,
                format!("column {column}: {words} bit-set words do not fit"),
            )
        })?;
    Ok(reader
        .take(bytes, "bit-set words")?
        .chunks_exact(8)
        .map(|b| u64::from_be_bytes(b.try_into().unwrap()))
        .collect())
}

/// Decodes one frame block value; `reader` spans exactly the value.
pub(crate) fn decode_block(reader: &mut Cursor<'_>) -> Result<FrameBlock> {
    let rows = reader.len32_be("the block's rows")?;
    let cols_at = reader.pos;
    let cols = reader.len32_be("the block's columns")?;
    // Each column takes at least its type byte.
    if cols > reader.remaining() {
        return Err(reader.error(
            cols_at,
            format!(
                "{cols} columns cannot fit the {} bytes left",
                reader.remaining()
            ),
        ));
    }
    let default_meta = reader.u8("the default-metadata flag")? != 0;
    let mut names = (!default_meta).then(Vec::new);
    let mut columns = Vec::with_capacity(cols);
    for j in 0..cols {
        let code = reader.u8("a column's value type")? as i8;
        let mut name = format!("C{}", j + 1);
        if let Some(names) = &mut names {
            name = read_utf(reader, "a column name")?;
            reader.i64_be("a column's distinct count")?;
            read_utf(reader, "a column's missing-value marker")?;
            names.push(name.clone());
        }
        if code <= 0 {
            if rows > 0 {
                return Err(not_in_daphne(
                    format!(
                        "the frame column {name:?} ({}), which holds no data",
                        value_type_name(code)
                    ),
                    "DAPHNE frames have no missing values",
                ));
            }
            columns.push(Values::F64(Vec::new()));
            continue;
        }
        let values = if rows > 0 {
            read_array(reader, rows, &name)?
        } else {
            Values::F64(Vec::new())
        };
        columns.push(values);
    }
    if reader.remaining() != 0 {
        return Err(reader.error(
            reader.pos,
            format!("{} bytes after the frame block", reader.remaining()),
        ));
    }
    Ok(FrameBlock {
        rows,
        names,
        columns,
    })
}

/// How a column of `values` is written: its SystemDS value type's code (the frame's type
/// byte, named by [`value_type_name`]) and its array encoding.
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for the integer types SystemDS frames do not hold.
fn column_type(label: &str, values: &Values) -> Result<(i8, u8)> {
    Ok(match values.value_type() {
        ValueType::F64 => (4, FP64),
        ValueType::F32 => (3, FP32),
        ValueType::I64 => (6, INT64),
        ValueType::I32 => (5, INT32),
        other => {
            return Err(SYSTEMDS.cannot_hold(
                format!("the frame column {label:?} of {other}"),
                "SystemDS frames hold FP64, FP32, INT64 and INT32 numbers (and booleans, which \
                 DAPHNE has not); convert the column to i32 or i64 first (--value-type)",
            ))
        }
    })
}

/// The `.mtd` schema name of a column of `values` (such as `FP64`).
///
/// # Errors
/// As [`column_type`].
pub(crate) fn schema_name(label: &str, values: &Values) -> Result<&'static str> {
    column_type(label, values).map(|(code, _)| value_type_name(code))
}

/// Java's modified UTF-8 (`DataOutput.writeUTF`).
fn write_utf(out: &mut Vec<u8>, text: &str, what: &str) -> Result<()> {
    let mut bytes = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x0001..=0x007f => bytes.push(unit as u8),
            0x0000 | 0x0080..=0x07ff => {
                bytes.extend([0xc0 | (unit >> 6) as u8, 0x80 | (unit & 0x3f) as u8]);
            }
            _ => bytes.extend([
                0xe0 | (unit >> 12) as u8,
                0x80 | ((unit >> 6) & 0x3f) as u8,
                0x80 | (unit & 0x3f) as u8,
            ]),
        }
    }
    let len = u16::try_from(bytes.len()).map_err(|_| {
        Error::invalid(format!(
            "{what} takes {} bytes (at most 65535)",
            bytes.len()
        ))
    })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&bytes);
    Ok(())
}

/// Encodes the rows `rows` of `columns` (labels and values) as one frame block value.
pub(crate) fn encode_block(columns: &[(String, Values)], rows: Range<usize>) -> Result<Vec<u8>> {
    let n = rows.len();
    let mut out = Vec::new();
    out.extend_from_slice(&(n as i32).to_be_bytes());
    out.extend_from_slice(&(columns.len() as i32).to_be_bytes());
    out.push(0); // not the default metadata: names follow
    for (label, values) in columns {
        let (type_code, array) = column_type(label, values)?;
        out.push(type_code as u8);
        write_utf(&mut out, label, "a column name")?;
        out.extend_from_slice(&(-1i64).to_be_bytes());
        write_utf(&mut out, "", "a missing-value marker")?;
        out.push(array);
        macro_rules! be {
            ($v:expr) => {
                $v[rows.clone()]
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_be_bytes()))
            };
        }
        match values {
            Values::F64(v) => be!(v),
            Values::F32(v) => be!(v),
            Values::I64(v) => be!(v),
            Values::I32(v) => be!(v),
            _ => unreachable!("refused above"),
        }
    }
    Ok(out)
}
