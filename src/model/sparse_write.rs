//! A CSR matrix written as one sparse block on two cores, from its arrays in any index type:
//! one thread encodes runs of rows into 2 MiB buffers while the calling thread writes the
//! previous one (a sink appending to a vector has its rows encoded on every core, straight
//! into it). Exactly the bytes the general writer makes for the matrix; the row rule is
//! [`encode_sparse_row`]'s.
//!
//! A Python `dbdf.save` of 1e7 entries spent its time widening scipy's `int32` indices to
//! `usize` in fresh memory, then encoding and writing on one core.

use std::io::Write;

use crate::error::Result;
use crate::model::encode::{choose_block_type, tile_dims, write_header, Analysis};
use crate::model::CsrIndex;
use crate::options::Options;
use crate::threads::{on_every_core, pipeline_to_caller, share, workers};
use crate::wire::block::start_sparse;
use crate::wire::sink::Sink;
use crate::wire::sparse_row::encode_sparse_row;
use crate::wire::values::count_nonzero;
use crate::wire::{BlockPlace, BlockType, DataType, Element, Header};

/// Bytes of rows encoded at a time before they are written: past the 1 MiB of `to_file`'s
/// buffer, so that each run skips a copy into it (2 and 4 MiB measured alike, 1 MiB slower).
const RUN: usize = 2 << 20;

/// Buffers of rows that may wait for the writer (0, 1 and 2 measured alike in Rust; 2
/// absorbs a Python process's jitter).
const WAITING: usize = 2;

/// Buffers in all: one being filled, one being written, the rest waiting.
const BUFFERS: usize = WAITING + 2;

/// Buffers kept from one write for the next (at most [`BUFFERS`] of 3 MiB): fresh ones
/// cost their page faults on the encoder's thread, which measurably held up the writer in
/// the first saves of a Python process.
static KEPT: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// A matrix's CSR arrays: `offsets` from 0, valid (as sprs checks them).
pub(crate) struct CsrArrays<'a, T, N, P> {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) offsets: &'a [P],
    pub(crate) indices: &'a [N],
    pub(crate) values: &'a [T],
}

impl<T: Element, N: CsrIndex, P: CsrIndex> CsrArrays<'_, T, N, P> {
    /// The byte where row `r` starts, from the first row's start.
    fn row_at(&self, r: usize) -> usize {
        4 * r + (4 + std::mem::size_of::<T>()) * self.offsets[r].index_unchecked()
    }

    /// Rows `from..` up to the first that starts at least `bytes` after row `from` (at least
    /// one row).
    fn rows_for(&self, from: usize, bytes: usize) -> usize {
        let target = self.row_at(from) + bytes;
        let rows = self.offsets.len() - 1;
        from + 1 + partition(from + 1, rows, |r| self.row_at(r) < target)
    }

    /// Encodes rows `range` into `out`, which is exactly their bytes.
    fn encode(&self, out: &mut [u8], range: std::ops::Range<usize>) {
        let entry = 4 + std::mem::size_of::<T>();
        let mut pos = 0;
        for r in range {
            let (s, e) = (
                self.offsets[r].index_unchecked(),
                self.offsets[r + 1].index_unchecked(),
            );
            let len = 4 + (e - s) * entry;
            encode_sparse_row::<T, T, N>(
                &mut out[pos..pos + len],
                &self.indices[s..e],
                &self.values[s..e],
                |c| c.index_unchecked() as u32,
            );
            pos += len;
        }
    }
}

/// How many of `lo..hi` satisfy `below`, a predicate true up to some point and false after.
fn partition(lo: usize, hi: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut a, mut b) = (lo, hi);
    while a < b {
        let mid = a + (b - a) / 2;
        if below(mid) {
            a = mid + 1;
        } else {
            b = mid;
        }
    }
    a - lo
}

/// Writes `matrix` as a CSR object when `options` make it one sparse block of its own
/// value type with every stored value non-zero (the general writer would then write each
/// row as stored); `None` otherwise, for the general writer.
pub(crate) fn write_whole_sparse<T: Element, N: CsrIndex, P: CsrIndex, W: Write>(
    sink: &mut Sink<W>,
    matrix: &CsrArrays<'_, T, N, P>,
    options: &Options,
) -> Option<Result<()>> {
    let (rows, cols) = (matrix.rows, matrix.cols);
    if options.narrow || !matches!(options.runtime_writer(), Ok(false)) {
        return None;
    }
    let (tile_rows, tile_cols) = tile_dims(options);
    let place = BlockPlace {
        row: 0,
        col: 0,
        rows: u32::try_from(rows).ok()?,
        cols: u32::try_from(cols).ok()?,
    };
    if rows == 0 || cols == 0 || rows as u64 > tile_rows || cols as u64 > tile_cols {
        return None;
    }
    let nnz = count_on_every_core(matrix.values);
    if nnz != matrix.values.len() {
        return None;
    }
    let analysis = Analysis {
        nnz: nnz as u64,
        value_type: T::VALUE_TYPE,
        dense_source: false,
        no_stored_zeros: true,
    };
    match choose_block_type(options.block_policy, place, &analysis) {
        Ok(BlockType::Sparse) => {}
        Ok(_) => return None,
        Err(e) => return Some(Err(e)),
    }
    let header = Header::matrix(DataType::CsrMatrix, rows as u64, cols as u64, T::VALUE_TYPE);
    Some(
        write_header(sink, &header)
            .and_then(|()| start_sparse(sink, place, T::VALUE_TYPE, nnz as u64))
            .and_then(|()| write_rows(sink, matrix)),
    )
}

/// Non-zeros of `values`, counted on every core when there are many.
fn count_on_every_core<T: Element>(values: &[T]) -> usize {
    let per = share(values.len(), values.len() >= 1 << 20);
    on_every_core(values.chunks(per), count_nonzero)
        .into_iter()
        .sum()
}

fn write_rows<T: Element, N: CsrIndex, P: CsrIndex, W: Write>(
    sink: &mut Sink<W>,
    matrix: &CsrArrays<'_, T, N, P>,
) -> Result<()> {
    let rows = matrix.offsets.len() - 1;
    let len = matrix.row_at(rows);
    if sink.is_counting() {
        return sink.skip(len);
    }
    if sink.is_direct() {
        // Into the output vector: a band of rows per core.
        sink.reserve(len as u64)?;
        let out = sink.output_mut();
        let start = out.len();
        out.resize(start + len, 0);
        let threads = if len < 4 * RUN { 1 } else { workers() };
        let mut bands = Vec::new();
        let (mut rest, mut from) = (&mut out[start..], 0);
        while from < rows {
            let to = if bands.len() + 1 == threads {
                rows
            } else {
                matrix.rows_for(from, len / threads)
            };
            let (band, tail) = rest.split_at_mut(matrix.row_at(to) - matrix.row_at(from));
            bands.push((band, from..to));
            (rest, from) = (tail, to);
        }
        on_every_core(bands, |(band, range)| matrix.encode(band, range));
        return Ok(());
    }
    pipeline_to_caller(
        WAITING,
        |producer| {
            // Buffers are reused: one being filled, one being written, the rest waiting (a
            // new one whenever none was back yet, zeroed and faulted in on this thread, left
            // the writer idle a quarter of a Python save), and kept for the next write.
            let (mut from, mut made) = (0, 0);
            let new_buffer = || {
                let kept = KEPT.lock().ok().and_then(|mut kept| kept.pop());
                kept.unwrap_or_else(|| {
                    let mut buf = Vec::with_capacity(RUN + RUN / 2);
                    crate::pages::fault_in_spare(&mut buf, RUN + RUN / 2);
                    buf
                })
            };
            while from < rows {
                let to = matrix.rows_for(from, RUN);
                let bytes = matrix.row_at(to) - matrix.row_at(from);
                let Some(mut buf) = producer.recycled(&mut made, BUFFERS, new_buffer) else {
                    break;
                };
                // Reused buffers are overwritten whole: zeroed only where they grow.
                buf.resize(bytes, 0);
                matrix.encode(&mut buf, from..to);
                if !producer.send(buf) {
                    break;
                }
                from = to;
            }
            let back = producer.take_back(made);
            if let Ok(mut kept) = KEPT.lock() {
                kept.extend(back.into_iter().filter(|b| b.capacity() <= 2 * RUN));
                kept.truncate(BUFFERS);
            }
            Ok(())
        },
        |buf: &mut Vec<u8>| sink.bytes(buf),
    )
}
