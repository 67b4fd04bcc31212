//! Writing SystemDS binary blocks: matrices (every grid block, encoded as SystemDS encodes
//! it) and frames (blocks of rows), as one SequenceFile or as a directory of part files
//! written in parallel, each holding a contiguous range of block rows as Spark's writes
//! partition them, plus the `.mtd`.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use super::cells::{matrix_records, Cells, Emit, InOrderRows, SourceRows};
use super::names::{metadata_path, BLOCK_SIZE, FRAME_KEY, FRAME_VALUE, MATRIX_KEY, MATRIX_VALUE};
use super::{frame, seqfile};
use crate::pipe::{self, Band, Pieces, Sink};
use crate::storage::{FileOut, LocalFolder, OutputFiles};
use serde_daphne::lowlevel::FileSet;
use serde_daphne::DataType;
use serde_daphne::Header;
use serde_daphne::Object;
use serde_daphne::Values;
use serde_daphne::{Error, Result};

/// The bytes of output per part file when [`WriteOptions::parts`] is not given: HDFS's
/// block size, so that each part is one HDFS block and one Spark input split.
pub(crate) const PART_BYTES: u64 = 128 << 20;

/// How a SystemDS write blocks the object and splits it into files. Plain data, as every
/// format's options: set the fields that differ from [`WriteOptions::default`] (blocks of
/// 1000 x 1000, frames 1000 rows, SystemDS's default; one file for objects up to 128 MiB,
/// HDFS's block size, else a directory of one part per 128 MiB).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Square blocks of `size` x `size` (frames: blocks of `size` rows; 0 counts as 1).
    pub block_size: u32,
    /// A directory of `parts` part files (`part-00000`, ...; 0 counts as 1), as Spark writes
    /// them, each a contiguous range of block rows, written in parallel.
    pub parts: Option<usize>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            block_size: BLOCK_SIZE,
            parts: None,
        }
    }
}

/// Where the files go: at a path (the data and its `.mtd` as one [`FileSet`]), or into an
/// output's files (objects), which their caller puts in place.
#[derive(Clone, Copy)]
pub(super) enum Dest<'a> {
    Path(&'a Path),
    Files(&'a dyn OutputFiles),
}

/// A SequenceFile record: key bytes and value bytes.
/// Encodes one block row (of blocks, or a block of frame rows) and hands each record to the
/// emitter as it is made, with a buffer the writing thread reuses for values.
type Records<'a> = dyn Fn(u64, &mut Vec<u8>, &mut Emit<'_>) -> Result<()> + Sync + 'a;

/// `object` written whole to `dest`, its files and `.mtd`.
fn write_object(dest: Dest<'_>, object: &Object, options: &WriteOptions) -> Result<()> {
    let (rows, cols) = object.shape();
    let size = u64::from(options.block_size.max(1));
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
        let records = move |bi: u64, _: &mut Vec<u8>, emit: &mut Emit<'_>| {
            let (r0, r1) = (bi * size, ((bi + 1) * size).min(rows));
            let value = frame::encode_block(&columns, r0 as usize..r1 as usize)?;
            emit(&((r0 + 1) as i64).to_be_bytes(), &value)
        };
        let classes = (FRAME_KEY, FRAME_VALUE);
        return write_files(
            dest,
            (options.parts.map(|p| p.max(1)), false),
            (block_rows, rows * width),
            (classes, sync_marker(rows, cols)),
            &records,
            || mtd,
        );
    }
    write_matrix(dest, &Cells::of(object)?, (rows, cols), options)
}

/// SystemDS binary blocks (and the `.mtd`) on the pipe. A matrix from a source with cheap
/// windows (a local file) is written as a whole object is, each core encoding its
/// part's block rows from the rows it reads; from a source read in order (an object in a
/// store, a text file) its block rows are gathered and encoded one after another (dense
/// ones too wide to hold are spilled first); frames are held whole first.
pub struct SystemdsSink<'f> {
    output: PathBuf,
    files: Option<&'f dyn OutputFiles>,
    options: WriteOptions,
}

impl<'f> SystemdsSink<'f> {
    /// A sink writing to `output` with `options`.
    pub(crate) fn new(output: &Path, options: &WriteOptions) -> SystemdsSink<'f> {
        SystemdsSink {
            output: output.to_owned(),
            files: None,
            options: options.clone(),
        }
    }

    /// A sink writing into `files` (the object and the objects under its prefix) with
    /// `options`.
    pub(crate) fn into_files(files: &'f dyn OutputFiles, options: &WriteOptions) -> Self {
        SystemdsSink {
            files: Some(files),
            ..SystemdsSink::new(Path::new(""), options)
        }
    }

    fn dest(&self) -> Dest<'_> {
        match self.files {
            Some(files) => Dest::Files(files),
            None => Dest::Path(&self.output),
        }
    }
}

impl Sink for SystemdsSink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("a SystemDS matrix")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        if !header.data_type().is_matrix() {
            let (rows, cols) = header.shape();
            if rows == 0 || cols == 0 {
                // Its labels and types are in its blocks, each of rows of every column.
                return Err(Error::not_convertible(
                    format!("a {rows} x {cols} frame"),
                    "SystemDS",
                    "a frame's labels and types are in its blocks, and it has none",
                ));
            }
            return write_object(self.dest(), &pieces.collect()?, &self.options);
        }
        let dense = pieces.source_data_type() != DataType::CsrMatrix;
        let (rows, cols) = header.shape();
        // Dense block rows held whole, one at a time: where windows would fetch each block
        // row's rows once per block column (an object in a store) or there are none, and
        // a block row fits in HELD_BLOCK_ROW_BYTES.
        let block_rows = rows.min(u64::from(self.options.block_size.max(1)));
        let block_row_bytes = u128::from(block_rows) * u128::from(cols) * 8;
        let held = dense && block_row_bytes <= HELD_BLOCK_ROW_BYTES;
        if let Some(windows) = pieces
            .windows()
            .filter(|_| !(held && pieces.prefers_bands()))
        {
            let cells = Cells::Windows(SourceRows {
                windows: &windows,
                index: 0,
                dense,
                stored_bytes: pieces.stored_bytes(),
            });
            return write_matrix(self.dest(), &cells, header.shape(), &self.options);
        }
        if dense && !held {
            // Dense rows in order, block rows too wide to hold: spilled, then read a block
            // at a time on every core.
            let vt = header
                .matrix_value_type()
                .unwrap_or(serde_daphne::ValueType::F64);
            let spilled = pipe::Spilled::new(pieces, cols, vt)?;
            let cells = Cells::Windows(SourceRows {
                windows: &spilled,
                index: 0,
                dense: true,
                stored_bytes: None,
            });
            return write_matrix(self.dest(), &cells, (rows, cols), &self.options);
        }
        // Rows in order: read on a second thread, block rows encoded as they complete
        // (handed over, not queued: a band read ahead is all the bound allows).
        let (send, bands) = mpsc::sync_channel::<Band>(0);
        let cells = Cells::InOrder(Mutex::new(InOrderRows {
            bands,
            pending: None,
            stored_bytes: pieces.stored_bytes(),
        }));
        let (shape, options, dest) = ((rows, cols), &self.options, self.dest());
        std::thread::scope(|scope| {
            let reader = scope.spawn(move || {
                let read = pieces.for_each(&mut |band| {
                    send.send(band)
                        .map(|()| true)
                        .map_err(|_| Error::invalid("the SystemDS writer stopped"))
                });
                (read, pieces.source_failed())
            });
            let written = write_matrix(dest, &cells, shape, options);
            drop(cells); // the reader stops at its next band
            let (read, source_failed) = reader
                .join()
                .unwrap_or_else(|_| (Err(Error::invalid("a reader thread panicked")), false));
            // A failed read ends the rows early: its error is the one to give.
            match (written, read) {
                (Ok(()), read) => read,
                (Err(_), Err(read)) if source_failed => Err(read),
                (Err(written), _) => Err(written),
            }
        })
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Bytes of dense cells up to which a block row read in order is held whole to be encoded
/// (8192 columns in blocks of 1000 rows: 62.5 MiB).
const HELD_BLOCK_ROW_BYTES: u128 = 64 << 20;

/// Writes a matrix's cells as binary blocks, then the `.mtd` with the non-zeros counted on
/// the way.
fn write_matrix(
    dest: Dest<'_>,
    cells: &Cells<'_>,
    (rows, cols): (u64, u64),
    options: &WriteOptions,
) -> Result<()> {
    let size = u64::from(options.block_size.max(1));
    let nnz = AtomicU64::new(0);
    let estimate = cells.estimate((rows, cols));
    let records = |bi: u64, scratch: &mut Vec<u8>, emit: &mut Emit<'_>| {
        let stored = matrix_records(cells, (rows, cols), size, bi, scratch, emit)?;
        nnz.fetch_add(stored, Ordering::Relaxed);
        Ok(())
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
        dest,
        (
            options.parts.map(|p| p.max(1)),
            matches!(cells, Cells::InOrder(_)),
        ),
        (rows.div_ceil(size), estimate),
        ((MATRIX_KEY, MATRIX_VALUE), sync_marker(rows, cols)),
        &records,
        mtd,
    )
}

/// Writes the records of `block_rows` block rows (about `estimate` bytes) as one file or a
/// directory of parts (written in parallel, or one after another when `in_order`), then the
/// `.mtd`.
fn write_files(
    dest: Dest<'_>,
    (parts, in_order): (Option<usize>, bool),
    (block_rows, estimate): (u64, u64),
    (classes, sync): ((&str, &str), [u8; 16]),
    records: &Records<'_>,
    mtd: impl FnOnce() -> serde_json::Value,
) -> Result<()> {
    // One part's block rows into one SequenceFile.
    let write_part = |out: Box<dyn FileOut + '_>, range: std::ops::Range<u64>| -> Result<()> {
        let mut writer = seqfile::Writer::new(out, classes.0, classes.1, sync)?;
        let mut scratch = Vec::new();
        for bi in range {
            records(bi, &mut scratch, &mut |key, value| {
                writer.append(key, value)
            })?;
        }
        writer.finish()?.finish()
    };
    // By default no part without a block row (the estimate may run far over).
    let parts = parts.or_else(|| {
        (estimate > PART_BYTES).then(|| estimate.div_ceil(PART_BYTES).min(block_rows) as usize)
    });
    // The part files, on every core (one after another when `in_order`).
    let write_parts = |files: &dyn OutputFiles, parts: usize| -> Result<()> {
        let next = AtomicUsize::new(0);
        let workers = match in_order {
            true => 1,
            false => std::thread::available_parallelism().map_or(1, usize::from),
        }
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
                            let file = files.create(&format!("part-{p:05}"))?;
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
        files.put("_SUCCESS", b"")
    };
    // After the data: the matrix's non-zeros are counted on the way.
    let text = || serde_json::to_string_pretty(&mtd()).expect("JSON values serialize");
    let path = match dest {
        Dest::Files(files) => {
            match parts {
                None => write_part(files.whole()?, 0..block_rows)?,
                Some(parts) => write_parts(files, parts)?,
            }
            return files.sidecar(".mtd", text().into_bytes());
        }
        Dest::Path(path) => path,
    };
    // The data and its `.mtd` as one set: both or neither.
    let mut set = FileSet::new(true);
    match parts {
        None => set.file(path, |file| {
            let out = BufWriter::with_capacity(1 << 20, file.try_clone()?);
            write_part(Box::new(out), 0..block_rows)
        })?,
        Some(parts) => set.folder(path, is_part_directory, |dir| {
            write_parts(&LocalFolder(dir.to_owned()), parts)
        })?,
    }
    set.bytes(metadata_path(path), text().as_bytes())?;
    set.commit()
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
