//! A sparse block's row, the one place its rule lives: a `u32` count, then `(u32 column,
//! value)` pairs, columns inside the block and strictly increasing. Encoded and decoded over
//! slices, for the sequential reader and writer and for those that work on every core.

use super::element::{exact_cast, Element};
use super::values::read_le;
use crate::error::ErrorDetails;
use crate::error::{Error, Result};

/// Encodes one sparse row into `out`, exactly `4 + n * (4 + size of U)` bytes for its `n`
/// entries: the count, then each `(column, value)` pair, columns as `col(index)` and values
/// stored as `U` (the caller guarantees the values are non-zero and convert exactly).
#[inline]
pub(crate) fn encode_sparse_row<T: Element, U: Element, N: Copy>(
    out: &mut [u8],
    cols: &[N],
    values: &[T],
    col: impl Fn(N) -> u32,
) {
    let entry = 4 + std::mem::size_of::<U>();
    let n = cols.len().min(values.len());
    out[..4].copy_from_slice(&(n as u32).to_le_bytes());
    // Indexed over slices cut to one length, as in `decode_sparse_row`.
    let (pairs, cols, values) = (&mut out[4..4 + n * entry], &cols[..n], &values[..n]);
    for k in 0..n {
        let pair = &mut pairs[k * entry..(k + 1) * entry];
        pair[..4].copy_from_slice(&col(cols[k]).to_le_bytes());
        let stored: U = exact_cast(values[k]);
        pair[4..].copy_from_slice(bytemuck::bytes_of(&stored.to_le()));
    }
}

/// Decodes `pairs`, the `(u32 column, value)` entries of sparse row `row` (or a run of them;
/// byte `at` of the input) of a block `cols` wide, into `out_cols` (each as `index(column)`)
/// and `out_values`, as long as the entries. Each column must lie inside the block and above
/// the previous one (`previous`, -1 at the row's start): the one place this rule is checked.
/// Returns the last column.
///
/// # Errors
/// [`crate::ErrorKind::ColumnOutOfRange`] or [`crate::ErrorKind::UnsortedColumns`] at the offending entry.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn decode_sparse_row<T: Element, I: Copy>(
    pairs: &[u8],
    at: u64,
    row: u32,
    cols: u32,
    mut previous: i64,
    out_cols: &mut [I],
    out_values: &mut [T],
    index: impl Fn(u32) -> I,
) -> Result<i64> {
    let entry = 4 + std::mem::size_of::<T>();
    // Indexed, over slices cut to one length: zipped iterators kept their state on the
    // stack here, at half the speed.
    let n = out_cols
        .len()
        .min(out_values.len())
        .min(pairs.len() / entry);
    let (pairs, out_cols, out_values) = (
        &pairs[..n * entry],
        &mut out_cols[..n],
        &mut out_values[..n],
    );
    for k in 0..n {
        let pair = &pairs[k * entry..(k + 1) * entry];
        let col: u32 = read_le(pair);
        // One branch per entry for both checks: in range, and above the previous column.
        if col >= cols || i64::from(col) <= previous {
            return Err(row_fault(at + (k * entry) as u64, row, cols, previous, col));
        }
        previous = i64::from(col);
        out_cols[k] = index(col);
        out_values[k] = read_le::<T>(&pair[4..]);
    }
    Ok(previous)
}

/// The error for column `col` at `offset`, out of range or not above `previous`; out of the
/// loop, which stays tight.
#[cold]
#[inline(never)]
fn row_fault(offset: u64, row: u32, cols: u32, previous: i64, col: u32) -> Error {
    if col >= cols {
        Error::from(ErrorDetails::ColumnOutOfRange {
            offset,
            index: col,
            cols,
        })
    } else {
        Error::from(ErrorDetails::UnsortedColumns {
            offset,
            row,
            previous: previous as u32,
            index: col,
        })
    }
}
