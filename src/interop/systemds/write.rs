//! Writing SystemDS binary blocks: matrices (every grid block, encoded as SystemDS encodes
//! it) and frames (blocks of rows), as one SequenceFile or as a directory of part files
//! written in parallel, each holding a contiguous range of block rows as Spark's writes
//! partition them, plus the `.mtd`.

use std::borrow::Cow;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::names::{metadata_path, BLOCK_SIZE, FRAME_KEY, FRAME_VALUE, MATRIX_KEY, MATRIX_VALUE};
use super::{frame, matrix, seqfile};
use crate::error::{Error, Result};
use crate::interop::npy;
use crate::io::progress::Progress;
use crate::io::{replace_directory, write_atomically};
use crate::model::{Block, CsrParts, Object};
use crate::wire::{BlockData, DataType, Values};

/// The bytes of output per part file when [`WriteOptions::parts`] is not given: HDFS's
/// block size, so that each part is one HDFS block and one Spark input split.
pub const PART_BYTES: u64 = 128 << 20;

/// How [`write_with`] blocks the object and splits it into files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    block_size: u32,
    parts: Option<usize>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            block_size: BLOCK_SIZE,
            parts: None,
        }
    }
}

impl WriteOptions {
    /// Blocks of 1000 x 1000 (frames: 1000 rows), SystemDS's default; one file for objects
    /// up to [`PART_BYTES`], else a directory of one part per [`PART_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Square blocks of `size` x `size` (frames: blocks of `size` rows; at least 1).
    pub fn block_size(mut self, size: u32) -> Self {
        self.block_size = size.max(1);
        self
    }

    /// A directory of `parts` part files (`part-00000`, ...; at least 1), as Spark writes
    /// them, each a contiguous range of block rows, written in parallel.
    pub fn parts(mut self, parts: usize) -> Self {
        self.parts = Some(parts.max(1));
        self
    }
}

/// Writes a matrix or frame as SystemDS binary blocks and its `.mtd`, with the default
/// options.
///
/// # Errors
/// As [`write_with`].
pub fn write(path: impl AsRef<Path>, object: &Object) -> Result<()> {
    write_with(path, object, &WriteOptions::new())
}

/// Writes a matrix or frame as SystemDS binary blocks (one file, or a directory of part
/// files, see [`WriteOptions::parts`]) and its `.mtd`, each atomically.
///
/// # Errors
/// [`Error::LossyConversion`] for matrix values that are not exact as `f64` (SystemDS
/// matrices hold doubles); [`Error::NotConvertible`] for frame columns of a type SystemDS
/// frames do not hold (u8, u16, u32, u64, i8, i16: convert them to i32 or i64 first);
/// [`std::io::ErrorKind::AlreadyExists`] when a directory of something else is in the way;
/// I/O errors.
pub fn write_with(path: impl AsRef<Path>, object: &Object, options: &WriteOptions) -> Result<()> {
    write_reporting(path.as_ref(), object, options, None)
}

/// A SequenceFile record: key bytes and value bytes.
type Record = (Vec<u8>, Vec<u8>);

/// What one block row (of blocks, or a block of frame rows) encodes to.
type Records<'a> = dyn Fn(u64) -> Result<Vec<Record>> + Sync + 'a;

/// [`write_with`], reporting the bytes of blocks written against an estimate of the total
/// to `progress`.
pub(crate) fn write_reporting(
    path: &Path,
    object: &Object,
    options: &WriteOptions,
    progress: Option<&Progress>,
) -> Result<()> {
    let (rows, cols) = object.shape();
    let size = u64::from(options.block_size);
    let block_rows = rows.div_ceil(size);
    if object.data_type() == DataType::Frame {
        let columns: Vec<(String, Values)> = object
            .labels()
            .into_iter()
            .map(str::to_owned)
            .zip(object.columns()?)
            .collect();
        let schema = columns
            .iter()
            .map(|(label, values)| frame::schema_name(label, values))
            .collect::<Result<Vec<_>>>()?;
        let width: u64 = columns
            .iter()
            .map(|(_, v)| v.value_type().size() as u64)
            .sum();
        let mtd = serde_json::json!({
            "data_type": "frame",
            "schema": schema.join(",") + ",",
            "rows": rows,
            "cols": cols,
            "format": "binary",
            "author": "serde_daphne",
        });
        let records = move |bi: u64| -> Result<Vec<Record>> {
            let (r0, r1) = (bi * size, ((bi + 1) * size).min(rows));
            let value = frame::encode_block(&columns, r0 as usize..r1 as usize)?;
            Ok(vec![(((r0 + 1) as i64).to_be_bytes().to_vec(), value)])
        };
        let classes = (FRAME_KEY, FRAME_VALUE);
        return write_files(
            path,
            options.parts,
            (block_rows, rows * width),
            (classes, sync_marker(rows, cols)),
            &records,
            || mtd,
            progress,
        );
    }
    write_matrix(path, &Cells::of(object)?, (rows, cols), options, progress)
}

/// Writes the `.npy` matrix at `input` as SystemDS binary blocks at `output`. Little-endian
/// `f64` in row order (what numpy writes for `float64`) streams: each core reads one band of
/// block rows at a time, so memory holds those bands, never the matrix. Other `.npy` files
/// are read whole and written as [`write_with`] writes them.
///
/// # Errors
/// As [`write_with`], and [`crate::interop::npy::read`]'s.
pub fn write_npy(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    options: &WriteOptions,
) -> Result<()> {
    let (input, output) = (input.as_ref(), output.as_ref());
    if !write_npy_reporting(input, output, options, None)? {
        write_with(output, &npy::read(input)?, options)?;
    }
    Ok(())
}

/// [`write_npy`] for `f64` in row order, reporting to `progress`; `false` (and nothing
/// written) for other `.npy` files.
pub(crate) fn write_npy_reporting(
    input: &Path,
    output: &Path,
    options: &WriteOptions,
    progress: Option<&Progress>,
) -> Result<bool> {
    let Some((file, offset, rows, cols)) = npy::stream::open_f64_rows(input)? else {
        return Ok(false);
    };
    let bands = Bands {
        file,
        offset,
        cols,
        spare: Mutex::new(Vec::new()),
    };
    write_matrix(output, &Cells::Npy(bands), (rows, cols), options, progress)?;
    Ok(true)
}

/// Writes a matrix's cells as binary blocks, then the `.mtd` with the non-zeros counted on
/// the way.
fn write_matrix(
    path: &Path,
    cells: &Cells<'_>,
    (rows, cols): (u64, u64),
    options: &WriteOptions,
    progress: Option<&Progress>,
) -> Result<()> {
    let size = u64::from(options.block_size);
    let nnz = AtomicU64::new(0);
    let dense_bytes = u128::from(rows) * u128::from(cols) * 8;
    let estimate = match cells {
        Cells::Csr(parts) => dense_bytes.min(parts.values.len() as u128 * 12),
        _ => dense_bytes,
    } as u64;
    let records = |bi: u64| {
        let (records, stored) = matrix_records(cells, (rows, cols), size, bi)?;
        nnz.fetch_add(stored, Ordering::Relaxed);
        Ok(records)
    };
    let mtd = || {
        serde_json::json!({
            "data_type": "matrix",
            "value_type": "double",
            "rows": rows,
            "cols": cols,
            "rows_in_block": size,
            "cols_in_block": size,
            "nnz": nnz.load(Ordering::Relaxed),
            "format": "binary",
            "author": "serde_daphne",
        })
    };
    write_files(
        path,
        options.parts,
        (rows.div_ceil(size), estimate),
        ((MATRIX_KEY, MATRIX_VALUE), sync_marker(rows, cols)),
        &records,
        mtd,
        progress,
    )
}

/// A matrix's cells as `f64`: every cell of a dense matrix (borrowed when it is one `f64`
/// block), CSR rows, or the rows of an `.npy` file read a band at a time.
enum Cells<'a> {
    Dense(Cow<'a, [f64]>),
    Csr(CsrParts<f64>),
    Npy(Bands),
}

/// Rows of `cols` `f64` from byte `offset` of `file`, with band buffers kept for reuse
/// (fresh memory would cost a page fault and a zeroed page for every 4 KiB).
struct Bands {
    file: File,
    offset: u64,
    cols: u64,
    spare: Mutex<Vec<Vec<f64>>>,
}

impl<'a> Cells<'a> {
    /// The cells of a matrix object.
    fn of(object: &'a Object) -> Result<Cells<'a>> {
        if object.data_type() != DataType::DenseMatrix {
            return Ok(Cells::Csr(object.csr_parts::<f64>()?));
        }
        Ok(Cells::Dense(match object.blocks() {
            [Block {
                data: BlockData::Dense(Values::F64(v)),
                ..
            }] => Cow::Borrowed(v.as_slice()),
            _ => Cow::Owned(object.dense_vec::<f64>()?),
        }))
    }
}

/// The records of block row `bi` of a matrix, and their non-zeros (-0.0 counts, as in
/// SystemDS).
fn matrix_records(
    cells: &Cells<'_>,
    (rows, cols): (u64, u64),
    size: u64,
    bi: u64,
) -> Result<(Vec<Record>, u64)> {
    let (r0, nr) = (bi * size, (rows - bi * size).min(size));
    let mut records = Vec::new();
    let mut stored = 0;
    let key = |bj: u64| {
        [
            ((bi + 1) as i64).to_be_bytes(),
            ((bj + 1) as i64).to_be_bytes(),
        ]
        .concat()
    };
    let mut dense_blocks = |band: &[f64], first: u64| {
        for bj in 0..cols.div_ceil(size) {
            let (c0, nc) = ((bj * size) as usize, (cols - bj * size).min(size) as usize);
            let row = |r: u32| {
                let at = ((r0 - first) as usize + r as usize) * cols as usize + c0;
                &band[at..at + nc]
            };
            let (value, nnz) = matrix::encode_dense_block(nr as u32, nc as u32, row);
            stored += nnz;
            records.push((key(bj), value));
        }
    };
    match cells {
        Cells::Dense(v) => dense_blocks(v, 0),
        Cells::Npy(bands) => {
            let mut band = bands
                .spare
                .lock()
                .map(|mut s| s.pop())
                .ok()
                .flatten()
                .unwrap_or_default();
            band.resize((nr * cols) as usize, 0.0);
            let at = bands.offset + r0 * bands.cols * 8;
            read_exact_at(&bands.file, bytemuck::cast_slice_mut(&mut band), at)?;
            dense_blocks(&band, r0);
            if let Ok(mut spare) = bands.spare.lock() {
                spare.push(band);
            }
        }
        Cells::Csr(parts) => {
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
                stored += count;
                records.push((
                    key(bj),
                    matrix::encode_block(nr as u32, nc as u32, count, row_of),
                ));
            }
        }
    }
    Ok((records, stored))
}

/// Reads `dst.len()` bytes at `at` without moving a shared cursor (threads read bands of one
/// file at once).
fn read_exact_at(file: &File, dst: &mut [u8], at: u64) -> Result<()> {
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(file, dst, at)?;
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek};
        let mut file = file;
        file.seek(std::io::SeekFrom::Start(at))?;
        file.read_exact(dst)?;
    }
    Ok(())
}

/// Writes the records of `block_rows` block rows (about `estimate` bytes) as one file or a
/// directory of parts, then the `.mtd`.
fn write_files(
    path: &Path,
    parts: Option<usize>,
    (block_rows, estimate): (u64, u64),
    (classes, sync): ((&str, &str), [u8; 16]),
    records: &Records<'_>,
    mtd: impl FnOnce() -> serde_json::Value,
    progress: Option<&Progress>,
) -> Result<()> {
    let written = AtomicU64::new(0);
    let total = estimate.max(1);
    // One part's block rows into one SequenceFile.
    let write_part = |file: File, range: std::ops::Range<u64>| -> Result<()> {
        let out = BufWriter::with_capacity(1 << 20, file);
        let mut writer = seqfile::Writer::new(out, classes.0, classes.1, sync)?;
        for bi in range {
            for (key, value) in records(bi)? {
                writer.append(&key, &value)?;
                let done = written.fetch_add(value.len() as u64, Ordering::Relaxed);
                if let Some(report) = progress {
                    report(done + value.len() as u64, total.max(done + 1));
                }
            }
        }
        writer.finish()?;
        Ok(())
    };
    let parts =
        parts.or_else(|| (estimate > PART_BYTES).then(|| estimate.div_ceil(PART_BYTES) as usize));
    match parts {
        None => write_atomically(path, |file| write_part(file.try_clone()?, 0..block_rows))?,
        Some(parts) => replace_directory(path, is_part_directory, |dir| {
            let next = AtomicUsize::new(0);
            let workers = std::thread::available_parallelism()
                .map_or(1, usize::from)
                .min(parts);
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..workers)
                    .map(|_| {
                        scope.spawn(|| -> Result<()> {
                            loop {
                                let p = next.fetch_add(1, Ordering::Relaxed);
                                if p >= parts {
                                    return Ok(());
                                }
                                // Part p holds block rows [p B / n, (p + 1) B / n).
                                let share = |p: usize| {
                                    (u128::from(block_rows) * p as u128 / parts as u128) as u64
                                };
                                let file = File::create(dir.join(format!("part-{p:05}")))?;
                                write_part(file, share(p)..share(p + 1))?;
                            }
                        })
                    })
                    .collect();
                handles.into_iter().try_for_each(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::invalid("a writer thread panicked")))
                })
            })?;
            // Hadoop's mark of a finished job, which Spark writes too (readers skip it).
            File::create(dir.join("_SUCCESS"))?;
            Ok(())
        })?,
    }
    if let Some(report) = progress {
        let done = written.load(Ordering::Relaxed);
        report(done, done);
    }
    let text = serde_json::to_string_pretty(&mtd()).expect("JSON values serialize");
    write_atomically(metadata_path(path), |file| {
        Ok(std::io::Write::write_all(file, text.as_bytes())?)
    })
}

/// Whether an existing directory holds only what a Spark or SystemDS write leaves (part
/// files, `_SUCCESS`, checksums), so that a new write may replace it.
fn is_part_directory(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).all(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("part-") || name == "_SUCCESS" || name.ends_with(".crc")
        })
    })
}

/// A sync marker that depends only on the object's shape (Hadoop draws one at random; a
/// fixed one makes the output reproducible, and is known before the values are read).
fn sync_marker(rows: u64, cols: u64) -> [u8; 16] {
    let mut state = 0xcbf2_9ce4_8422_2325u64 ^ rows.rotate_left(17) ^ cols.rotate_left(41);
    let mut out = [0u8; 16];
    for chunk in out.chunks_exact_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_of_parts_are_replaced() {
        let dir = std::env::temp_dir().join(format!("sysds-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["part-00000", "_SUCCESS", ".part-00000.crc"] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        assert!(is_part_directory(&dir));
        std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
        assert!(!is_part_directory(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
