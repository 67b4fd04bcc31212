//! MatrixMarket coordinate entries into CSR arrays, in two passes over the file on every core
//! (`passes.rs`): each thread reads its own run of whole lines, in chunks of a few MiB
//! (`chunks.rs`), and parses them (`entries.rs`).
//!
//! The first pass counts the entries of each fine band of rows (the counters stay in a core's
//! cache). The second (one per group of rows, where the source
//! reads groups: `csr_source.rs`) parses every entry into its band's part of the arrays,
//! each thread into parts of its own; then each band, a few thousand entries, is ordered into
//! CSR in a core's cache (`bands.rs`). No step depends on the order of the entries in the
//! file. Peak: the CSR arrays, 2 bytes an entry (its row within its band) and 8 bytes a row.
//! (Placing each entry at its row's cursor in the final arrays, the earlier way, sent every
//! entry to a random place in them and kept 24 bytes a row; a file in random order read
//! 1.7 times slower than a column-sorted one.)
//!
//! Own code rather than a crate: no maintained crate parses MatrixMarket into CSR in place;
//! `fast-float2` does the values (exact, as the standard library's parse, a quarter of the
//! CPU time less over a file of `%.17g` values), a byte loop the indices.

use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::bands::{order_bands, BandArrays, Cell, Plan};
use super::chunks::{split_runs, Chunks};
use super::entries::{entry_indices, MtxHeader, Symmetry};
use super::passes::{count_bands, Counted, Part, PlacePass, RunFound};
use super::Duplicates;
use crate::driver::SUM_HINT;
use serde_daphne::lowlevel::workers;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::lowlevel::Progress;
use serde_daphne::{Object, ReadAt, ValueType, Values};

/// The CSR arrays a coordinate file makes: row offsets, each entry's column and value.
pub(crate) struct CsrArrays {
    pub(crate) rows: u64,
    pub(crate) cols: u64,
    pub(crate) offsets: Vec<usize>,
    pub(crate) columns: Vec<u32>,
    pub(crate) values: Values,
}

/// Reads the entries of a coordinate file whose data starts at byte `data_at` (line
/// `first_line`) and builds the CSR matrix, in two passes over the file (see the module's
/// description).
///
/// # Errors
/// A message naming the line and what is wrong.
pub fn read(file: &CoordinateFile, progress: Option<&Progress>) -> Result<Object, String> {
    let counted = count(file.data, file.data_at, file.layout)?;
    let plan = Plan::new(&counted, u64::MAX);
    let (a, _) = file.place_group(&counted, &plan, 0, progress)?;
    let columns = a.columns.iter().map(|&c| c as usize).collect();
    Object::csr(a.rows, a.cols, a.offsets, columns, a.values).map_err(|e| e.to_string())
}

/// The first pass: the entries of each fine band of rows, in each thread's run of lines.
/// Every counted entry is a line of the file (or its mirror), so arrays of that size are no
/// larger than the file justifies.
///
/// # Errors
/// A matrix too large for one CSR block; I/O errors.
pub(crate) fn count(
    data: &Arc<dyn ReadAt>,
    data_at: u64,
    layout: &MtxHeader,
) -> Result<Counted, String> {
    if layout.rows > u64::from(u32::MAX) || layout.cols > u64::from(u32::MAX) {
        return Err(format!(
            "a {} x {} matrix does not fit one CSR block (at most {} rows and columns)",
            layout.rows,
            layout.cols,
            u32::MAX
        ));
    }
    let len = data.size().map_err(|e| e.to_string())?;
    let runs = split_runs(data, (data_at, len), workers() as u64)?;
    count_bands(data, runs, layout)
}

/// A coordinate file's entries: where they start, its header, and what to do with a cell
/// given twice.
#[derive(Clone, Copy)]
pub(crate) struct CoordinateFile<'f> {
    pub(crate) data: &'f Arc<dyn ReadAt>,
    pub(crate) data_at: u64,
    pub(crate) first_line: usize,
    pub(crate) layout: &'f MtxHeader,
    pub(crate) duplicates: Duplicates,
}

impl CoordinateFile<'_> {
    /// The second pass for group `g` of `plan`: every line parsed and checked, the entries
    /// of the group's rows placed in CSR arrays of their own (offsets from 0); and how many
    /// values of the whole file are not zero, where that is known (duplicates summed in a
    /// file read in several groups leave it to the pipe).
    ///
    /// # Errors
    /// As [`read`].
    pub(crate) fn place_group(
        &self,
        counted: &Counted,
        plan: &Plan,
        g: usize,
        progress: Option<&Progress>,
    ) -> Result<(CsrArrays, Option<u64>), String> {
        let CoordinateFile {
            data,
            data_at,
            first_line,
            layout,
            duplicates,
        } = *self;
        let bands = plan.groups[g].clone();
        let rows = plan.rows(&bands, counted.shift, layout.rows);
        let fine = (plan.band_fine[bands.start], plan.band_fine[bands.end]);
        // Each band's entries of each run, run after run (so in file order).
        let threads = counted.runs.len();
        let sizes: Vec<Vec<usize>> = bands
            .clone()
            .map(|b| {
                let fines = plan.band_fine[b]..plan.band_fine[b + 1];
                (counted.counts.iter())
                    .map(|c| fines.clone().map(|f| c[f] as usize).sum())
                    .collect()
            })
            .collect();
        let total: usize = sizes.iter().flatten().sum();
        let spans: Vec<Range<u64>> = (bands.clone())
            .map(|b| plan.rows(&(b..b + 1), counted.shift, layout.rows))
            .collect();
        let mut band_rows = zeroed_vec::<u16>(total).map_err(|e| e.to_string())?;
        let mut cols = zeroed_vec::<u32>(total).map_err(|e| e.to_string())?;
        let mut values = zeroed_vec::<u64>(total).map_err(|e| e.to_string())?;
        let found = {
            let mut parts: Vec<Vec<Part>> = (0..threads).map(|_| Vec::new()).collect();
            let (mut r_rest, mut c_rest, mut v_rest) =
                (&mut band_rows[..], &mut cols[..], &mut values[..]);
            for (span, sizes) in spans.iter().zip(&sizes) {
                for (t, &n) in sizes.iter().enumerate() {
                    let (r, r_next) = std::mem::take(&mut r_rest).split_at_mut(n);
                    let (c, c_next) = std::mem::take(&mut c_rest).split_at_mut(n);
                    let (v, v_next) = std::mem::take(&mut v_rest).split_at_mut(n);
                    (r_rest, c_rest, v_rest) = (r_next, c_next, v_next);
                    parts[t].push(Part {
                        rows: r,
                        cols: c,
                        values: v,
                        first_row: span.start,
                        filled: 0,
                    });
                }
            }
            let band_of: Vec<u32> = (plan.band_of.iter())
                .map(|&b| b.wrapping_sub(bands.start as u32))
                .collect();
            let len = data.size().map_err(|e| e.to_string())?;
            let done = AtomicU64::new(0);
            let pass = PlacePass {
                data,
                layout,
                shift: counted.shift,
                fine,
                band_of: &band_of,
                done: &done,
                total: len - data_at,
                progress,
            };
            let results: Vec<Result<RunFound, String>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (parts.iter_mut().zip(&counted.runs))
                    .map(|(parts, &run)| {
                        let pass = &pass;
                        scope.spawn(move || {
                            let found = pass.run(run, parts);
                            // A part not full: the file changed since it was counted.
                            found.map(|mut f| {
                                f.overflow |= parts.iter().any(|p| p.filled != p.cols.len());
                                f
                            })
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("the parser does not panic"))
                    .collect()
            });
            results
        };
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
        for found in found {
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
        if listed != layout.entries {
            return Err(format!(
                "line {}: declares {} entries but {listed} follow",
                first_line - 1,
                layout.entries
            ));
        }
        if overflow {
            return Err("the file changed while it was read".to_string());
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
        // Each band into CSR, on every core: each row's count lands at its offset's place.
        let nrows = (rows.end - rows.start) as usize;
        let mut offsets = zeroed_vec::<usize>(nrows + 1).map_err(|e| e.to_string())?;
        let mut starts = Vec::with_capacity(bands.len());
        let kept = {
            let mut arrays = Vec::with_capacity(bands.len());
            let (mut r_rest, mut c_rest, mut v_rest, mut o_rest) = (
                &band_rows[..],
                &mut cols[..],
                &mut values[..],
                &mut offsets[1..],
            );
            let mut at = 0;
            for (span, sizes) in spans.iter().zip(&sizes) {
                let n = sizes.iter().sum::<usize>();
                let (r, r_next) = r_rest.split_at(n);
                let (c, c_next) = std::mem::take(&mut c_rest).split_at_mut(n);
                let (v, v_next) = std::mem::take(&mut v_rest).split_at_mut(n);
                let (o, o_next) =
                    std::mem::take(&mut o_rest).split_at_mut((span.end - span.start) as usize);
                (r_rest, c_rest, v_rest, o_rest) = (r_next, c_next, v_next, o_next);
                arrays.push(BandArrays {
                    rows: r,
                    cols: c,
                    values: v,
                    counts: o,
                });
                starts.push(at);
                at += n;
            }
            order_bands(arrays, workers(), duplicates, value_type)
        };
        drop(band_rows);
        let kept = kept.map_err(|(b, cell)| {
            let (r, c, summed) = match cell {
                Cell::Twice(r, c) => (r, c, false),
                Cell::SumOverflows(r, c) => (r, c, true),
            };
            let (r, c) = (spans[b].start as usize + r, c as usize);
            let n = duplicate_line(data, data_at, first_line, layout, r, c);
            match summed {
                false => format!(
                    "line {n}: duplicate entry ({}, {}); {SUM_HINT}",
                    r + 1,
                    c + 1
                ),
                true => format!(
                    "line {n}: the entries of ({}, {}) sum beyond {value_type}",
                    r + 1,
                    c + 1
                ),
            }
        })?;
        // Summed duplicates leave gaps at the bands' ends: closed, in order.
        let mut end = 0;
        for (&start, &n) in starts.iter().zip(&kept) {
            if start != end {
                cols.copy_within(start..start + n, end);
                values.copy_within(start..start + n, end);
            }
            end += n;
        }
        cols.truncate(end);
        values.truncate(end);
        for r in 0..nrows {
            offsets[r + 1] += offsets[r];
        }
        let nonzero = match duplicates {
            Duplicates::Refuse => Some(nonzero),
            Duplicates::Sum if plan.groups.len() == 1 => {
                Some(crate::input::count_nonzero(&values) as u64)
            }
            Duplicates::Sum => None,
        };
        let arrays = CsrArrays {
            rows: nrows as u64,
            cols: layout.cols,
            offsets,
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
