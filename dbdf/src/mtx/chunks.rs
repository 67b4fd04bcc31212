//! A text file read in runs of whole lines (one per thread) and chunks of whole lines (a
//! bounded buffer each), for the coordinate reader's passes.

use std::io::Read;
use std::sync::Arc;

use serde_daphne::ReadAt;

use crate::storage::Stream;

/// Calls `each(text, offset of the text from `from`)` with bytes `from..to` of the file in
/// chunks of whole lines of about `chunk` bytes.
pub(super) fn for_each_chunk(
    data: &Arc<dyn ReadAt>,
    run: (u64, u64),
    chunk: usize,
    mut each: impl FnMut(&[u8], usize),
) -> Result<(), String> {
    let mut chunks = Chunks::open(data, run, chunk)?;
    while let Some((text, at)) = chunks.next()? {
        each(text, at);
    }
    Ok(())
}

/// Splits bytes `from..to` of the file into `parts` runs of whole lines.
pub(super) fn split_runs(
    data: &Arc<dyn ReadAt>,
    (from, to): (u64, u64),
    parts: u64,
) -> Result<Vec<(u64, u64)>, String> {
    let mut starts = vec![from];
    let mut probe = vec![0u8; 64 << 10];
    for t in 1..parts {
        let guess = from + (to - from) * t / parts;
        // After the first line break past the guess (a line longer than the probe moves no
        // split: the run before it grows).
        let end = to.min(guess + probe.len() as u64);
        let mut file = Stream::new(Arc::clone(data), guess..end).map_err(|e| e.to_string())?;
        let got = read_full(&mut file, &mut probe).map_err(|e| e.to_string())?;
        if let Some(p) = memchr::memchr(b'\n', &probe[..got]) {
            let at = guess + p as u64 + 1;
            if at > *starts.last().expect("one start") && at < to {
                starts.push(at);
            }
        }
    }
    let ends = starts.iter().skip(1).copied().chain([to]);
    Ok(starts.iter().copied().zip(ends).collect())
}

/// Whole lines of bytes `from..to` of a file, a chunk at a time, in one buffer: what follows
/// the last line break of a chunk moves to the front for the next (the buffer grows only
/// for a line longer than it).
pub(super) struct Chunks {
    file: Stream,
    buf: Vec<u8>,
    /// Bytes of `buf` read, and of those the chunk handed out last.
    filled: usize,
    cut: usize,
    /// Bytes of the run before `buf`.
    consumed: usize,
    ended: bool,
}

impl Chunks {
    pub(super) fn open(
        data: &Arc<dyn ReadAt>,
        (from, to): (u64, u64),
        chunk: usize,
    ) -> Result<Chunks, String> {
        Ok(Chunks {
            file: Stream::new(Arc::clone(data), from..to).map_err(|e| e.to_string())?,
            buf: vec![0; chunk.max(16)],
            filled: 0,
            cut: 0,
            consumed: 0,
            ended: false,
        })
    }

    /// The next chunk of whole lines and its offset from the run's start; `None` at the end.
    pub(super) fn next(&mut self) -> Result<Option<(&[u8], usize)>, String> {
        self.buf.copy_within(self.cut..self.filled, 0);
        self.filled -= self.cut;
        self.consumed += self.cut;
        self.cut = 0;
        loop {
            if self.filled == self.buf.len() {
                // No line break in a full buffer: a longer line.
                self.buf.resize(self.buf.len() * 2, 0);
            }
            if !self.ended {
                let space = self.buf.len() - self.filled;
                let got = read_full(&mut self.file, &mut self.buf[self.filled..])
                    .map_err(|e| e.to_string())?;
                self.filled += got;
                self.ended = got < space;
            }
            if self.filled == 0 {
                return Ok(None);
            }
            self.cut = match memchr::memrchr(b'\n', &self.buf[..self.filled]) {
                _ if self.ended => self.filled,
                Some(p) => p + 1,
                None => continue,
            };
            return Ok(Some((&self.buf[..self.cut], self.consumed)));
        }
    }
}

/// Fills `dst` from `file` as far as it goes; 0 only at the end.
pub(super) fn read_full(file: &mut dyn Read, dst: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < dst.len() {
        match file.read(&mut dst[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
