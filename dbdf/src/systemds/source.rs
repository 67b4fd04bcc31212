//! SystemDS matrices on the pipe: blocks are read in file order (on a second thread) and
//! put together a block row at a time, given out as soon as every block row before them is
//! complete; blocks SystemDS leaves out (all zeros) are empty. Memory holds the block rows
//! being filled: one for files written in order, as SystemDS and Spark write them. Frames
//! and matrices without cells are read whole.

use std::collections::BTreeMap;
use std::sync::mpsc;

use super::decode::for_each_decoded;
use super::read::{read_whole, ReadOptions};
use super::records::{
    empty_matrix, for_each_block, grid_place, input_bytes, is_sparse, matrix_header, part_files,
    read_metadata, Metadata, SeenBlocks,
};
use crate::pipe::{
    source_in_field, Band, Cells, Held, InPlaceOrHeld, InputMetadata, Regroup, Source,
};
use crate::storage::{Input, Part};
use serde_daphne::BlockData;
use serde_daphne::BlockPlace;
use serde_daphne::Header;
use serde_daphne::{Error, Result};

/// A SystemDS matrix or frame (one file or a directory of part files, with its `.mtd`).
pub struct SystemdsSource {
    /// Frames and matrices without cells are read whole.
    source: InPlaceOrHeld<MatrixBlocks>,
}

source_in_field!(SystemdsSource, source);

/// A SystemDS matrix read block by block.
struct MatrixBlocks {
    files: Vec<Part>,
    meta: Metadata,
    headers: [Header; 1],
    metadata: InputMetadata,
    input_len: u64,
}

impl SystemdsSource {
    /// Opens the SystemDS object `input` (a file or a folder of parts, wherever it is kept):
    /// its `.mtd` and its part files, read one by one as streams. A matrix is a
    /// `CSRMatrix` when its non-zeros (from the `.mtd`, else counted in a first pass over the
    /// files) are under SystemDS's sparsity turn point (40 %), as [`super::read`] decides.
    /// Its block size is the input's tile size ([`InputMetadata::tile`]).
    ///
    /// # Errors
    /// As [`crate::convert::read`].
    pub(crate) fn open_at(input: &Input, options: &ReadOptions) -> Result<SystemdsSource> {
        let meta = read_metadata(input)?;
        let files = part_files(input)?;
        let input_len = input_bytes(&files);
        let (rows, cols) = (meta.rows, meta.cols);
        let cells = u128::from(rows) * u128::from(cols);
        let metadata = InputMetadata {
            tile: grid_tile(&meta).ok(),
            ..InputMetadata::default()
        };
        let whole = match (meta.frame, cells) {
            (true, _) => Some(read_whole(input, options)?),
            (false, 0) => Some(empty_matrix(&meta)?),
            _ => None,
        };
        if let Some(object) = whole {
            let held = Held::new(vec![object], input_len, metadata)?;
            return Ok(SystemdsSource {
                source: InPlaceOrHeld::Held(held),
            });
        }
        let nnz = match meta.nnz {
            Some(nnz) => nnz,
            None => {
                let mut nnz = 0;
                for_each_block(&files, &meta, |_, place, cells| {
                    cells.for_each_stored(place.cols, |_, _, x| {
                        nnz += u64::from(x.to_bits() != 0);
                    });
                    Ok(())
                })?;
                nnz
            }
        };
        let header = matrix_header(&meta, is_sparse(&meta, nnz));
        Ok(SystemdsSource {
            source: InPlaceOrHeld::InPlace(MatrixBlocks {
                files,
                meta,
                headers: [header],
                metadata,
                input_len,
            }),
        })
    }
}

impl Source for MatrixBlocks {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let sparse = self.headers[0].data_type() == serde_daphne::DataType::CsrMatrix;
        let meta = &self.meta;
        let grid = (
            meta.rows.div_ceil(meta.block_rows),
            meta.cols.div_ceil(meta.block_cols),
        );
        let mut regroup = Regroup::new(multiple);
        let mut rows: BTreeMap<u64, Filling> = BTreeMap::new();
        let mut next = 1;
        let mut more = true;
        blocks(&self.files, meta, |(bi, _), place, data| {
            let filling = rows
                .entry(bi)
                .or_insert_with(|| Filling::new(meta, bi, sparse));
            filling.add(&place, &data);
            while more && rows.get(&next).is_some_and(|r| r.blocks == grid.1) {
                let row = rows.remove(&next).expect("checked");
                more = regroup.push(row.into_band(), each)?;
                next += 1;
            }
            Ok(more)
        })?;
        // Block rows with blocks left out, in order.
        while more && next <= grid.0 {
            let row = rows
                .remove(&next)
                .unwrap_or_else(|| Filling::new(meta, next, sparse));
            more = regroup.push(row.into_band(), each)?;
            next += 1;
        }
        if more {
            regroup.finish(each)?;
        }
        Ok(())
    }

    fn own_tiles(&self, _: usize) -> Option<(u32, u32)> {
        grid_tile(&self.meta).ok()
    }

    /// SystemDS's blocks as they come, then the blocks it left out (all zeros): memory
    /// holds a block or two, not a block row.
    fn for_each_tile(
        &mut self,
        _: usize,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Option<Result<()>> {
        Some(self.each_block_as_tile(each))
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn metadata(&self) -> InputMetadata {
        self.metadata.clone()
    }
}

impl MatrixBlocks {
    /// SystemDS's blocks as they come, then the blocks it left out (all zeros), each a tile.
    fn each_block_as_tile(&mut self, each: &mut dyn FnMut(Band) -> Result<bool>) -> Result<()> {
        let sparse = self.headers[0].data_type() == serde_daphne::DataType::CsrMatrix;
        let meta = &self.meta;
        let grid = (
            meta.rows.div_ceil(meta.block_rows),
            meta.cols.div_ceil(meta.block_cols),
        );
        let mut seen = SeenBlocks::new(meta, self.input_len);
        let mut more = true;
        blocks(&self.files, meta, |index, place, data| {
            seen.insert(index);
            let tile = match data {
                // A dense block's values move into the tile, uncopied.
                BlockData::Dense(values) if !sparse => Band::dense(
                    place.row..place.row + u64::from(place.rows),
                    place.col..place.col + u64::from(place.cols),
                    values,
                ),
                data => {
                    let mut tile = Filling::block(&place, sparse);
                    tile.add(&BlockPlace { col: 0, ..place }, &data);
                    tile.into_band()
                }
            };
            more = each(tile)?;
            Ok(more)
        })?;
        for bi in 1..=grid.0 {
            for bj in 1..=grid.1 {
                if more && !seen.contains((bi, bj)) {
                    let place = grid_place(meta, bi, bj);
                    more = each(Filling::block(&place, sparse).into_band())?;
                }
            }
        }
        Ok(())
    }
}

/// Calls `each((bi, bj), place, data)` with every block of the files in file order,
/// decoded on a second thread, until it returns `false`. Blocks go over in batches of about
/// 1 MiB (one block each when they are large), handed over rather than queued: few bytes in
/// flight, and a handover per batch, not per block (a million tiny sparse blocks would cost
/// a thread wake-up each).
fn blocks(
    files: &[Part],
    meta: &Metadata,
    mut each: impl FnMut((u64, u64), BlockPlace, BlockData) -> Result<bool>,
) -> Result<()> {
    type Batch = Vec<((u64, u64), BlockPlace, BlockData)>;
    std::thread::scope(|scope| -> Result<()> {
        let (send, receive) = mpsc::sync_channel::<Batch>(0);
        let reader = scope.spawn(move || {
            let (mut batch, mut bytes) = (Batch::new(), 0usize);
            for_each_block(files, meta, |index, place, cells| {
                let data = cells.into_data();
                bytes += 64 + data.values().map_or(0, |v| v.len() * 8);
                batch.push((index, *place, data));
                if bytes >= 1 << 20 {
                    bytes = 0;
                    send.send(std::mem::take(&mut batch))
                        .map_err(|_| Error::invalid("stopped"))?;
                }
                Ok(())
            })?;
            if !batch.is_empty() {
                send.send(batch).map_err(|_| Error::invalid("stopped"))?;
            }
            Ok::<(), Error>(())
        });
        let mut more = true;
        'batches: for batch in receive.iter() {
            for (index, place, data) in batch {
                more = each(index, place, data)?;
                if !more {
                    break 'batches;
                }
            }
        }
        drop(receive);
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(Error::invalid("a reader panicked")));
        if more {
            read?;
        }
        Ok(())
    })
}

/// A block row being filled as its blocks come: dense cells, or a sparse block row's
/// entries (row, column, value).
struct Filling {
    first_row: u64,
    first_col: u64,
    rows: u64,
    cols: u64,
    blocks: u64,
    dense: Vec<f64>,
    entries: Option<Vec<(usize, usize, f64)>>,
}

impl Filling {
    /// One block at `place`, as a band of its own.
    fn block(place: &BlockPlace, sparse: bool) -> Filling {
        Filling {
            first_row: place.row,
            first_col: place.col,
            rows: u64::from(place.rows),
            cols: u64::from(place.cols),
            blocks: 0,
            dense: Vec::new(),
            entries: sparse.then(Vec::new),
        }
    }

    /// Block row `bi` (from 1) of `meta`'s matrix, without blocks yet.
    fn new(meta: &Metadata, bi: u64, sparse: bool) -> Filling {
        let first_row = (bi - 1) * meta.block_rows;
        let rows = meta.block_rows.min(meta.rows - first_row);
        Filling {
            first_row,
            first_col: 0,
            rows,
            cols: meta.cols,
            blocks: 0,
            dense: Vec::new(),
            entries: sparse.then(Vec::new),
        }
    }

    /// Copies a block's stored values in.
    fn add(&mut self, place: &BlockPlace, data: &BlockData) {
        self.blocks += 1;
        let c0 = place.col as usize;
        match &mut self.entries {
            Some(entries) => for_each_decoded(data, place.cols, |r, c, x| {
                entries.push((r, c0 + c, x));
            }),
            None => {
                let cols = self.cols as usize;
                if self.dense.is_empty() {
                    self.dense = vec![0f64; self.rows as usize * cols];
                }
                let dense = &mut self.dense;
                for_each_decoded(data, place.cols, |r, c, x| dense[r * cols + c0 + c] = x);
            }
        }
    }

    /// The block row as a band.
    fn into_band(self) -> Band {
        let cells = match self.entries {
            Some(mut entries) => {
                entries.sort_unstable_by_key(|&(r, c, _)| (r, c));
                let mut row_offsets = vec![0usize; self.rows as usize + 1];
                for &(r, _, _) in &entries {
                    row_offsets[r + 1] += 1;
                }
                for r in 0..self.rows as usize {
                    row_offsets[r + 1] += row_offsets[r];
                }
                let (col_indices, values) = entries.into_iter().map(|(_, c, x)| (c, x)).unzip();
                Cells::Csr {
                    row_offsets,
                    col_indices,
                    values: serde_daphne::Values::F64(values),
                }
            }
            None => {
                let mut dense = self.dense;
                // A block row SystemDS left out entirely: zeros.
                dense.resize(self.rows as usize * self.cols as usize, 0.0);
                Cells::Dense(serde_daphne::Values::F64(dense))
            }
        };
        Band {
            first_row: self.first_row,
            first_col: self.first_col,
            rows: self.rows,
            cols: self.cols,
            cells,
        }
    }
}

/// SystemDS's block size as a tile size.
fn grid_tile(meta: &Metadata) -> Result<(u32, u32)> {
    match (
        u32::try_from(meta.block_rows),
        u32::try_from(meta.block_cols),
    ) {
        (Ok(r), Ok(c)) => Ok((r, c)),
        _ => Err(Error::invalid(format!(
            "SystemDS blocks of {} x {} are larger than a DAPHNE block: give a tile size",
            meta.block_rows, meta.block_cols
        ))),
    }
}
