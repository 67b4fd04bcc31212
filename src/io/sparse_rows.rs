//! Windows of a spec sparse block that decode only their rows. A sparse block's rows have no
//! index (each is a count, then its entries), so the byte where each row starts is found once
//! per block, from the counts alone, and kept by the [`crate::DbdfFile`]; a window then reads
//! and decodes only its rows. Re-tiling a one-block sparse matrix, or writing it to SystemDS
//! band by band, is then linear in its size instead of decoding the block for every window.

use std::collections::HashMap;
use std::io::{Read, Seek};
use std::ops::Range;
use std::sync::Arc;

use crate::error::{ErrorDetails, Result};
use crate::io::index::BlockInfo;
use crate::wire::block::BlockHead;
use crate::wire::sparse_row::decode_sparse_row;
use crate::wire::{Element, SeekSource, Source};

/// Row starts of the sparse blocks read so far, by the block's first byte in the file.
pub(crate) type RowStarts = HashMap<u64, Arc<Vec<u64>>>;

/// The byte where each of the sparse block's rows starts, then where its last row ends
/// (`rows + 1` offsets), from the cache or from one pass over the row counts. The counts are
/// checked as the whole block's decoder checks them: they add up to the declared number of
/// non-zeros, and no prefix exceeds it.
///
/// # Errors
/// [`crate::ErrorKind::SparseCountMismatch`], [`crate::ErrorKind::UnexpectedEof`], I/O errors.
pub(crate) fn row_starts<R: Read + Seek>(
    src: &mut SeekSource<R>,
    block: &BlockInfo,
    head: &BlockHead,
    entry: u64,
    cache: &mut RowStarts,
) -> Result<Arc<Vec<u64>>> {
    if let Some(starts) = cache.get(&block.range.start) {
        return Ok(Arc::clone(starts));
    }
    let nnz = block.nnz().unwrap_or(0);
    let rows = block.place.rows as usize;
    // Each row takes at least its 4-byte count: no more offsets than the file can justify.
    let present = (src.len().saturating_sub(block.body()) / 4) as usize;
    let mut starts = Vec::with_capacity(rows.min(present) + 1);
    let (mut at, mut counted) = (block.body(), 0u64);
    for _ in 0..rows {
        starts.push(at);
        src.seek_to(at);
        let count = src.u32("a sparse row's number of non-zeros")?;
        counted += u64::from(count);
        if counted > nnz {
            return Err(ErrorDetails::SparseCountMismatch {
                offset: at,
                declared: nnz,
                counted,
            }
            .into());
        }
        at += 4 + u64::from(count) * entry;
    }
    starts.push(at);
    if counted != nnz {
        return Err(ErrorDetails::SparseCountMismatch {
            offset: head.nnz_offset,
            declared: nnz,
            counted,
        }
        .into());
    }
    let starts = Arc::new(starts);
    cache.insert(block.range.start, Arc::clone(&starts));
    Ok(starts)
}

/// Decodes rows `rows` (counted within the block) of a sparse block whose rows start at
/// `starts`, giving each row's stored entries to `each(row, columns, values)` (within the
/// block). Columns are checked as the whole block's decoder checks them.
///
/// # Errors
/// [`crate::ErrorKind::ColumnOutOfRange`], [`crate::ErrorKind::UnsortedColumns`],
/// [`crate::ErrorKind::UnexpectedEof`], I/O errors; `each`'s errors.
pub(crate) fn for_each_row<S: Element, R: Read + Seek>(
    src: &mut SeekSource<R>,
    starts: &[u64],
    cols: u32,
    rows: Range<u32>,
    mut each: impl FnMut(u32, &[u32], &[S]) -> Result<()>,
) -> Result<()> {
    let (first, end) = (starts[rows.start as usize], starts[rows.end as usize]);
    src.seek_to(first);
    let bytes: Vec<u8> = src.take_vec(end - first, "a sparse block's rows")?;
    let size = 4 + std::mem::size_of::<S>();
    let (mut columns, mut values) = (Vec::new(), Vec::new());
    for row in rows {
        let at = (starts[row as usize] - first) as usize;
        let next = (starts[row as usize + 1] - first) as usize;
        let count = (next - at - 4) / size;
        columns.clear();
        columns.resize(count, 0u32);
        values.clear();
        values.resize(count, S::zeroed());
        let pairs = &bytes[at + 4..next];
        let offset = starts[row as usize] + 4;
        decode_sparse_row(
            pairs,
            offset,
            row,
            cols,
            -1,
            &mut columns,
            &mut values,
            |c| c,
        )?;
        each(row, &columns, &values)?;
    }
    Ok(())
}
