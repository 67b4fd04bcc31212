//! A SystemDS matrix written as a tiled `.dbdf` file block by block: each SystemDS block
//! becomes a tile as soon as it is read, so memory holds one block, never the matrix.

use serde_daphne::__private::error::ErrorImpl;
use std::collections::HashSet;
use std::path::Path;

use ndarray::ArrayView2;
use sprs::CsMatView;

use super::decode::for_each_decoded;
use super::matrix::SPARSITY_TURN_POINT;
use super::records::{
    empty_matrix, for_each_block, grid_place, input_bytes, part_files, read_metadata, Metadata,
};
use serde_daphne::__private::io::progress::Progress;
use serde_daphne::__private::io::DbdfWriter;
use serde_daphne::__private::options::{Dialect, Options};
use serde_daphne::__private::wire::{BlockData, BlockPlace, Header, ValueType, Values};
use serde_daphne::{Error, Result};

/// Writes the SystemDS matrix at `input` (one file or a directory of part files, with its
/// `.mtd`) as a `.dbdf` file at `output`, block by block through [`DbdfWriter`]: each
/// SystemDS block is written as a tile as soon as it is read, so memory holds one block
/// however large the matrix. The file is tiled as SystemDS's blocks unless `options` give a
/// tile size; blocks SystemDS leaves out (all zeros) are written empty. The matrix is a
/// `CSRMatrix` when its non-zeros (from the `.mtd`, else counted in a first pass over the
/// files) are under SystemDS's sparsity turn point (40 %), as [`super::read`] decides.
///
/// # Errors
/// As [`super::read`], and [`DbdfWriter`]'s; [`serde_daphne::ErrorKind::NotInDialect`] for the runtime
/// dialect, whose one-block layout needs the whole matrix (use [`super::read`] and
/// [`serde_daphne::to_file_with`]); [`serde_daphne::ErrorKind::DataTypeMismatch`] for a frame. Nothing is left at
/// `output` after an error.
pub fn to_dbdf(input: impl AsRef<Path>, output: impl AsRef<Path>, options: &Options) -> Result<()> {
    let (input, output) = (input.as_ref(), output.as_ref());
    if options.dialect == Some(Dialect::Runtime) {
        return Err(ErrorImpl::NotInDialect {
            what: "a SystemDS matrix written block by block".into(),
            reason: "the runtime dialect stores a matrix as one block: read it whole \
                     (systemds::read) and write it with to_file_with",
        }
        .into());
    }
    let meta = read_metadata(input)?;
    if meta.frame {
        return Err(ErrorImpl::DataTypeMismatch {
            offset: 0,
            expected: "a SystemDS matrix, to write block by block (frames are read whole)",
            found: serde_daphne::__private::wire::DataType::Frame,
        }
        .into());
    }
    if !write_blocks(input, &meta, output, options, None)? {
        // A matrix without cells: nothing to stream.
        serde_daphne::to_file_with(output, &empty_matrix(&meta)?, options)?;
    }
    Ok(())
}

/// [`to_dbdf`], reporting the share of the matrix's cells written against the input's bytes;
/// `false` (and nothing written) for what does not stream, which [`super::read`] reads
/// whole: frames, matrices without cells, the runtime dialect.
pub(crate) fn to_dbdf_reporting(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: Option<&Progress>,
) -> Result<bool> {
    let meta = read_metadata(input)?;
    if meta.frame || options.dialect == Some(Dialect::Runtime) {
        return Ok(false);
    }
    write_blocks(input, &meta, output, options, progress)
}

/// Writes the matrix `meta` describes block by block; `false` (and nothing written) for a
/// matrix without cells.
fn write_blocks(
    input: &Path,
    meta: &Metadata,
    output: &Path,
    options: &Options,
    progress: Option<&Progress>,
) -> Result<bool> {
    let cells = u128::from(meta.rows) * u128::from(meta.cols);
    if cells == 0 {
        return Ok(false);
    }
    let files = part_files(input)?;
    let input_bytes = input_bytes(&files);
    let (rows, cols) = (meta.rows, meta.cols);
    let nnz = match meta.nnz {
        Some(nnz) => nnz,
        None => {
            let mut nnz = 0;
            for_each_block(&files, meta, |_, place, cells| {
                cells.for_each_stored(place.cols, |_, _, x| {
                    nnz += u64::from(x.to_bits() != 0);
                });
                Ok(())
            })?;
            nnz
        }
    };
    let header = if (nnz as f64) < SPARSITY_TURN_POINT * cells as f64 {
        Header::CsrMatrix {
            rows,
            cols,
            value_type: ValueType::F64,
        }
    } else {
        Header::DenseMatrix {
            rows,
            cols,
            value_type: ValueType::F64,
        }
    };
    let tile = match options.tile {
        Some(tile) => tile,
        None => grid_tile(meta)?,
    };
    let mut writer = DbdfWriter::create_with(output, &options.clone().tile(tile.0, tile.1))?;
    writer.begin(header)?;
    let mut written = HashSet::new();
    let mut done = 0u128;
    let mut report = |place: &BlockPlace| {
        done += u128::from(place.rows) * u128::from(place.cols);
        if let Some(report) = progress {
            let share = (u128::from(input_bytes) * done / cells.max(1)) as u64;
            report(share, input_bytes);
        }
    };
    for_each_block(&files, meta, |index, place, cells| {
        written.insert(index);
        write_block(&mut writer, place, &cells.into_data())?;
        report(place);
        Ok(())
    })?;
    let grid = (
        rows.div_ceil(meta.block_rows),
        cols.div_ceil(meta.block_cols),
    );
    for bi in 1..=grid.0 {
        for bj in 1..=grid.1 {
            if !written.contains(&(bi, bj)) {
                let place = grid_place(meta, bi, bj);
                write_block(&mut writer, &place, &BlockData::Empty)?;
                report(&place);
            }
        }
    }
    writer.finish()?;
    Ok(true)
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

/// Writes one SystemDS block as a tile at its place.
fn write_block(writer: &mut DbdfWriter, place: &BlockPlace, data: &BlockData) -> Result<()> {
    let (rows, cols) = (place.rows as usize, place.cols as usize);
    let shape_error = |e: &dyn std::fmt::Display| Error::invalid(format!("a SystemDS block: {e}"));
    if let BlockData::Dense(Values::F64(values)) = data {
        let view = ArrayView2::from_shape((rows, cols), values).map_err(|e| shape_error(&e))?;
        return writer.write_dense_tile(place.row, place.col, view);
    }
    let (row_offsets, col_indices, values) = csr_arrays(data, rows, place.cols);
    let view = CsMatView::try_new(
        (rows, cols),
        &row_offsets[..],
        &col_indices[..],
        &values[..],
    )
    .map_err(|(.., e)| shape_error(&e))?;
    writer.write_csr_tile(place.row, place.col, view)
}

/// The stored entries of a block as CSR arrays, columns increasing within each row (a
/// counting sort by row, then each row sorted by column if it is not already).
fn csr_arrays(data: &BlockData, rows: usize, cols: u32) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let mut offsets = vec![0usize; rows + 1];
    for_each_decoded(data, cols, |r, _, _| offsets[r + 1] += 1);
    for r in 0..rows {
        offsets[r + 1] += offsets[r];
    }
    let mut next = offsets.clone();
    let mut entries = vec![(0usize, 0f64); offsets[rows]];
    for_each_decoded(data, cols, |r, c, x| {
        entries[next[r]] = (c, x);
        next[r] += 1;
    });
    for r in 0..rows {
        let row = &mut entries[offsets[r]..offsets[r + 1]];
        if !row.windows(2).all(|w| w[0].0 < w[1].0) {
            row.sort_by_key(|&(c, _)| c);
        }
    }
    let (col_indices, values) = entries.into_iter().unzip();
    (offsets, col_indices, values)
}
