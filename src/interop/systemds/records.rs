//! Reading SystemDS files record by record: the `.mtd`, the part files of a directory, each
//! SequenceFile's records, and each matrix block checked against the grid. What
//! [`super::read_with`] and [`super::to_dbdf`] share.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::matrix;
use super::names::{metadata_path, BLOCK_SIZE, MATRIX_KEY, MATRIX_VALUE};
use super::seqfile::{SeqReader, SYSTEMDS};
use crate::error::Result;
use crate::interop::input::Cursor;
use crate::model::{Block, Object};
use crate::wire::{BlockData, BlockPlace, Values};

/// What the `.mtd` says.
pub(super) struct Metadata {
    pub(super) frame: bool,
    pub(super) rows: u64,
    pub(super) cols: u64,
    pub(super) block_rows: u64,
    pub(super) block_cols: u64,
    /// The non-zero count, where the file gives one.
    pub(super) nnz: Option<u64>,
}

/// The keys of a `.mtd` this crate reads (SystemDS writes more; they are ignored).
#[derive(serde::Deserialize)]
struct MetadataJson {
    data_type: Option<String>,
    format: Option<String>,
    rows: u64,
    cols: u64,
    blocksize: Option<u64>,
    rows_in_block: Option<u64>,
    cols_in_block: Option<u64>,
    /// SystemDS writes -1 where it does not know the count.
    nnz: Option<i64>,
}

/// A matrix without cells, as a SystemDS read gives it: a `CSRMatrix` with no values.
pub(super) fn empty_matrix(meta: &Metadata) -> Result<Object> {
    Object::dense(meta.rows, meta.cols, Values::F64(Vec::new()))?
        .with_data_type(crate::wire::DataType::CsrMatrix)
}

/// Reads and checks the `.mtd` beside `path`.
pub(super) fn read_metadata(path: &Path) -> Result<Metadata> {
    let mtd = metadata_path(path);
    let text = std::fs::read_to_string(&mtd).map_err(|e| {
        SYSTEMDS.in_file(
            &mtd,
            format!("the SystemDS metadata file cannot be read ({e})"),
        )
    })?;
    let json: MetadataJson = serde_json::from_str(&text)
        .map_err(|e| SYSTEMDS.in_file(&mtd, format!("not SystemDS metadata: {e}")))?;
    let frame = match json.data_type.as_deref() {
        Some("matrix") | None => false,
        Some("frame") => true,
        Some(other) => {
            return Err(SYSTEMDS.in_file(&mtd, format!("data_type {other:?} (matrix or frame)")))
        }
    };
    match json.format.as_deref() {
        Some("binary") | None => {}
        Some(other) => {
            return Err(SYSTEMDS.in_file(&mtd, format!("format {other:?}: this reads SystemDS's binary-block format; write it with format=\"binary\"")))
        }
    }
    let size = json.blocksize.unwrap_or(u64::from(BLOCK_SIZE));
    let block_rows = json.rows_in_block.unwrap_or(size);
    let block_cols = json.cols_in_block.unwrap_or(size);
    if block_rows == 0 || block_cols == 0 {
        return Err(SYSTEMDS.in_file(&mtd, "a block size of 0"));
    }
    Ok(Metadata {
        frame,
        rows: json.rows,
        cols: json.cols,
        block_rows,
        block_cols,
        nnz: json.nnz.and_then(|n| u64::try_from(n).ok()),
    })
}

/// The files holding the data: `path` itself, or its part files in name order.
pub(super) fn part_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            p.is_file()
                && !name.starts_with('.')
                && !name.starts_with('_')
                && !name.ends_with(".crc")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Calls `each(key reader, value reader)` for every record of every file, reading one
/// record at a time.
pub(super) fn for_each_record(
    files: &[PathBuf],
    classes: (&str, &str),
    mut each: impl FnMut(&Cursor<'_>, &mut Cursor<'_>) -> Result<()>,
) -> Result<()> {
    let sysds = |name: &str| name.replace("org.apache.sysml.", "org.apache.sysds.");
    for file in files {
        let len = std::fs::metadata(file)?.len();
        let input = BufReader::with_capacity(1 << 20, File::open(file)?);
        let (mut reader, header) = SeqReader::new(input, len, file.display().to_string())?;
        if (
            sysds(&header.key_class).as_str(),
            sysds(&header.value_class).as_str(),
        ) != classes
        {
            return Err(SYSTEMDS.at_in(
                reader.file(),
                4,
                format!(
                    "a SequenceFile of ({}, {}); expected ({}, {})",
                    header.key_class, header.value_class, classes.0, classes.1
                ),
            ));
        }
        let name = reader.file().to_owned();
        while let Some(record) = reader.next_record()? {
            let key = Cursor::in_file(record.key, record.key_offset, SYSTEMDS, &name);
            let mut value = Cursor::in_file(record.value, record.value_offset, SYSTEMDS, &name);
            each(&key, &mut value)?;
        }
    }
    Ok(())
}

/// Decodes one matrix record and checks that its block fits the matrix's grid.
pub(super) fn matrix_record(
    key_reader: &Cursor<'_>,
    value: &mut Cursor<'_>,
    meta: &Metadata,
) -> Result<((u64, u64), Block)> {
    let (rows, cols) = (meta.rows, meta.cols);
    let (bi, bj) = matrix::decode_key(key_reader)?;
    let block = matrix::decode_block(value)?;
    let expect =
        |b: u64, len: u64, size: u64| len.saturating_sub((b - 1).saturating_mul(size)).min(size);
    let fits = bi <= rows.div_ceil(meta.block_rows)
        && bj <= cols.div_ceil(meta.block_cols)
        && (u64::from(block.rows), u64::from(block.cols))
            == (
                expect(bi, rows, meta.block_rows),
                expect(bj, cols, meta.block_cols),
            );
    if !fits {
        return Err(key_reader.error(
            0,
            format!(
                "block ({bi}, {bj}) of {} x {} does not fit the {rows} x {cols} matrix in {} x {} blocks",
                block.rows, block.cols, meta.block_rows, meta.block_cols
            ),
        ));
    }
    let place = grid_place(meta, bi, bj);
    Ok((
        (bi, bj),
        Block {
            place,
            data: block.data,
        },
    ))
}

/// Where block `(bi, bj)` (1-based) of the grid lies.
pub(super) fn grid_place(meta: &Metadata, bi: u64, bj: u64) -> BlockPlace {
    let size = |b: u64, len: u64, step: u64| (len - (b - 1) * step).min(step) as u32;
    BlockPlace {
        row: (bi - 1) * meta.block_rows,
        col: (bj - 1) * meta.block_cols,
        rows: size(bi, meta.rows, meta.block_rows),
        cols: size(bj, meta.cols, meta.block_cols),
    }
}

/// Calls `each((bi, bj), block)` for every block of the files, once each, until it fails.
pub(super) fn for_each_block(
    files: &[PathBuf],
    meta: &Metadata,
    mut each: impl FnMut((u64, u64), Block) -> Result<()>,
) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for_each_record(files, (MATRIX_KEY, MATRIX_VALUE), |key_reader, value| {
        let (index, block) = matrix_record(key_reader, value, meta)?;
        if !seen.insert(index) {
            return Err(key_reader.error(0, format!("block {index:?} appears twice")));
        }
        each(index, block)
    })
}

/// Calls `f(row within the block, column within the block, value)` for every stored value
/// of a block, row by row.
pub(super) fn for_each_stored(data: &BlockData, cols: u32, mut f: impl FnMut(usize, usize, f64)) {
    if let Some(Values::F64(v)) = data.values() {
        data.for_each_position(cols, |k, r, c| f(r as usize, c as usize, v[k]));
    }
}
