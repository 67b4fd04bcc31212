//! The dialect DAPHNE's C++ runtime writes (commit 4c9835cd), which differs from the spec:
//!
//! ```text
//! header:  | 1 | dt | #r u64 | #c u64 |          dt 1, 2, 3 as in the spec, 4 = scalar
//! dense:   header | vt | rx=0 u64 | cx=0 u64 | #r u32 | #c u32 | bt=1 | vt | values row-major
//! CSR:     header | vt | rx=0 | cx=0 | #r u32 | #c u32 | bt=2 | vt | nnz u64
//!                 | rowOffsets u64[#r+1] (from 0) | colIdxs u64[nnz] | values[nnz]
//! frame:   header | vt[#c] | (len u16, len opaque bytes)[#c] | rx=0 | cx=0
//!                 | values row by row, each in its column's type (no block header)
//! scalar:  | 1 | 4 | 16 undefined bytes | vt | value |
//! ```
//!
//! Value type codes are the runtime's enum: 0 si8, 1 si32, 2 si64, 3 ui8, 4 ui32, 5 ui64,
//! 6 f32, 7 f64, 8 str, 9 fixedstr16. The block dimensions are the object's, cast to u32 by
//! the runtime (it truncates silently); this crate reads the true dimensions from the header
//! and refuses to write dimensions of 2^32 or more. Frame label bytes are raw `std::string`
//! object bytes, never text: they are skipped, and labels come from the `.meta` sidecar.

mod write;

pub use write::CSR_NNZ_AT;
pub(crate) use write::{
    start_csr, start_dense, start_frame, write_csr, write_dense, write_frame, write_frame_rows,
    write_scalar,
};

use crate::codes::Value;
use crate::codes::{DataType, ValueType};
use crate::error::ErrorDetails;
use crate::error::{Error, Result};
use crate::wire::element::Element;
use crate::wire::element::Values;
use crate::wire::header::{Column, VERSION};
use crate::wire::source::Source;
use crate::wire::values::{read_le, with_value_type, with_values};

/// Bytes before a dense object's values.
pub const DENSE_PREFIX_LEN: u64 = 45;
/// Bytes before a CSR object's row offsets.
pub const CSR_PREFIX_LEN: u64 = 53;

/// The encoded length of a runtime matrix: a dense one's prefix and values, or a CSR one's
/// prefix, `rows + 1` offsets and `nnz` (column, value) pairs, all indices 8 bytes.
pub(crate) fn matrix_len(csr: bool, rows: u64, cols: u64, nnz: u64, size: usize) -> u128 {
    let (rows, cols, nnz, size) = (
        u128::from(rows),
        u128::from(cols),
        u128::from(nnz),
        size as u128,
    );
    match csr {
        false => u128::from(DENSE_PREFIX_LEN) + rows * cols * size,
        true => u128::from(CSR_PREFIX_LEN) + 8 * (rows + 1) + nnz * (8 + size),
    }
}

/// The runtime's code for a value type; `None` for u16 and i16, which it lacks.
pub const fn runtime_code(value_type: ValueType) -> Option<u8> {
    match value_type {
        ValueType::I8 => Some(0),
        ValueType::I32 => Some(1),
        ValueType::I64 => Some(2),
        ValueType::U8 => Some(3),
        ValueType::U32 => Some(4),
        ValueType::U64 => Some(5),
        ValueType::F32 => Some(6),
        ValueType::F64 => Some(7),
        ValueType::U16 | ValueType::I16 => None,
    }
}

/// The value type of a runtime code: `Ok(None)` for codes the runtime does not have.
///
/// # Errors
/// [`crate::ErrorKind::StringValueType`] for the string codes 8 and 9.
pub fn from_runtime_code(code: u8, offset: u64) -> Result<Option<ValueType>> {
    Ok(match code {
        0 => Some(ValueType::I8),
        1 => Some(ValueType::I32),
        2 => Some(ValueType::I64),
        3 => Some(ValueType::U8),
        4 => Some(ValueType::U32),
        5 => Some(ValueType::U64),
        6 => Some(ValueType::F32),
        7 => Some(ValueType::F64),
        8 | 9 => {
            return Err(ErrorDetails::StringValueType {
                offset,
                code,
                what: if code == 8 { "str" } else { "fixedstr16" },
            }
            .into())
        }
        _ => None,
    })
}

/// The size of a value of a runtime code (strings included), if the code exists.
pub const fn runtime_code_size(code: u8) -> Option<usize> {
    match code {
        0 | 3 => Some(1),
        1 | 4 | 6 => Some(4),
        2 | 5 | 7 => Some(8),
        8 => Some(32),
        9 => Some(16),
        _ => None,
    }
}

/// The names the `.meta` sidecar uses for value types.
pub const fn meta_name(value_type: ValueType) -> Option<&'static str> {
    match value_type {
        ValueType::I8 => Some("si8"),
        ValueType::I32 => Some("si32"),
        ValueType::I64 => Some("si64"),
        ValueType::U8 => Some("ui8"),
        ValueType::U32 => Some("ui32"),
        ValueType::U64 => Some("ui64"),
        ValueType::F32 => Some("f32"),
        ValueType::F64 => Some("f64"),
        ValueType::U16 | ValueType::I16 => None,
    }
}

/// One runtime-dialect object, decoded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RuntimeObject {
    Dense {
        rows: u64,
        cols: u64,
        values: Values,
    },
    Csr {
        rows: u64,
        cols: u64,
        row_offsets: Vec<u64>,
        col_indices: Vec<u64>,
        values: Values,
    },
    Frame {
        rows: u64,
        /// Column value types; the labels are not in the file.
        value_types: Vec<ValueType>,
        /// Each label's length: 0 means the label is known to be empty.
        label_lens: Vec<u16>,
        /// Each column's values.
        columns: Vec<Values>,
    },
    Scalar(Value),
}

/// Reads the fixed header; returns (data type, rows, cols). Accepts the runtime's scalar.
fn fixed_header<S: Source + ?Sized>(src: &mut S) -> Result<(DataType, u64, u64)> {
    let offset = src.offset();
    let version = src.u8("the format version")?;
    if version != VERSION {
        return Err(ErrorDetails::UnsupportedVersion { offset, version }.into());
    }
    let code = src.u8("the data type")?;
    let data_type = match code {
        1 => DataType::DenseMatrix,
        2 => DataType::CsrMatrix,
        3 => DataType::Frame,
        4 => DataType::Scalar,
        _ => {
            return Err(ErrorDetails::UnknownDataType {
                offset: offset + 1,
                code,
            }
            .into())
        }
    };
    let rows = src.u64("the number of rows")?;
    let cols = src.u64("the number of columns")?;
    Ok((data_type, rows, cols))
}

fn value_type<S: Source + ?Sized>(src: &mut S, what: &'static str) -> Result<ValueType> {
    let offset = src.offset();
    let code = src.u8(what)?;
    from_runtime_code(code, offset)?
        .ok_or(Error::from(ErrorDetails::UnknownValueType { offset, code }))
}

fn layout_error(offset: u64, message: impl Into<String>) -> Error {
    Error::from(ErrorDetails::RuntimeLayout {
        offset,
        message: message.into(),
    })
}

/// Reads the part every matrix shares: vt, rx, cx, block dims, bt, vt again.
fn matrix_prefix<S: Source + ?Sized>(
    src: &mut S,
    rows: u64,
    cols: u64,
    block_type: u8,
) -> Result<ValueType> {
    let vt = value_type(src, "the matrix value type")?;
    let offset = src.offset();
    let (rx, cx) = (src.u64("rx")?, src.u64("cx")?);
    if (rx, cx) != (0, 0) {
        return Err(layout_error(
            offset,
            format!("the block is at ({rx}, {cx}), not (0, 0)"),
        ));
    }
    let offset = src.offset();
    let (block_rows, block_cols) = (
        src.u32("the block's rows")?,
        src.u32("the block's columns")?,
    );
    // The runtime writes the object's dimensions cast to u32.
    if (block_rows, block_cols) != (rows as u32, cols as u32) {
        return Err(layout_error(
            offset,
            format!("the block is {block_rows} x {block_cols}, not the object's {rows} x {cols}"),
        ));
    }
    let offset = src.offset();
    let bt = src.u8("the block type")?;
    if bt != block_type {
        return Err(layout_error(
            offset,
            format!("block type {bt}, expected {block_type}"),
        ));
    }
    let offset = src.offset();
    let block_vt = value_type(src, "the block value type")?;
    if block_vt != vt {
        return Err(layout_error(
            offset,
            format!("the block value type {block_vt} differs from the object's {vt}"),
        ));
    }
    Ok(vt)
}

/// A runtime object's header and prefix: everything before its values.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeHead {
    /// The data type (a scalar is `DataType::Scalar`).
    pub data_type: DataType,
    /// Rows (1 for a scalar).
    pub rows: u64,
    /// Columns (1 for a scalar).
    pub cols: u64,
    /// The matrix's or scalar's value type, or each frame column's.
    pub value_types: Vec<ValueType>,
    /// Each frame label's length (the label bytes are opaque and skipped).
    pub label_lens: Vec<u16>,
    /// A CSR matrix's non-zero count.
    pub nnz: Option<u64>,
    nnz_offset: u64,
    /// Offset of the first byte after the prefix: the values, or a CSR matrix's row offsets.
    pub body: u64,
}

impl RuntimeHead {
    /// Bytes from [`RuntimeHead::body`] to the end of the object.
    pub fn body_len(&self) -> u128 {
        let size = |vt: &ValueType| vt.size() as u128;
        let (rows, cols) = (u128::from(self.rows), u128::from(self.cols));
        let width: u128 = self.value_types.iter().map(size).sum();
        match self.data_type {
            DataType::Scalar => width,
            DataType::DenseMatrix => rows * cols * width,
            DataType::CsrMatrix => 8 * (rows + 1) + u128::from(self.nnz.unwrap_or(0)) * (8 + width),
            DataType::Frame => rows * width,
        }
    }

    /// The bytes of one frame row, or one matrix value.
    pub fn row_width(&self) -> u64 {
        self.value_types.iter().map(|vt| vt.size() as u64).sum()
    }

    /// Offsets of a CSR matrix's column indices and values.
    pub fn csr_arrays(&self) -> (u64, u64) {
        let cols_at = self.body + 8 * (self.rows + 1);
        (cols_at, cols_at + 8 * self.nnz.unwrap_or(0))
    }
}

/// Reads a runtime object's header and prefix, leaving the cursor at its values.
///
/// # Errors
/// Malformed input, the string value types.
pub fn decode_head<S: Source + ?Sized>(src: &mut S) -> Result<RuntimeHead> {
    let (data_type, rows, cols) = fixed_header(src)?;
    let mut head = RuntimeHead {
        data_type,
        rows,
        cols,
        value_types: Vec::new(),
        label_lens: Vec::new(),
        nnz: None,
        nnz_offset: 0,
        body: 0,
    };
    match data_type {
        DataType::Scalar => {
            // Bytes 2..17 (where the dimensions would be) are undefined: already skipped.
            (head.rows, head.cols) = (1, 1);
            head.value_types = vec![value_type(src, "the scalar's value type")?];
        }
        DataType::DenseMatrix => head.value_types = vec![matrix_prefix(src, rows, cols, 1)?],
        DataType::CsrMatrix => {
            head.value_types = vec![matrix_prefix(src, rows, cols, 2)?];
            head.nnz_offset = src.offset();
            head.nnz = Some(src.u64("the number of non-zeros")?);
        }
        DataType::Frame => {
            let count = usize::try_from(cols).map_err(|_| {
                Error::from(ErrorDetails::TooLarge {
                    offset: src.offset() - 8,
                    what: "frame columns",
                    bytes: u128::from(cols),
                })
            })?;
            let codes_at = src.offset();
            let codes = src.take(count, "the frame's column value types")?.to_vec();
            head.value_types.reserve_exact(count);
            for (i, &code) in codes.iter().enumerate() {
                let offset = codes_at + i as u64;
                head.value_types.push(
                    from_runtime_code(code, offset)?
                        .ok_or(Error::from(ErrorDetails::UnknownValueType { offset, code }))?,
                );
            }
            head.label_lens.reserve_exact(count);
            for _ in 0..count {
                // Raw std::string object bytes: not text, skipped.
                let len = src.u16("a frame label length")?;
                src.take(usize::from(len), "a frame label")?;
                head.label_lens.push(len);
            }
            let offset = src.offset();
            let (rx, cx) = (src.u64("rx")?, src.u64("cx")?);
            if (rx, cx) != (0, 0) {
                return Err(layout_error(
                    offset,
                    format!("the body is at ({rx}, {cx}), not (0, 0)"),
                ));
            }
        }
    }
    head.body = src.offset();
    Ok(head)
}

/// Reads one runtime-dialect object.
///
/// # Errors
/// Malformed input, the string value types, indices out of range or unsorted.
pub(crate) fn decode<S: Source + ?Sized>(src: &mut S) -> Result<RuntimeObject> {
    let start = src.offset();
    let head = decode_head(src)?;
    let (rows, cols) = (head.rows, head.cols);
    let vt = head.value_types.first().copied();
    match head.data_type {
        DataType::Scalar => {
            with_value_type!(vt.unwrap_or(ValueType::U8), T => {
                let v: Vec<T> = src.take_vec(1, "the scalar's value")?;
                Ok(RuntimeObject::Scalar(v[0].into_value()))
            })
        }
        DataType::DenseMatrix => {
            let count = rows
                .checked_mul(cols)
                .ok_or(Error::from(ErrorDetails::TooLarge {
                    offset: start,
                    what: "a dense matrix",
                    bytes: u128::from(rows) * u128::from(cols),
                }))?;
            let values = with_value_type!(vt.unwrap_or(ValueType::U8), T => T::into_values(
                src.take_vec::<T>(count, "the dense values")?));
            Ok(RuntimeObject::Dense { rows, cols, values })
        }
        DataType::CsrMatrix => {
            let nnz = head.nnz.unwrap_or(0);
            let offsets_at = src.offset();
            let row_offsets: Vec<u64> = src.take_vec(rows.saturating_add(1), "the row offsets")?;
            check_row_offsets(&row_offsets, nnz, offsets_at, head.nnz_offset)?;
            let cols_at = src.offset();
            let col_indices: Vec<u64> = src.take_vec(nnz, "the column indices")?;
            check_columns(&row_offsets, &col_indices, cols, cols_at)?;
            let values = with_value_type!(vt.unwrap_or(ValueType::U8), T => T::into_values(
                src.take_vec::<T>(nnz, "the non-zero values")?));
            Ok(RuntimeObject::Csr {
                rows,
                cols,
                row_offsets,
                col_indices,
                values,
            })
        }
        DataType::Frame => {
            let columns = decode_frame_rows(src, rows, &head.value_types)?;
            Ok(RuntimeObject::Frame {
                rows,
                value_types: head.value_types,
                label_lens: head.label_lens,
                columns,
            })
        }
    }
}

pub(crate) fn check_row_offsets(offsets: &[u64], nnz: u64, at: u64, nnz_at: u64) -> Result<()> {
    if offsets.first() != Some(&0) {
        return Err(layout_error(at, "the row offsets do not start at 0"));
    }
    for (i, pair) in offsets.windows(2).enumerate() {
        if pair[1] < pair[0] {
            return Err(layout_error(
                at + 8 * (i as u64 + 1),
                format!("row offset {} is below the previous {}", pair[1], pair[0]),
            ));
        }
    }
    let last = offsets.last().copied().unwrap_or(0);
    if last != nnz {
        return Err(ErrorDetails::SparseCountMismatch {
            offset: nnz_at,
            declared: nnz,
            counted: last,
        }
        .into());
    }
    Ok(())
}

/// Checks that every row's column indices lie in `0..ncols` and increase strictly; the
/// error names the first bad index in file order. Large matrices are checked on every core,
/// each a run of rows holding about the same number of entries.
pub(crate) fn check_columns(offsets: &[u64], cols: &[u64], ncols: u64, at: u64) -> Result<()> {
    let rows = offsets.len().saturating_sub(1);
    // Offsets are sorted (checked before).
    let runs = crate::threads::runs_of_rows(rows, cols.len(), |e| {
        offsets.partition_point(|&o| o < e as u64)
    });
    let results = crate::threads::on_every_core(runs, |run| {
        check_column_rows(&offsets[run.start..=run.end], cols, ncols, at, run.start)
    });
    results.into_iter().collect()
}

/// [`check_columns`] for the rows whose offsets are `offsets`, the first of them row
/// `first_row`.
fn check_column_rows(
    offsets: &[u64],
    cols: &[u64],
    ncols: u64,
    at: u64,
    first_row: usize,
) -> Result<()> {
    for (row, pair) in offsets.windows(2).enumerate() {
        let row = first_row + row;
        let mut previous: Option<u64> = None;
        let (start, end) = (pair[0] as usize, pair[1] as usize);
        for (k, &c) in cols[start..end].iter().enumerate() {
            let offset = at + 8 * (start + k) as u64;
            if c >= ncols {
                return Err(layout_error(
                    offset,
                    format!("column index {c} is outside the {ncols} columns"),
                ));
            }
            if previous.is_some_and(|p| p >= c) {
                return Err(layout_error(
                    offset,
                    format!("column index {c} does not increase within row {row} (duplicate or unsorted)"),
                ));
            }
            previous = Some(c);
        }
    }
    Ok(())
}

fn decode_frame_rows<S: Source + ?Sized>(
    src: &mut S,
    rows: u64,
    value_types: &[ValueType],
) -> Result<Vec<Values>> {
    let row_len: usize = value_types.iter().map(|vt| vt.size()).sum();
    let total = u128::from(rows) * row_len as u128;
    if let Some(remaining) = src.remaining() {
        if total > u128::from(remaining) {
            return Err(ErrorDetails::UnexpectedEof {
                offset: src.offset(),
                what: "the frame's rows",
                needed: u64::try_from(total).unwrap_or(u64::MAX),
                available: remaining,
            }
            .into());
        }
    }
    let rows = if row_len == 0 { 0 } else { rows as usize };
    let mut columns: Vec<Values> = value_types.iter().map(|&vt| Values::new(vt)).collect();
    // Read in pieces so a false row count fails at the end of the input, not in an allocation.
    let per_piece = (1 << 20) / row_len.max(1) + 1;
    let mut done = 0;
    while done < rows {
        let n = per_piece.min(rows - done);
        let bytes = src.take(n * row_len, "the frame's rows")?;
        let mut at = 0;
        for _ in 0..n {
            for column in columns.iter_mut() {
                with_values!(column, v => {
                    v.push(read_le(&bytes[at..]));
                    at += std::mem::size_of_val(&v[0]);
                });
            }
        }
        done += n;
    }
    Ok(columns)
}

/// What the start of a runtime object says of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Skimmed {
    pub header: super::Header,
    /// The object's encoded length.
    pub len: u128,
    /// A CSR matrix's stored entries (its `nnz` field).
    pub nnz: Option<u64>,
}

/// What the first runtime object in `prefix` (its start) is, or `None` when `prefix` is too
/// short to tell. Frame labels are read as text (as this crate writes them).
pub(crate) fn skim(prefix: &[u8]) -> Option<Skimmed> {
    use super::source::SliceSource;
    let mut src = SliceSource::new(prefix);
    let (data_type, rows, cols) = fixed_header(&mut src).ok()?;
    let size = |vt: ValueType| vt.size() as u128;
    match data_type {
        DataType::Scalar => {
            let vt = value_type(&mut src, "").ok()?;
            Some(Skimmed {
                header: super::Header::Scalar { value_type: vt },
                len: 19 + size(vt),
                nnz: None,
            })
        }
        DataType::DenseMatrix | DataType::CsrMatrix => {
            let vt = value_type(&mut src, "").ok()?;
            let header = super::Header::matrix(data_type, rows, cols, vt);
            let csr = data_type == DataType::CsrMatrix;
            let nnz = match csr {
                true => SliceSource::new(prefix.get(45..53)?).u64("").ok()?,
                false => 0,
            };
            Some(Skimmed {
                header,
                len: matrix_len(csr, rows, cols, nnz, vt.size()),
                nnz: csr.then_some(nnz),
            })
        }
        DataType::Frame => {
            let count = usize::try_from(cols).ok()?;
            let codes = src.take(count, "").ok()?.to_vec();
            let mut columns = Vec::with_capacity(count);
            for (i, &code) in codes.iter().enumerate() {
                let value_type = from_runtime_code(code, i as u64).ok()??;
                let len = src.u16("").ok()?;
                let label =
                    String::from_utf8(src.take(usize::from(len), "").ok()?.to_vec()).ok()?;
                columns.push(Column { label, value_type });
            }
            let width: u128 = columns.iter().map(|c| size(c.value_type)).sum();
            let len = u128::from(src.offset()) + 16 + u128::from(rows) * width;
            Some(Skimmed {
                header: super::Header::Frame { rows, columns },
                len,
                nnz: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorDetails;

    /// Rows of 4 entries `0, 2, 4, 6` (sorted), enough for the check to run on every core.
    fn rows(count: usize) -> (Vec<u64>, Vec<u64>) {
        let offsets = (0..=count as u64).map(|r| 4 * r).collect();
        let cols = (0..count).flat_map(|_| [0, 2, 4, 6]).collect();
        (offsets, cols)
    }

    fn offset_of(result: Result<()>) -> u64 {
        match result.map_err(Error::into_details) {
            Err(ErrorDetails::RuntimeLayout { offset, .. }) => offset,
            other => panic!("expected a layout error, got {other:?}"),
        }
    }

    /// However the rows are split between threads, the error is the first bad index in the
    /// file, with its row.
    #[test]
    fn the_first_bad_column_index_is_reported() {
        let (offsets, mut cols) = rows(600_000);
        assert!(
            cols.len() >= 1 << 20,
            "enough indices to be checked on every core"
        );
        assert!(check_columns(&offsets, &cols, 7, 1000).is_ok());
        // Outside the columns, late in the file: found by the last run.
        cols[2_300_001] = 7;
        assert_eq!(
            offset_of(check_columns(&offsets, &cols, 7, 1000)),
            1000 + 8 * 2_300_001
        );
        // An earlier one, not increasing, in the first run: named instead.
        cols[41] = 0;
        let Err(ErrorDetails::RuntimeLayout { offset, message }) =
            check_columns(&offsets, &cols, 7, 1000).map_err(Error::into_details)
        else {
            panic!("expected a layout error");
        };
        assert_eq!(offset, 1000 + 8 * 41);
        assert!(message.contains("within row 10"), "{message}");
        // The same rows checked on one thread say the same.
        assert_eq!(
            offset_of(check_column_rows(&offsets, &cols, 7, 1000, 0)),
            1000 + 8 * 41
        );
    }
}
