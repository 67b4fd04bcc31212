//! SystemDS matrices on the pipe: blocks are read in file order (on a second thread) and
//! put together a block row at a time, given out as soon as every block row before them is
//! complete; blocks SystemDS leaves out (all zeros) are empty. Memory holds the block rows
//! being filled: one for files written in order, as SystemDS and Spark write them. Frames
//! and matrices without cells are read whole.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;

use super::decode::for_each_decoded;
use super::read::{read_whole, ReadOptions};
use super::records::{
    empty_matrix, for_each_block, input_bytes, is_sparse, matrix_header, part_files, read_metadata,
    Metadata,
};
use crate::pipe::{Band, Cells, Held, Kept, Regroup, Source};
use serde_daphne::__private::wire::{BlockData, BlockPlace, Header};
use serde_daphne::{Error, Result};

/// A SystemDS matrix or frame (one file or a directory of part files, with its `.mtd`).
pub struct SystemdsSource {
    files: Vec<std::path::PathBuf>,
    meta: Metadata,
    headers: [Header; 1],
    /// Frames and matrices without cells, read whole.
    held: Option<Held>,
    kept: Kept,
    input_len: u64,
}

impl SystemdsSource {
    /// Opens the SystemDS object at `path`: its `.mtd` and its part files. A matrix is a
    /// `CSRMatrix` when its non-zeros (from the `.mtd`, else counted in a first pass over the
    /// files) are under SystemDS's sparsity turn point (40 %), as [`super::read`] decides;
    /// with [`ReadOptions::keep_blocks`], its block size is kept for a `.dbdf` output's tiles.
    ///
    /// # Errors
    /// As [`super::read_with`].
    pub fn open(path: &Path, options: &ReadOptions) -> Result<SystemdsSource> {
        let meta = read_metadata(path)?;
        let files = part_files(path)?;
        let input_len = input_bytes(&files);
        let (rows, cols) = (meta.rows, meta.cols);
        let cells = u128::from(rows) * u128::from(cols);
        let kept = Kept {
            blocks: options.keep_blocks.then(|| grid_tile(&meta).ok()).flatten(),
            ..Kept::default()
        };
        let whole = match (meta.frame, cells) {
            (true, _) => Some(read_whole(path, options)?),
            (false, 0) => Some(empty_matrix(&meta)?),
            _ => None,
        };
        if let Some(object) = whole {
            let header = object.header().clone();
            return Ok(SystemdsSource {
                held: Some(Held::new(vec![object], input_len, kept.clone())?),
                files,
                meta,
                headers: [header],
                kept,
                input_len,
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
            files,
            meta,
            headers: [header],
            held: None,
            kept,
            input_len,
        })
    }
}

impl Source for SystemdsSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        if let Some(held) = &mut self.held {
            return held.for_each_band(index, multiple, each);
        }
        let sparse = self.headers[0].data_type() == serde_daphne::DataType::CsrMatrix;
        let (files, meta) = (&self.files, &self.meta);
        let grid = (
            meta.rows.div_ceil(meta.block_rows),
            meta.cols.div_ceil(meta.block_cols),
        );
        let mut regroup = Regroup::new(multiple);
        std::thread::scope(|scope| -> Result<()> {
            let (send, receive) = mpsc::sync_channel::<(u64, BlockPlace, BlockData)>(16);
            let reader = scope.spawn(move || {
                for_each_block(files, meta, |(bi, _), place, cells| {
                    send.send((bi, *place, cells.into_data()))
                        .map_err(|_| Error::invalid("stopped"))
                })
            });
            let mut rows: BTreeMap<u64, Vec<(BlockPlace, BlockData)>> = BTreeMap::new();
            let mut next = 1;
            let mut more = true;
            for (bi, place, data) in receive.iter() {
                rows.entry(bi).or_default().push((place, data));
                while more && rows.get(&next).is_some_and(|r| r.len() as u64 == grid.1) {
                    let blocks = rows.remove(&next).unwrap_or_default();
                    more = regroup.push(block_row(meta, next, blocks, sparse), each)?;
                    next += 1;
                }
                if !more {
                    break;
                }
            }
            drop(receive);
            let read = reader
                .join()
                .unwrap_or_else(|_| Err(Error::invalid("a reader panicked")));
            if !more {
                return Ok(());
            }
            read?;
            // Block rows with blocks left out, in order.
            while more && next <= grid.0 {
                let blocks = rows.remove(&next).unwrap_or_default();
                more = regroup.push(block_row(meta, next, blocks, sparse), each)?;
                next += 1;
            }
            if more {
                regroup.finish(each)?;
            }
            Ok(())
        })
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn kept(&self) -> Kept {
        self.kept.clone()
    }
}

/// Block row `bi` (from 1) as a band of `meta`'s matrix: dense, or CSR when `sparse`.
fn block_row(meta: &Metadata, bi: u64, blocks: Vec<(BlockPlace, BlockData)>, sparse: bool) -> Band {
    let r0 = (bi - 1) * meta.block_rows;
    let rows = meta.block_rows.min(meta.rows - r0);
    let cols = meta.cols as usize;
    let cells = if sparse {
        let mut entries: Vec<(usize, usize, f64)> = Vec::new();
        for (place, data) in &blocks {
            for_each_decoded(data, place.cols, |r, c, x| {
                entries.push((r, place.col as usize + c, x));
            });
        }
        entries.sort_unstable_by_key(|&(r, c, _)| (r, c));
        let mut row_offsets = vec![0usize; rows as usize + 1];
        for &(r, _, _) in &entries {
            row_offsets[r + 1] += 1;
        }
        for r in 0..rows as usize {
            row_offsets[r + 1] += row_offsets[r];
        }
        let (col_indices, values) = entries.into_iter().map(|(_, c, x)| (c, x)).unzip();
        Cells::Csr {
            row_offsets,
            col_indices,
            values: serde_daphne::Values::F64(values),
        }
    } else {
        let mut values = vec![0f64; rows as usize * cols];
        for (place, data) in &blocks {
            let c0 = place.col as usize;
            for_each_decoded(data, place.cols, |r, c, x| values[r * cols + c0 + c] = x);
        }
        Cells::Dense(serde_daphne::Values::F64(values))
    };
    Band {
        first_row: r0,
        first_col: 0,
        rows,
        cols: meta.cols,
        cells,
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
