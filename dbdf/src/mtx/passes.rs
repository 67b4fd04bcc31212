//! The coordinate reader's two passes over the file, each thread over its own run of lines:
//! the first counts the entries of each fine band of rows, the second parses every entry
//! into its band's part of the arrays (`bands.rs` then orders each band into CSR).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_daphne::ReadAt;

use super::chunks::{for_each_chunk, Chunks};
use super::entries::{
    entry_indices, for_each_line, next_line, parse_lines, quick_index, MtxHeader, Parsed, Symmetry,
};
use serde_daphne::lowlevel::Progress;

/// Bytes of the file each thread parses at a time, twice over (tests: a few lines, so that
/// lines straddle chunks).
const CHUNK: usize = if cfg!(test) { 64 } else { 2 << 20 };

/// The most fine bands rows are counted in: counters a thread keeps in its cache (tests: a
/// few, so that small files have fine bands of several rows).
const FINE_BANDS: u64 = if cfg!(test) { 4 } else { 1 << 14 };

/// The most rows a fine band (and a band) spans: a row within a band fits a `u16`.
pub(super) const BAND_ROWS: u64 = 1 << 16;

/// What the first pass found: each thread's run of lines, and the entries of each fine band
/// of rows in each run (a mirrored entry counts in its own row's band too).
pub(super) struct Counted {
    pub(super) runs: Vec<(u64, u64)>,
    /// A row's fine band is `row >> shift` (`1 << shift` rows, at most [`BAND_ROWS`]).
    pub(super) shift: u32,
    /// `counts[thread][fine band]`.
    pub(super) counts: Vec<Vec<u64>>,
}

impl Counted {
    /// The fine bands.
    pub(super) fn fine_bands(&self) -> usize {
        self.counts.first().map_or(0, Vec::len)
    }

    /// The entries of fine band `f`, of every run.
    pub(super) fn fine(&self, f: usize) -> u64 {
        self.counts.iter().map(|c| c[f]).sum()
    }
}

/// The first pass over `runs` of the file. Lines that do not parse are left to the second
/// pass, which says what is wrong.
pub(super) fn count_bands(
    data: &Arc<dyn ReadAt>,
    runs: Vec<(u64, u64)>,
    layout: &MtxHeader,
) -> Result<Counted, String> {
    let shift = (0..)
        .find(|&s| layout.rows.div_ceil(1 << s) <= FINE_BANDS || 1 << s == BAND_ROWS)
        .expect("a shift of 16 ends the search");
    let fine = layout.rows.div_ceil(1 << shift) as usize;
    let counts = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&run| {
                scope.spawn(move || {
                    let mut counts = vec![0u64; fine];
                    for_each_chunk(data, run, CHUNK / 4, |text, _| {
                        count_lines(text, layout, shift, &mut counts)
                    })
                    .map(|()| counts)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("counting does not panic"))
            .collect::<Result<Vec<Vec<u64>>, String>>()
    })?;
    Ok(Counted {
        runs,
        shift,
        counts,
    })
}

fn count_lines(text: &[u8], layout: &MtxHeader, shift: u32, counts: &mut [u64]) {
    let mirrored = layout.symmetry != Symmetry::General;
    let mut count = |r: u64| counts[(r >> shift) as usize] += 1;
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

/// One thread's part of a band in the arrays of the second pass: the entries of the band in
/// the thread's run, in file order, each row as its offset from the band's first row.
pub(super) struct Part<'a> {
    pub(super) rows: &'a mut [u16],
    pub(super) cols: &'a mut [u32],
    pub(super) values: &'a mut [u64],
    pub(super) first_row: u64,
    pub(super) filled: usize,
}

/// What a thread of the second pass found besides the entries it placed (file offsets).
#[derive(Default)]
pub(super) struct RunFound {
    pub(super) listed: u64,
    /// Values that are not zero (mirrored ones too), of every row.
    pub(super) nonzero: u64,
    pub(super) negative: Option<(usize, i64)>,
    pub(super) beyond_i64: Option<usize>,
    /// A band with more entries than the first pass counted (the file changed).
    pub(super) overflow: bool,
    /// The first malformed line's offset, and what is wrong with it.
    pub(super) error: Option<(usize, String)>,
}

/// The second pass over one run: every line parsed and checked, the entries of fine bands
/// `fine` placed in `parts` (one per band, `band_of[f]` being fine band `f`'s).
pub(super) struct PlacePass<'p> {
    pub(super) data: &'p Arc<dyn ReadAt>,
    pub(super) layout: &'p MtxHeader,
    pub(super) shift: u32,
    pub(super) fine: (usize, usize),
    pub(super) band_of: &'p [u32],
    pub(super) done: &'p AtomicU64,
    pub(super) total: u64,
    pub(super) progress: Option<&'p Progress>,
}

impl PlacePass<'_> {
    /// Parses `run` and places its entries; stops at its first malformed line.
    pub(super) fn run(&self, run: (u64, u64), parts: &mut [Part]) -> Result<RunFound, String> {
        let mut chunks = Chunks::open(self.data, run, CHUNK / 2)?;
        let mut found = RunFound::default();
        let mut parsed = Parsed::default();
        while let Some((text, at)) = chunks.next()? {
            let at = run.0 as usize + at;
            if let Err(e) = parse_lines(text, self.layout, &mut parsed) {
                found.error = Some((at + e.at, e.message));
                break;
            }
            self.note(&parsed, at, text.len(), &mut found);
            found.overflow |= self.place(&parsed, parts).is_err();
        }
        Ok(found)
    }

    /// Places the parsed entries of this pass's fine bands at their parts' ends; `Err` for
    /// a part already full (the file changed).
    fn place(&self, parsed: &Parsed, parts: &mut [Part]) -> Result<(), ()> {
        let (first, end) = self.fine;
        let entries = parsed.rows.iter().zip(&parsed.cols).zip(&parsed.values);
        for ((&r, &c), &v) in entries {
            let f = (r >> self.shift) as usize;
            if f < first || f >= end {
                continue;
            }
            let part = &mut parts[self.band_of[f] as usize];
            let k = part.filled;
            if k == part.cols.len() {
                return Err(());
            }
            part.rows[k] = (u64::from(r) - part.first_row) as u16;
            part.cols[k] = c;
            part.values[k] = v;
            part.filled = k + 1;
        }
        Ok(())
    }

    /// Notes what `found` keeps of a chunk that starts at file offset `at`.
    fn note(&self, parsed: &Parsed, at: usize, len: usize, found: &mut RunFound) {
        found.listed += parsed.listed;
        found.nonzero += crate::input::count_nonzero(&parsed.values) as u64;
        if let (None, Some((p, x))) = (found.negative, parsed.negative) {
            found.negative = Some((at + p, x));
        }
        if let (None, Some(p)) = (found.beyond_i64, parsed.beyond_i64) {
            found.beyond_i64 = Some(at + p);
        }
        let done = self.done.fetch_add(len as u64, Ordering::Relaxed) + len as u64;
        if let Some(report) = self.progress {
            report(done, self.total);
        }
    }
}
