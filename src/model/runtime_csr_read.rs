//! A runtime-dialect CSR matrix (DAPHNE's layout: `u64` row offsets, `u64` column indices,
//! values, each contiguous) read from a file into CSR arrays of any index type, on every
//! core: each thread reads its share of the values straight into place and narrows its
//! share of the indices from cache-sized positional reads. Malformed input is left to the
//! general reader, which names the fault and its offset.
//!
//! A Python `dbdf.load` of 1e7 entries read the `u64` indices into memory, then narrowed
//! them to scipy's `int32` in a second pass over fresh memory.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::error::Result;
use crate::model::csr::check_arrays;
use crate::model::{CsrIndex, CsrParts};
use crate::threads::{on_every_core, workers};
use crate::wire::runtime::{check_row_offsets, RuntimeHead};
use crate::wire::values::zeroed_vec;
use crate::wire::Element;

/// `u64` indices narrowed at a time (1 MiB read).
const INDICES_AT_ONCE: usize = 1 << 17;

/// Reads the CSR matrix `head` describes (its bytes known to be in `file`, its value type
/// `T`'s, its entries and columns known to fit `I`). `None` for malformed input (the general
/// reader then reports it); `Some(Err)` for I/O errors and memory.
pub(crate) fn read_runtime_csr_at<T: Element, I: CsrIndex>(
    file: &File,
    head: &RuntimeHead,
) -> Option<Result<CsrParts<T, I>>> {
    let (rows, nnz) = (
        usize::try_from(head.rows).ok()?,
        usize::try_from(head.nnz?).ok()?,
    );
    let cols = usize::try_from(head.cols).ok()?;
    let (cols_at, values_at) = head.csr_arrays();
    let mut offsets: Vec<u64> = match zeroed_vec(rows + 1) {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    if let Err(e) = file.read_exact_at(bytemuck::cast_slice_mut(&mut offsets), head.body) {
        return Some(Err(e.into()));
    }
    offsets.iter_mut().for_each(|o| *o = u64::from_le(*o));
    check_row_offsets(&offsets, nnz as u64, head.body, 0).ok()?;
    let row_offsets: Vec<I> = offsets
        .iter()
        .map(|&o| I::from_usize_unchecked(o as usize))
        .collect();
    drop(offsets);
    let (mut col_indices, mut values): (Vec<I>, Vec<T>) = match (zeroed_vec(nnz), zeroed_vec(nnz)) {
        (Ok(c), Ok(v)) => (c, v),
        (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
    };
    let threads = if nnz < 1 << 20 { 1 } else { workers() };
    let per = nnz.div_ceil(threads).max(1);
    let size = std::mem::size_of::<T>();
    let parts = col_indices
        .chunks_mut(per)
        .zip(values.chunks_mut(per))
        .enumerate();
    let results = on_every_core(parts, |(k, (indices, values))| {
        let first = (k * per) as u64;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(values);
        file.read_exact_at(bytes, values_at + first * size as u64)?;
        narrow_indices(file, cols_at + 8 * first, indices, cols)
    });
    let mut in_range = true;
    for result in results {
        match result {
            Ok(fits) => in_range &= fits,
            Err(e) => return Some(Err(e)),
        }
    }
    if !in_range || check_arrays((rows, cols), &row_offsets, &col_indices, nnz).is_err() {
        return None;
    }
    if cfg!(target_endian = "big") {
        values.iter_mut().for_each(|x| *x = x.to_le());
    }
    Some(Ok(CsrParts {
        row_offsets,
        col_indices,
        values,
    }))
}

/// Reads `out.len()` little-endian `u64` column indices from byte `at` into `out`, a piece
/// at a time; `false` if one is not below `cols`.
fn narrow_indices<I: CsrIndex>(file: &File, at: u64, out: &mut [I], cols: usize) -> Result<bool> {
    let mut buf = vec![0u64; INDICES_AT_ONCE.min(out.len())];
    let mut fits = true;
    for (piece, out) in out.chunks_mut(INDICES_AT_ONCE).enumerate() {
        let wide = &mut buf[..out.len()];
        let from = at + (piece * INDICES_AT_ONCE * 8) as u64;
        file.read_exact_at(bytemuck::cast_slice_mut(wide), from)?;
        // No branch per index: the check folds into a flag, so the loop vectorizes.
        // (An index past the columns is clamped, as the matrix is then refused anyway.)
        let mut largest = 0u64;
        for (o, &w) in out.iter_mut().zip(wide.iter()) {
            let c = u64::from_le(w);
            largest = largest.max(c);
            *o = I::from_usize_unchecked(c.min(cols as u64) as usize);
        }
        fits &= largest < cols as u64;
    }
    Ok(fits)
}
