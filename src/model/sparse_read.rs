//! A spec sparse block read from a file straight into CSR arrays of any index type, on every
//! core. The rows' bytes are cut into runs of 1 MiB; each thread reads a run with a
//! positional read (into a buffer that stays in cache), finds where the run's rows start and
//! end from the previous run's end (one count per row, in file order, one thread at a time),
//! then decodes its rows into their places while the next thread finds its own. The rule of a
//! row is [`decode_sparse_row`]'s, as for every other sparse read.
//!
//! A Python `dbdf.load` of 1e7 entries spent its time decoding on one core into `usize`
//! indices, then narrowing them to scipy's `int32` in a second pass over fresh memory.

use crate::error::ErrorDetails;
use crate::wire::read_at::ReadAt;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::model::{CsrIndex, CsrParts};
use crate::threads::{on_every_core, workers};
use crate::wire::sparse_row::decode_sparse_row;
use crate::wire::values::{read_le, zeroed_vec};
use crate::wire::Element;

/// Bytes of rows a thread reads and decodes at a time (256 KiB and 512 KiB measured no
/// faster).
const RUN: u64 = 1 << 20;

/// Where a sparse block's rows are in a file, and what its head declares.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SparseBody {
    /// The file offset of the first row's count.
    pub(crate) at: u64,
    pub(crate) rows: u32,
    pub(crate) cols: u32,
    pub(crate) nnz: u64,
    /// The offset of the declared count, for its error.
    pub(crate) nnz_offset: u64,
}

impl SparseBody {
    fn len(&self, entry: u64) -> u64 {
        4 * u64::from(self.rows) + entry * self.nnz
    }
}

/// The rows found so far, in file order, and the outputs not yet handed to a thread.
struct Walk<'o, T, I> {
    /// The run whose rows are found next.
    next: usize,
    /// Body offset of the next row's count.
    pos: u64,
    row: u32,
    entries: u64,
    offsets: &'o mut [I],
    cols: &'o mut [I],
    values: &'o mut [T],
    failed: bool,
}

/// Rows of one run, with the outputs they fill.
struct Rows<'o, T, I> {
    first_row: u32,
    first_entry: u64,
    /// Body offsets of the first row's count and of the end of the last row.
    bytes: Range<u64>,
    offsets: &'o mut [I],
    cols: &'o mut [I],
    values: &'o mut [T],
}

/// Reads the sparse block `body` of `file` (its bytes known to be in the file, its value
/// type `T`'s, its entries and columns known to fit `I`) into CSR arrays.
///
/// # Errors
/// The first malformed row in file order, as the sequential decoder reports it
/// ([`crate::ErrorKind::SparseCountMismatch`], [`crate::ErrorKind::ColumnOutOfRange`], [`crate::ErrorKind::UnsortedColumns`]);
/// I/O errors; [`crate::ErrorKind::OutOfMemory`].
pub(crate) fn read_sparse_block_at<T: Element, I: CsrIndex>(
    file: &dyn ReadAt,
    body: SparseBody,
) -> Result<CsrParts<T, I>> {
    let entry = 4 + std::mem::size_of::<T>() as u64;
    let len = body.len(entry);
    let nnz = usize::try_from(body.nnz).map_err(|_| {
        Error::from(ErrorDetails::OutOfMemory {
            bytes: u128::from(body.nnz),
        })
    })?;
    let mut row_offsets: Vec<I> = zeroed_vec(body.rows as usize + 1)?;
    let mut col_indices: Vec<I> = zeroed_vec(nnz)?;
    let mut values: Vec<T> = zeroed_vec(nnz)?;
    // Every entry is written, by runs decoded on every core: faulted in on every core first.
    crate::pages::fault_in_on_every_core(&mut col_indices);
    crate::pages::fault_in_on_every_core(&mut values);
    let runs = len.div_ceil(RUN) as usize;
    let walk = Mutex::new(Walk {
        next: 0,
        pos: 0,
        row: 0,
        entries: 0,
        offsets: &mut row_offsets[1..],
        cols: &mut col_indices,
        values: &mut values,
        failed: false,
    });
    let turn = Condvar::new();
    let claimed = AtomicUsize::new(0);
    let threads = workers().min(runs).max(1);
    let errors = on_every_core(0..threads, |_| {
        let mut window = Window::new(file, body.at, len);
        loop {
            let run = claimed.fetch_add(1, Ordering::Relaxed);
            if run >= runs {
                return None;
            }
            if let Err(e) = run_once(run, &mut window, &walk, &turn, body, entry) {
                let mut w = walk.lock().unwrap_or_else(|p| p.into_inner());
                w.failed = true;
                turn.notify_all();
                return e;
            }
        }
    });
    // The first error in the file: runs are decoded out of order.
    if let Some(e) = errors.into_iter().flatten().min_by_key(|e| e.offset()) {
        return Err(e);
    }
    let counted = walk.into_inner().unwrap_or_else(|p| p.into_inner()).entries;
    if counted != body.nnz {
        return Err(ErrorDetails::SparseCountMismatch {
            offset: body.nnz_offset,
            declared: body.nnz,
            counted,
        }
        .into());
    }
    Ok(CsrParts {
        row_offsets,
        col_indices,
        values,
    })
}

/// Reads run `run`, waits for its turn to find its rows, then decodes them. `Err(None)` when
/// another thread failed first.
fn run_once<T: Element, I: CsrIndex>(
    run: usize,
    window: &mut Window<'_>,
    walk: &Mutex<Walk<'_, T, I>>,
    turn: &Condvar,
    body: SparseBody,
    entry: u64,
) -> std::result::Result<(), Option<Error>> {
    let from = run as u64 * RUN;
    let to = (from + RUN).min(window.len);
    let read = window.fill(from..to, to);
    let mut w = walk.lock().unwrap_or_else(|p| p.into_inner());
    while w.next != run && !w.failed {
        w = turn.wait(w).unwrap_or_else(|p| p.into_inner());
    }
    if w.failed {
        return Err(None);
    }
    read.map_err(Some)?;
    let (rows, fault) = find_rows(&mut w, window, to, body, entry);
    match fault {
        // The rows before the fault may hold an earlier one: decoded all the same.
        Some(_) => w.failed = true,
        None => w.next += 1,
    }
    turn.notify_all();
    drop(w);
    decode_rows(rows, window, body, entry).map_err(Some)?;
    fault.map_or(Ok(()), |e| Err(Some(e)))
}

/// Finds the rows that start before `to` (one count each), hands out their outputs, and
/// moves the walk past them; stops at a count that cannot be, with the rows before it.
fn find_rows<'o, T, I>(
    w: &mut Walk<'o, T, I>,
    window: &Window<'_>,
    to: u64,
    body: SparseBody,
    entry: u64,
) -> (Rows<'o, T, I>, Option<Error>) {
    let (first_row, first_entry, start) = (w.row, w.entries, w.pos);
    let (mut pos, mut row, mut entries) = (start, first_row, first_entry);
    let mut fault = None;
    while pos < to && row < body.rows {
        let count = match window.count_at(pos) {
            Ok(count) => count,
            Err(e) => {
                fault = Some(e);
                break;
            }
        };
        if entries + u64::from(count) > body.nnz {
            fault = Some(Error::from(ErrorDetails::SparseCountMismatch {
                offset: body.at + pos,
                declared: body.nnz,
                counted: entries + u64::from(count),
            }));
            break;
        }
        entries += u64::from(count);
        pos += 4 + u64::from(count) * entry;
        row += 1;
    }
    let n_rows = (row - first_row) as usize;
    let n_entries = (entries - first_entry) as usize;
    let (offsets, rest) = std::mem::take(&mut w.offsets).split_at_mut(n_rows);
    w.offsets = rest;
    let (cols, rest) = std::mem::take(&mut w.cols).split_at_mut(n_entries);
    w.cols = rest;
    let (values, rest) = std::mem::take(&mut w.values).split_at_mut(n_entries);
    w.values = rest;
    (w.pos, w.row, w.entries) = (pos, row, entries);
    let rows = Rows {
        first_row,
        first_entry,
        bytes: start..pos,
        offsets,
        cols,
        values,
    };
    (rows, fault)
}

/// Decodes `rows` into their outputs: from the buffer, the bytes past the run (the last
/// row's end) read onto it; a row of over a run's bytes in pieces, as they are read.
fn decode_rows<T: Element, I: CsrIndex>(
    rows: Rows<'_, T, I>,
    window: &mut Window<'_>,
    body: SparseBody,
    entry: u64,
) -> Result<()> {
    let (start, end) = (rows.bytes.start, rows.bytes.end);
    if end - start <= 2 * RUN {
        // From one slice: measured faster than the general loop below, which asks the
        // window for each row.
        let bytes = window.extended(start..end)?;
        return decode_held(bytes, rows, body);
    }
    let piece = (RUN / entry).max(1) * entry;
    let (mut pos, mut done) = (start, 0usize);
    for (r, offset) in rows.offsets.iter_mut().enumerate() {
        let row = rows.first_row + r as u32;
        if pos + 4 > end {
            return Err(changed(body.at + pos));
        }
        let count = read_le::<u32>(window.get(pos..pos + 4, end)?) as usize;
        let row_end = pos + 4 + count as u64 * entry;
        if row_end > end || done + count > rows.cols.len() {
            return Err(changed(body.at + pos));
        }
        let (mut at, mut previous) = (pos + 4, -1);
        while at < row_end {
            let to = row_end.min(at + piece);
            let n = ((to - at) / entry) as usize;
            previous = decode_sparse_row(
                window.get(at..to, end)?,
                body.at + at,
                row,
                body.cols,
                previous,
                &mut rows.cols[done..done + n],
                &mut rows.values[done..done + n],
                |c| I::from_usize_unchecked(c as usize),
            )?;
            (at, done) = (to, done + n);
        }
        *offset = I::from_usize_unchecked(rows.first_entry as usize + done);
        pos = row_end;
    }
    match done == rows.cols.len() {
        true => Ok(()),
        false => Err(changed(body.at + pos)),
    }
}

/// [`decode_rows`] for rows whose bytes are all in `bytes`.
fn decode_held<T: Element, I: CsrIndex>(
    bytes: &[u8],
    rows: Rows<'_, T, I>,
    body: SparseBody,
) -> Result<()> {
    let entry = 4 + std::mem::size_of::<T>();
    let (mut pos, mut done) = (0usize, 0usize);
    let at = |pos: usize| body.at + rows.bytes.start + pos as u64;
    for (r, offset) in rows.offsets.iter_mut().enumerate() {
        let fits = |count: usize| pos + 4 + count * entry <= bytes.len();
        let count = match fits(0) {
            true => read_le::<u32>(&bytes[pos..]) as usize,
            false => return Err(changed(at(pos))),
        };
        if !fits(count) || done + count > rows.cols.len() {
            return Err(changed(at(pos)));
        }
        let pairs = &bytes[pos + 4..pos + 4 + count * entry];
        decode_sparse_row(
            pairs,
            at(pos + 4),
            rows.first_row + r as u32,
            body.cols,
            -1,
            &mut rows.cols[done..done + count],
            &mut rows.values[done..done + count],
            |c| I::from_usize_unchecked(c as usize),
        )?;
        done += count;
        *offset = I::from_usize_unchecked(rows.first_entry as usize + done);
        pos += 4 + count * entry;
    }
    match done == rows.cols.len() && pos == bytes.len() {
        true => Ok(()),
        false => Err(changed(at(pos))),
    }
}

/// The rows read differ from the rows found a moment earlier: another process is writing
/// the file. Never a slice past the bytes read.
#[cold]
fn changed(offset: u64) -> Error {
    Error::from(ErrorDetails::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("the file changed while it was read (its rows at byte {offset} differ)"),
    )))
}

/// A thread's buffer of the rows' bytes, refilled with positional reads.
struct Window<'f> {
    file: &'f dyn ReadAt,
    /// File offset of the rows' first byte, and their length.
    at: u64,
    len: u64,
    buf: Vec<u8>,
    /// Body offsets `buf` holds.
    held: Range<u64>,
}

impl<'f> Window<'f> {
    fn new(file: &'f dyn ReadAt, at: u64, len: u64) -> Self {
        Window {
            file,
            at,
            len,
            buf: Vec::new(),
            held: 0..0,
        }
    }

    /// Reads `range` and on, up to `until` (at most a run's worth more).
    fn fill(&mut self, range: Range<u64>, until: u64) -> Result<()> {
        let end = until
            .max(range.end)
            .min(range.start + RUN.max(range.end - range.start));
        let end = end.min(self.len);
        self.buf.resize((end - range.start) as usize, 0);
        self.held = range.start..range.start;
        self.file
            .read_exact_at(&mut self.buf, self.at + range.start)?;
        self.held = range.start..end;
        Ok(())
    }

    /// The bytes of `range` (within a run's length), read anew (up to `until`) when not held.
    fn get(&mut self, range: Range<u64>, until: u64) -> Result<&[u8]> {
        if range.start < self.held.start || range.end > self.held.end {
            self.fill(range.clone(), until)?;
        }
        let from = (range.start - self.held.start) as usize;
        Ok(&self.buf[from..from + (range.end - range.start) as usize])
    }

    /// The bytes of `range`, which starts in what is held: what is missing at its end is
    /// read onto the buffer.
    fn extended(&mut self, range: Range<u64>) -> Result<&[u8]> {
        if range.start < self.held.start || range.start > self.held.end {
            self.fill(range.clone(), range.end)?;
        } else if range.end > self.held.end {
            let have = self.buf.len();
            self.buf
                .resize(have + (range.end - self.held.end) as usize, 0);
            self.file
                .read_exact_at(&mut self.buf[have..], self.at + self.held.end)?;
            self.held.end = range.end;
        }
        let from = (range.start - self.held.start) as usize;
        Ok(&self.buf[from..from + (range.end - range.start) as usize])
    }

    /// The row count at `pos`, which may straddle the end of what is held.
    #[inline]
    fn count_at(&self, pos: u64) -> Result<u32> {
        if pos >= self.held.start && pos + 4 <= self.held.end {
            let from = (pos - self.held.start) as usize;
            return Ok(read_le(&self.buf[from..from + 4]));
        }
        let mut bytes = [0u8; 4];
        self.file.read_exact_at(&mut bytes, self.at + pos)?;
        Ok(u32::from_le_bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows found with one count and read again with another (the file rewritten between the
    /// two reads): an error, never a slice past the bytes or the outputs.
    #[test]
    fn rows_that_change_between_the_two_reads_are_an_error() {
        let path =
            std::env::temp_dir().join(format!("serde_daphne_changed_{}", std::process::id()));
        // One row found holding one entry of (u32 column, f64): 16 bytes. Its count now says
        // 2 (more than the bytes and the outputs), then 0 (fewer than found).
        let entry = |c: u32, x: f64| [c.to_le_bytes().to_vec(), x.to_le_bytes().to_vec()].concat();
        let cases = [
            [2u32.to_le_bytes().to_vec(), entry(0, 1.0)].concat(),
            [0u32.to_le_bytes().to_vec(), entry(0, 1.0)].concat(),
        ];
        for bytes in cases {
            std::fs::write(&path, &bytes).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            let body = SparseBody {
                at: 0,
                rows: 1,
                cols: 4,
                nnz: 1,
                nnz_offset: 0,
            };
            let (mut offsets, mut cols, mut values) = ([0i32; 1], [0i32; 1], [0f64; 1]);
            let rows = Rows {
                first_row: 0,
                first_entry: 0,
                bytes: 0..16,
                offsets: &mut offsets,
                cols: &mut cols,
                values: &mut values,
            };
            let mut window = Window::new(&file, 0, 16);
            let e = decode_rows(rows, &mut window, body, 12).unwrap_err();
            assert!(e.to_string().contains("changed while it was read"), "{e}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
