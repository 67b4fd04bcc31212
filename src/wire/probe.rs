//! A lenient look at the start of an object, for telling the two dialects apart.
//!
//! Both dialects lay out the first fields alike (version, data type, `u64` dimensions, a
//! value type code, and for a single-block matrix the block's position and header), so these
//! functions read them without judging the codes, and give each layout's length for a
//! single-block matrix. Which dialect wins is decided in `model/detect.rs`; the byte layouts
//! stay here, beside the rest of the wire format.

use super::block::{block_len, POSITION_LEN};
use super::header::{FIXED_HEADER_LEN, VERSION};
use super::runtime::{self, CSR_PREFIX_LEN, DENSE_PREFIX_LEN};
use super::source::Source;
use super::values::read_le;
use crate::codes::{BlockType, ValueType};
use crate::error::Result;

/// Bytes of a matrix's header and first block entry through the CSR non-zero count: the
/// runtime's CSR prefix, which the spec's single-block layout matches field for field.
pub(crate) const MATRIX_PROBE_LEN: usize = CSR_PREFIX_LEN as usize;

/// Where a frame's value type codes start: after the fixed header.
const FRAME_CODES_START: usize = FIXED_HEADER_LEN;

/// Header bytes before a single-block matrix's block header: the matrix header (the fixed
/// part and one value type code) and the block's position.
const SPEC_BLOCK_START: u128 = (FIXED_HEADER_LEN + 1) as u128 + POSITION_LEN as u128;

/// The fixed part of a header: `(data type code, rows, cols)`, or `None` when `head` is too
/// short or its version is not 1.
pub(crate) fn fixed(head: &[u8]) -> Option<(u8, u64, u64)> {
    (head.len() >= FIXED_HEADER_LEN && head[0] == VERSION).then(|| {
        let rows: u64 = read_le(&head[2..]);
        let cols: u64 = read_le(&head[10..]);
        (head[1], rows, cols)
    })
}

/// A matrix's header and its first block entry, as both dialects place them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MatrixProbe {
    /// Data type code 2.
    pub csr: bool,
    pub rows: u64,
    pub cols: u64,
    /// The header's value type code.
    pub code: u8,
    /// The first block's position.
    pub row: u64,
    pub col: u64,
    /// The first block's dimensions.
    pub block_rows: u32,
    pub block_cols: u32,
    /// The first block's type code and the code after it (its value type).
    pub block_type: u8,
    pub block_code: u8,
    /// For CSR, the `u64` after the block header: the non-zero count in both dialects.
    pub nnz: Option<u64>,
}

impl MatrixProbe {
    /// Reads the probe from the first bytes of a matrix (through the first block's value
    /// type code; through the CSR count for that).
    pub(crate) fn read(head: &[u8]) -> Option<MatrixProbe> {
        let (data_type, rows, cols) = fixed(head)?;
        if head.len() < DENSE_PREFIX_LEN as usize {
            return None;
        }
        let csr = data_type == 2;
        Some(MatrixProbe {
            csr,
            rows,
            cols,
            code: head[18],
            row: read_le(&head[19..]),
            col: read_le(&head[27..]),
            block_rows: read_le(&head[35..]),
            block_cols: read_le(&head[39..]),
            block_type: head[43],
            block_code: head[44],
            nnz: (csr && head.len() >= MATRIX_PROBE_LEN).then(|| read_le(&head[45..])),
        })
    }

    /// Whether the object looks as the runtime writes a matrix: one block at (0, 0) of the
    /// object's dimensions (cast to `u32`), dense or CSR as its data type says, repeating
    /// the header's code.
    pub(crate) fn runtime_shaped(&self) -> bool {
        (self.row, self.col) == (0, 0)
            && (self.block_rows, self.block_cols) == (self.rows as u32, self.cols as u32)
            && self.block_type == if self.csr { 2 } else { 1 }
            && self.block_code == self.code
    }

    /// The object's length if it is one spec block of `value_type`; `None` for a CSR matrix
    /// whose count was not read.
    pub(crate) fn spec_len(&self, value_type: ValueType) -> Option<u128> {
        let (block_type, nnz) = match self.csr {
            true => (BlockType::Sparse, self.nnz?),
            false => (BlockType::Dense, 0),
        };
        let body = block_len(
            block_type,
            self.rows as u32,
            self.cols as u32,
            nnz,
            value_type,
        )?;
        Some(SPEC_BLOCK_START + body)
    }

    /// The object's length in the runtime layout, with values of `size` bytes.
    pub(crate) fn runtime_len(&self, size: usize) -> Option<u128> {
        let nnz = if self.csr { self.nnz? } else { 0 };
        Some(runtime::matrix_len(
            self.csr, self.rows, self.cols, nnz, size,
        ))
    }
}

/// A frame's header as both dialects begin it, and the start of its body.
#[derive(Clone, Debug)]
pub(crate) struct FrameProbe {
    /// One value type code per column.
    pub codes: Vec<u8>,
    /// Whether every label is UTF-8 (the spec's labels must be).
    pub utf8_labels: bool,
    /// The first `u64` pair after the labels: the first block's position in the spec, the
    /// runtime's two undefined fields.
    pub row: u64,
    pub col: u64,
    /// Where the body starts, relative to the object.
    pub body: usize,
    /// A spec block header at the body's start: rows, cols, block type code, value type
    /// code; `None` where the input ends first.
    pub block: Option<(u32, u32, u8, u8)>,
}

/// The value type codes of a frame of `count` columns, without consuming them; `None` where
/// the input ends first.
///
/// # Errors
/// I/O errors of the source.
pub(crate) fn frame_codes<S: Source + ?Sized>(
    src: &mut S,
    count: usize,
) -> Result<Option<Vec<u8>>> {
    let end = FRAME_CODES_START.saturating_add(count);
    let head = src.peek(end)?;
    Ok((head.len() >= end).then(|| head[FRAME_CODES_START..end].to_vec()))
}

/// Reads a frame's header of `count` columns from `src` without consuming it, peeking only
/// as far as the labels reach; `None` where the input ends before the body.
///
/// # Errors
/// I/O errors of the source.
pub(crate) fn frame<S: Source + ?Sized>(src: &mut S, count: usize) -> Result<Option<FrameProbe>> {
    // The header: 18 bytes, the codes, then (u16 length, bytes) per label.
    let mut window = src.peek(4096)?.to_vec();
    let mut need = |n: usize, window: &mut Vec<u8>| -> Result<bool> {
        if window.len() < n {
            *window = src.peek(n.max(window.len() * 2))?.to_vec();
        }
        Ok(window.len() >= n)
    };
    let Some(codes_end) = count.checked_add(FRAME_CODES_START) else {
        return Ok(None);
    };
    if !need(codes_end, &mut window)? {
        return Ok(None);
    }
    let codes = window[FRAME_CODES_START..codes_end].to_vec();
    // From here every position is within the window plus a label: no overflow.
    let mut pos = codes_end;
    let mut utf8_labels = true;
    for _ in 0..count {
        if !need(pos + 2, &mut window)? {
            return Ok(None);
        }
        let len = usize::from(read_le::<u16>(&window[pos..]));
        if !need(pos + 2 + len, &mut window)? {
            return Ok(None);
        }
        utf8_labels &= std::str::from_utf8(&window[pos + 2..pos + 2 + len]).is_ok();
        pos += 2 + len;
    }
    let body = pos + POSITION_LEN as usize;
    if !need(body, &mut window)? {
        return Ok(None);
    }
    let block = need(body + 10, &mut window)?.then(|| {
        (
            read_le::<u32>(&window[body..]),
            read_le::<u32>(&window[body + 4..]),
            window[body + 8],
            window[body + 9],
        )
    });
    Ok(Some(FrameProbe {
        codes,
        utf8_labels,
        row: read_le(&window[pos..]),
        col: read_le(&window[pos + 8..]),
        body,
        block,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_length_of_a_single_dense_block_is_the_specs() {
        // 19-byte header, 16-byte position, 10-byte dense block header, 2 x 3 f64 values.
        let mut head = vec![1u8, 1];
        head.extend(2u64.to_le_bytes());
        head.extend(3u64.to_le_bytes());
        head.push(10);
        head.extend([0u8; 16]);
        head.extend(2u32.to_le_bytes());
        head.extend(3u32.to_le_bytes());
        head.extend([1, 10]);
        let probe = MatrixProbe::read(&head).expect("45 bytes are enough for a dense matrix");
        assert!(probe.runtime_shaped(), "{probe:?}");
        assert_eq!(probe.spec_len(ValueType::F64), Some(45 + 48));
        assert_eq!(probe.runtime_len(8), Some(45 + 48));
    }
}
