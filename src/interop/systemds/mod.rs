//! SystemDS binary-block files: Hadoop SequenceFiles of matrix blocks (`MatrixIndexes` keys,
//! `MatrixBlock` values) or frame blocks (`LongWritable` first rows, `FrameBlock` values),
//! a single file or a directory of part files, described by a JSON `.mtd` file beside it.
//!
//! Reading gives a DenseMatrix or CSRMatrix of f64 (CSR when fewer than 40 % of the cells
//! are non-zero, SystemDS's own turn point) in one block, or with SystemDS's blocking kept
//! as DAPHNE blocks ([`ReadOptions::keep_blocks`]); blocks are consumed as the object is
//! assembled, so a matrix is held about once. Frames of FP64, FP32, INT64, INT32 and BOOLEAN
//! (as u8) columns keep their names; string columns and missing values are refused by name.
//! Writing produces a matrix file with every grid block (1000 x 1000 by default) encoded as
//! SystemDS encodes it, and its `.mtd`.
//!
//! ```no_run
//! use serde_daphne::interop::systemds;
//! use std::path::Path;
//!
//! let m = systemds::read(Path::new("scores"))?; // and scores.mtd
//! systemds::write(Path::new("scores-copy"), &m)?;
//! # Ok::<(), serde_daphne::Error>(())
//! ```

mod frame;
mod matrix;
mod seqfile;

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use self::seqfile::{malformed, next_record, read_header, Reader};
use crate::error::{Error, Result};
use crate::io::write_atomically;
use crate::model::{Block, Dialect, Object};
use crate::wire::{BlockData, BlockPlace, DataType, Header, ValueType, Values};

const MATRIX_KEY: &str = "org.apache.sysds.runtime.matrix.data.MatrixIndexes";
const MATRIX_VALUE: &str = "org.apache.sysds.runtime.matrix.data.MatrixBlock";
const FRAME_KEY: &str = "org.apache.hadoop.io.LongWritable";
const FRAME_VALUE: &str = "org.apache.sysds.runtime.frame.data.FrameBlock";
/// SystemDS's default block size, and its sparsity turn point.
const BLOCK_SIZE: u32 = 1000;
const SPARSITY_TURN_POINT: f64 = 0.4;

/// How [`read_with`] builds the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    keep_blocks: bool,
    max_alloc: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            keep_blocks: false,
            max_alloc: crate::Options::new().get_max_alloc(),
        }
    }
}

impl ReadOptions {
    /// One block per matrix, and the default memory allowance.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps SystemDS's blocks as the DAPHNE object's blocks (missing ones empty).
    pub fn keep_blocks(mut self, yes: bool) -> Self {
        self.keep_blocks = yes;
        self
    }

    /// The memory the object may take beyond the size of the files (as
    /// [`crate::Options::max_alloc`]).
    pub fn max_alloc(mut self, bytes: u64) -> Self {
        self.max_alloc = bytes;
        self
    }
}

/// How [`write_with`] blocks the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    block_size: u32,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            block_size: BLOCK_SIZE,
        }
    }
}

impl WriteOptions {
    /// Blocks of 1000 x 1000, SystemDS's default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Square blocks of `size` x `size` (at least 1).
    pub fn block_size(mut self, size: u32) -> Self {
        self.block_size = size.max(1);
        self
    }
}

/// The metadata file SystemDS keeps beside `path`: `path` with `.mtd` appended.
pub fn metadata_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".mtd");
    PathBuf::from(name)
}

fn mtd_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::ForeignInput {
        format: "SystemDS",
        offset: None,
        message: format!("{}: {message}", path.display()),
    }
}

/// What the `.mtd` says.
struct Metadata {
    frame: bool,
    rows: u64,
    cols: u64,
    block_rows: u64,
    block_cols: u64,
}

fn read_metadata(path: &Path) -> Result<Metadata> {
    let mtd = metadata_path(path);
    let text = std::fs::read_to_string(&mtd).map_err(|e| {
        mtd_error(
            &mtd,
            format!("the SystemDS metadata file cannot be read ({e})"),
        )
    })?;
    let json: Json =
        serde_json::from_str(&text).map_err(|e| mtd_error(&mtd, format!("not JSON: {e}")))?;
    let count = |key: &str| json.get(key).and_then(Json::as_u64);
    let frame = match json.get("data_type").and_then(Json::as_str) {
        Some("matrix") | None => false,
        Some("frame") => true,
        Some(other) => {
            return Err(mtd_error(
                &mtd,
                format!("data_type {other:?} (matrix or frame)"),
            ))
        }
    };
    match json.get("format").and_then(Json::as_str) {
        Some("binary") | None => {}
        Some(other) => {
            return Err(mtd_error(&mtd, format!("format {other:?}: this reads SystemDS's binary-block format; write it with format=\"binary\"")))
        }
    }
    let rows = count("rows").ok_or_else(|| mtd_error(&mtd, "no \"rows\""))?;
    let cols = count("cols").ok_or_else(|| mtd_error(&mtd, "no \"cols\""))?;
    let size = count("blocksize").unwrap_or(u64::from(BLOCK_SIZE));
    let block_rows = count("rows_in_block").unwrap_or(size);
    let block_cols = count("cols_in_block").unwrap_or(size);
    if block_rows == 0 || block_cols == 0 {
        return Err(mtd_error(&mtd, "a block size of 0"));
    }
    Ok(Metadata {
        frame,
        rows,
        cols,
        block_rows,
        block_cols,
    })
}

/// The files holding the data: `path` itself, or its part files in name order.
fn part_files(path: &Path) -> Result<Vec<PathBuf>> {
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

/// Reads a SystemDS binary matrix or frame (a file or a directory of part files, with its
/// `.mtd`) into one-block objects.
///
/// # Errors
/// As [`read_with`].
pub fn read(path: &Path) -> Result<Object> {
    read_with(path, &ReadOptions::new())
}

/// Reads a SystemDS binary matrix or frame with `options`.
///
/// # Errors
/// [`Error::ForeignInput`] with the file and byte offset for anything malformed (also
/// compressed SequenceFiles and block kinds this crate does not read);
/// [`Error::NotConvertible`] for string columns and missing values; [`Error::AllocationLimit`]
/// for a matrix larger than the files justify; I/O errors.
pub fn read_with(path: &Path, options: &ReadOptions) -> Result<Object> {
    let meta = read_metadata(path)?;
    let files = part_files(path)?;
    let input: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    if meta.frame {
        read_frame(&files, &meta)
    } else {
        read_matrix(&files, &meta, input, options)
    }
}

/// Calls `each(reader, key, value_reader)` for every record of every file.
fn for_each_record(
    files: &[PathBuf],
    classes: (&str, &str),
    mut each: impl FnMut(&mut Reader<'_>, &[u8], usize, &mut Reader<'_>) -> Result<()>,
) -> Result<()> {
    for file in files {
        let bytes = std::fs::read(file)?;
        let name = file.display().to_string();
        let mut reader = Reader::new(&bytes, &name);
        let header = read_header(&mut reader)?;
        let (key, value) = (header.key_class.as_str(), header.value_class.as_str());
        if (key, value) != classes
            && (
                key.replace("sysml", "sysds"),
                value.replace("sysml", "sysds"),
            ) != (classes.0.to_string(), classes.1.to_string())
        {
            return Err(malformed(
                &name,
                4,
                format!(
                    "a SequenceFile of ({key}, {value}); expected ({}, {})",
                    classes.0, classes.1
                ),
            ));
        }
        while let Some(record) = next_record(&mut reader, &header.sync)? {
            let mut value_reader =
                Reader::new(&bytes[..record.value_offset + record.value.len()], &name);
            value_reader.pos = record.value_offset;
            let key_at = record.value_offset - record.key.len();
            each(&mut reader, record.key, key_at, &mut value_reader)?;
        }
    }
    Ok(())
}

fn read_matrix(
    files: &[PathBuf],
    meta: &Metadata,
    input: u64,
    options: &ReadOptions,
) -> Result<Object> {
    let (rows, cols) = (meta.rows, meta.cols);
    let grid = (
        rows.div_ceil(meta.block_rows),
        cols.div_ceil(meta.block_cols),
    );
    let mut blocks: BTreeMap<(u64, u64), Block> = BTreeMap::new();
    let mut nnz = 0u64;
    for_each_record(
        files,
        (MATRIX_KEY, MATRIX_VALUE),
        |reader, key, key_at, value| {
            let (bi, bj) = matrix::decode_key(reader, key, key_at)?;
            let block = matrix::decode_block(value)?;
            let expect = |b: u64, len: u64, size: u64| {
                len.saturating_sub((b - 1).saturating_mul(size)).min(size)
            };
            let (er, ec) = (
                expect(bi, rows, meta.block_rows),
                expect(bj, cols, meta.block_cols),
            );
            if bi > grid.0
                || bj > grid.1
                || (u64::from(block.rows), u64::from(block.cols)) != (er, ec)
            {
                return Err(reader.error(key_at, format!(
                "block ({bi}, {bj}) of {} x {} does not fit the {rows} x {cols} matrix in {} x {} blocks",
                block.rows, block.cols, meta.block_rows, meta.block_cols
            )));
            }
            nnz += block.data.nnz();
            let place = BlockPlace {
                row: (bi - 1) * meta.block_rows,
                col: (bj - 1) * meta.block_cols,
                rows: block.rows,
                cols: block.cols,
            };
            if blocks
                .insert(
                    (bi, bj),
                    Block {
                        place,
                        data: block.data,
                    },
                )
                .is_some()
            {
                return Err(reader.error(key_at, format!("block ({bi}, {bj}) appears twice")));
            }
            Ok(())
        },
    )?;
    let cells = u128::from(rows) * u128::from(cols);
    let sparse = (nnz as f64) < SPARSITY_TURN_POINT * cells as f64;
    let data_type = if sparse {
        DataType::CsrMatrix
    } else {
        DataType::DenseMatrix
    };
    let header = match data_type {
        DataType::CsrMatrix => Header::CsrMatrix {
            rows,
            cols,
            value_type: ValueType::F64,
        },
        _ => Header::DenseMatrix {
            rows,
            cols,
            value_type: ValueType::F64,
        },
    };
    if cells == 0 {
        return Object::dense(rows, cols, Values::F64(Vec::new()))?.with_data_type(data_type);
    }
    let limit = |needed: u128| {
        if needed > u128::from(input) + u128::from(options.max_alloc) {
            return Err(Error::AllocationLimit {
                offset: 0,
                bytes: needed,
                limit: options.max_alloc,
            });
        }
        Ok(())
    };
    if options.keep_blocks {
        limit(u128::from(grid.0) * u128::from(grid.1) * 64)?;
        let mut all = Vec::new();
        for bi in 1..=grid.0 {
            for bj in 1..=grid.1 {
                all.push(blocks.remove(&(bi, bj)).unwrap_or_else(|| {
                    let expect =
                        |b: u64, len: u64, size: u64| (len - (b - 1) * size).min(size) as u32;
                    Block {
                        place: BlockPlace {
                            row: (bi - 1) * meta.block_rows,
                            col: (bj - 1) * meta.block_cols,
                            rows: expect(bi, rows, meta.block_rows),
                            cols: expect(bj, cols, meta.block_cols),
                        },
                        data: BlockData::Empty,
                    }
                }));
            }
        }
        return Ok(Object::read_in(header, all, 0, Dialect::Spec));
    }
    let (r32, c32) = match (u32::try_from(rows), u32::try_from(cols)) {
        (Ok(r), Ok(c)) => (r, c),
        _ => {
            return Err(Error::NotConvertible {
                what: format!("a {rows} x {cols} SystemDS matrix"),
                to: "one DAPHNE block",
                reason: format!("one block holds at most {} rows and columns; keep SystemDS's blocks (keep_blocks, --keep-blocks)", u32::MAX),
            })
        }
    };
    let whole = BlockPlace {
        row: 0,
        col: 0,
        rows: r32,
        cols: c32,
    };
    let data = if sparse {
        limit((u128::from(rows) + 1) * 8 + u128::from(nnz) * 16)?;
        assemble_csr(blocks, rows as usize, nnz as usize)
    } else {
        limit(cells * 8)?;
        assemble_dense(blocks, rows as usize, cols as usize)?
    };
    Ok(Object::read_in(
        header,
        vec![Block { place: whole, data }],
        0,
        Dialect::Spec,
    ))
}

/// Calls `f(row within the block, column within the block, value)` for every stored value
/// of a block, row by row.
fn for_each_stored(data: &BlockData, cols: u32, mut f: impl FnMut(usize, usize, f64)) {
    match data {
        BlockData::Empty => {}
        BlockData::Dense(Values::F64(v)) => {
            for (k, &x) in v.iter().enumerate() {
                f(k / cols as usize, k % cols as usize, x);
            }
        }
        BlockData::Sparse {
            row_offsets,
            col_indices,
            values: Values::F64(v),
        } => {
            for r in 0..row_offsets.len() - 1 {
                for k in row_offsets[r]..row_offsets[r + 1] {
                    f(r, col_indices[k], v[k]);
                }
            }
        }
        BlockData::UltraSparse {
            row_indices,
            col_indices,
            values: Values::F64(v),
        } => {
            for (k, &r) in row_indices.iter().enumerate() {
                let c = col_indices.as_ref().map_or(0, |c| c[k] as usize);
                f(r as usize, c, v[k]);
            }
        }
        _ => unreachable!("SystemDS blocks hold f64"),
    }
}

/// One dense f64 block from the SystemDS blocks, each dropped once copied.
fn assemble_dense(
    blocks: BTreeMap<(u64, u64), Block>,
    rows: usize,
    cols: usize,
) -> Result<BlockData> {
    let mut out = crate::wire::values::zeroed_vec::<f64>(rows * cols)?;
    for (_, block) in blocks {
        let (r0, c0) = (block.place.row as usize, block.place.col as usize);
        for_each_stored(&block.data, block.place.cols, |r, c, x| {
            out[(r0 + r) * cols + c0 + c] = x
        });
    }
    Ok(BlockData::Dense(Values::F64(out)))
}

/// One CSR f64 block from the SystemDS blocks, a band of block rows at a time (each band's
/// blocks dropped once copied). Zeros stored by SystemDS are left out.
fn assemble_csr(mut blocks: BTreeMap<(u64, u64), Block>, rows: usize, nnz: usize) -> BlockData {
    let mut row_offsets = Vec::with_capacity(rows + 1);
    row_offsets.push(0usize);
    let mut col_indices = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    let mut entries: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut next_row = 0usize;
    while let Some((&(bi, _), _)) = blocks.first_key_value() {
        let band: Vec<Block> = std::iter::from_fn(|| {
            blocks
                .first_key_value()
                .filter(|(k, _)| k.0 == bi)
                .map(|(k, _)| *k)
                .and_then(|k| blocks.remove(&k))
        })
        .collect();
        let r0 = band[0].place.row as usize;
        let height = band[0].place.rows as usize;
        // Rows before this band that no block covers are empty.
        while next_row < r0 {
            row_offsets.push(col_indices.len());
            next_row += 1;
        }
        entries.clear();
        entries.resize(height, Vec::new());
        for block in &band {
            let c0 = block.place.col as usize;
            for_each_stored(&block.data, block.place.cols, |r, c, x| {
                if x.to_bits() != 0 {
                    entries[r].push((c0 + c, x));
                }
            });
        }
        drop(band);
        for row in &entries {
            // Blocks come in column order, and each block's rows in column order.
            for &(c, x) in row {
                col_indices.push(c);
                values.push(x);
            }
            row_offsets.push(col_indices.len());
        }
        next_row = r0 + height;
    }
    while next_row < rows {
        row_offsets.push(col_indices.len());
        next_row += 1;
    }
    BlockData::Sparse {
        row_offsets,
        col_indices,
        values: Values::F64(values),
    }
}

fn read_frame(files: &[PathBuf], meta: &Metadata) -> Result<Object> {
    let mut blocks: BTreeMap<u64, frame::FrameBlock> = BTreeMap::new();
    for_each_record(
        files,
        (FRAME_KEY, FRAME_VALUE),
        |reader, key, key_at, value| {
            if key.len() != 8 {
                return Err(
                    reader.error(key_at, format!("a LongWritable key of {} bytes", key.len()))
                );
            }
            let first = i64::from_be_bytes(key.try_into().unwrap());
            let block = frame::decode_block(value)?;
            let first = u64::try_from(first)
                .ok()
                .filter(|&f| f >= 1)
                .ok_or_else(|| {
                    reader.error(key_at, format!("first row {first}: rows start at 1"))
                })?;
            if blocks.insert(first, block).is_some() {
                return Err(reader.error(key_at, format!("two blocks start at row {first}")));
            }
            Ok(())
        },
    )?;
    let mut next = 1u64;
    let mut names: Option<Vec<String>> = None;
    let mut columns: Vec<Values> = Vec::new();
    for (first, block) in blocks {
        if first != next {
            return Err(mtd_error(
                &files[0],
                format!("the frame's blocks leave rows {next} to {} out", first - 1),
            ));
        }
        if u64::try_from(block.columns.len()).ok() != Some(meta.cols) {
            return Err(mtd_error(
                &files[0],
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
                    return Err(mtd_error(
                        &files[0],
                        format!("column {} changes its type between blocks", j + 1),
                    ));
                }
            }
        }
        next = first + block.rows as u64;
    }
    if next - 1 != meta.rows {
        return Err(mtd_error(
            &files[0],
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

/// Writes a matrix as a SystemDS binary-block file and its `.mtd`, with SystemDS's default
/// 1000 x 1000 blocks.
///
/// # Errors
/// As [`write_with`].
pub fn write(path: &Path, object: &Object) -> Result<()> {
    write_with(path, object, &WriteOptions::new())
}

/// Writes a matrix as a SystemDS binary-block file (every grid block, each encoded as
/// SystemDS encodes it) and its `.mtd`, both atomically.
///
/// # Errors
/// [`Error::NotConvertible`] for frames; [`Error::LossyConversion`] for values that are not
/// exact as `f64` (SystemDS matrices hold doubles); I/O errors.
pub fn write_with(path: &Path, object: &Object, options: &WriteOptions) -> Result<()> {
    if object.data_type() == DataType::Frame {
        return Err(Error::NotConvertible {
            what: "a Frame".into(),
            to: "SystemDS",
            reason: "this crate writes SystemDS matrices only".into(),
        });
    }
    let (rows, cols) = object.shape();
    let size = u64::from(options.block_size);
    // The matrix as CSR rows of f64 (dense objects too: empty cells cost nothing here).
    let parts = object.csr_parts::<f64>()?;
    let nnz = parts.values.iter().filter(|x| x.to_bits() != 0).count() as u64;
    let sync = sync_marker(rows, cols, nnz);
    write_atomically(path, |file| {
        let mut writer = seqfile::Writer::new(
            BufWriter::with_capacity(1 << 20, file),
            MATRIX_KEY,
            MATRIX_VALUE,
            sync,
        )?;
        for bi in 0..rows.div_ceil(size) {
            let (r0, nr) = (bi * size, (rows - bi * size).min(size));
            for bj in 0..cols.div_ceil(size) {
                let (c0, nc) = ((bj * size) as usize, (cols - bj * size).min(size) as usize);
                let row_of = |r: u32, out: &mut Vec<(u32, f64)>| {
                    let row = (r0 + u64::from(r)) as usize;
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
                let mut scratch = Vec::new();
                for r in 0..nr as u32 {
                    scratch.clear();
                    row_of(r, &mut scratch);
                    count += scratch.len() as u64;
                }
                let value = matrix::encode_block(nr as u32, nc as u32, count, row_of);
                let mut key = Vec::with_capacity(16);
                key.extend_from_slice(&((bi + 1) as i64).to_be_bytes());
                key.extend_from_slice(&((bj + 1) as i64).to_be_bytes());
                writer.append(&key, &value)?;
            }
        }
        writer.finish()?;
        Ok(())
    })?;
    let mtd = serde_json::json!({
        "data_type": "matrix",
        "value_type": "double",
        "rows": rows,
        "cols": cols,
        "rows_in_block": size,
        "cols_in_block": size,
        "nnz": nnz,
        "format": "binary",
        "author": "serde_daphne",
    });
    let text = serde_json::to_string_pretty(&mtd).expect("JSON values serialize");
    write_atomically(&metadata_path(path), |file| {
        Ok(std::io::Write::write_all(file, text.as_bytes())?)
    })
}

/// A sync marker that depends only on the matrix's shape and non-zeros (Hadoop draws one at
/// random; a fixed one makes the output reproducible).
fn sync_marker(rows: u64, cols: u64, nnz: u64) -> [u8; 16] {
    let mut state = 0xcbf2_9ce4_8422_2325u64 ^ rows.rotate_left(17) ^ cols.rotate_left(41) ^ nnz;
    let mut out = [0u8; 16];
    for chunk in out.chunks_exact_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_be_bytes());
    }
    out
}
