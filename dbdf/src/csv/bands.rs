//! A CSV file read in bands of rows on every core, for [`super::to_dbdf`].
//!
//! The first pass checks every record as the whole read does and finds where bands of rows
//! start (their byte and row). The text is split in a run per core at line ends and each run
//! is checked on its own core, noting its bands; a run that meets a quote or a lone `\r` (a
//! line end may then sit inside a field) or a fault sends the check back to one pass by one
//! thread from the start, which words any fault as the whole read does. The second pass
//! parses bands on every core from where they start, handing them over in row order. Each
//! pass reads the file once (a remote one as streams read ahead).

use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The most bytes a run's check takes at a time (tests: a few, so that lines, `\r\n` pairs
/// and blank lines straddle reads).
const READ_BYTES: usize = if cfg!(test) { 5 } else { 1 << 20 };

/// Where a band of rows starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BandStart {
    pub byte: u64,
    pub row: u64,
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
        let in_runs = match first.as_ref().and_then(|r| r.position()) {
            Some(at) => self.check_in_runs(at.byte(), end, &start, band)?,
            None => None,
        };
        let (checked, starts) = match in_runs {
            Some(found) => found,
            None => self.check_in_one_pass(&start, band)?,
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

    /// Bytes `from..end` split in a run per core, each moved on to the start of a line (a
    /// line longer than the probe moves no split: the run before it grows).
    fn split_runs(&self, from: u64, end: u64) -> Result<Vec<(u64, u64)>> {
        let parts = workers() as u64;
        let mut starts = vec![from];
        let mut probe = vec![0u8; 64 << 10];
        for t in 1..parts {
            let guess = from + (end - from) * t / parts;
            let n = probe.len().min((end - guess) as usize);
            self.data.read_exact_at(&mut probe[..n], guess)?;
            if let Some(p) = memchr::memchr(b'\n', &probe[..n]) {
                let at = guess + p as u64 + 1;
                if at > *starts.last().expect("one start") && at < end {
                    starts.push(at);
                }
            }
        }
        let ends = starts.iter().skip(1).copied().chain([end]);
        Ok(starts.iter().copied().zip(ends).collect())
    }

    /// Checks the records after byte `from` in a run per core, each noting where bands of
    /// `band` rows start in it; `None` where there is one run only, or a run meets a quote, a
    /// lone `\r` or anything the whole read refuses (the check in one pass then says what,
    /// and where, as the whole read would).
    fn check_in_runs(
        &self,
        from: u64,
        end: u64,
        start: &Start,
        band: u64,
    ) -> Result<Option<(Checked, Vec<BandStart>)>> {
        let runs = self.split_runs(from, end)?;
        if runs.len() < 2 {
            return Ok(None);
        }
        let quoted = AtomicBool::new(false);
        let results: Vec<Result<(Checked, Vec<BandStart>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .iter()
                .map(|&(at, to)| {
                    let quoted = &quoted;
                    scope.spawn(move || -> Result<(Checked, Vec<BandStart>)> {
                        let spied = QuoteSpy {
                            inner: Stream::new(Arc::clone(self.data), at..to)?,
                            after_cr: false,
                            quoted,
                        };
                        let mut records = Records::new(BufReader::with_capacity(1 << 20, spied));
                        let first = match records.next_record() {
                            Ok(first) => first,
                            Err(message) => {
                                let error = Some(message);
                                return Ok((
                                    Checked {
                                        error,
                                        ..Checked::default()
                                    },
                                    Vec::new(),
                                ));
                            }
                        };
                        let mut starts = Vec::new();
                        let checked = check_recording(&mut records, first, start, |row, r| {
                            if row % band == 0 {
                                let byte =
                                    at + r.position().expect("records have positions").byte();
                                starts.push(BandStart { byte, row });
                            }
                        })?;
                        Ok((checked, starts))
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
        let mut starts = Vec::new();
        for result in results {
            let (checked, run_starts) = result?;
            if checked.failed() {
                return Ok(None);
            }
            let rows_before = all.rows;
            starts.extend(run_starts.into_iter().map(|s| BandStart {
                row: rows_before + s.row,
                ..s
            }));
            all.merge(checked);
        }
        if quoted.load(Ordering::Relaxed) || all.failed() {
            return Ok(None);
        }
        Ok(Some((all, starts)))
    }

    /// The second pass: calls `each(first row, lanes)` with each band of the plan's rows (of
    /// `band` rows, a run's last shorter), in order, parsed into the plan's types on every core, until it
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

/// A run's bytes passed on as read, noting a quote or a `\r` without `\n` after it: where
/// a line end may sit inside a field, a run cut at a line end may have cut a record.
struct QuoteSpy<'q, R> {
    inner: R,
    after_cr: bool,
    quoted: &'q AtomicBool,
}

impl<R: Read> Read for QuoteSpy<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let cap = buf.len().min(READ_BYTES);
        let n = self.inner.read(&mut buf[..cap])?;
        let bytes = &buf[..n];
        let lone_cr = |at: usize| bytes.get(at + 1).is_some_and(|&b| b != b'\n');
        if memchr::memchr(b'"', bytes).is_some()
            || (self.after_cr && bytes.first().is_some_and(|&b| b != b'\n'))
            || memchr::memchr_iter(b'\r', bytes).any(lone_cr)
        {
            self.quoted.store(true, Ordering::Relaxed);
        }
        if n > 0 {
            self.after_cr = bytes[n - 1] == b'\r';
        }
        Ok(n)
    }
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
