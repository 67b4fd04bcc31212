//! SystemDS `MatrixBlock` values and `MatrixIndexes` keys: one block of a blocked matrix.
//!
//! A value is `int rows, int cols, byte type` and then: nothing (0, empty); `int nnz` and
//! `(int row, int col, double)` triples, or `(int row, double)` pairs for one column (1,
//! ultra-sparse); the non-zero count (a `long` when `rows * cols` exceeds `i32::MAX`, else
//! an `int`) and per row an `int` count and `(int col, double)` pairs (2, sparse);
//! `rows * cols` doubles (3, dense). All big-endian. A key is the block's row and column
//! index, 1-based `long`s.

use crate::input::Cursor;
use serde_daphne::Result;

pub(super) const EMPTY: u8 = 0;
pub(super) const ULTRA_SPARSE: u8 = 1;
pub(super) const SPARSE: u8 = 2;
pub(super) const DENSE: u8 = 3;
pub(super) const DEDUP: u8 = 4;

/// SystemDS's sparsity turn point: below it, sparse encodings are considered.
pub(super) const SPARSITY_TURN_POINT: f64 = 0.4;

/// The 1-based block row and column of a key; `reader` spans exactly the key.
pub(crate) fn decode_key(reader: &Cursor<'_>) -> Result<(u64, u64)> {
    let key = reader.bytes;
    if key.len() != 16 {
        return Err(reader.error(
            0,
            format!("a MatrixIndexes key of {} bytes (16 expected)", key.len()),
        ));
    }
    let row = i64::from_be_bytes(key[..8].try_into().unwrap());
    let col = i64::from_be_bytes(key[8..].try_into().unwrap());
    match (u64::try_from(row), u64::try_from(col)) {
        (Ok(r), Ok(c)) if r >= 1 && c >= 1 => Ok((r, c)),
        _ => Err(reader.error(0, format!("block index ({row}, {col}): indices start at 1"))),
    }
}

/// The encoding SystemDS chooses for a block (`MatrixBlock.write`).
fn choose(rows: u32, cols: u32, nnz: u64) -> u8 {
    if nnz == 0 {
        return EMPTY;
    }
    let (r, c, n) = (f64::from(rows), f64::from(cols), nnz as f64);
    let cells = u64::from(rows) * u64::from(cols);
    let sparse = n / r / c < SPARSITY_TURN_POINT;
    let size_ultra = 13 + nnz * if cols > 1 { 16 } else { 12 };
    let size_sparse =
        9 + if cells > i32::MAX as u64 { 8 } else { 4 } + u64::from(rows) * 4 + nnz * 12;
    let size_dense = 9 + cells * 8;
    let sparse_on_disk = sparse && (size_sparse < size_dense || size_ultra < size_dense);
    if sparse_on_disk && nnz < u64::from(rows) {
        ULTRA_SPARSE
    } else if sparse_on_disk {
        SPARSE
    } else {
        DENSE
    }
}

/// Encodes a block from its non-zeros `(row, column, value)` in row order (columns
/// increasing in a row): an ultra-sparse block straight from them, without a call per row
/// (a million tiny blocks of a thousand rows each would make a billion).
pub(crate) fn encode_block_entries(rows: u32, cols: u32, entries: &[(u32, u32, f64)]) -> Vec<u8> {
    let nnz = entries.len() as u64;
    if choose(rows, cols, nnz) == ULTRA_SPARSE {
        let mut out = Vec::with_capacity(13 + entries.len() * 16);
        out.extend_from_slice(&(rows as i32).to_be_bytes());
        out.extend_from_slice(&(cols as i32).to_be_bytes());
        out.push(ULTRA_SPARSE);
        out.extend_from_slice(&(nnz as i32).to_be_bytes());
        for &(r, c, v) in entries {
            out.extend_from_slice(&(r as i32).to_be_bytes());
            if cols > 1 {
                out.extend_from_slice(&(c as i32).to_be_bytes());
            }
            out.extend_from_slice(&v.to_bits().to_be_bytes());
        }
        return out;
    }
    let mut at = 0;
    encode_block(rows, cols, nnz, |r, out| {
        while let Some(&(row, c, v)) = entries.get(at).filter(|e| e.0 == r) {
            debug_assert_eq!(row, r);
            out.push((c, v));
            at += 1;
        }
    })
}

/// Encodes a block whose rows are given as `(column, value)` non-zeros (columns increasing);
/// `rows_of(r, out)` fills `out` with row `r`'s entries.
pub(crate) fn encode_block(
    rows: u32,
    cols: u32,
    nnz: u64,
    mut rows_of: impl FnMut(u32, &mut Vec<(u32, f64)>),
) -> Vec<u8> {
    let block_type = choose(rows, cols, nnz);
    let mut out = Vec::with_capacity(9);
    out.extend_from_slice(&(rows as i32).to_be_bytes());
    out.extend_from_slice(&(cols as i32).to_be_bytes());
    out.push(block_type);
    let mut row = Vec::new();
    match block_type {
        EMPTY => {}
        ULTRA_SPARSE => {
            out.extend_from_slice(&(nnz as i32).to_be_bytes());
            for r in 0..rows {
                row.clear();
                rows_of(r, &mut row);
                for &(c, v) in &row {
                    out.extend_from_slice(&(r as i32).to_be_bytes());
                    if cols > 1 {
                        out.extend_from_slice(&(c as i32).to_be_bytes());
                    }
                    out.extend_from_slice(&v.to_bits().to_be_bytes());
                }
            }
        }
        SPARSE => {
            if u64::from(rows) * u64::from(cols) > i32::MAX as u64 {
                out.extend_from_slice(&(nnz as i64).to_be_bytes());
            } else {
                out.extend_from_slice(&(nnz as i32).to_be_bytes());
            }
            for r in 0..rows {
                row.clear();
                rows_of(r, &mut row);
                out.extend_from_slice(&(row.len() as i32).to_be_bytes());
                for &(c, v) in &row {
                    out.extend_from_slice(&(c as i32).to_be_bytes());
                    out.extend_from_slice(&v.to_bits().to_be_bytes());
                }
            }
        }
        _ => {
            out.reserve(rows as usize * cols as usize * 8);
            for r in 0..rows {
                row.clear();
                rows_of(r, &mut row);
                let mut next = 0;
                for &(c, v) in &row {
                    for _ in next..c {
                        out.extend_from_slice(&0f64.to_bits().to_be_bytes());
                    }
                    out.extend_from_slice(&v.to_bits().to_be_bytes());
                    next = c + 1;
                }
                for _ in next..cols {
                    out.extend_from_slice(&0f64.to_bits().to_be_bytes());
                }
            }
        }
    }
    out
}

/// Encodes a block given as its rows of every value (`row(r)` is row `r`, `cols` long): the
/// dense encoding straight from the slices, the others through [`encode_block`]. Also
/// returns the block's non-zeros.
#[cfg(test)]
pub(crate) fn encode_dense_block<'a>(
    rows: u32,
    cols: u32,
    row: impl Fn(u32) -> &'a [f64],
) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    let nnz = encode_dense_block_into(rows, cols, row, &mut out);
    (out, nnz)
}

/// [`encode_dense_block`] into `out`, whose contents it replaces and whose memory it reuses
/// (a new 8 MB vector per block costs a page fault per 4 KiB).
pub(crate) fn encode_dense_block_into<'a>(
    rows: u32,
    cols: u32,
    row: impl Fn(u32) -> &'a [f64],
    out: &mut Vec<u8>,
) -> u64 {
    let mut block = DenseBlock::start(rows, cols, out);
    for r in 0..rows {
        block.push_row(row(r));
    }
    block.finish()
}

/// A block encoded as dense while its rows arrive, in order, a few at a time (so that rows
/// read from a file into a small buffer go straight into the blocks of their block row):
/// one pass encodes each value and counts the non-zeros; the rare block SystemDS would store
/// sparse is encoded again, from the dense bytes, when it is finished.
pub(crate) struct DenseBlock<'a> {
    out: &'a mut Vec<u8>,
    rows: u32,
    cols: u32,
    /// Where the next row goes.
    at: usize,
    nnz: u64,
}

impl<'a> DenseBlock<'a> {
    /// A `rows x cols` block in `out`, whose contents it replaces and whose memory it reuses.
    pub(crate) fn start(rows: u32, cols: u32, out: &'a mut Vec<u8>) -> Self {
        let len = 9 + rows as usize * cols as usize * 8;
        if out.capacity() < len {
            out.clear();
            out.reserve_exact(len);
            serde_daphne::lowlevel::fault_in_spare(out, len);
        }
        // Every byte is overwritten: resizing a reused buffer writes zeros only where it
        // grows, then exact chunks take a byte swap and a store per value, which the
        // compiler vectorizes together with the count.
        out.resize(len, 0);
        out[..4].copy_from_slice(&(rows as i32).to_be_bytes());
        out[4..8].copy_from_slice(&(cols as i32).to_be_bytes());
        out[8] = DENSE;
        DenseBlock {
            out,
            rows,
            cols,
            at: 9,
            nnz: 0,
        }
    }

    /// Appends the next row (`cols` values).
    pub(crate) fn push_row(&mut self, row: &[f64]) {
        let len = self.cols as usize * 8;
        let these = &mut self.out[self.at..self.at + len];
        let mut count = 0u64;
        for (dst, x) in these.chunks_exact_mut(8).zip(row) {
            let bits = x.to_bits();
            count += u64::from(bits != 0);
            dst.copy_from_slice(&bits.to_be_bytes());
        }
        self.nnz += count;
        self.at += len;
    }

    /// Ends the block (all its rows pushed): encoded again as SystemDS would store it when
    /// that is not dense. Its non-zeros.
    pub(crate) fn finish(self) -> u64 {
        let (rows, cols, nnz) = (self.rows, self.cols, self.nnz);
        debug_assert_eq!(self.at, self.out.len(), "every row pushed");
        if choose(rows, cols, nnz) != DENSE {
            let dense = std::mem::take(self.out);
            let row_bytes = cols as usize * 8;
            *self.out = encode_block(rows, cols, nnz, |r, out| {
                let start = 9 + r as usize * row_bytes;
                let values = dense[start..start + row_bytes].chunks_exact(8);
                for (c, bytes) in values.enumerate() {
                    let bits = u64::from_be_bytes(bytes.try_into().expect("8 bytes"));
                    if bits != 0 {
                        out.push((c as u32, f64::from_bits(bits)));
                    }
                }
            });
        }
        nnz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_are_chosen_as_systemds_chooses_them() {
        assert_eq!(choose(5, 7, 0), EMPTY);
        assert_eq!(choose(3, 4, 12), DENSE);
        assert_eq!(choose(100, 100, 103), SPARSE);
        assert_eq!(choose(1000, 1000, 3), ULTRA_SPARSE);
        assert_eq!(choose(1000, 1, 3), ULTRA_SPARSE);
        assert_eq!(choose(10, 1, 10), DENSE);
        // At 40 % density sparse is never chosen.
        assert_eq!(choose(10, 10, 40), DENSE);
    }

    #[test]
    fn dense_rows_encode_as_their_pairs_do() {
        let cells = [1.5f64, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0];
        let row = |r: u32| &cells[r as usize * 3..r as usize * 3 + 3];
        let pairs = |r: u32, out: &mut Vec<(u32, f64)>| {
            let stored = row(r).iter().enumerate().filter(|(_, x)| x.to_bits() != 0);
            out.extend(stored.map(|(c, &x)| (c as u32, x)));
        };
        assert_eq!(
            encode_dense_block(3, 3, row),
            (encode_block(3, 3, 3, pairs), 3)
        );
        let full = [1.0f64; 12];
        let row = |r: u32| &full[r as usize * 4..r as usize * 4 + 4];
        let pairs =
            |r: u32, out: &mut Vec<(u32, f64)>| out.extend((0..4).map(|c| (c, row(r)[c as usize])));
        assert_eq!(
            encode_dense_block(3, 4, row),
            (encode_block(3, 4, 12, pairs), 12)
        );
    }

    /// Blocks SystemDS stores sparse or ultra-sparse, built from their dense rows a few at a
    /// time, come out as those encodings of their non-zeros (-0.0 included).
    #[test]
    fn dense_rows_of_sparse_blocks_encode_as_their_pairs_do() {
        for (rows, cols, every) in [(100u32, 100u32, 97usize), (1000, 1, 400), (40, 50, 7)] {
            let cells: Vec<f64> = (0..rows as usize * cols as usize)
                .map(|i| match i % every {
                    0 => -0.0,
                    3 => i as f64 * 0.25,
                    _ => 0.0,
                })
                .collect();
            let row = |r: u32| &cells[r as usize * cols as usize..(r as usize + 1) * cols as usize];
            let nnz = cells.iter().filter(|x| x.to_bits() != 0).count() as u64;
            let pairs = |r: u32, out: &mut Vec<(u32, f64)>| {
                let stored = row(r).iter().enumerate().filter(|(_, x)| x.to_bits() != 0);
                out.extend(stored.map(|(c, &x)| (c as u32, x)));
            };
            let expected = encode_block(rows, cols, nnz, pairs);
            assert_ne!(expected[8], DENSE, "{rows} x {cols}: not a dense block");
            let mut out = Vec::new();
            let mut block = DenseBlock::start(rows, cols, &mut out);
            for r in 0..rows {
                block.push_row(row(r));
            }
            assert_eq!(block.finish(), nnz);
            assert_eq!(out, expected, "{rows} x {cols}");
        }
    }

    #[test]
    fn a_reused_buffer_encodes_as_a_new_one() {
        let dense: Vec<f64> = (1..=12).map(f64::from).collect();
        let sparse = [
            0.0f64, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        ];
        fn rows_of<'a>(cells: &'a [f64], cols: usize) -> impl Fn(u32) -> &'a [f64] {
            move |r: u32| &cells[r as usize * cols..(r as usize + 1) * cols]
        }
        let mut out = Vec::new();
        // Grown, shrunk, grown again, and after a block that went sparse: each time the
        // bytes of a fresh encoding.
        for (cells, rows, cols) in [
            (&dense[..], 2, 6),
            (&dense[..], 1, 3),
            (&sparse[..], 3, 4),
            (&dense[..], 3, 4),
            (&dense[..], 4, 3),
        ] {
            let nnz = encode_dense_block_into(rows, cols, rows_of(cells, cols as usize), &mut out);
            let fresh = encode_dense_block(rows, cols, rows_of(cells, cols as usize));
            assert_eq!((out.clone(), nnz), fresh, "{rows} x {cols}");
        }
        assert_eq!(out[8], DENSE);
    }
}
