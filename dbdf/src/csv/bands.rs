//! A CSV file read in bands of rows on every core, for [`super::to_dbdf`].
//!
//! The first pass checks every record as the whole read does and finds where each band of
//! rows starts (its byte and row). A file without quotes (and without a lone `\r`) is split at
//! line ends found with `memchr`, and its bands are checked on every core; a file with quotes
//! (where a line end may sit inside a field) is checked in one pass by one thread. The second
//! pass parses bands on every core from where they start, handing them over in row order.

use std::io::{BufReader, Read};
use std::sync::{mpsc, Arc};

use super::records::{Inference, Records, Start, CSV};
use serde_daphne::lowlevel::workers;
use serde_daphne::lowlevel::Meta;
use serde_daphne::lowlevel::Progress;
use serde_daphne::{ReadAt, Result, ValueType, Values};

use crate::storage::Stream;

/// Bytes of text each worker takes at a time in the second pass (tests: every band its own,
/// so that the workers take turns).
const UNIT_BYTES: u64 = if cfg!(test) { 1 } else { 4 << 20 };

/// Bytes read at a time when looking for line ends (tests: a few, so that lines, `\r\n`
/// pairs and blank lines straddle reads).
const CHUNK_BYTES: usize = if cfg!(test) { 5 } else { 8 << 20 };

/// Where a band of rows starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BandStart {
    pub byte: u64,
    pub row: u64,
}

/// Where records start, found from the line ends alone.
struct LineIndex {
    /// Each band's start.
    starts: Vec<BandStart>,
    /// Each worker's run's start, for checking.
    runs: Vec<BandStart>,
    rows: u64,
    end: u64,
}

/// What the first pass found.
pub(super) struct Plan {
    /// The header's labels, the width and the sidecar's types (no first record).
    pub start: Start,
    pub rows: u64,
    /// One per lane: per column of a frame, one for a matrix.
    pub types: Vec<ValueType>,
    /// Whether any value is stored as non-zero.
    pub nonzero: bool,
    /// Where each band of rows starts (bands of the rows `scan` was asked for).
    pub starts: Vec<BandStart>,
    /// Where the data ends (the file's length).
    pub end: u64,
}

impl Plan {
    pub(super) fn frame(&self) -> bool {
        self.start.labels.is_some()
    }

    /// The bytes of band `k`.
    fn span(&self, k: usize) -> (u64, u64) {
        let end = self.starts.get(k + 1).map_or(self.end, |s| s.byte);
        (self.starts[k].byte, end)
    }

    fn rows_in(&self, k: usize) -> u64 {
        let end = self.starts.get(k + 1).map_or(self.rows, |s| s.row);
        end - self.starts[k].row
    }
}

/// What checking some records found.
#[derive(Default)]
struct Checked {
    rows: u64,
    /// The first error, as the whole read words it (when checked from the file's start).
    error: Option<String>,
    /// Each lane's kinds of numbers (without a sidecar).
    kinds: Vec<Inference>,
    nonzero: bool,
}

impl Checked {
    /// Appends what the records after these found.
    fn merge(&mut self, other: Checked) {
        self.rows += other.rows;
        if self.error.is_none() {
            self.error = other.error;
        }
        for (mine, theirs) in self.kinds.iter_mut().zip(other.kinds) {
            mine.merge(theirs);
        }
        self.nonzero |= other.nonzero;
    }

    /// Whether the records hold anything the whole read refuses.
    fn failed(&self) -> bool {
        self.error.is_some() || self.kinds.iter().any(Inference::conflicts)
    }
}

/// A CSV file and its sidecar, read from where a band starts as often as asked.
pub(super) struct Source<'a> {
    pub data: &'a Arc<dyn ReadAt>,
    pub sidecar: Option<&'a Meta>,
    pub progress: Option<&'a Progress>,
}

impl Source<'_> {
    /// The bytes from `at` to `end`, read ahead when the input is remote.
    fn stream(&self, at: u64, end: u64) -> Result<BufReader<Stream>> {
        let capacity = (end - at).clamp(8 << 10, 1 << 20) as usize;
        let stream = Stream::new(Arc::clone(self.data), at..end)?;
        Ok(BufReader::with_capacity(capacity, stream))
    }

    /// The records from byte `at` to byte `end`.
    fn records_at(&self, at: u64, end: u64) -> Result<Records<impl Read>> {
        Ok(Records::new(self.stream(at, end)?))
    }

    /// The first pass. `band_rows` gives the rows per band for a width.
    pub(super) fn scan(&self, band_rows: impl Fn(&Start) -> u64) -> Result<Plan> {
        let end = self.data.size()?;
        let mut records = self.records_at(0, end)?;
        let mut start = Start::read(&mut records, self.sidecar).map_err(|m| CSV.error(m))?;
        let band = band_rows(&start).max(1);
        let first = start.first.take();
        let quote_free = match first.as_ref().and_then(|r| r.position()) {
            Some(at) => self.index_lines(at.byte(), band, end)?,
            None => None,
        };
        let (checked, starts) = match quote_free {
            Some(index) if index.runs.len() > 1 => match self.check_in_parallel(&index, &start)? {
                Some(checked) => (checked, index.starts),
                None => self.check_in_one_pass(&start, band)?,
            },
            _ => self.check_in_one_pass(&start, band)?,
        };
        if let Some(message) = checked.error {
            return Err(CSV.error(message));
        }
        if let Some(hint) = self.sidecar {
            if checked.rows != hint.rows {
                return Err(CSV.error(format!(
                    "the sidecar says {} rows but {} follow",
                    hint.rows, checked.rows
                )));
            }
        }
        let types = match &start.types {
            Some(types) => types[..start.lanes()].to_vec(),
            None => checked.kinds.iter().map(Inference::value_type).collect(),
        };
        Ok(Plan {
            start,
            rows: checked.rows,
            types,
            nonzero: checked.nonzero,
            starts,
            end,
        })
    }

    /// Checks the records in one pass from the file's start (again, where the parallel check
    /// gave up part way), noting where bands of `band` rows start.
    fn check_in_one_pass(&self, start: &Start, band: u64) -> Result<(Checked, Vec<BandStart>)> {
        let mut records = self.records_at(0, self.data.size()?)?;
        let mut again = Start::read(&mut records, self.sidecar).map_err(|m| CSV.error(m))?;
        let first = again.first.take();
        let mut starts = Vec::new();
        let checked = check_recording(&mut records, first, start, |row, record| {
            if row % band == 0 {
                let at = record.position().expect("records have positions");
                starts.push(BandStart {
                    byte: at.byte(),
                    row,
                });
            }
        })?;
        Ok((checked, starts))
    }

    /// Where bands of `band` rows and the workers' runs start, and how many rows there are,
    /// from the line ends alone; `None` for a file where a line end may not end a record (a
    /// quote, or a `\r` without `\n`).
    fn index_lines(&self, from: u64, band: u64, end: u64) -> Result<Option<LineIndex>> {
        let mut file = Stream::new(Arc::clone(self.data), from..end)?;
        let workers = workers() as u64;
        let mut index = LineIndex {
            starts: Vec::new(),
            runs: Vec::new(),
            rows: 0,
            end,
        };
        // A record at `byte`: a band starts there every `band` rows, and a worker's run at
        // the first record at or after each equal share of the bytes.
        let add = |index: &mut LineIndex, byte: u64| {
            let here = BandStart {
                byte,
                row: index.rows,
            };
            if index.rows.is_multiple_of(band) {
                index.starts.push(here);
            }
            let runs = index.runs.len() as u64;
            if runs < workers && byte >= from + (end - from) * runs / workers {
                index.runs.push(here);
            }
            index.rows += 1;
        };
        let mut at = from;
        // The current line's start, and whether a non-blank byte was seen on it.
        let (mut line_start, mut content) = (from, false);
        let mut chunk = vec![0u8; CHUNK_BYTES];
        let mut after_cr = false;
        while at < end {
            let n = file.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            let bytes = &chunk[..n];
            if memchr::memchr(b'"', bytes).is_some() || (after_cr && bytes[0] != b'\n') {
                return Ok(None);
            }
            for cr in memchr::memchr_iter(b'\r', bytes) {
                if bytes.get(cr + 1).is_some_and(|&b| b != b'\n') {
                    return Ok(None);
                }
            }
            after_cr = bytes[n - 1] == b'\r';
            let mut from_here = 0;
            for nl in memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(n)) {
                // A line is a record unless it is all whitespace (the csv crate and
                // `Records` skip those); a non-ASCII byte counts as content, and the checking
                // pass counts records again, so a wrong guess only costs the fast path.
                content = content
                    || bytes[from_here..nl]
                        .iter()
                        .any(|b| !b.is_ascii_whitespace());
                if nl == n {
                    break;
                }
                if content {
                    add(&mut index, line_start);
                }
                line_start = at + nl as u64 + 1;
                content = false;
                from_here = nl + 1;
            }
            at += n as u64;
        }
        if content {
            add(&mut index, line_start);
        }
        Ok(Some(index))
    }

    /// Checks contiguous runs of bands on every core, `plan.starts` found from the line ends
    /// (`rows` in all). `None` where the records disagree with the line ends (a blank line of
    /// non-ASCII spaces) or something is wrong: the check in one pass then says what, and
    /// where, as the whole read would.
    fn check_in_parallel(&self, index: &LineIndex, start: &Start) -> Result<Option<Checked>> {
        let runs = &index.runs;
        let results: Vec<Result<(Checked, u64)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..runs.len())
                .map(|j| {
                    scope.spawn(move || -> Result<(Checked, u64)> {
                        let (end, next_row) = runs
                            .get(j + 1)
                            .map_or((index.end, index.rows), |r| (r.byte, r.row));
                        let mut records = self.records_at(runs[j].byte, end)?;
                        let first = records.next_record().unwrap_or(None);
                        let checked = check(&mut records, first, start)?;
                        Ok((checked, next_row - runs[j].row))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a checking thread panicked"))
                .collect()
        });
        let mut all = Checked {
            kinds: vec![Inference::default(); start.lanes()],
            ..Checked::default()
        };
        for result in results {
            let (checked, expected) = result?;
            if checked.failed() || checked.rows != expected {
                return Ok(None);
            }
            all.merge(checked);
        }
        Ok((!all.failed()).then_some(all))
    }

    /// The second pass: calls `each(first row, lanes)` with each band of `plan.band` rows
    /// (the last shorter), in order, parsed into the plan's types on every core, until it
    /// returns `false`.
    pub(super) fn for_each_band(
        &self,
        plan: &Plan,
        each: &mut dyn FnMut(u64, Vec<Values>) -> Result<bool>,
    ) -> Result<()> {
        if plan.starts.is_empty() {
            return Ok(());
        }
        // Work units: runs of consecutive bands of about UNIT_BYTES of text.
        let text = plan.end - plan.starts[0].byte;
        let per_band = (text / plan.starts.len() as u64).max(1);
        let group = (UNIT_BYTES / per_band).max(1) as usize;
        let units: Vec<(usize, usize)> = (0..plan.starts.len())
            .step_by(group)
            .map(|k| (k, (k + group).min(plan.starts.len())))
            .collect();
        let threads = workers().min(units.len());
        std::thread::scope(|scope| -> Result<()> {
            let mut receivers = Vec::new();
            for t in 0..threads {
                let (send, receive) = mpsc::sync_channel::<Result<Vec<Vec<Values>>>>(1);
                receivers.push(receive);
                let units = &units;
                scope.spawn(move || {
                    for &(k0, k1) in units.iter().skip(t).step_by(threads) {
                        let parsed = (k0..k1).map(|k| self.parse_band(plan, k)).collect();
                        if send.send(parsed).is_err() {
                            return; // The consumer stopped.
                        }
                    }
                });
            }
            for (u, &(k0, _)) in units.iter().enumerate() {
                let bands = receivers[u % threads]
                    .recv()
                    .expect("each worker sends every unit it takes")?;
                for (k, lanes) in (k0..).zip(bands) {
                    if !each(plan.starts[k].row, lanes)? {
                        return Ok(());
                    }
                    if let Some(report) = self.progress {
                        report(plan.span(k).1, plan.end);
                    }
                }
            }
            Ok(())
        })
    }

    /// Parses band `k` into one vector per lane.
    fn parse_band(&self, plan: &Plan, k: usize) -> Result<Vec<Values>> {
        let (at, end) = plan.span(k);
        let rows = plan.rows_in(k);
        let mut records = self.records_at(at, end)?;
        let cells = match plan.frame() {
            true => rows as usize,
            false => rows as usize * plan.start.width,
        };
        let mut lanes: Vec<Values> = plan
            .types
            .iter()
            .map(|&vt| {
                let mut values = Values::new(vt);
                values.reserve(cells);
                values
            })
            .collect();
        let mut inference = vec![Inference::default(); lanes.len()];
        // The first pass checked every record: a failure now is a file that changed.
        let changed = || CSV.error("the file changed while it was converted");
        for _ in 0..rows {
            let fields = records.next_record().ok().flatten().ok_or_else(changed)?;
            let mut pushed = true;
            (plan.start)
                .read_record(&fields, &mut inference, |lane, field| {
                    pushed &= lanes[lane].push(field.value(plan.types[lane]));
                })
                .map_err(|_| changed())?;
            if !pushed {
                return Err(changed());
            }
        }
        Ok(lanes)
    }
}

/// Checks `first` and the records after it as the whole read does, stopping at the first
/// error (a conflict of kinds included, where the whole read meets it).
fn check<R: Read>(
    records: &mut Records<R>,
    first: Option<csv::StringRecord>,
    start: &Start,
) -> Result<Checked> {
    check_recording(records, first, start, |_, _| {})
}

/// [`check`], with `on_record(row, record)` seeing each record.
fn check_recording<R: Read>(
    records: &mut Records<R>,
    first: Option<csv::StringRecord>,
    start: &Start,
    mut on_record: impl FnMut(u64, &csv::StringRecord),
) -> Result<Checked> {
    let mut checked = Checked {
        kinds: vec![Inference::default(); start.lanes()],
        ..Checked::default()
    };
    let mut record = first;
    while let Some(fields) = record {
        on_record(checked.rows, &fields);
        let mut nonzero = false;
        let read = start.read_record(&fields, &mut checked.kinds, |_, field| {
            nonzero |= !field.is_zero();
        });
        checked.nonzero |= nonzero;
        if let Err(message) = read {
            checked.error = Some(message);
            return Ok(checked);
        }
        checked.rows += 1;
        record = match records.next_record() {
            Ok(next) => next,
            Err(message) => {
                checked.error = Some(message);
                return Ok(checked);
            }
        };
    }
    Ok(checked)
}
