//! Reading SystemDS files record by record: the `.mtd`, the part files of a directory, each
//! SequenceFile's records, and each matrix block checked against the grid: what the
//! whole read and the source share.

use std::io::BufReader;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::decode::{decode_head, BlockCells, BlockHead};
use super::matrix;
use super::names::{BLOCK_SIZE, MATRIX_KEY, MATRIX_VALUE};
use super::seqfile::{SeqReader, SYSTEMDS};
use crate::input::Cursor;
use crate::storage::{Input, Part, Stream};
use serde_daphne::lowlevel::pipeline;
use serde_daphne::lowlevel::Producer;
use serde_daphne::BlockPlace;
use serde_daphne::Object;
use serde_daphne::Result;
use serde_daphne::Values;

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
/// Whether a matrix of `meta`'s shape with `nnz` non-zeros is sparse to SystemDS (under its
/// sparsity turn point, 40 %): then DAPHNE gets a `CSRMatrix`.
pub(super) fn is_sparse(meta: &Metadata, nnz: u64) -> bool {
    let cells = u128::from(meta.rows) * u128::from(meta.cols);
    (nnz as f64) < super::matrix::SPARSITY_TURN_POINT * cells as f64
}

/// The header of `meta`'s matrix: `f64`, CSR when `sparse`.
pub(super) fn matrix_header(meta: &Metadata, sparse: bool) -> serde_daphne::Header {
    let data_type = match sparse {
        true => serde_daphne::DataType::CsrMatrix,
        false => serde_daphne::DataType::DenseMatrix,
    };
    serde_daphne::Header::matrix(
        data_type,
        meta.rows,
        meta.cols,
        serde_daphne::ValueType::F64,
    )
}

pub(super) fn empty_matrix(meta: &Metadata) -> Result<Object> {
    Object::dense(meta.rows, meta.cols, Values::F64(Vec::new()))?
        .with_data_type(serde_daphne::DataType::CsrMatrix)
}

/// Reads and checks the `.mtd` beside `input`.
pub(super) fn read_metadata(input: &Input) -> Result<Metadata> {
    let mtd = PathBuf::from(format!("{}.mtd", input.name));
    let cannot = |why: String| {
        SYSTEMDS.in_file(
            &mtd,
            format!("the SystemDS metadata file cannot be read ({why})"),
        )
    };
    let bytes = match input.sidecar(".mtd").map_err(|e| cannot(e.to_string()))? {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(cannot("there is none".into())),
        Err(why) => return Err(cannot(why)),
    };
    let text = String::from_utf8(bytes).map_err(|_| cannot("it is not UTF-8 text".into()))?;
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

/// The files holding the data: the input itself, or its part files in name order (not
/// Hadoop's hidden `.`/`_` files or checksums).
pub(super) fn part_files(input: &Input) -> Result<Vec<Part>> {
    let mut parts = input.parts()?;
    if input.is_folder() {
        parts.retain(|p| {
            let name = &p.file_name;
            !name.starts_with('.') && !name.starts_with('_') && !name.ends_with(".crc")
        });
    }
    Ok(parts)
}

/// The local file or folder at `path`, named in errors opening it.
pub(super) fn local(path: &Path) -> Result<Input> {
    Input::local(path).map_err(|e| {
        let why = format!("cannot be opened ({e})");
        SYSTEMDS.in_file(path, why)
    })
}

/// Records read one after another into one buffer, up to [`BATCH_BYTES`] (or one larger
/// record), each with what the reading thread made of it, handed to the second thread
/// together.
struct Batch<T> {
    bytes: Vec<u8>,
    /// What `check` made of each record, and where the record's value lies: in `bytes`, and
    /// in which file at which offset.
    items: Vec<(T, Range<usize>, usize, u64)>,
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Batch {
            bytes: Vec::new(),
            items: Vec::new(),
        }
    }
}

/// Records of small blocks go to the second thread in batches of about this many bytes, so
/// handing them over costs little beside decoding them.
const BATCH_BYTES: usize = 1 << 20;

/// For every record of every file in order: `check(key reader, value reader)` on this
/// thread as soon as the record is read, then `each(its result, value reader)` on a second
/// thread, so that reading (and the checks that locate things in a record) overlap with
/// decoding into the final arrays. Memory holds two batches of records (at least one
/// record each), never a file. `check`'s results must not borrow the value (its bytes move
/// as the batch grows): they refer to it by offsets, as [`BlockHead`] does.
pub(super) fn for_each_record<T: Send>(
    files: &[Part],
    classes: (&str, &str),
    mut check: impl FnMut(&Cursor<'_>, &mut Cursor<'_>) -> Result<T>,
    mut each: impl FnMut(T, &mut Cursor<'_>) -> Result<()> + Send,
) -> Result<()> {
    let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
    let produce = |producer: &Producer<Batch<T>>| {
        let hand_over = |batch: &mut Batch<T>| {
            let mut spare = producer.spare().unwrap_or_default();
            spare.items.clear();
            producer.send(std::mem::replace(batch, spare))
        };
        let mut batch = Batch::default();
        let read = read_records(files, &names, classes, &mut batch, &mut check, hand_over);
        // What was read before an error is still decoded: its errors come first in the file.
        if !batch.items.is_empty() {
            hand_over(&mut batch);
        }
        read
    };
    let consume = |batch: &mut Batch<T>| {
        for (item, value, file, value_at) in batch.items.drain(..) {
            let value = &batch.bytes[value];
            each(
                item,
                &mut Cursor::in_file(value, value_at, SYSTEMDS, &names[file]),
            )?;
        }
        Ok(())
    };
    pipeline(produce, consume)
}

/// The reading side of [`for_each_record`]: fills `batch` with records and what `check`
/// made of them, handing it over whenever it holds [`BATCH_BYTES`]; stops early, without
/// an error, when `hand_over` says the other side has stopped.
fn read_records<T>(
    files: &[Part],
    names: &[String],
    classes: (&str, &str),
    batch: &mut Batch<T>,
    check: &mut impl FnMut(&Cursor<'_>, &mut Cursor<'_>) -> Result<T>,
    hand_over: impl Fn(&mut Batch<T>) -> bool,
) -> Result<()> {
    let sysds = |name: &str| name.replace("org.apache.sysml.", "org.apache.sysds.");
    let mut used = 0;
    for (file, part) in files.iter().enumerate() {
        let name = &names[file];
        let len = part.size;
        let stream = Stream::new(part.open()?.data, 0..len)?;
        let input = BufReader::with_capacity(1 << 20, stream);
        let (mut reader, header) = SeqReader::new(input, len, name.clone())?;
        if (
            sysds(&header.key_class).as_str(),
            sysds(&header.value_class).as_str(),
        ) != classes
        {
            return Err(SYSTEMDS.at_in(
                name,
                4,
                format!(
                    "a SequenceFile of ({}, {}); expected ({}, {})",
                    header.key_class, header.value_class, classes.0, classes.1
                ),
            ));
        }
        while let Some(span) = reader.next_record_into(&mut batch.bytes, used)? {
            let record = &batch.bytes[span.start..span.start + span.len];
            let (key, value) = record.split_at(span.key_len);
            let value_at = span.key_offset + span.key_len as u64;
            let key = Cursor::in_file(key, span.key_offset, SYSTEMDS, name);
            let mut value = Cursor::in_file(value, value_at, SYSTEMDS, name);
            let item = check(&key, &mut value)?;
            let value_range = span.start + span.key_len..span.start + span.len;
            batch.items.push((item, value_range, file, value_at));
            used += span.len;
            if used >= BATCH_BYTES {
                if !hand_over(batch) {
                    return Ok(());
                }
                used = 0;
            }
        }
    }
    Ok(())
}

/// Decodes one matrix record's key and block head, and checks that the block fits the
/// matrix's grid: the block's index in the grid, where it lies, and its head.
pub(super) fn matrix_record(
    key_reader: &Cursor<'_>,
    value: &mut Cursor<'_>,
    meta: &Metadata,
) -> Result<((u64, u64), BlockPlace, BlockHead)> {
    let (rows, cols) = (meta.rows, meta.cols);
    let (bi, bj) = matrix::decode_key(key_reader)?;
    let block = decode_head(value)?;
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
    Ok(((bi, bj), grid_place(meta, bi, bj), block))
}

/// The part files' bytes in all: what allocations and progress are measured against.
pub(super) fn input_bytes(files: &[Part]) -> u64 {
    files.iter().map(|f| f.size).sum()
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

/// The blocks of the grid read so far: a bit per block where the files are large enough to
/// justify the bitmap (a hashed set of a million blocks was a fifth of a sparse read's
/// time), else a set.
pub(super) enum SeenBlocks {
    Bits { bits: Vec<u64>, grid_cols: u64 },
    Set(std::collections::HashSet<(u64, u64)>),
}

impl SeenBlocks {
    pub(super) fn new(meta: &Metadata, input_bytes: u64) -> Self {
        let grid_cols = meta.cols.div_ceil(meta.block_cols);
        let blocks = u128::from(meta.rows.div_ceil(meta.block_rows)) * u128::from(grid_cols);
        if blocks / 8 <= u128::from(input_bytes.max(1 << 16)) {
            let words = blocks.div_ceil(64) as usize;
            SeenBlocks::Bits {
                bits: vec![0; words],
                grid_cols,
            }
        } else {
            SeenBlocks::Set(Default::default())
        }
    }

    /// Whether block `(bi, bj)` (1-based, within the grid) was recorded.
    pub(super) fn contains(&self, (bi, bj): (u64, u64)) -> bool {
        match self {
            SeenBlocks::Bits { bits, grid_cols } => {
                let k = (bi - 1) * *grid_cols + (bj - 1);
                bits[(k / 64) as usize] & (1u64 << (k % 64)) != 0
            }
            SeenBlocks::Set(set) => set.contains(&(bi, bj)),
        }
    }

    /// Records block `(bi, bj)` (1-based, within the grid); `false` if it was there.
    pub(super) fn insert(&mut self, (bi, bj): (u64, u64)) -> bool {
        match self {
            SeenBlocks::Bits { bits, grid_cols } => {
                let k = (bi - 1) * *grid_cols + (bj - 1);
                let (word, bit) = ((k / 64) as usize, 1u64 << (k % 64));
                let fresh = bits[word] & bit == 0;
                bits[word] |= bit;
                fresh
            }
            SeenBlocks::Set(set) => set.insert((bi, bj)),
        }
    }
}

/// Calls `each((bi, bj), place, cells)` for every block of the files, once each, in file
/// order, `each` on the second thread of [`for_each_record`], until it fails.
pub(super) fn for_each_block(
    files: &[Part],
    meta: &Metadata,
    mut each: impl FnMut((u64, u64), &BlockPlace, BlockCells<'_>) -> Result<()> + Send,
) -> Result<()> {
    let mut seen = SeenBlocks::new(meta, input_bytes(files));
    for_each_record(
        files,
        (MATRIX_KEY, MATRIX_VALUE),
        |key_reader, value| {
            let (index, place, head) = matrix_record(key_reader, value, meta)?;
            if !seen.insert(index) {
                return Err(key_reader.error(0, format!("block {index:?} appears twice")));
            }
            Ok((index, place, head))
        },
        |(index, place, head), value| each(index, &place, head.check(value)?),
    )
}
