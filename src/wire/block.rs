//! Blocks: the block header and the four block layouts, decoded and encoded.
//!
//! ```text
//! body entry:   | rx u64 | cx u64 | block |
//! block header: | #r u32 | #c u32 | bt u8 | ...
//! empty (0):        nothing
//! dense (1):        vt u8, values row-major
//! sparse (2):       vt u8, #nzb u64, per row: (#nzr u32, (cx u32, v)[#nzr])
//! ultra-sparse (3): vt u8, #nzb u32, (rx u32, v)[#nzb] when #c == 1, (rx u32, cx u32, v)[#nzb] otherwise
//! ```
//!
//! Rules this crate enforces on reading, where the spec is silent: column indices strictly
//! increase within a sparse row, ultra-sparse entries strictly increase in (row, column) order,
//! and every index lies inside the block.

use crate::error::ErrorDetails;
use std::io::Write;

use super::element::Element;
use super::element::Values;
use super::header::value_type;
use super::sink::Sink;
use super::source::Source;
use super::sparse_row::decode_sparse_row;
use super::values::{count_nonzero, read_le, with_value_type, with_values};
use crate::codes::{BlockType, ValueType};
use crate::error::{Error, Result};

/// Bytes of a body entry before the block header: `rx` and `cx`.
pub const POSITION_LEN: u64 = 16;

/// The data of one block, as stored.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum BlockData {
    /// All zeros.
    Empty,
    /// Every value, row-major.
    Dense(Values),
    /// Compressed sparse row.
    Sparse {
        /// `rows + 1` offsets into `col_indices`/`values`; row `i` is `row_offsets[i]..row_offsets[i + 1]`.
        row_offsets: Vec<usize>,
        /// The column of each stored value, strictly increasing within a row.
        /// (`usize` like the offsets, so typed reads hand both to sprs without a conversion).
        col_indices: Vec<usize>,
        /// The stored values.
        values: Values,
    },
    /// Coordinate list.
    UltraSparse {
        /// The row of each stored value.
        row_indices: Vec<u32>,
        /// The column of each stored value; `None` in the single-column form.
        col_indices: Option<Vec<u32>>,
        /// The stored values.
        values: Values,
    },
}

impl BlockData {
    /// The block type this data is stored as.
    pub fn block_type(&self) -> BlockType {
        match self {
            BlockData::Empty => BlockType::Empty,
            BlockData::Dense(_) => BlockType::Dense,
            BlockData::Sparse { .. } => BlockType::Sparse,
            BlockData::UltraSparse { .. } => BlockType::UltraSparse,
        }
    }

    /// The value type of the stored values (`None` for empty blocks).
    pub fn value_type(&self) -> Option<ValueType> {
        self.values().map(Values::value_type)
    }

    /// The stored values (`None` for empty blocks).
    #[doc(hidden)]
    pub fn values(&self) -> Option<&Values> {
        match self {
            BlockData::Empty => None,
            BlockData::Dense(values)
            | BlockData::Sparse { values, .. }
            | BlockData::UltraSparse { values, .. } => Some(values),
        }
    }

    /// The number of stored values (every value for dense blocks).
    #[doc(hidden)]
    pub fn stored(&self) -> usize {
        self.values().map_or(0, Values::len)
    }

    /// Calls `f(value index, row, column)` for every stored value, in stored order (every cell
    /// of a dense block), with coordinates inside the block.
    #[doc(hidden)]
    pub fn for_each_position(&self, cols: u32, mut f: impl FnMut(usize, u32, u32)) {
        match self {
            BlockData::Empty => {}
            BlockData::Dense(values) => {
                let cols = cols.max(1) as usize;
                (0..values.len()).for_each(|k| f(k, (k / cols) as u32, (k % cols) as u32));
            }
            BlockData::Sparse {
                row_offsets,
                col_indices,
                ..
            } => {
                for (r, w) in row_offsets.windows(2).enumerate() {
                    (w[0]..w[1]).for_each(|k| f(k, r as u32, col_indices[k] as u32));
                }
            }
            BlockData::UltraSparse {
                row_indices,
                col_indices,
                ..
            } => {
                for (k, &r) in row_indices.iter().enumerate() {
                    f(k, r, col_indices.as_ref().map_or(0, |cs| cs[k]));
                }
            }
        }
    }

    /// The number of non-zero values (bitwise: `-0.0` and NaN count).
    pub fn nnz(&self) -> u64 {
        self.values()
            .map_or(0, |v| with_values!(v, x => count_nonzero(x) as u64))
    }
}

/// The encoded length of a block (from its header to its last byte), or `None` when the block
/// type cannot hold the block (an ultra-sparse block with more than `u32::MAX` non-zeros).
pub fn block_len(
    block_type: BlockType,
    rows: u32,
    cols: u32,
    nnz: u64,
    value_type: ValueType,
) -> Option<u128> {
    let (rows, cols, nnz, size) = (
        u128::from(rows),
        u128::from(cols),
        u128::from(nnz),
        value_type.size() as u128,
    );
    match block_type {
        BlockType::Empty => (nnz == 0).then_some(9),
        BlockType::Dense => Some(10 + rows * cols * size),
        BlockType::Sparse => Some(18 + sparse_rows_len(rows as u32, nnz as u64, value_type)),
        BlockType::UltraSparse => {
            let index = if cols == 1 { 4 } else { 8 };
            (nnz <= u128::from(u32::MAX)).then_some(14 + nnz * (index + size))
        }
    }
}

/// Bytes of a sparse block's rows (after its 18-byte header): a `u32` count per row, a `u32`
/// column and a value per non-zero.
pub(crate) fn sparse_rows_len(rows: u32, nnz: u64, value_type: ValueType) -> u128 {
    4 * u128::from(rows) + u128::from(nnz) * (4 + value_type.size() as u128)
}

/// A block's header: its shape, type and the counts that give its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlockHead {
    /// Rows in the block.
    pub rows: u32,
    /// Columns in the block.
    pub cols: u32,
    /// How the values are stored.
    pub block_type: BlockType,
    /// The stored values' type (`None` for empty blocks).
    pub value_type: Option<ValueType>,
    /// The stored non-zero count of a sparse or ultra-sparse block.
    pub nnz: Option<u64>,
    /// Offset of the non-zero count, for error messages.
    pub(crate) nnz_offset: u64,
}

impl BlockHead {
    /// Bytes of the header itself: 9 for empty blocks, 10 dense, 18 sparse, 14 ultra-sparse.
    pub fn head_len(&self) -> u64 {
        match self.block_type {
            BlockType::Empty => 9,
            BlockType::Dense => 10,
            BlockType::Sparse => 18,
            BlockType::UltraSparse => 14,
        }
    }

    /// Bytes after the header: the values (and indices).
    pub fn body_len(&self) -> u128 {
        let vt = self.value_type.unwrap_or(ValueType::U8);
        let nnz = self.nnz.unwrap_or(0);
        // An ultra-sparse count is a u32, so the length always exists.
        block_len(self.block_type, self.rows, self.cols, nnz, vt).unwrap_or(0)
            - u128::from(self.head_len())
    }

    /// Values a dense block stores, or non-zeros a sparse one stores.
    pub fn stored(&self) -> u64 {
        match self.block_type {
            BlockType::Empty => 0,
            BlockType::Dense => u64::from(self.rows) * u64::from(self.cols),
            BlockType::Sparse | BlockType::UltraSparse => self.nnz.unwrap_or(0),
        }
    }

    /// The byte offset of the dense value at (`row`, `col`) inside the block, from the end
    /// of the header.
    pub fn dense_value_at(&self, row: u32, col: u32) -> u64 {
        let size = self.value_type.map_or(0, ValueType::size) as u64;
        (u64::from(row) * u64::from(self.cols) + u64::from(col)) * size
    }
}

/// Reads a block's header (after its position), leaving the cursor at its values.
///
/// # Errors
/// End of input, unknown block or value type codes.
pub fn decode_block_head<S: Source + ?Sized>(src: &mut S) -> Result<BlockHead> {
    let rows = src.u32("the block's number of rows")?;
    let cols = src.u32("the block's number of columns")?;
    let offset = src.offset();
    let code = src.u8("the block type")?;
    let block_type = BlockType::from_code(code)
        .ok_or(Error::from(ErrorDetails::UnknownBlockType { offset, code }))?;
    let what = match block_type {
        BlockType::Empty => {
            return Ok(BlockHead {
                rows,
                cols,
                block_type,
                value_type: None,
                nnz: None,
                nnz_offset: 0,
            })
        }
        BlockType::Dense => "the dense block's value type",
        BlockType::Sparse => "the sparse block's value type",
        BlockType::UltraSparse => "the ultra-sparse block's value type",
    };
    let vt = value_type(src, what)?;
    let nnz_offset = src.offset();
    let nnz = match block_type {
        BlockType::Sparse => Some(src.u64("the sparse block's number of non-zeros")?),
        BlockType::UltraSparse => Some(u64::from(
            src.u32("the ultra-sparse block's number of non-zeros")?,
        )),
        _ => None,
    };
    Ok(BlockHead {
        rows,
        cols,
        block_type,
        value_type: Some(vt),
        nnz,
        nnz_offset,
    })
}

/// Reads a block (header and data), checking every index.
///
/// # Errors
/// End of input, unknown codes, indices outside the block, unsorted indices, counts that do
/// not add up.
pub fn decode_block<S: Source + ?Sized>(src: &mut S) -> Result<(u32, u32, BlockData)> {
    let head = decode_block_head(src)?;
    Ok((head.rows, head.cols, decode_block_body(src, &head)?))
}

/// Reads a block's values (after [`decode_block_head`]), checking every index.
///
/// # Errors
/// As [`decode_block`].
pub fn decode_block_body<S: Source + ?Sized>(src: &mut S, head: &BlockHead) -> Result<BlockData> {
    let (rows, cols) = (head.rows, head.cols);
    let Some(vt) = head.value_type else {
        return Ok(BlockData::Empty);
    };
    let nnz = head.nnz.unwrap_or(0);
    Ok(match head.block_type {
        BlockType::Empty => BlockData::Empty,
        BlockType::Dense => {
            let count = u64::from(rows) * u64::from(cols);
            BlockData::Dense(with_value_type!(vt, T => T::into_values(
                src.take_vec::<T>(count, "a dense block's values")?)))
        }
        BlockType::Sparse => {
            with_value_type!(vt, T => decode_sparse::<T, S>(src, rows, cols, nnz, head.nnz_offset)?)
        }
        BlockType::UltraSparse => {
            with_value_type!(vt, T => decode_ultra_sparse::<T, S>(src, rows, cols, nnz as u32)?)
        }
    })
}

/// Elements to reserve up front when the input's length is unknown.
const UNKNOWN_LEN_RESERVE: usize = 1 << 10;

/// Capacity for `wanted` items of `item_len` bytes each: no more than the input can hold.
fn bounded_capacity<S: Source + ?Sized>(src: &S, wanted: u64, item_len: u64) -> usize {
    let bound = src
        .remaining()
        .map_or(UNKNOWN_LEN_RESERVE as u64, |r| r / item_len.max(1));
    usize::try_from(wanted.min(bound)).unwrap_or(usize::MAX)
}

fn decode_sparse<T: Element, S: Source + ?Sized>(
    src: &mut S,
    rows: u32,
    cols: u32,
    nnz: u64,
    nnz_offset: u64,
) -> Result<BlockData> {
    let entry = 4 + std::mem::size_of::<T>();
    if let Some(remaining) = src.remaining() {
        let needed = 4 * u128::from(rows) + u128::from(nnz) * entry as u128;
        if needed > u128::from(remaining) {
            return Err(ErrorDetails::UnexpectedEof {
                offset: src.offset(),
                what: "a sparse block's rows",
                needed: u64::try_from(needed).unwrap_or(u64::MAX),
                available: remaining,
            }
            .into());
        }
    }
    let capacity = bounded_capacity(src, nnz, entry as u64);
    let offsets = bounded_capacity(src, u64::from(rows) + 1, 4);
    let mut row_offsets = Vec::with_capacity(offsets);
    let mut col_indices: Vec<usize> = Vec::with_capacity(capacity);
    let mut values: Vec<T> = Vec::with_capacity(capacity);
    // Fresh output, filled next: faulted in on every core first.
    crate::pages::fault_in_spare(&mut row_offsets, offsets);
    crate::pages::fault_in_spare(&mut col_indices, capacity);
    crate::pages::fault_in_spare(&mut values, capacity);
    row_offsets.push(0);
    let mut counted: u64 = 0;
    for row in 0..rows {
        let count_offset = src.offset();
        let count = src.u32("a sparse row's number of non-zeros")?;
        counted += u64::from(count);
        if counted > nnz {
            return Err(ErrorDetails::SparseCountMismatch {
                offset: count_offset,
                declared: nnz,
                counted,
            }
            .into());
        }
        let start = src.offset();
        let bytes = src.take(count as usize * entry, "a sparse row's entries")?;
        let first = col_indices.len();
        col_indices.resize(first + count as usize, 0);
        values.resize(first + count as usize, T::zeroed());
        decode_sparse_row(
            bytes,
            start,
            row,
            cols,
            -1,
            &mut col_indices[first..],
            &mut values[first..],
            |c| c as usize,
        )?;
        row_offsets.push(col_indices.len());
    }
    if counted != nnz {
        return Err(ErrorDetails::SparseCountMismatch {
            offset: nnz_offset,
            declared: nnz,
            counted,
        }
        .into());
    }
    Ok(BlockData::Sparse {
        row_offsets,
        col_indices,
        values: T::into_values(values),
    })
}

fn decode_ultra_sparse<T: Element, S: Source + ?Sized>(
    src: &mut S,
    rows: u32,
    cols: u32,
    nnz: u32,
) -> Result<BlockData> {
    let single_column = cols == 1;
    let index_len = if single_column { 4 } else { 8 };
    let entry = index_len + std::mem::size_of::<T>();
    let start = src.offset();
    let bytes = src.take(nnz as usize * entry, "an ultra-sparse block's entries")?;
    let mut row_indices = Vec::with_capacity(nnz as usize);
    let mut col_indices = Vec::with_capacity(if single_column { 0 } else { nnz as usize });
    let mut values: Vec<T> = Vec::with_capacity(nnz as usize);
    let mut previous: Option<(u32, u32)> = None;
    for (k, item) in bytes.chunks_exact(entry).enumerate() {
        let offset = start + (k * entry) as u64;
        let row: u32 = read_le(item);
        let col: u32 = if single_column {
            0
        } else {
            read_le(&item[4..])
        };
        if row >= rows {
            return Err(ErrorDetails::RowOutOfRange {
                offset,
                index: row,
                rows,
            }
            .into());
        }
        if col >= cols {
            return Err(ErrorDetails::ColumnOutOfRange {
                offset: offset + 4,
                index: col,
                cols,
            }
            .into());
        }
        if let Some(previous) = previous.filter(|&p| p >= (row, col)) {
            return Err(ErrorDetails::UnsortedCoordinates {
                offset,
                previous,
                index: (row, col),
            }
            .into());
        }
        previous = Some((row, col));
        row_indices.push(row);
        if !single_column {
            col_indices.push(col);
        }
        values.push(read_le::<T>(&item[index_len..]));
    }
    Ok(BlockData::UltraSparse {
        row_indices,
        col_indices: (!single_column).then_some(col_indices),
        values: T::into_values(values),
    })
}

/// Where a block goes and how big it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlockPlace {
    /// Row index of the block's top-left cell in the object (`rx`).
    pub row: u64,
    /// Column index of the block's top-left cell in the object (`cx`).
    pub col: u64,
    /// Rows in the block.
    pub rows: u32,
    /// Columns in the block.
    pub cols: u32,
}

impl BlockPlace {
    /// Writes `rx, cx, #r, #c, bt`: everything before the block type-specific information.
    pub(crate) fn start<W: Write>(&self, sink: &mut Sink<W>, block_type: BlockType) -> Result<()> {
        sink.u64(self.row)?;
        sink.u64(self.col)?;
        sink.u32(self.rows)?;
        sink.u32(self.cols)?;
        sink.u8(block_type.code())
    }
}

/// Writes an empty block entry.
pub(crate) fn write_empty<W: Write>(sink: &mut Sink<W>, place: BlockPlace) -> Result<()> {
    place.start(sink, BlockType::Empty)
}

/// Starts a dense block entry; the caller then writes `rows * cols` values of type `vt`.
pub(crate) fn start_dense<W: Write>(
    sink: &mut Sink<W>,
    place: BlockPlace,
    vt: ValueType,
) -> Result<()> {
    place.start(sink, BlockType::Dense)?;
    sink.u8(vt.code())
}

/// Starts a sparse block entry; the caller then writes each row with [`start_sparse_row`]
/// followed by its entries with [`write_sparse_entry`].
pub(crate) fn start_sparse<W: Write>(
    sink: &mut Sink<W>,
    place: BlockPlace,
    vt: ValueType,
    nnz: u64,
) -> Result<()> {
    place.start(sink, BlockType::Sparse)?;
    sink.u8(vt.code())?;
    sink.u64(nnz)
}

/// Writes a sparse row's non-zero count.
#[inline]
pub(crate) fn start_sparse_row<W: Write>(sink: &mut Sink<W>, count: u32) -> Result<()> {
    sink.u32(count)
}

/// Writes one `(column, value)` pair of a sparse row, the value stored as `vt`.
#[inline]
pub(crate) fn write_sparse_entry<T: Element, W: Write>(
    sink: &mut Sink<W>,
    col: u32,
    value: T,
    vt: ValueType,
) -> Result<()> {
    sink.u32(col)?;
    sink.value_as(value, vt)
}

/// Starts an ultra-sparse block entry; the caller then writes `nnz` entries in row-major order
/// with [`write_ultra_sparse_entry`].
pub(crate) fn start_ultra_sparse<W: Write>(
    sink: &mut Sink<W>,
    place: BlockPlace,
    vt: ValueType,
    nnz: u32,
) -> Result<()> {
    place.start(sink, BlockType::UltraSparse)?;
    sink.u8(vt.code())?;
    sink.u32(nnz)
}

/// Writes one ultra-sparse entry: the column is left out when the block has one column.
#[inline]
pub(crate) fn write_ultra_sparse_entry<T: Element, W: Write>(
    sink: &mut Sink<W>,
    place: BlockPlace,
    (row, col): (u32, u32),
    value: T,
    vt: ValueType,
) -> Result<()> {
    sink.u32(row)?;
    if place.cols != 1 {
        sink.u32(col)?;
    }
    sink.value_as(value, vt)
}

/// Writes a block entry from owned block data, exactly as stored.
pub(crate) fn encode_block<W: Write>(
    sink: &mut Sink<W>,
    place: BlockPlace,
    data: &BlockData,
) -> Result<()> {
    match data {
        BlockData::Empty => write_empty(sink, place),
        BlockData::Dense(values) => {
            start_dense(sink, place, values.value_type())?;
            with_values!(values, v => sink.values(v))
        }
        BlockData::Sparse {
            row_offsets,
            col_indices,
            values,
        } => {
            let vt = values.value_type();
            start_sparse(sink, place, vt, values.len() as u64)?;
            with_values!(values, v => {
                for w in row_offsets.windows(2) {
                    start_sparse_row(sink, (w[1] - w[0]) as u32)?;
                    for k in w[0]..w[1] {
                        write_sparse_entry(sink, col_indices[k] as u32, v[k], vt)?;
                    }
                }
                Ok(())
            })
        }
        BlockData::UltraSparse {
            row_indices,
            col_indices,
            values,
        } => {
            let vt = values.value_type();
            start_ultra_sparse(sink, place, vt, values.len() as u32)?;
            with_values!(values, v => {
                for (k, &row) in row_indices.iter().enumerate() {
                    let col = col_indices.as_ref().map_or(0, |c| c[k]);
                    write_ultra_sparse_entry(sink, place, (row, col), v[k], vt)?;
                }
                Ok(())
            })
        }
    }
}
