//! Extents: bytes of a file at their offsets, with the gaps between them left out. A walk over
//! a file's headers records the bytes it consumed as extents (a block index holds them); a
//! walk over the extents alone then consumes the same bytes and finds the same objects, and
//! later reads of the file are checked against them.

use std::io::{self, Read, Seek, SeekFrom};

/// Byte runs of a file at their offsets: sorted, disjoint and not touching once
/// [`Extents::finish`]ed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Extents {
    /// `(offset in the file, start in bytes)`; each run ends where the next starts in `bytes`.
    spans: Vec<(u64, usize)>,
    bytes: Vec<u8>,
}

impl Extents {
    /// Extents from their runs `(offset, length)`, in order, and their bytes one after
    /// another; `None` unless the runs are sorted, disjoint, not touching, non-empty and as
    /// long as `bytes` together.
    pub(crate) fn from_parts(runs: &[(u64, u32)], bytes: Vec<u8>) -> Option<Extents> {
        let mut spans = Vec::with_capacity(runs.len());
        let (mut from, mut end) = (0usize, None::<u64>);
        for &(at, len) in runs {
            if len == 0 || end.is_some_and(|e| at <= e) {
                return None;
            }
            spans.push((at, from));
            from = from.checked_add(len as usize)?;
            end = Some(at.checked_add(u64::from(len))?);
        }
        (from == bytes.len()).then_some(Extents { spans, bytes })
    }

    /// The runs `(offset, bytes)`, in order.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        (0..self.spans.len()).map(|k| (self.spans[k].0, self.run(k)))
    }

    /// How many runs there are.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    fn run(&self, k: usize) -> &[u8] {
        let end = self.spans.get(k + 1).map_or(self.bytes.len(), |s| s.1);
        &self.bytes[self.spans[k].1..end]
    }

    /// The end of the last run (the file holds at least this many bytes).
    pub(crate) fn end(&self) -> u64 {
        self.spans
            .last()
            .map_or(0, |&(at, from)| at + (self.bytes.len() - from) as u64)
    }

    /// Records `bytes` at `at`, while walking: joined to the last run where they follow on
    /// from it (the usual case), a run of their own otherwise, sorted out by
    /// [`Extents::finish`].
    pub(crate) fn push(&mut self, at: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(&(last_at, from)) = self.spans.last() {
            let last_end = last_at + (self.bytes.len() - from) as u64;
            if at >= last_at && at <= last_end {
                let new = (at + bytes.len() as u64).saturating_sub(last_end) as usize;
                self.bytes.extend_from_slice(&bytes[bytes.len() - new..]);
                return;
            }
        }
        self.spans.push((at, self.bytes.len()));
        self.bytes.extend_from_slice(bytes);
    }

    /// Sorts the runs and joins those that overlap or touch.
    pub(crate) fn finish(self) -> Extents {
        let mut order: Vec<usize> = (0..self.spans.len()).collect();
        order.sort_by_key(|&k| self.spans[k].0);
        let mut out = Extents::default();
        for k in order {
            out.push(self.spans[k].0, self.run(k));
        }
        out
    }

    /// The run holding all of `at..at + len`, from `at`.
    fn holding(&self, at: u64, len: usize) -> Option<&[u8]> {
        let k = self.spans.partition_point(|s| s.0 <= at).checked_sub(1)?;
        let run = self.run(k);
        let from = (at - self.spans[k].0) as usize;
        run.get(from..from.checked_add(len)?)
    }

    /// How many bytes of the run that starts exactly at `at` there are.
    pub(crate) fn run_from(&self, at: u64) -> Option<usize> {
        let k = self.spans.binary_search_by_key(&at, |s| s.0).ok()?;
        Some(self.run(k).len())
    }

    /// Compares the bytes read at `at` (in `pieces`, one after another) with the runs they
    /// overlap; the offset of the first that differs.
    pub(crate) fn first_difference(&self, at: u64, pieces: &[&[u8]]) -> Option<u64> {
        let len: u64 = pieces.iter().map(|p| p.len() as u64).sum();
        let mut k = self.spans.partition_point(|s| s.0 <= at).saturating_sub(1);
        while k < self.spans.len() && self.spans[k].0 < at + len {
            let (run_at, run) = (self.spans[k].0, self.run(k));
            let from = run_at.max(at);
            let to = (run_at + run.len() as u64).min(at + len);
            let mut offset = at;
            for piece in pieces {
                let (p0, p1) = (offset, offset + piece.len() as u64);
                let (a, b) = (from.max(p0), to.min(p1));
                if a < b {
                    let mine = &piece[(a - p0) as usize..(b - p0) as usize];
                    let theirs = &run[(a - run_at) as usize..(b - run_at) as usize];
                    if let Some(i) = mine.iter().zip(theirs).position(|(x, y)| x != y) {
                        return Some(a + i as u64);
                    }
                }
                offset = p1;
            }
            k += 1;
        }
        None
    }
}

/// The extents read as a file of `len` bytes that holds nothing else: a read of bytes no run
/// holds whole fails.
#[derive(Debug)]
pub(crate) struct ExtentsReader<'a> {
    pub extents: &'a Extents,
    pub pos: u64,
    pub len: u64,
}

impl Read for ExtentsReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.len.saturating_sub(self.pos)) as usize;
        let bytes = self.extents.holding(self.pos, n).ok_or_else(|| {
            io::Error::other(format!(
                "bytes {}..{} are not in the block index",
                self.pos,
                self.pos + n as u64
            ))
        })?;
        buf[..n].copy_from_slice(bytes);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ExtentsReader<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
        }
        .ok_or(io::ErrorKind::InvalidInput)?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_join_sort_and_answer_reads() {
        let mut e = Extents::default();
        e.push(10, b"abc");
        e.push(12, b"cde"); // overlaps the last run
        e.push(40, b"xy");
        e.push(0, b"012"); // behind: sorted out at the end
        e.push(3, b"3");
        let e = e.finish();
        let runs: Vec<(u64, &[u8])> = e.runs().collect();
        assert_eq!(runs, [(0, &b"0123"[..]), (10, b"abcde"), (40, b"xy")]);
        assert_eq!(e.end(), 42);
        assert_eq!(e.holding(11, 3), Some(&b"bcd"[..]));
        assert_eq!(e.holding(13, 3), None);
        assert_eq!(e.first_difference(9, &[b"?a", b"bc"]), None);
        assert_eq!(e.first_difference(11, &[b"b", b"Xd"]), Some(12));
        assert_eq!(e.first_difference(20, &[b"anything"]), None);
        let again = Extents::from_parts(&[(0, 4), (10, 5), (40, 2)], e.bytes.clone());
        assert_eq!(again.as_ref(), Some(&e));
        assert!(Extents::from_parts(&[(0, 4), (4, 5), (40, 2)], e.bytes.clone()).is_none());
        let mut reader = ExtentsReader {
            extents: &e,
            pos: 10,
            len: 50,
        };
        let mut buf = [0u8; 5];
        reader.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"abcde");
        assert!(reader.read(&mut buf).is_err());
    }
}
