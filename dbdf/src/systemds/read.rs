//! Whole reads of SystemDS objects: matrices into one block (or SystemDS's blocks, kept),
//! frames into columns.

use std::collections::BTreeMap;
use std::path::Path;

use super::decode::{copy_dense_rows, BlockCells};
use super::frame;
use super::names::{FRAME_KEY, FRAME_VALUE};
use super::records::{
    empty_matrix, for_each_block, for_each_record, grid_place, input_bytes, is_sparse,
    matrix_header, part_files, read_metadata, Metadata,
};
use super::seqfile::SYSTEMDS;
use crate::input::{not_convertible, Cursor};
use crate::storage::{Input, Part};
use serde_daphne::lowlevel::check_alloc;
use serde_daphne::lowlevel::CsrFill;
use serde_daphne::lowlevel::RowCounts;
use serde_daphne::Block;
use serde_daphne::BlockData;
use serde_daphne::BlockPlace;
use serde_daphne::Dialect;
use serde_daphne::Object;
use serde_daphne::Result;
use serde_daphne::Values;

/// How a SystemDS object is read. Plain data, as every format's options: set the
/// fields that differ from [`ReadOptions::default`] (one block per matrix, the default memory
/// allowance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Keeps SystemDS's blocks as the DAPHNE object's blocks (missing ones empty).
    pub keep_blocks: bool,
    /// The memory the object may take beyond the size of the files (as
    /// [`serde_daphne::Options::max_alloc`]).
    pub max_alloc: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            keep_blocks: false,
            max_alloc: serde_daphne::Options::new().max_alloc,
        }
    }
}

/// The whole object at `input`, wherever it is kept.
pub(super) fn read_whole(input: &Input, options: &ReadOptions) -> Result<Object> {
    let meta = read_metadata(input)?;
    let files = part_files(input)?;
    let input = input_bytes(&files);
    if meta.frame {
        read_frame(&files, &meta)
    } else {
        read_matrix(&files, &meta, input, options)
    }
}

fn read_matrix(
    files: &[Part],
    meta: &Metadata,
    input: u64,
    options: &ReadOptions,
) -> Result<Object> {
    let (rows, cols) = (meta.rows, meta.cols);
    let cells = u128::from(rows) * u128::from(cols);
    let limit = |needed: u128| check_alloc(0, needed, input, options.max_alloc);
    let header = |sparse: bool| matrix_header(meta, sparse);
    let is_sparse = |nnz: u64| is_sparse(meta, nnz);
    if cells == 0 {
        return empty_matrix(meta);
    }
    if options.keep_blocks {
        let grid = (
            rows.div_ceil(meta.block_rows),
            cols.div_ceil(meta.block_cols),
        );
        limit(u128::from(grid.0) * u128::from(grid.1) * 64)?;
        let mut blocks = BTreeMap::new();
        let mut nnz = 0u64;
        for_each_block(files, meta, |index, place, cells| {
            let data = cells.into_data();
            nnz += data.nnz();
            blocks.insert(
                index,
                Block {
                    place: *place,
                    data,
                },
            );
            Ok(())
        })?;
        let mut all = Vec::new();
        for bi in 1..=grid.0 {
            for bj in 1..=grid.1 {
                let place = grid_place(meta, bi, bj);
                all.push(blocks.remove(&(bi, bj)).unwrap_or(Block {
                    place,
                    data: BlockData::Empty,
                }));
            }
        }
        return Ok(Object::read_in(
            header(is_sparse(nnz)),
            all,
            0,
            Dialect::Spec,
        ));
    }
    let (Ok(r32), Ok(c32)) = (u32::try_from(rows), u32::try_from(cols)) else {
        return Err(not_convertible(
            format!("a {rows} x {cols} SystemDS matrix"),
            "one DAPHNE block",
            format!(
                "one block holds at most {} rows and columns; keep SystemDS's blocks \
                 (keep_blocks, --keep-blocks)",
                u32::MAX
            ),
        ));
    };
    let whole = BlockPlace {
        row: 0,
        col: 0,
        rows: r32,
        cols: c32,
    };
    let single = |sparse: bool, data: BlockData| {
        Object::read_in(
            header(sparse),
            vec![Block { place: whole, data }],
            0,
            Dialect::Spec,
        )
    };
    // Each block is copied into place as it is read and dropped, so the matrix is held
    // once. Dense by the .mtd's count: one pass. Otherwise a first pass counts each row's
    // non-zeros, and the second fills the CSR arrays (or the dense array, if it is dense).
    if meta.nnz.is_some_and(|n| !is_sparse(n)) {
        limit(cells * 8)?;
        return Ok(single(false, fill_dense(files, meta)?));
    }
    limit(u128::from(rows) * 16)?;
    let mut counts = RowCounts::new(rows as usize)?;
    for_each_block(files, meta, |_, place, cells| {
        let r0 = place.row as usize;
        cells.for_each_stored(place.cols, |r, _, x| {
            if x.to_bits() != 0 {
                counts.add(r0 + r);
            }
        });
        Ok(())
    })?;
    let row_offsets = counts.into_offsets();
    let nnz = row_offsets[rows as usize];
    if !is_sparse(nnz as u64) {
        drop(row_offsets);
        limit(cells * 8)?;
        return Ok(single(false, fill_dense(files, meta)?));
    }
    limit(u128::from(rows) * 16 + nnz as u128 * 16)?;
    let mut fill = CsrFill::<f64>::new(row_offsets)?;
    let mut changed = false;
    for_each_block(files, meta, |_, place, cells| {
        let (r0, c0) = (place.row as usize, place.col as usize);
        cells.for_each_stored(place.cols, |r, c, x| {
            if x.to_bits() != 0 {
                changed |= !fill.push(r0 + r, c0 + c, x);
            }
        });
        Ok(())
    })?;
    let changed_error =
        || SYSTEMDS.in_file(first_name(files), "the files changed while they were read");
    let (row_offsets, col_indices, values) = match (changed, fill.finish()) {
        (false, Some(arrays)) => arrays,
        _ => return Err(changed_error()),
    };
    let data = BlockData::Sparse {
        row_offsets,
        col_indices,
        values: Values::F64(values),
    };
    Ok(single(true, data))
}

/// The matrix as one dense array, each block copied in as it is decoded (dense blocks
/// byte-swapped straight from the record into place) while the next is read.
fn fill_dense(files: &[Part], meta: &Metadata) -> Result<BlockData> {
    let width = meta.cols as usize;
    let mut out = serde_daphne::lowlevel::zeroed_vec::<f64>(meta.rows as usize * width)?;
    // The decoding thread would otherwise spend most of its time having fresh pages zeroed.
    serde_daphne::lowlevel::fault_in_on_every_core(&mut out);
    for_each_block(files, meta, |_, place, cells| {
        let first = place.row as usize * width + place.col as usize;
        match cells {
            BlockCells::DenseBigEndian(bytes) => {
                copy_dense_rows(bytes, place.cols as usize, &mut out, first, width);
            }
            cells => cells.for_each_stored(place.cols, |r, c, x| {
                out[first + r * width + c] = x;
            }),
        }
        Ok(())
    })?;
    Ok(BlockData::Dense(Values::F64(out)))
}

fn read_frame(files: &[Part], meta: &Metadata) -> Result<Object> {
    let mut blocks: BTreeMap<u64, frame::FrameBlock> = BTreeMap::new();
    // Frame blocks are decoded whole on the reading thread; nothing is left for the second.
    let decode = |key: &Cursor<'_>, value: &mut Cursor<'_>| {
        let Ok(first) = <[u8; 8]>::try_from(key.bytes) else {
            return Err(key.error(
                0,
                format!("a LongWritable key of {} bytes", key.bytes.len()),
            ));
        };
        let first = i64::from_be_bytes(first);
        let block = frame::decode_block(value)?;
        let first = u64::try_from(first)
            .ok()
            .filter(|&f| f >= 1)
            .ok_or_else(|| key.error(0, format!("first row {first}: rows start at 1")))?;
        if blocks.insert(first, block).is_some() {
            return Err(key.error(0, format!("two blocks start at row {first}")));
        }
        Ok(())
    };
    for_each_record(files, (FRAME_KEY, FRAME_VALUE), decode, |(), _| Ok(()))?;
    let mut next = 1u64;
    let mut names: Option<Vec<String>> = None;
    let mut columns: Vec<Values> = Vec::new();
    for (first, block) in blocks {
        if first != next {
            return Err(SYSTEMDS.in_file(
                first_name(files),
                format!("the frame's blocks leave rows {next} to {} out", first - 1),
            ));
        }
        if u64::try_from(block.columns.len()).ok() != Some(meta.cols) {
            return Err(SYSTEMDS.in_file(
                first_name(files),
                format!(
                    "a block of {} columns in a frame of {}",
                    block.columns.len(),
                    meta.cols
                ),
            ));
        }
        if names.is_none() {
            names = block.names.clone();
        }
        if columns.is_empty() {
            columns = block.columns;
        } else {
            for (j, (all, more)) in columns.iter_mut().zip(block.columns).enumerate() {
                if !all.append(more) {
                    return Err(SYSTEMDS.in_file(
                        first_name(files),
                        format!("column {} changes its type between blocks", j + 1),
                    ));
                }
            }
        }
        next = first + block.rows as u64;
    }
    if next - 1 != meta.rows {
        return Err(SYSTEMDS.in_file(
            first_name(files),
            format!(
                "the blocks hold {} rows, the .mtd says {}",
                next - 1,
                meta.rows
            ),
        ));
    }
    let names = names.unwrap_or_else(|| (1..=columns.len()).map(|j| format!("C{j}")).collect());
    Object::frame(names.into_iter().zip(columns).collect())
}

/// The first file's name, which errors about the whole object name.
fn first_name(files: &[Part]) -> &Path {
    Path::new(files.first().map_or("", |f| f.name.as_str()))
}
