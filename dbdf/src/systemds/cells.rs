//! Where the cells of a matrix written as SystemDS blocks come from (an object in memory, or
//! the windows of a pipe's source: an `.npy` file, a matrix of a `.dbdf` file, ...), and the
//! records of one block row encoded from them. Sources are read a few rows at a time (dense)
//! or a block row at a time (CSR), by as many threads as write parts, so memory holds those
//! rows and the block row being encoded, never the matrix.

use serde_daphne::ErrorDetails;
use std::borrow::Cow;
use std::sync::mpsc::Receiver;
use std::sync::Mutex;

use super::matrix;
use crate::pipe::{Band, Cells as PipeCells, Windows};
use serde_daphne::Block;
use serde_daphne::BlockData;
use serde_daphne::CsrParts;
use serde_daphne::DataType;
use serde_daphne::Object;
use serde_daphne::Values;
use serde_daphne::{Error, Result, Value, ValueType};

/// Takes one record (key, value) to its file.
pub(super) type Emit<'e> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'e;

/// A matrix's cells as `f64`.
pub(super) enum Cells<'a> {
    /// Every cell of a dense matrix in row order (borrowed when it is one `f64` block).
    Dense(Cow<'a, [f64]>),
    /// A CSR matrix's arrays.
    Csr(CsrParts<f64>),
    /// Object `index` of a source with windows, in bands of its layout.
    Windows(SourceRows<'a>),
    /// Bands of rows as a source gives them, in order: block rows must be asked for in
    /// order too (one part after another).
    InOrder(Mutex<InOrderRows>),
}

/// Bands of rows arriving in order, and the rows received but not yet encoded.
pub(super) struct InOrderRows {
    pub(super) bands: Receiver<Band>,
    pub(super) pending: Option<Band>,
    /// The input's bytes, for the size of what a CSR matrix encodes to.
    pub(super) stored_bytes: Option<u64>,
}

impl InOrderRows {
    /// The next `n` rows, which must start at row `first`, gathered into one band sized for
    /// them once: bands that are exactly those rows are moved, a band's head is moved and
    /// its short rest copied, and from a band far taller than `n` rows the rows are copied
    /// and the band kept (so its rest is never copied again and again).
    fn take(&mut self, first: u64, n: u64) -> Result<Band> {
        let mut taken: Option<Band> = None;
        loop {
            let have = taken.as_ref().map_or(0, |b| b.rows);
            if let Some(taken) = taken.take_if(|_| have >= n) {
                return Ok(taken);
            }
            let next = match self.pending.take() {
                Some(band) => band,
                None => self
                    .bands
                    .recv()
                    .map_err(|_| Error::invalid("the rows ended early"))?,
            };
            let (at, need) = (first + have, n - have);
            let end = next.first_row + next.rows;
            if next.first_row > at {
                return Err(Error::invalid("block rows asked for out of order"));
            }
            if end <= at {
                continue;
            }
            let rows = if next.first_row == at && next.rows <= need {
                next
            } else if next.first_row == at && next.rows - need <= need {
                let (rows, rest) = next.split_rows(need)?;
                self.pending = Some(rest);
                rows
            } else {
                let cols = next.first_col..next.first_col + next.cols;
                let rows = next.window(at..end.min(at + need), cols);
                self.pending = (end > at + need).then_some(next);
                rows
            };
            taken = Some(match taken {
                Some(mut taken) => {
                    taken.append(rows)?;
                    taken
                }
                None if rows.rows < n => {
                    let mut rows = rows;
                    rows.reserve_rows(n);
                    rows
                }
                None => rows,
            });
        }
    }
}

impl<'a> Cells<'a> {
    /// The cells of a matrix object.
    pub(super) fn of(object: &'a Object) -> Result<Cells<'a>> {
        if object.data_type() != DataType::DenseMatrix {
            return Ok(Cells::Csr(object.csr_parts::<f64>()?));
        }
        Ok(Cells::Dense(match object.blocks() {
            [Block {
                data: BlockData::Dense(Values::F64(v)),
                ..
            }] => Cow::Borrowed(v.as_slice()),
            _ => Cow::Owned(object.dense_vec::<f64>()?),
        }))
    }

    /// About how many bytes the blocks of a `rows x cols` matrix of these cells encode to.
    pub(super) fn estimate(&self, (rows, cols): (u64, u64)) -> u64 {
        let dense = u128::from(rows) * u128::from(cols) * 8;
        let sparse = match self {
            Cells::Csr(parts) => parts.values.len() as u128 * 12,
            // A CSR object's stored bytes: about 12 per entry, as SystemDS's sparse blocks.
            Cells::Windows(rows) if !rows.dense => {
                u128::from(rows.stored_bytes.unwrap_or(u64::MAX))
            }
            Cells::InOrder(rows) => rows
                .lock()
                .map_or(None, |rows| rows.stored_bytes)
                .map_or(dense, u128::from),
            _ => dense,
        };
        dense.min(sparse) as u64
    }
}

/// Object `index` of a source with windows: dense matrices read a block at a time, CSR
/// matrices a block row's CSR arrays at a time.
pub(super) struct SourceRows<'a> {
    pub(super) windows: &'a dyn Windows,
    pub(super) index: usize,
    pub(super) dense: bool,
    pub(super) stored_bytes: Option<u64>,
}

/// Block row `bi` of a matrix of `cols` columns in blocks of `size`, `nr` rows high.
struct BlockRow {
    bi: u64,
    nr: u64,
    cols: u64,
    size: u64,
}

impl BlockRow {
    /// The key of block (`bi`, `bj`): both indexes from 1, big-endian.
    fn key(&self, bj: u64) -> [u8; 16] {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&((self.bi + 1) as i64).to_be_bytes());
        key[8..].copy_from_slice(&((bj + 1) as i64).to_be_bytes());
        key
    }

    /// The first column and width of block column `bj`.
    fn columns(&self, bj: u64) -> (usize, usize) {
        let c0 = bj * self.size;
        (c0 as usize, (self.cols - c0).min(self.size) as usize)
    }

    /// The blocks of this row from `band` (its rows, each `cols` long), encoded in
    /// `scratch`; their non-zeros.
    fn dense(&self, band: &[f64], scratch: &mut Vec<u8>, emit: &mut Emit<'_>) -> Result<u64> {
        let mut stored = 0;
        for bj in 0..self.cols.div_ceil(self.size) {
            let (c0, nc) = self.columns(bj);
            let row = |r: u32| {
                let at = r as usize * self.cols as usize + c0;
                &band[at..at + nc]
            };
            stored += matrix::encode_dense_block_into(self.nr as u32, nc as u32, row, scratch);
            emit(&self.key(bj), scratch)?;
        }
        Ok(stored)
    }

    /// The blocks of this row from a source's windows, one block at a time, encoded in
    /// `scratch`; their non-zeros. Memory holds one block, not the block row (64 MB for
    /// 8192 columns, per writing thread).
    fn dense_from_source(
        &self,
        source: &SourceRows<'_>,
        scratch: &mut Vec<u8>,
        emit: &mut Emit<'_>,
    ) -> Result<u64> {
        let r0 = self.bi * self.size;
        let mut stored = 0;
        for bj in 0..self.cols.div_ceil(self.size) {
            let (c0, nc) = self.columns(bj);
            let cols = c0 as u64..(c0 + nc) as u64;
            let band = source
                .windows
                .window(source.index, r0..r0 + self.nr, cols)?;
            let values = f64_values(&band)?;
            let row = |r: u32| &values[r as usize * nc..(r as usize + 1) * nc];
            stored += matrix::encode_dense_block_into(self.nr as u32, nc as u32, row, scratch);
            emit(&self.key(bj), scratch)?;
        }
        Ok(stored)
    }

    /// The blocks of this row from CSR arrays whose row `first` is this block row's first;
    /// their non-zeros (-0.0 counts, as in SystemDS). The entries are first sorted into
    /// their blocks in one pass (finding each block's part of each row instead would search
    /// every row once per block column: a thousand times the work for a million columns).
    fn csr(&self, parts: &CsrParts<f64>, first: usize, emit: &mut Emit<'_>) -> Result<u64> {
        let (nr, block_columns) = (self.nr as usize, self.cols.div_ceil(self.size) as usize);
        let size = self.size as usize;
        // Each block's entries (row, column in the block, value), in row order.
        let mut blocks: Vec<Vec<(u32, u32, f64)>> = vec![Vec::new(); block_columns];
        for r in 0..nr {
            let entries = parts.row_offsets[first + r]..parts.row_offsets[first + r + 1];
            for (&c, &x) in parts.col_indices[entries.clone()]
                .iter()
                .zip(&parts.values[entries])
            {
                if x.to_bits() != 0 {
                    blocks[c / size].push((r as u32, (c % size) as u32, x));
                }
            }
        }
        let mut stored = 0;
        for (bj, entries) in blocks.iter().enumerate() {
            let nc = self.columns(bj as u64).1;
            stored += entries.len() as u64;
            let value = matrix::encode_block_entries(self.nr as u32, nc as u32, entries);
            emit(&self.key(bj as u64), &value)?;
        }
        Ok(stored)
    }
}

/// Hands the records of block row `bi` of a matrix to `emit`, encoding dense blocks in
/// `scratch`, and returns their non-zeros (-0.0 counts, as in SystemDS).
pub(super) fn matrix_records(
    cells: &Cells<'_>,
    (rows, cols): (u64, u64),
    size: u64,
    bi: u64,
    scratch: &mut Vec<u8>,
    emit: &mut Emit<'_>,
) -> Result<u64> {
    let r0 = bi * size;
    let nr = (rows - r0).min(size);
    let row = BlockRow { bi, nr, cols, size };
    let band_len = (nr * cols) as usize;
    match cells {
        Cells::Dense(v) => {
            let start = (r0 * cols) as usize;
            row.dense(&v[start..start + band_len], scratch, emit)
        }
        Cells::Csr(parts) => row.csr(parts, r0 as usize, emit),
        Cells::Windows(source) if source.dense => row.dense_from_source(source, scratch, emit),
        Cells::InOrder(rows) => {
            let band = rows
                .lock()
                .map_err(|_| Error::invalid("a writer thread panicked"))?
                .take(r0, nr)?;
            block_row_of(&row, band, scratch, emit)
        }
        Cells::Windows(source) => {
            let band = source.windows.window(source.index, r0..r0 + nr, 0..cols)?;
            block_row_of(&row, band, scratch, emit)
        }
    }
}

/// The blocks of `row` from `band`, its rows: dense bands as dense rows, CSR bands as CSR
/// arrays.
fn block_row_of(
    row: &BlockRow,
    band: Band,
    scratch: &mut Vec<u8>,
    emit: &mut Emit<'_>,
) -> Result<u64> {
    match band.cells {
        PipeCells::Csr {
            row_offsets,
            col_indices,
            values,
        } => {
            let parts = CsrParts {
                row_offsets,
                col_indices,
                values: f64_of(values)?,
            };
            row.csr(&parts, 0, emit)
        }
        _ => row.dense(&f64_values(&band)?, scratch, emit),
    }
}

/// A band's values as `f64`, converted exactly when they are of another type.
fn f64_values(band: &Band) -> Result<Cow<'_, [f64]>> {
    match &band.cells {
        PipeCells::Dense(Values::F64(v)) => Ok(Cow::Borrowed(v.as_slice())),
        PipeCells::Dense(other) => f64_of(other.clone()).map(Cow::Owned),
        _ => f64_of(band.dense_values()?).map(Cow::Owned),
    }
}

/// Values as `f64`, exactly (SystemDS matrices hold doubles).
fn f64_of(values: Values) -> Result<Vec<f64>> {
    let copy = values.clone();
    match values.convert(ValueType::F64) {
        Ok(Values::F64(v)) => Ok(v),
        Ok(_) => unreachable!("converted to f64"),
        Err(at) => Err(ErrorDetails::LossyConversion {
            offset: 0,
            value: copy.get(at).unwrap_or(Value::U8(0)),
            to: ValueType::F64,
        }
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Rows `first..first + rows` of a matrix `cols` wide whose cell (r, c) is `r * cols + c`.
    fn band(first: u64, rows: u64, cols: u64) -> Band {
        let values = (first * cols..(first + rows) * cols)
            .map(|x| x as f64)
            .collect();
        Band::dense(first..first + rows, 0..cols, Values::F64(values))
    }

    /// Block rows of `n` taken from bands of `heights` equal the matrix's rows, in order.
    fn takes(heights: &[u64], n: u64) {
        let (cols, total) = (3, heights.iter().sum::<u64>());
        let (send, bands) = mpsc::channel();
        let mut first = 0;
        for &h in heights {
            send.send(band(first, h, cols)).unwrap();
            first += h;
        }
        drop(send);
        let mut rows = InOrderRows {
            bands,
            pending: None,
            stored_bytes: None,
        };
        let mut r0 = 0;
        while r0 < total {
            let nr = n.min(total - r0);
            let taken = rows.take(r0, nr).unwrap();
            assert_eq!((taken.first_row, taken.rows, taken.cols), (r0, nr, cols));
            let PipeCells::Dense(Values::F64(v)) = &taken.cells else {
                panic!("dense rows");
            };
            let want: Vec<f64> = (r0 * cols..(r0 + nr) * cols).map(|x| x as f64).collect();
            assert_eq!(v, &want, "{heights:?} by {n}: rows from {r0}");
            r0 += nr;
        }
        assert!(rows.take(total, 1).is_err(), "past the end: the rows ended");
    }

    #[test]
    fn block_rows_are_gathered_from_bands_of_any_height() {
        takes(&[4, 4, 4, 4], 4); // moved as they are
        takes(&[3, 3, 3, 3, 3], 4); // gathered, heads moved, rests carried over
        takes(&[5, 5, 5], 4); // a band a little taller: its rest carried over
        takes(&[17, 1, 9], 4); // far taller: rows copied out, the band kept
        takes(&[1; 10], 7);
    }

    #[test]
    fn block_rows_asked_for_out_of_order_are_refused() {
        let (send, bands) = mpsc::channel();
        send.send(band(4, 4, 2)).unwrap();
        drop(send);
        let mut rows = InOrderRows {
            bands,
            pending: None,
            stored_bytes: None,
        };
        let err = rows.take(0, 4).unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
    }
}
