//! A frame's columns read on every core straight into their places, where every block is a
//! dense piece of one column in that column's type (what the writers make of frames): a
//! frame of blocks of rows read column by column on one core was several times slower than
//! one of whole columns, which the reader splits between the cores.

use crate::wire::read_at::ReadAt;
use std::ops::Range;

use super::index::{ObjectInfo, StoredBody};
use crate::error::Result;
use crate::wire::{BlockType, Values};

/// Bytes per read: large enough for one system call to dominate nothing, small enough to
/// share a column of one block between the cores.
const PIECE: usize = 8 << 20;

/// Rows `rows` of the columns `wanted` of frame `info`, read at positions of `file` on every
/// core; `None` when a block is not a dense piece of one column of that column's type.
///
/// # Errors
/// I/O errors (such as a file that shrank since it was indexed); values past the memory
/// this machine has.
pub(crate) fn read_dense_frame_columns(
    file: &dyn ReadAt,
    info: &ObjectInfo,
    rows: &Range<u64>,
    wanted: &[usize],
) -> Result<Option<Vec<Values>>> {
    let crate::wire::Header::Frame { columns, .. } = &info.header else {
        return Ok(None);
    };
    let plain = |b: &super::BlockInfo| {
        b.spec
            && b.block_type == BlockType::Dense
            && b.place.cols == 1
            && columns
                .get(b.place.col as usize)
                .is_some_and(|c| Some(c.value_type) == b.value_type)
    };
    if !matches!(info.layout, StoredBody::Blocks) || !info.blocks.iter().all(plain) {
        return Ok(None);
    }
    let len = (rows.end - rows.start) as usize;
    let mut out = wanted
        .iter()
        .map(|&c| Values::zeros(columns[c].value_type, len))
        .collect::<Result<Vec<Values>>>()?;
    // Huge pages fault one thread at a time (see `pages`): in before the reads on every core.
    for column in &mut out {
        crate::wire::values::with_values!(column, v => crate::pages::fault_in_on_every_core(v));
    }
    // Each wanted column's bytes, cut into the pieces the blocks fill (in row order).
    let mut jobs: Vec<(u64, &mut [u8])> = Vec::new();
    for (column, &c) in out.iter_mut().zip(wanted) {
        let size = columns[c].value_type.size();
        let mut blocks: Vec<&super::BlockInfo> = info
            .blocks
            .iter()
            .filter(|b| b.place.col == c as u64)
            .collect();
        blocks.sort_by_key(|b| b.place.row);
        let mut rest = bytes_mut(column);
        let mut at_row = rows.start;
        for b in blocks {
            let (start, end) = (b.place.row, b.place.row + u64::from(b.place.rows));
            let (from, to) = (start.max(rows.start), end.min(rows.end));
            if from >= to {
                continue;
            }
            // Blocks tile the object (checked when it was indexed): no gaps, no overlaps.
            debug_assert_eq!(from, at_row);
            let bytes = (to - from) as usize * size;
            let (mine, after) = std::mem::take(&mut rest).split_at_mut(bytes);
            rest = after;
            at_row = to;
            let mut offset = b.body() + (from - start) * size as u64;
            for piece in mine.chunks_mut(PIECE) {
                let n = piece.len() as u64;
                jobs.push((offset, piece));
                offset += n;
            }
        }
    }
    // The pieces dealt round to the cores, each a share of the bytes.
    let workers = crate::threads::workers().max(1);
    let mut shares: Vec<Vec<(u64, &mut [u8])>> = (0..workers).map(|_| Vec::new()).collect();
    for (k, job) in jobs.into_iter().enumerate() {
        shares[k % workers].push(job);
    }
    let results = crate::threads::on_every_core(shares, |share| {
        share
            .into_iter()
            .try_for_each(|(at, piece)| file.read_exact_at(piece, at))
    });
    for result in results {
        result?;
    }
    if cfg!(target_endian = "big") {
        for column in &mut out {
            crate::wire::values::with_values!(column, v => v.iter_mut().for_each(|x| *x = crate::wire::Element::to_le(*x)));
        }
    }
    Ok(Some(out))
}

/// The bytes of a column's values.
fn bytes_mut(values: &mut Values) -> &mut [u8] {
    crate::wire::values::with_values!(values, v => bytemuck::cast_slice_mut(v.as_mut_slice()))
}
