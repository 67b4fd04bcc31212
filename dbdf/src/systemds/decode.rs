//! SystemDS block values (layout in [`super::matrix`]) decoded in two steps, so that the
//! costly one runs on the thread that uses the cells while the next record is read:
//! [`decode_head`] reads a block's shape and type and checks that its cells fit the value;
//! [`BlockHead::check`] checks the cells themselves (sparse rows, ultra-sparse entries).
//! Dense cells and ultra-sparse entries in SystemDS's order stay big-endian bytes in the
//! record, swapped straight into the arrays they go to (no vector per block).

use std::ops::Range;

use super::matrix::{DEDUP, DENSE, EMPTY, SPARSE, ULTRA_SPARSE};
use crate::input::Cursor;
use serde_daphne::BlockData;
use serde_daphne::Result;
use serde_daphne::Values;

/// A SystemDS `double`.
fn f64_be(bytes: &[u8]) -> f64 {
    f64::from_bits(u64::from_be_bytes(bytes.try_into().unwrap()))
}

/// A block's shape, and where its cells lie in the record's value, not yet checked. Holds
/// no borrow, so it can go to another thread ahead of the value's bytes.
#[derive(Debug)]
pub(crate) struct BlockHead {
    pub(crate) rows: u32,
    pub(crate) cols: u32,
    cells: Unchecked,
}

#[derive(Debug)]
enum Unchecked {
    Empty,
    Dense(Range<usize>),
    /// Entries of `entry` bytes: `int row, int col, double`, or `int row, double` in a
    /// one-column block.
    UltraSparse {
        entries: Range<usize>,
        entry: usize,
    },
    /// Per row an `int` count and `(int col, double)` pairs, from `rows_at` to the end.
    Sparse {
        rows_at: usize,
        nnz: usize,
        nnz_at: usize,
    },
}

/// A block's cells, checked.
pub(crate) enum BlockCells<'a> {
    DenseBigEndian(&'a [u8]),
    /// Entries of `entry` bytes (as in [`BlockHead`]), row by row, increasing within a row.
    UltraSparseBigEndian {
        bytes: &'a [u8],
        entry: usize,
    },
    Decoded(BlockData),
}

/// Reads a block value's shape and type, and checks that its cells fit what the value
/// holds (all of it, for every type but sparse, whose rows [`BlockHead::check`] reads).
pub(crate) fn decode_head(reader: &mut Cursor<'_>) -> Result<BlockHead> {
    let rows = reader.len32_be("the block's rows")? as u32;
    let cols = reader.len32_be("the block's columns")? as u32;
    let type_at = reader.pos;
    let block_type = reader.u8("the block type")?;
    let cells = u64::from(rows) * u64::from(cols);
    let located = |reader: &Cursor<'_>, len: usize| reader.pos - len..reader.pos;
    let cells = match block_type {
        EMPTY => Unchecked::Empty,
        DENSE => {
            let bytes = usize::try_from(cells * 8)
                .ok()
                .filter(|&n| n <= reader.remaining())
                .ok_or_else(|| {
                    reader.error(
                        reader.pos,
                        format!(
                            "a dense {rows} x {cols} block needs {} bytes, {} are left",
                            cells * 8,
                            reader.remaining()
                        ),
                    )
                })?;
            reader.take(bytes, "dense values")?;
            Unchecked::Dense(located(reader, bytes))
        }
        SPARSE => {
            let nnz_at = reader.pos;
            let nnz = if cells > i32::MAX as u64 {
                reader.i64_be("the non-zero count")?
            } else {
                i64::from(reader.i32_be("the non-zero count")?)
            };
            // Every row has a 4-byte count, every non-zero 12 bytes: both must be there.
            let need = (u64::from(rows) * 4)
                .saturating_add(u64::try_from(nnz).unwrap_or(u64::MAX).saturating_mul(12));
            if nnz < 0 || need > reader.remaining() as u64 {
                return Err(reader.error(nnz_at, format!("a sparse {rows} x {cols} block with {nnz} non-zeros does not fit the {} bytes left", reader.remaining())));
            }
            return Ok(BlockHead {
                rows,
                cols,
                cells: Unchecked::Sparse {
                    rows_at: reader.pos,
                    nnz: nnz as usize,
                    nnz_at,
                },
            });
        }
        ULTRA_SPARSE => {
            let nnz_at = reader.pos;
            let nnz = reader.len32_be("the non-zero count")?;
            let entry = if cols > 1 { 16 } else { 12 };
            let len = nnz.saturating_mul(entry);
            reader.take(len, "the ultra-sparse entries").map_err(|_| {
                reader.error(
                    nnz_at,
                    format!(
                        "{nnz} ultra-sparse entries do not fit the {} bytes left",
                        reader.remaining()
                    ),
                )
            })?;
            Unchecked::UltraSparse {
                entries: located(reader, len),
                entry,
            }
        }
        DEDUP => {
            return Err(reader.error(type_at, "a deduplicated dense block (DEDUP_BLOCK), which this crate does not read; write the matrix without deduplication"));
        }
        other => return Err(reader.error(type_at, format!("unknown block type {other} (0 to 3)"))),
    };
    check_end(reader)?;
    Ok(BlockHead { rows, cols, cells })
}

/// Nothing may follow a block in its value.
fn check_end(reader: &Cursor<'_>) -> Result<()> {
    match reader.remaining() {
        0 => Ok(()),
        left => Err(reader.error(
            reader.pos,
            format!("{left} bytes after the block that began at byte 0 of the value"),
        )),
    }
}

impl BlockHead {
    /// Checks the cells in `value` (the record value this head was read from, at any
    /// position): every ultra-sparse entry and sparse row, with the byte offset of the first
    /// that is wrong.
    ///
    /// # Errors
    /// `ForeignInput` for an index outside the block, a repeated cell, a sparse row that
    /// overruns the block's count or does not increase, bytes after a sparse block.
    pub(crate) fn check<'a>(self, value: &mut Cursor<'a>) -> Result<BlockCells<'a>> {
        let (rows, cols) = (self.rows, self.cols);
        Ok(match self.cells {
            Unchecked::Empty => BlockCells::Decoded(BlockData::Empty),
            Unchecked::Dense(at) => BlockCells::DenseBigEndian(&value.bytes[at]),
            Unchecked::UltraSparse { entries, entry } => {
                check_ultra_sparse(value, entries, entry, (rows, cols))?
            }
            Unchecked::Sparse {
                rows_at,
                nnz,
                nnz_at,
            } => {
                value.pos = rows_at;
                let data = decode_sparse(value, (rows, cols), nnz, nnz_at)?;
                check_end(value)?;
                BlockCells::Decoded(data)
            }
        })
    }
}

fn check_ultra_sparse<'a>(
    value: &Cursor<'a>,
    entries: Range<usize>,
    entry: usize,
    (rows, cols): (u32, u32),
) -> Result<BlockCells<'a>> {
    let entry_at = |k: usize| entries.start + entry * k;
    let bytes = &value.bytes[entries.clone()];
    let mut last = None;
    let mut in_order = true;
    for (k, e) in bytes.chunks_exact(entry).enumerate() {
        let (r, c) = ultra_sparse_position(e);
        if r < 0 || r as u32 >= rows || c < 0 || c as u32 >= cols {
            return Err(value.error(
                entry_at(k),
                format!("({r}, {c}) outside the {rows} x {cols} block"),
            ));
        }
        in_order &= last < Some((r, c));
        last = Some((r, c));
    }
    // SystemDS writes them row by row: then they are used where they are; another writer's
    // order is sorted (and checked for repeats).
    if in_order {
        return Ok(BlockCells::UltraSparseBigEndian { bytes, entry });
    }
    let mut cells: Vec<(u32, u32, f64, usize)> = bytes
        .chunks_exact(entry)
        .enumerate()
        .map(|(k, e)| {
            let (r, c) = ultra_sparse_position(e);
            (r as u32, c as u32, f64_be(&e[entry - 8..]), entry_at(k))
        })
        .collect();
    cells.sort_by_key(|&(r, c, ..)| (r, c));
    if let Some(w) = cells
        .windows(2)
        .find(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1))
    {
        return Err(value.error(w[1].3, format!("({}, {}) appears twice", w[1].0, w[1].1)));
    }
    Ok(BlockCells::Decoded(BlockData::UltraSparse {
        row_indices: cells.iter().map(|c| c.0).collect(),
        col_indices: (cols > 1).then(|| cells.iter().map(|c| c.1).collect()),
        values: Values::F64(cells.iter().map(|c| c.2).collect()),
    }))
}

/// The rows of a sparse block, from the reader's position.
fn decode_sparse(
    reader: &mut Cursor<'_>,
    (rows, cols): (u32, u32),
    nnz: usize,
    nnz_at: usize,
) -> Result<BlockData> {
    let mut row_offsets = Vec::with_capacity(rows as usize + 1);
    row_offsets.push(0usize);
    let mut col_indices = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    for r in 0..rows {
        let count_at = reader.pos;
        let count = reader.len32_be("a row's non-zero count")?;
        if col_indices.len() + count > nnz {
            return Err(reader.error(
                count_at,
                format!("row {r} has {count} non-zeros, more than the block's {nnz} allow"),
            ));
        }
        let pairs = reader.take(count * 12, "a row's (column, value) pairs")?;
        let first = col_indices.len();
        for (k, pair) in pairs.chunks_exact(12).enumerate() {
            let c = i32::from_be_bytes(pair[..4].try_into().unwrap());
            let pair_at = count_at + 4 + 12 * k;
            if c < 0 || c as u32 >= cols {
                return Err(reader.error(
                    pair_at,
                    format!("column {c} outside the block's {cols} columns"),
                ));
            }
            if col_indices.len() > first && *col_indices.last().unwrap() >= c as usize {
                return Err(
                    reader.error(pair_at, format!("column {c} in row {r} does not increase"))
                );
            }
            col_indices.push(c as usize);
            values.push(f64_be(&pair[4..]));
        }
        row_offsets.push(col_indices.len());
    }
    if col_indices.len() != nnz {
        return Err(reader.error(
            nnz_at,
            format!(
                "the rows hold {} non-zeros, the block says {nnz}",
                col_indices.len()
            ),
        ));
    }
    Ok(BlockData::Sparse {
        row_offsets,
        col_indices,
        values: Values::F64(values),
    })
}

/// The row and column of an ultra-sparse entry (column 0 in a one-column block's 12-byte
/// entries).
fn ultra_sparse_position(entry: &[u8]) -> (i32, i32) {
    let r = i32::from_be_bytes(entry[..4].try_into().unwrap());
    match entry.len() {
        16 => (r, i32::from_be_bytes(entry[4..8].try_into().unwrap())),
        _ => (r, 0),
    }
}

impl BlockCells<'_> {
    /// The cells as a block of `f64` values.
    pub(crate) fn into_data(self) -> BlockData {
        match self {
            BlockCells::DenseBigEndian(bytes) => {
                BlockData::Dense(Values::F64(bytes.chunks_exact(8).map(f64_be).collect()))
            }
            BlockCells::UltraSparseBigEndian { bytes, entry } => {
                let entries = || bytes.chunks_exact(entry);
                BlockData::UltraSparse {
                    row_indices: entries()
                        .map(|e| ultra_sparse_position(e).0 as u32)
                        .collect(),
                    col_indices: (entry == 16).then(|| {
                        entries()
                            .map(|e| ultra_sparse_position(e).1 as u32)
                            .collect()
                    }),
                    values: Values::F64(entries().map(|e| f64_be(&e[entry - 8..])).collect()),
                }
            }
            BlockCells::Decoded(data) => data,
        }
    }

    /// Calls `f(row, column, value)` (within the block, of `cols` columns) for every stored
    /// value, row by row.
    pub(crate) fn for_each_stored(&self, cols: u32, mut f: impl FnMut(usize, usize, f64)) {
        match self {
            BlockCells::DenseBigEndian(bytes) => {
                let cols = cols.max(1) as usize;
                for (k, be) in bytes.chunks_exact(8).enumerate() {
                    f(k / cols, k % cols, f64_be(be));
                }
            }
            BlockCells::UltraSparseBigEndian { bytes, entry } => {
                for e in bytes.chunks_exact(*entry) {
                    let (r, c) = ultra_sparse_position(e);
                    f(r as usize, c as usize, f64_be(&e[entry - 8..]));
                }
            }
            BlockCells::Decoded(data) => for_each_decoded(data, cols, f),
        }
    }
}

/// [`BlockCells::for_each_stored`] for a decoded block of `cols` columns.
pub(crate) fn for_each_decoded(data: &BlockData, cols: u32, mut f: impl FnMut(usize, usize, f64)) {
    if let Some(Values::F64(v)) = data.values() {
        data.for_each_position(cols, |k, r, c| f(r as usize, c as usize, v[k]));
    }
}

/// Copies a dense block of `cols` columns, held as big-endian `bytes`, into the row-major
/// array `out` of `width` columns, its first cell at `out[first]`.
pub(crate) fn copy_dense_rows(
    bytes: &[u8],
    cols: usize,
    out: &mut [f64],
    first: usize,
    width: usize,
) {
    if cols == 0 {
        return;
    }
    for (r, row) in bytes.chunks_exact(cols * 8).enumerate() {
        let at = first + r * width;
        for (x, be) in out[at..at + cols].iter_mut().zip(row.chunks_exact(8)) {
            *x = f64_be(be);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Foreign;

    #[test]
    fn a_sparse_count_near_the_largest_long_is_refused_not_overflowed() {
        // Regression (found by the systemds fuzz target): 4 * rows + 12 * nnz overflowed.
        let mut value = [65536i32.to_be_bytes(), 65536i32.to_be_bytes()].concat();
        value.push(SPARSE);
        value.extend_from_slice(&(i64::MAX / 4).to_be_bytes());
        let err = decode_head(&mut Cursor::new(&value, Foreign("SystemDS"))).unwrap_err();
        assert_eq!(err.offset(), Some(9), "{err}");
        assert!(
            err.to_string().contains("does not fit the 0 bytes left"),
            "{err}"
        );
    }
}
