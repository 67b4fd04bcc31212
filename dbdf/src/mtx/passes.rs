//! The coordinate reader's two passes on every core: counting each row's entries, then
//! parsing entries into their rows' places in the CSR arrays, the threads in lockstep.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, RwLock};

use serde_daphne::ReadAt;

use super::chunks::{for_each_chunk, split_runs, Chunks};
use super::entries::{
    entry_indices, for_each_line, next_line, parse_lines, quick_index, ColIndex, MtxHeader, Parsed,
    Symmetry,
};
use serde_daphne::lowlevel::workers;
use serde_daphne::lowlevel::Progress;

/// Bytes of the file each thread parses at a time, twice over (tests: a few lines, so that
/// lines straddle chunks and the threads take many turns).
const CHUNK: usize = if cfg!(test) { 64 } else { 8 << 20 };

/// The first pass: each row's entries (a mirrored entry counts in its row too), as CSR row
/// offsets. Lines that do not parse are left to the second pass, which says what is wrong.
pub(super) fn count_rows(
    data: &Arc<dyn ReadAt>,
    (from, to): (u64, u64),
    layout: &MtxHeader,
) -> Result<Vec<usize>, String> {
    let nrows = layout.rows as usize;
    // Each thread reads and counts its own run of lines: no chunk waits for another.
    let runs = split_runs(data, (from, to), workers() as u64)?;
    let counts = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&run| {
                scope.spawn(move || {
                    let mut counts = vec![0u32; nrows];
                    for_each_chunk(data, run, CHUNK / 4, |text, _| {
                        count_lines(text, layout, &mut counts)
                    })
                    .map(|()| counts)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("counting does not panic"))
            .collect::<Result<Vec<Vec<u32>>, String>>()
    })?;
    let mut offsets = Vec::with_capacity(nrows + 1);
    offsets.push(0usize);
    let mut sum = 0usize;
    for r in 0..nrows {
        sum += counts.iter().map(|c| c[r] as usize).sum::<usize>();
        offsets.push(sum);
    }
    Ok(offsets)
}

fn count_lines(text: &[u8], layout: &MtxHeader, counts: &mut [u32]) {
    let mirrored = layout.symmetry != Symmetry::General;
    // Saturating: a count that overflows can only be a file the second pass refuses.
    let mut count = |r: u64| counts[r as usize] = counts[r as usize].saturating_add(1);
    for_each_line(text, |start| {
        let mut i = start;
        // A general file's line counts in its row alone: the second pass checks its words.
        if !mirrored {
            if let Some(r) = quick_index(text, &mut i, layout.rows) {
                return count(r);
            }
        }
        // A line that is not text is left to the second pass.
        let Ok(line) = std::str::from_utf8(&text[start..next_line(text, start)]) else {
            return;
        };
        if let Ok(Some((r, c))) = entry_indices(line, &mut 0, layout) {
            count(r);
            if mirrored && r > c {
                count(c);
            }
        }
    });
}

/// Places the parsed entries of rows `rows.0..rows.1` at their rows' cursors (the arrays
/// and cursors are those rows' parts); `Err` for an entry beyond those parts. A row with
/// more entries than counted (the file changed) is found after the pass, its cursor past its
/// end.
pub(super) fn place<I: ColIndex>(
    parts: &[&Parsed],
    (cols, values, cursors): (&mut [I], &mut [u64], &mut [usize]),
    (first, end): (usize, usize),
    offsets: &[usize],
) -> Result<(), ()> {
    let base = offsets[first];
    let mine = |r: u32| (r as usize).checked_sub(first).filter(|&r| r < end - first);
    for part in parts {
        for ((&r, &c), &v) in part.rows.iter().zip(&part.cols).zip(&part.values) {
            let Some(r) = mine(r) else {
                continue;
            };
            let k = cursors[r];
            let (Some(col), Some(value)) = (cols.get_mut(k - base), values.get_mut(k - base))
            else {
                return Err(());
            };
            *col = I::of(u64::from(c));
            *value = v;
            cursors[r] = k + 1;
        }
    }
    Ok(())
}

/// What a worker of the second pass found besides the entries it placed (file offsets).
#[derive(Default)]
pub(super) struct RunFound {
    pub(super) listed: u64,
    /// Values that are not zero (mirrored ones too), of every row.
    pub(super) nonzero: u64,
    pub(super) negative: Option<(usize, i64)>,
    pub(super) beyond_i64: Option<usize>,
    /// A row with more entries than the first pass counted (the file changed).
    pub(super) overflow: bool,
    /// The first malformed line's offset, and what is wrong with it.
    pub(super) error: Option<(usize, String)>,
}

/// The second pass's workers, taking turns: each parses a chunk of its run into its buffer,
/// then each places its rows' entries from every buffer.
pub(super) struct Lockstep<'p> {
    pub(super) data: &'p Arc<dyn ReadAt>,
    pub(super) layout: &'p MtxHeader,
    /// The CSR row offsets the first pass counted.
    pub(super) offsets: &'p [usize],
    pub(super) buffers: Vec<RwLock<Parsed>>,
    pub(super) barrier: Barrier,
    /// Set by a worker that met an error: everyone stops after this turn.
    pub(super) stop: AtomicBool,
    pub(super) finished: Vec<AtomicBool>,
    pub(super) done: AtomicU64,
    pub(super) total: u64,
    pub(super) progress: Option<&'p Progress>,
}

impl Lockstep<'_> {
    /// Worker `t`: parses `run` of the file and places the entries of `rows` into `arrays`
    /// (those rows' parts of the column and value arrays, and their cursors).
    pub(super) fn run<I: ColIndex>(
        &self,
        t: usize,
        run: (u64, u64),
        arrays: (&mut [I], &mut [u64], &mut [usize]),
        rows: (usize, usize),
    ) -> Result<RunFound, String> {
        let mut failure = None;
        let mut chunks = match Chunks::open(self.data, run, CHUNK / 2) {
            Ok(chunks) => Some(chunks),
            Err(e) => {
                failure = Some(e);
                self.stop.store(true, Ordering::SeqCst);
                None
            }
        };
        let mut found = RunFound::default();
        let (cols, values, cursors) = arrays;
        // Every worker takes part in every turn until all stop together: an error ends the
        // turn for everyone, never a worker alone (which would leave the others waiting).
        loop {
            {
                let mut mine = self.buffers[t].write().expect("no worker panics");
                mine.clear();
                let more = !self.finished[t].load(Ordering::SeqCst) && found.error.is_none();
                if let Some(chunks) = chunks.as_mut().filter(|_| more) {
                    match chunks.next() {
                        Ok(Some((text, at))) => {
                            let at = run.0 as usize + at;
                            self.parse(text, at, &mut mine, &mut found);
                        }
                        Ok(None) => self.finished[t].store(true, Ordering::SeqCst),
                        Err(e) => {
                            failure = Some(e);
                            self.stop.store(true, Ordering::SeqCst);
                        }
                    }
                }
            }
            self.barrier.wait();
            let all_finished = self.finished.iter().all(|f| f.load(Ordering::SeqCst));
            if self.stop.load(Ordering::SeqCst) || all_finished {
                break;
            }
            {
                let guards: Vec<_> = self
                    .buffers
                    .iter()
                    .map(|b| b.read().expect("no worker panics"))
                    .collect();
                let parsed: Vec<&Parsed> = guards.iter().map(|g| &**g).collect();
                let arrays = (&mut *cols, &mut *values, &mut *cursors);
                found.overflow |= place(&parsed, arrays, rows, self.offsets).is_err();
            }
            self.barrier.wait();
        }
        if let Some(e) = failure {
            return Err(e);
        }
        // A later run's error stopped everyone: this run may hold an earlier one.
        if let Some(chunks) = chunks.as_mut().filter(|_| found.error.is_none()) {
            let mut scratch = Parsed::default();
            while let Some((text, at)) = chunks.next()? {
                let at = run.0 as usize + at;
                self.parse(text, at, &mut scratch, &mut found);
                if found.error.is_some() {
                    break;
                }
            }
        }
        Ok(found)
    }

    /// Parses a chunk that starts at file offset `at`, noting what `found` keeps.
    fn parse(&self, text: &[u8], at: usize, out: &mut Parsed, found: &mut RunFound) {
        if let Err(e) = parse_lines(text, self.layout, out) {
            found.error = Some((at + e.at, e.message));
            self.stop.store(true, Ordering::SeqCst);
            return;
        }
        found.listed += out.listed;
        found.nonzero += crate::input::count_nonzero(&out.values) as u64;
        if let (None, Some((p, x))) = (found.negative, out.negative) {
            found.negative = Some((at + p, x));
        }
        if let (None, Some(p)) = (found.beyond_i64, out.beyond_i64) {
            found.beyond_i64 = Some(at + p);
        }
        let done = self.done.fetch_add(text.len() as u64, Ordering::Relaxed) + text.len() as u64;
        if let Some(report) = self.progress {
            report(done, self.total);
        }
    }
}
