//! A runtime-dialect CSR matrix (DAPHNE's layout: `u64` row offsets, `u64` column indices,
//! values, each contiguous) read from a file into CSR arrays of any index type, on every
//! core: the values read straight into place, then each thread narrowing its share of the
//! indices from cache-sized positional reads. Malformed input is left to the
//! general reader, which names the fault and its offset.
//!
//! A Python `dbdf.load` of 1e7 entries read the `u64` indices into memory, then narrowed
//! them to scipy's `int32` in a second pass over fresh memory.

use crate::wire::read_at::ReadAt;

use crate::error::Result;
use crate::model::csr::check_columns;
use crate::model::{CsrIndex, CsrParts};
use crate::threads::{on_every_core, share};
use crate::wire::read_at::read_exact_at_on_every_core;
use crate::wire::runtime::{check_row_offsets, RuntimeHead};
use crate::wire::values::zeroed_vec;
use crate::wire::Element;

/// `u64` indices narrowed at a time (1 MiB read).
const INDICES_AT_ONCE: usize = 1 << 17;

/// Reads the CSR matrix `head` describes (its bytes known to be in `file`, its value type
/// `T`'s, its entries and columns known to fit `I`). `Ok(None)` for malformed input (the
/// general reader then reports it).
///
/// # Errors
/// I/O errors; [`crate::ErrorKind::OutOfMemory`].
pub(crate) fn read_runtime_csr_at<T: Element, I: CsrIndex>(
    file: &dyn ReadAt,
    head: &RuntimeHead,
) -> Result<Option<CsrParts<T, I>>> {
    let size = |n: u64| usize::try_from(n).ok();
    let (Some(rows), Some(nnz), Some(cols)) =
        (size(head.rows), head.nnz.and_then(size), size(head.cols))
    else {
        return Ok(None);
    };
    let (cols_at, values_at) = head.csr_arrays();
    let mut offsets: Vec<u64> = zeroed_vec(rows + 1)?;
    file.read_exact_at(bytemuck::cast_slice_mut(&mut offsets), head.body)?;
    offsets.iter_mut().for_each(|o| *o = u64::from_le(*o));
    if check_row_offsets(&offsets, nnz as u64, head.body, 0).is_err() {
        return Ok(None);
    }
    let row_offsets: Vec<I> = offsets
        .iter()
        .map(|&o| I::from_usize_unchecked(o as usize))
        .collect();
    drop(offsets);
    let (mut col_indices, mut values): (Vec<I>, Vec<T>) = (zeroed_vec(nnz)?, zeroed_vec(nnz)?);
    // The values are read in place (faulted in as they are read); every index is written.
    crate::pages::fault_in_on_every_core(&mut col_indices);
    read_exact_at_on_every_core(file, bytemuck::cast_slice_mut(&mut values), values_at)?;
    let per = share(nnz, nnz >= 1 << 20);
    let parts = col_indices.chunks_mut(per).enumerate();
    let narrowed = on_every_core(parts, |(k, indices)| {
        narrow_indices(file, cols_at + 8 * (k * per) as u64, indices, cols)
    });
    narrowed.into_iter().collect::<Result<()>>()?;
    // An index past the columns was clamped to `cols`: the check refuses it.
    if check_columns(cols, &row_offsets, &col_indices).is_err() {
        return Ok(None);
    }
    if cfg!(target_endian = "big") {
        values.iter_mut().for_each(|x| *x = x.to_le());
    }
    Ok(Some(CsrParts {
        row_offsets,
        col_indices,
        values,
    }))
}

/// Reads `out.len()` little-endian `u64` column indices from byte `at` into `out`, a piece
/// at a time, each clamped to `cols` (which fits `I`): no branch per index, so the loop
/// vectorizes.
fn narrow_indices<I: CsrIndex>(
    file: &dyn ReadAt,
    at: u64,
    out: &mut [I],
    cols: usize,
) -> Result<()> {
    let mut buf = vec![0u64; INDICES_AT_ONCE.min(out.len())];
    for (piece, out) in out.chunks_mut(INDICES_AT_ONCE).enumerate() {
        let wide = &mut buf[..out.len()];
        let from = at + (piece * INDICES_AT_ONCE * 8) as u64;
        file.read_exact_at(bytemuck::cast_slice_mut(wide), from)?;
        for (o, &w) in out.iter_mut().zip(wide.iter()) {
            *o = I::from_usize_unchecked(u64::from_le(w).min(cols as u64) as usize);
        }
    }
    Ok(())
}
