//! Where the cells of a matrix written as SystemDS blocks come from (an object in memory, an
//! `.npy` file, a matrix of a `.dbdf` file), and the records of one block row encoded from
//! them. The file sources are read a band of block rows at a time, by as many threads as
//! write parts, so memory holds those bands, never the matrix.

use serde_daphne::__private::error::ErrorImpl;
use std::borrow::Cow;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;

use super::matrix::{self, DenseBlock};
use serde_daphne::__private::io::DbdfFile;
use serde_daphne::__private::model::{Block, CsrParts, Object};
use serde_daphne::__private::wire::values::zeroed_vec;
use serde_daphne::__private::wire::{BlockData, DataType, Header, Values};
use serde_daphne::Result;

/// Takes one record (key, value) to its file.
pub(super) type Emit<'e> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'e;

/// A matrix's cells as `f64`.
pub(super) enum Cells<'a> {
    /// Every cell of a dense matrix in row order (borrowed when it is one `f64` block).
    Dense(Cow<'a, [f64]>),
    /// A CSR matrix's arrays.
    Csr(CsrParts<f64>),
    /// The rows of an `.npy` file read a band at a time.
    Npy(Bands),
    /// A matrix of a `.dbdf` file read a band at a time.
    Dbdf(DbdfRows),
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
            Cells::Dbdf(rows) if !rows.dense => u128::from(rows.stored_bytes),
            _ => dense,
        };
        dense.min(sparse) as u64
    }
}

/// Rows of `cols` `f64` from byte `offset` of `file`, read with positional reads a few rows
/// at a time (about [`CHUNK_BYTES`], so they stay in cache while they are encoded) straight
/// into the blocks of their block row. Not a memory map: a file truncated by another process
/// meanwhile is then an I/O error, never a `SIGBUS`; and reading in chunks costs about what
/// encoding from a map did, where reading whole bands (64 MB for 8192 columns) made the
/// conversion 17 % slower (measured).
pub(super) struct Bands {
    pub(super) file: File,
    pub(super) offset: u64,
    /// Each writing thread's buffers, kept for reuse (fresh memory costs a page fault and a
    /// zeroed page for every 4 KiB).
    pub(super) spare: Mutex<Vec<BandBuffers>>,
}

/// About how many bytes of rows are read at a time.
const CHUNK_BYTES: u64 = 1 << 20;

/// One writing thread's buffers: the rows read, and the block row's blocks being encoded.
#[derive(Default)]
pub(super) struct BandBuffers {
    rows: Vec<f64>,
    blocks: Vec<Vec<u8>>,
}

/// Matrix `index` of the `.dbdf` file at `path`, read a band of block rows at a time
/// through [`DbdfFile`] windows: dense matrices as rows of `f64`, CSR matrices as the band's
/// CSR arrays. Each writing thread takes its own handle of the file and band buffer from the
/// pools and gives them back.
pub(super) struct DbdfRows {
    path: PathBuf,
    index: usize,
    dense: bool,
    stored_bytes: u64,
    files: Mutex<Vec<DbdfFile<serde_daphne::__private::io::FileReader>>>,
    spare: Mutex<Vec<Vec<f64>>>,
}

impl DbdfRows {
    /// Matrix `index` of `file` (opened from `path`) and its shape.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::InvalidValue`] for an `index` the file does not have,
    /// [`serde_daphne::ErrorKind::DataTypeMismatch`] for a frame.
    pub(super) fn new(
        path: PathBuf,
        file: DbdfFile<serde_daphne::__private::io::FileReader>,
        index: usize,
    ) -> Result<(DbdfRows, (u64, u64))> {
        let header = serde_daphne::__private::io::band_header(file.objects(), index)?;
        let info = &file.objects()[index];
        let (dense, shape) = match header {
            Header::DenseMatrix { rows, cols, .. } => (true, (rows, cols)),
            Header::CsrMatrix { rows, cols, .. } => (false, (rows, cols)),
            other => {
                return Err(ErrorImpl::DataTypeMismatch {
                    offset: info.range.start,
                    expected: "a matrix, to stream to SystemDS (frames are written whole)",
                    found: other.data_type(),
                }
                .into())
            }
        };
        let rows = DbdfRows {
            path,
            index,
            dense,
            stored_bytes: info.range.end - info.range.start,
            files: Mutex::new(vec![file]),
            spare: Mutex::new(Vec::new()),
        };
        Ok((rows, shape))
    }
}

/// Runs `f` with an item taken from `pool` (or made by `make` when it is empty), then puts
/// the item back: threads reuse buffers and file handles without sharing one at a time.
fn pooled<T, R>(
    pool: &Mutex<Vec<T>>,
    make: impl FnOnce() -> Result<T>,
    f: impl FnOnce(&mut T) -> Result<R>,
) -> Result<R> {
    let taken = pool.lock().ok().and_then(|mut items| items.pop());
    let mut item = match taken {
        Some(item) => item,
        None => make()?,
    };
    let result = f(&mut item);
    if let Ok(mut items) = pool.lock() {
        items.push(item);
    }
    result
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

    /// The blocks of this row from the rows of an `.npy` file, read a chunk of rows at a
    /// time into `buffers` and encoded into their blocks as they come; their non-zeros.
    fn dense_from_file(
        &self,
        bands: &Bands,
        buffers: &mut BandBuffers,
        emit: &mut Emit<'_>,
    ) -> Result<u64> {
        let r0 = self.bi * self.size;
        let chunk = (CHUNK_BYTES / (self.cols * 8).max(1)).clamp(1, self.nr);
        let chunk_len = (chunk * self.cols) as usize;
        if buffers.rows.len() < chunk_len {
            buffers.rows = zeroed_vec(chunk_len)?;
        }
        let block_columns = self.cols.div_ceil(self.size) as usize;
        buffers.blocks.resize_with(block_columns, Vec::new);
        let mut blocks: Vec<_> = buffers
            .blocks
            .iter_mut()
            .enumerate()
            .map(|(bj, out)| {
                DenseBlock::start(self.nr as u32, self.columns(bj as u64).1 as u32, out)
            })
            .collect();
        for first in (0..self.nr).step_by(chunk as usize) {
            let count = chunk.min(self.nr - first);
            let rows = &mut buffers.rows[..(count * self.cols) as usize];
            let at = bands.offset + (r0 + first) * self.cols * 8;
            read_exact_at(&bands.file, bytemuck::cast_slice_mut(rows), at)?;
            for row in rows.chunks_exact(self.cols as usize) {
                for (bj, block) in blocks.iter_mut().enumerate() {
                    let (c0, nc) = self.columns(bj as u64);
                    block.push_row(&row[c0..c0 + nc]);
                }
            }
        }
        let stored = blocks.into_iter().map(DenseBlock::finish).sum();
        for (bj, block) in buffers.blocks.iter().enumerate() {
            emit(&self.key(bj as u64), block)?;
        }
        Ok(stored)
    }

    /// The blocks of this row from CSR arrays whose row `first` is this block row's first;
    /// their non-zeros (-0.0 counts, as in SystemDS).
    fn csr(&self, parts: &CsrParts<f64>, first: usize, emit: &mut Emit<'_>) -> Result<u64> {
        let mut stored = 0;
        for bj in 0..self.cols.div_ceil(self.size) {
            let (c0, nc) = self.columns(bj);
            let row_of = |r: u32, out: &mut Vec<(u32, f64)>| {
                let row = first + r as usize;
                let (start, end) = (parts.row_offsets[row], parts.row_offsets[row + 1]);
                let cols_of_row = &parts.col_indices[start..end];
                let lo = cols_of_row.partition_point(|&c| c < c0);
                let hi = cols_of_row.partition_point(|&c| c < c0 + nc);
                for k in start + lo..start + hi {
                    let x = parts.values[k];
                    if x.to_bits() != 0 {
                        out.push(((parts.col_indices[k] - c0) as u32, x));
                    }
                }
            };
            let mut count = 0u64;
            let mut row = Vec::new();
            for r in 0..self.nr as u32 {
                row.clear();
                row_of(r, &mut row);
                count += row.len() as u64;
            }
            stored += count;
            let value = matrix::encode_block(self.nr as u32, nc as u32, count, row_of);
            emit(&self.key(bj), &value)?;
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
        Cells::Npy(bands) => pooled(
            &bands.spare,
            || Ok(BandBuffers::default()),
            |buffers| row.dense_from_file(bands, buffers, emit),
        ),
        Cells::Dbdf(source) => pooled(
            &source.files,
            || DbdfFile::open(&source.path),
            |file| {
                let window = (r0..r0 + nr, 0..cols);
                if source.dense {
                    return pooled(
                        &source.spare,
                        || Ok(Vec::new()),
                        |band| {
                            band.resize(band_len, 0.0);
                            file.read_window_into(source.index, window.0, window.1, band)?;
                            row.dense(band, scratch, emit)
                        },
                    );
                }
                let band = file.read_window_csr::<f64>(source.index, window.0, window.1)?;
                let (row_offsets, col_indices, values) = band.into_raw_storage();
                let parts = CsrParts {
                    row_offsets,
                    col_indices,
                    values,
                };
                row.csr(&parts, 0, emit)
            },
        ),
    }
}

/// Reads `dst.len()` bytes at `at` without moving a shared cursor (threads read bands of one
/// file at once).
fn read_exact_at(file: &File, dst: &mut [u8], at: u64) -> Result<()> {
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(file, dst, at)?;
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek};
        let mut file = file;
        file.seek(std::io::SeekFrom::Start(at))?;
        file.read_exact(dst)?;
    }
    Ok(())
}
