//! MatrixMarket coordinate entries into CSR arrays, in two passes over the file on every core
//! (`passes.rs`): each thread reads its own run of whole lines, in chunks of a few MiB
//! (`chunks.rs`), and parses them (`entries.rs`).
//!
//! Memory: the file is never held. The first pass counts each row's entries (a `u32` per row
//! per thread), which gives the CSR row offsets; in the second (one per group of rows, where
//! the source reads groups: `csr_source.rs`) the threads take turns: each
//! parses a chunk of its run, then each places the entries of its half of the rows from every
//! thread's chunk at their rows' cursors in the final arrays (so each writes its own part of
//! them, sharing no cache line); then each row is sorted by column. Peak: the CSR arrays,
//! plus about 16 bytes per row and the chunks' entries. (Sorting entries kept in file order
//! in place, the earlier way, took as much memory and a third more time; every thread placing
//! into every row shared cache lines and was slower still.)
//!
//! Own code rather than a crate: no maintained crate parses MatrixMarket into CSR in place;
//! `str::parse` (exact, Eisel-Lemire) does the numbers, a byte loop the indices.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Barrier, RwLock};

use super::chunks::{split_runs, Chunks};
use super::entries::{entry_indices, ColIndex, MtxHeader, Parsed, Symmetry};
use super::passes::{count_rows, Lockstep, RunFound};
use serde_daphne::lowlevel::workers;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::lowlevel::Progress;
use serde_daphne::{Object, ReadAt, ValueType, Values};

/// The CSR arrays a coordinate file makes: row offsets, each entry's column and value.
pub(crate) struct CsrArrays<I> {
    pub(crate) rows: u64,
    pub(crate) cols: u64,
    pub(crate) offsets: Vec<usize>,
    pub(crate) columns: Vec<I>,
    pub(crate) values: Values,
}

/// Reads the entries of a coordinate file whose data starts at byte `data_at` (line
/// `first_line`) and builds the CSR matrix, in two passes over the file (see the module's
/// description): each row's entries counted, then parsed into their places in the CSR
/// arrays.
///
/// # Errors
/// A message naming the line and what is wrong.
pub fn read(
    data: &Arc<dyn ReadAt>,
    data_at: u64,
    first_line: usize,
    layout: &MtxHeader,
    progress: Option<&Progress>,
) -> Result<Object, String> {
    let a = read_arrays::<usize>(data, data_at, first_line, layout, progress)?;
    Object::csr(a.rows, a.cols, a.offsets, a.columns, a.values).map_err(|e| e.to_string())
}

/// [`read`]'s CSR arrays, columns as `I`.
///
/// # Errors
/// As [`read`].
fn read_arrays<I: ColIndex>(
    data: &Arc<dyn ReadAt>,
    data_at: u64,
    first_line: usize,
    layout: &MtxHeader,
    progress: Option<&Progress>,
) -> Result<CsrArrays<I>, String> {
    let offsets = count(data, data_at, layout)?;
    let file = CoordinateFile {
        data,
        data_at,
        first_line,
        layout,
    };
    let all = 0..layout.rows as usize;
    Ok(file.place_rows(&offsets, all, progress)?.0)
}

/// The first pass: the CSR row offsets of every row (each row's entries counted). Every
/// counted entry is a line of the file (or its mirror), so arrays of that size are no larger
/// than the file justifies.
///
/// # Errors
/// A matrix too large for one CSR block; I/O errors.
pub(crate) fn count(
    data: &Arc<dyn ReadAt>,
    data_at: u64,
    layout: &MtxHeader,
) -> Result<Vec<usize>, String> {
    if layout.rows > u64::from(u32::MAX) || layout.cols > u64::from(u32::MAX) {
        return Err(format!(
            "a {} x {} matrix does not fit one CSR block (at most {} rows and columns)",
            layout.rows,
            layout.cols,
            u32::MAX
        ));
    }
    let len = data.size().map_err(|e| e.to_string())?;
    count_rows(data, (data_at, len), layout)
}

/// A coordinate file's entries: where they start, and its header.
#[derive(Clone, Copy)]
pub(crate) struct CoordinateFile<'f> {
    pub(crate) data: &'f Arc<dyn ReadAt>,
    pub(crate) data_at: u64,
    pub(crate) first_line: usize,
    pub(crate) layout: &'f MtxHeader,
}

impl CoordinateFile<'_> {
    /// The second pass for rows `rows` (the first pass's `offsets` say where each row's
    /// entries go): every line parsed and checked, the entries of those rows placed in CSR
    /// arrays of their own (offsets from 0), each row sorted by column; and how many values
    /// of the whole file are not zero.
    ///
    /// # Errors
    /// As [`read`].
    pub(crate) fn place_rows<I: ColIndex>(
        &self,
        offsets: &[usize],
        rows: Range<usize>,
        progress: Option<&Progress>,
    ) -> Result<(CsrArrays<I>, u64), String> {
        let CoordinateFile {
            data,
            data_at,
            first_line,
            layout,
        } = *self;
        let len = data.size().map_err(|e| e.to_string())?;
        let (first, nrows) = (rows.start, rows.end - rows.start);
        let base = offsets[first];
        let total = offsets[rows.end] - base;
        // Zeroed fresh pages, advised huge: the entries land all over them.
        let mut cols = zeroed_vec::<I>(total).map_err(|e| e.to_string())?;
        let mut values = zeroed_vec::<u64>(total).map_err(|e| e.to_string())?;
        let mut cursors = offsets[rows.clone()].to_vec();
        // Each thread parses chunks of its own run of lines, then (once both have) places the
        // entries of its share of the rows from both: the threads take turns in lockstep,
        // and each writes only its rows' part of the arrays.
        let runs = split_runs(data, (data_at, len), workers() as u64)?;
        let workers = runs.len();
        let bounds: Vec<usize> = (0..=workers).map(|t| first + nrows * t / workers).collect();
        let mut parts = Vec::with_capacity(workers);
        let (mut cols_rest, mut values_rest, mut cursors_rest) =
            (&mut cols[..], &mut values[..], &mut cursors[..]);
        for t in 0..workers {
            let (rows, slots) = (
                bounds[t + 1] - bounds[t],
                offsets[bounds[t + 1]] - offsets[bounds[t]],
            );
            let (c, c_rest) = std::mem::take(&mut cols_rest).split_at_mut(slots);
            let (v, v_rest) = std::mem::take(&mut values_rest).split_at_mut(slots);
            let (k, k_rest) = std::mem::take(&mut cursors_rest).split_at_mut(rows);
            (cols_rest, values_rest, cursors_rest) = (c_rest, v_rest, k_rest);
            parts.push((c, v, k));
        }
        let lockstep = Lockstep {
            data,
            layout,
            offsets,
            buffers: runs
                .iter()
                .map(|_| RwLock::new(Parsed::default()))
                .collect(),
            barrier: Barrier::new(workers),
            stop: AtomicBool::new(false),
            finished: runs.iter().map(|_| AtomicBool::new(false)).collect(),
            done: AtomicU64::new(0),
            total: len - data_at,
            progress,
        };
        let results: Vec<Result<RunFound, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .into_iter()
                .enumerate()
                .map(|(t, arrays)| {
                    let (lockstep, run) = (&lockstep, runs[t]);
                    let rows = (bounds[t], bounds[t + 1]);
                    scope.spawn(move || lockstep.run(t, run, arrays, rows))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("the parser does not panic"))
                .collect()
        });
        // Workers give file offsets; lines count from the data's first.
        let line_of_byte = |at: usize| {
            line_at(
                data,
                data_at,
                at.saturating_sub(data_at as usize),
                first_line,
            )
        };
        let (mut listed, mut nonzero, mut negative, mut beyond_i64, mut overflow) =
            (0u64, 0u64, None, None, false);
        for found in results {
            let found = found?;
            // The runs are in file order: the first error is the first run's.
            if let Some((at, message)) = found.error {
                return Err(format!("line {}: {message}", line_of_byte(at).unwrap_or(0)));
            }
            listed += found.listed;
            nonzero += found.nonzero;
            negative = negative.or(found.negative);
            beyond_i64 = beyond_i64.or(found.beyond_i64);
            overflow |= found.overflow;
        }
        let changed = || "the file changed while it was read".to_string();
        if listed != layout.entries {
            return Err(format!(
                "line {}: declares {} entries but {listed} follow",
                first_line - 1,
                layout.entries
            ));
        }
        if overflow
            || cursors
                .iter()
                .zip(&offsets[first + 1..])
                .any(|(c, end)| c != end)
        {
            return Err(changed());
        }
        let value_type = match (negative, beyond_i64) {
            (Some((neg, x)), Some(big)) if layout.value_type == ValueType::I64 => {
                let line = |at| line_of_byte(at).unwrap_or(0);
                return Err(format!(
                    "line {}: the negative {x} and line {}'s integer above i64::MAX share no value type",
                    line(neg),
                    line(big)
                ));
            }
            (_, Some(_)) if layout.value_type == ValueType::I64 => ValueType::U64,
            _ => layout.value_type,
        };
        // Each row by column, on two threads.
        let local: Vec<usize> = offsets[first..=rows.end].iter().map(|o| o - base).collect();
        let mid = nrows / 2;
        let (cols_low, cols_high) = cols.split_at_mut(local[mid]);
        let (values_low, values_high) = values.split_at_mut(local[mid]);
        let (dup_low, dup_high) = std::thread::scope(|scope| {
            let high = scope.spawn(|| {
                sort_rows(cols_high, values_high, &local[mid..], local[mid])
                    .map(|(r, c)| (mid + r, c))
            });
            let low = sort_rows(cols_low, values_low, &local[..=mid], 0);
            (low, high.join().expect("sorting does not panic"))
        });
        if let Some((r, c)) = dup_low.or(dup_high) {
            let r = first + r;
            let n = duplicate_line(data, data_at, first_line, layout, r, c);
            return Err(format!("line {n}: duplicate entry ({}, {})", r + 1, c + 1));
        }
        let arrays = CsrArrays {
            rows: nrows as u64,
            cols: layout.cols,
            offsets: local,
            columns: cols,
            values: typed(values, value_type),
        };
        Ok((arrays, nonzero))
    }
}

/// The line holding byte `at` of the data (read again a chunk at a time: for errors only).
fn line_at(data: &Arc<dyn ReadAt>, data_at: u64, at: usize, first_line: usize) -> Option<usize> {
    let mut chunks = Chunks::open(data, (data_at, u64::MAX), 1 << 20).ok()?;
    let mut line = first_line;
    while let Some((text, start)) = chunks.next().ok()? {
        let upto = at.saturating_sub(start).min(text.len());
        line += memchr::memchr_iter(b'\n', &text[..upto]).count();
        if start + text.len() >= at {
            break;
        }
    }
    Some(line)
}

/// Sorts each row's entries by column (rows given by `offsets`, shifted by `base`); returns
/// the first cell given twice, as (row within `offsets`, column) from 0.
fn sort_rows<I: ColIndex>(
    cols: &mut [I],
    values: &mut [u64],
    offsets: &[usize],
    base: usize,
) -> Option<(usize, usize)> {
    let mut scratch: Vec<(I, u64)> = Vec::new();
    for (k, w) in offsets.windows(2).enumerate() {
        let (a, b) = (w[0] - base, w[1] - base);
        if cols[a..b].windows(2).all(|p| p[0] < p[1]) {
            continue;
        }
        scratch.clear();
        scratch.extend(cols[a..b].iter().copied().zip(values[a..b].iter().copied()));
        scratch.sort_unstable_by_key(|&(c, _)| c);
        if let Some(p) = scratch.windows(2).find(|p| p[0].0 == p[1].0) {
            return Some((k, p[0].0.index()));
        }
        for (i, (c, v)) in scratch.iter().enumerate() {
            cols[a + i] = *c;
            values[a + i] = *v;
        }
    }
    None
}

/// The bits as values of their type (truncated to its width).
fn typed(bits: Vec<u64>, vt: ValueType) -> Values {
    match vt {
        ValueType::F64 => Values::F64(bytemuck::allocation::cast_vec(bits)),
        ValueType::U64 => Values::U64(bits),
        ValueType::I64 => Values::I64(bytemuck::allocation::cast_vec(bits)),
        ValueType::F32 => Values::F32(bits.iter().map(|&b| f32::from_bits(b as u32)).collect()),
        ValueType::U8 => Values::U8(bits.iter().map(|&b| b as u8).collect()),
        ValueType::U16 => Values::U16(bits.iter().map(|&b| b as u16).collect()),
        ValueType::U32 => Values::U32(bits.iter().map(|&b| b as u32).collect()),
        ValueType::I8 => Values::I8(bits.iter().map(|&b| b as i8).collect()),
        ValueType::I16 => Values::I16(bits.iter().map(|&b| b as i16).collect()),
        ValueType::I32 => Values::I32(bits.iter().map(|&b| b as i32).collect()),
    }
}

/// The line of the second entry at (`row`, `col`) (0-based), or of its mirror.
fn duplicate_line(
    data: &Arc<dyn ReadAt>,
    data_at: u64,
    first_line: usize,
    layout: &MtxHeader,
    row: usize,
    col: usize,
) -> usize {
    let Ok(mut chunks) = Chunks::open(data, (data_at, u64::MAX), 1 << 20) else {
        return 0;
    };
    let (mut line, mut seen) = (first_line, 0);
    while let Ok(Some((text, _))) = chunks.next() {
        for bytes in text.split_inclusive(|&b| b == b'\n') {
            let text = String::from_utf8_lossy(bytes);
            if let Ok(Some((r, c))) = entry_indices(&text, &mut 0, layout) {
                let (r, c) = (r as usize, c as usize);
                let mirrored = layout.symmetry != Symmetry::General && (c, r) == (row, col);
                if (r, c) == (row, col) || mirrored {
                    seen += 1;
                    if seen == 2 {
                        return line;
                    }
                }
            }
            line += 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use crate::mtx::read;

    /// Each worker reads its own half of the lines: the error named is still the first in
    /// the file, wherever the others are.
    #[test]
    fn the_first_malformed_line_is_named_whichever_worker_meets_it() {
        let dir =
            std::env::temp_dir().join(format!("serde_daphne_mtx_runs_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            // (malformed entries, from 1 of 8; the line the error names: entry k is line k + 2)
            (vec![2, 7], 4),
            (vec![7], 9),
            (vec![1], 3),
            (vec![8], 10),
            // The second worker's first chunk fails before the first worker's second.
            (vec![3, 6], 5),
        ];
        for (bad, named) in cases {
            let mut text = "%%MatrixMarket matrix coordinate real general\n4 4 8\n".to_string();
            for k in 1..=8 {
                let value = if bad.contains(&k) {
                    "x"
                } else {
                    "1.50000000000"
                };
                text.push_str(&format!(
                    "{} {} {value}\n",
                    (k - 1) % 4 + 1,
                    (k - 1) / 4 + 1
                ));
            }
            let path = dir.join("m.mtx");
            std::fs::write(&path, &text).unwrap();
            let message = read(&path).unwrap_err().to_string();
            assert!(
                message.contains(&format!("line {named}:")),
                "{bad:?}: {message}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
