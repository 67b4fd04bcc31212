//! A byte source over `Read + Seek` of known length: what lazy reading needs. It reads through
//! a small window that moves with the cursor, jumps over bytes it does not need with a seek,
//! and never buffers more than one request.

use crate::error::ErrorDetails;
use std::io::{self, Read, Seek, SeekFrom};

use super::element::Element;
use super::extents::Extents;
use super::source::{check_present, Source};
use super::values::zeroed_vec;
use crate::error::{Error, Result};
use std::sync::Arc;

/// Bytes read at once when a request is smaller: enough for many block headers in a row.
const WINDOW: usize = 64 << 10;

/// Bytes read at once after a jump: a block header and then some, not a window of values
/// that will be jumped over next.
const AFTER_JUMP: usize = 512;

/// The most a source with a minimum request reads ahead: its window doubles on each
/// sequential read up to this (as GDAL's /vsicurl/ does), so that walking many small blocks
/// takes few requests.
const MAX_READ_AHEAD: usize = 8 << 20;

/// The largest range [`SeekSource::prefetch`] fetches in one request; larger blocks are read
/// as their readers ask.
const MAX_PREFETCH: u64 = 64 << 20;

/// Input from a seekable reader (a file) whose length is known.
pub struct SeekSource<R> {
    reader: R,
    len: u64,
    buf: Vec<u8>,
    /// The input offset of `buf[0]`.
    buf_at: u64,
    pos: usize,
    /// Where the reader is, when known (`None` after an error).
    reader_at: Option<u64>,
    /// Whether the cursor last moved by jumping past the window.
    jumped: bool,
    /// Whether the reader splits large reads between the cores itself (each core then takes
    /// the page faults of what it reads into), so that new vectors need no prefaulting.
    parallel_reads: bool,
    /// The smallest read worth a request (0 for local files): see [`crate::ReadAt::min_request`].
    min_request: usize,
    /// The next sequential read's size, for a source with a minimum request.
    ahead: usize,
    /// From what length on the reader serves runs of reads from bytes it fetched ahead
    /// ([`crate::ReadAt::reads_ahead`]).
    reads_ahead: Option<u64>,
    /// Reads exactly the bytes asked for, no window ahead (for a walk over extents alone).
    exact: bool,
    /// The bytes consumed (taken or looked at), recorded for a block index.
    record: Option<Extents>,
    /// A block index's extents, which every read of bytes they hold must match.
    verify: Option<Arc<Extents>>,
}

impl<R: std::fmt::Debug> std::fmt::Debug for SeekSource<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeekSource")
            .field("reader", &self.reader)
            .field("len", &self.len)
            .field("offset", &(self.buf_at + self.pos as u64))
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> SeekSource<R> {
    /// A source over `reader`, which holds `len` bytes; the cursor starts at 0.
    pub fn new(reader: R, len: u64) -> Self {
        SeekSource {
            reader,
            len,
            buf: Vec::new(),
            buf_at: 0,
            pos: 0,
            reader_at: None,
            jumped: false,
            parallel_reads: false,
            min_request: 0,
            ahead: 0,
            reads_ahead: None,
            exact: false,
            record: None,
            verify: None,
        }
    }

    /// Records the bytes consumed from now on ([`SeekSource::take_record`]).
    pub(crate) fn recording(mut self) -> Self {
        self.record = Some(Extents::default());
        self
    }

    /// The bytes consumed since [`SeekSource::recording`], sorted and joined.
    pub(crate) fn take_record(&mut self) -> Option<Extents> {
        self.record.take().map(Extents::finish)
    }

    /// Reads exactly what is asked for: a reader of extents alone then reads nothing a walk
    /// did not consume.
    pub(crate) fn with_exact_reads(mut self) -> Self {
        self.exact = true;
        self
    }

    /// Checks every read that overlaps `extents` against them:
    /// [`crate::ErrorKind::StaleIndex`] where they differ.
    pub(crate) fn with_verify(mut self, extents: Option<Arc<Extents>>) -> Self {
        self.verify = extents;
        self
    }

    /// The extents reads are checked against.
    pub(crate) fn verify(&self) -> Option<&Arc<Extents>> {
        self.verify.as_ref()
    }

    fn note(&mut self, at: u64, n: usize) {
        if let Some(record) = &mut self.record {
            let from = (at - self.buf_at) as usize;
            record.push(at, &self.buf[from..from + n]);
        }
    }

    fn check(&self, at: u64, pieces: &[&[u8]]) -> Result<()> {
        let Some(extents) = &self.verify else {
            return Ok(());
        };
        match extents.first_difference(at, pieces) {
            None => Ok(()),
            Some(offset) => Err(ErrorDetails::StaleIndex {
                offset,
                message: "the file's header bytes differ from the index's".into(),
            }
            .into()),
        }
    }

    /// Tells the source that reads below `bytes` cost as much as reads of `bytes` (a remote
    /// reader's round trip): it then reads ahead in growing windows and prefetches blocks.
    pub(crate) fn with_min_request(mut self, bytes: usize) -> Self {
        self.min_request = bytes;
        self.ahead = bytes;
        self
    }

    /// Fetches `range` into the window in one read, for a source with a minimum request, so
    /// that the reads of a block that follow cost no more requests. Ranges already in the
    /// window and ranges over [`MAX_PREFETCH`] are left to the reads themselves.
    ///
    /// # Errors
    /// [`crate::ErrorKind::UnexpectedEof`] past the end of the input; I/O errors.
    pub(crate) fn prefetch(&mut self, range: std::ops::Range<u64>) -> Result<()> {
        let end = self.buf_at + self.buf.len() as u64;
        let held = range.start >= self.buf_at && range.end <= end;
        if self.min_request == 0 || held {
            return Ok(());
        }
        if range.end - range.start > MAX_PREFETCH {
            // Too large to fetch whole: its header alone, to compare with the index's.
            return self.check_header(range);
        }
        let range = range.start..range.end.min(self.len);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.resize((range.end - range.start) as usize, 0);
        let result = self.read_exact_at(range.start, &mut buf, "a block");
        self.buf = buf;
        self.buf_at = range.start;
        self.pos = 0;
        if result.is_err() {
            self.buf.clear();
        }
        result
    }

    /// Reads the header at the start of `range` (a block's bytes that are not fetched whole)
    /// where an index's extents hold one there, to compare it with theirs.
    ///
    /// # Errors
    /// [`crate::ErrorKind::StaleIndex`] where they differ; I/O errors.
    pub(crate) fn check_header(&mut self, range: std::ops::Range<u64>) -> Result<()> {
        let run = self.verify.as_ref().and_then(|v| v.run_from(range.start));
        if let Some(len) = run {
            let mut head = vec![0; len.min((range.end - range.start) as usize)];
            self.read_exact_at(range.start, &mut head, "a block's header")?;
        }
        Ok(())
    }

    /// Tells the source from what length on `reader` serves runs of reads from bytes it
    /// fetched ahead ([`crate::ReadAt::reads_ahead`]).
    pub(crate) fn with_reads_ahead(mut self, run: Option<u64>) -> Self {
        self.reads_ahead = run;
        self
    }

    /// From what length on the reader serves runs of reads from bytes it fetched ahead.
    pub(crate) fn reads_ahead(&self) -> Option<u64> {
        self.reads_ahead
    }

    /// Tells the source that `reader` reads large buffers on every core itself.
    pub(crate) fn with_parallel_reads(mut self, yes: bool) -> Self {
        self.parallel_reads = yes;
        self
    }

    /// The reader.
    pub(crate) fn reader(&self) -> &R {
        &self.reader
    }

    /// The input's length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// This source reading through `wrap(reader)` (which must read the same bytes from the
    /// same position), its window and cursor kept.
    pub fn map_reader<S>(self, wrap: impl FnOnce(R) -> S) -> SeekSource<S> {
        SeekSource {
            reader: wrap(self.reader),
            len: self.len,
            buf: self.buf,
            buf_at: self.buf_at,
            pos: self.pos,
            reader_at: self.reader_at,
            jumped: self.jumped,
            // A wrapper may not forward the reader's own large reads.
            parallel_reads: false,
            min_request: self.min_request,
            ahead: self.ahead,
            reads_ahead: self.reads_ahead,
            exact: self.exact,
            record: self.record,
            verify: self.verify,
        }
    }

    /// Moves the cursor to `offset` (at most the input's length); no I/O until bytes are
    /// needed.
    pub fn seek_to(&mut self, offset: u64) {
        let offset = offset.min(self.len);
        let end = self.buf_at + self.buf.len() as u64;
        if (self.buf_at..=end).contains(&offset) {
            self.pos = (offset - self.buf_at) as usize;
        } else {
            self.buf.clear();
            self.buf_at = offset;
            self.pos = 0;
            // For a remote source, a skip over less than the next read-ahead is still reading
            // on: the read-ahead keeps growing.
            self.jumped =
                self.min_request == 0 || offset < end || offset - end >= self.ahead as u64;
        }
    }

    /// Moves the cursor `n` bytes on.
    ///
    /// # Errors
    /// [`crate::ErrorKind::UnexpectedEof`] when fewer than `n` bytes remain.
    pub fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        let available = self.len - self.offset();
        if n > available {
            return Err(ErrorDetails::UnexpectedEof {
                offset: self.offset(),
                what,
                needed: n,
                available,
            }
            .into());
        }
        self.seek_to(self.offset() + n);
        Ok(())
    }

    /// Fills `dst` with the bytes at `offset`, without moving the cursor or the window.
    ///
    /// # Errors
    /// [`crate::ErrorKind::UnexpectedEof`] past the end of the input; I/O errors.
    pub fn read_at(&mut self, offset: u64, dst: &mut [u8], what: &'static str) -> Result<()> {
        let available = self.len.saturating_sub(offset);
        if dst.len() as u64 > available {
            return Err(ErrorDetails::UnexpectedEof {
                offset,
                what,
                needed: dst.len() as u64,
                available,
            }
            .into());
        }
        let end = self.buf_at + self.buf.len() as u64;
        if offset >= self.buf_at && offset + dst.len() as u64 <= end {
            let at = (offset - self.buf_at) as usize;
            dst.copy_from_slice(&self.buf[at..at + dst.len()]);
            return Ok(());
        }
        self.read_exact_at(offset, dst, what)
    }

    /// Fills the buffers `dsts`, in order, with the bytes that follow each other from
    /// `offset`: one vectored read (`readv`) for what would be a read per buffer, such as the
    /// rows of a dense block, each into its place in a wider window.
    ///
    /// # Errors
    /// [`crate::ErrorKind::UnexpectedEof`] past the end of the input; I/O errors.
    pub fn read_vectored_at(
        &mut self,
        offset: u64,
        dsts: &mut [io::IoSliceMut<'_>],
        what: &'static str,
    ) -> Result<()> {
        let needed: u64 = dsts.iter().map(|d| d.len() as u64).sum();
        let available = self.len.saturating_sub(offset);
        if needed > available {
            return Err(ErrorDetails::UnexpectedEof {
                offset,
                what,
                needed,
                available,
            }
            .into());
        }
        let end = self.buf_at + self.buf.len() as u64;
        if offset >= self.buf_at && offset + needed <= end {
            let mut at = (offset - self.buf_at) as usize;
            for dst in dsts.iter_mut() {
                let n = dst.len();
                dst.copy_from_slice(&self.buf[at..at + n]);
                at += n;
            }
            return Ok(());
        }
        if self.reader_at != Some(offset) {
            self.reader_at = None;
            self.reader.seek(SeekFrom::Start(offset))?;
        }
        let mut rest = &mut *dsts;
        io::IoSliceMut::advance_slices(&mut rest, 0);
        let mut done = 0u64;
        while !rest.is_empty() {
            let n = match self.reader.read_vectored(rest) {
                Ok(0) => {
                    self.reader_at = None;
                    // The file shrank under us: report it where it happened.
                    return Err(ErrorDetails::UnexpectedEof {
                        offset: offset + done,
                        what,
                        needed: needed - done,
                        available: 0,
                    }
                    .into());
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.reader_at = None;
                    return Err(ErrorDetails::Io(e).into());
                }
            };
            done += n as u64;
            io::IoSliceMut::advance_slices(&mut rest, n);
        }
        self.reader_at = Some(offset + needed);
        if self.verify.is_some() {
            let pieces: Vec<&[u8]> = dsts.iter().map(|d| &d[..]).collect();
            self.check(offset, &pieces)?;
        }
        Ok(())
    }

    fn read_exact_at(&mut self, offset: u64, dst: &mut [u8], what: &'static str) -> Result<()> {
        if self.reader_at != Some(offset) {
            self.reader_at = None;
            self.reader.seek(SeekFrom::Start(offset))?;
        }
        match self.reader.read_exact(dst) {
            Ok(()) => {
                self.reader_at = Some(offset + dst.len() as u64);
                self.check(offset, &[&*dst])
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.reader_at = None;
                // The file shrank under us: report it where it happened.
                Err(ErrorDetails::UnexpectedEof {
                    offset,
                    what,
                    needed: dst.len() as u64,
                    available: 0,
                }
                .into())
            }
            Err(e) => {
                self.reader_at = None;
                Err(ErrorDetails::Io(e).into())
            }
        }
    }

    /// Makes `n` bytes (no more than remain) available at the cursor.
    fn fill(&mut self, n: usize, what: &'static str) -> Result<()> {
        let have = self.buf.len() - self.pos;
        if have >= n {
            return Ok(());
        }
        self.buf.drain(..self.pos);
        self.buf_at += self.pos as u64;
        self.pos = 0;
        let end = self.buf_at + self.buf.len() as u64;
        let jumped = std::mem::take(&mut self.jumped);
        let window = match (self.min_request, jumped) {
            _ if self.exact => 0,
            (0, true) => AFTER_JUMP,
            (0, false) => WINDOW,
            (min, true) => {
                self.ahead = min;
                min
            }
            (_, false) => {
                let now = self.ahead;
                self.ahead = (self.ahead * 2).min(MAX_READ_AHEAD);
                now
            }
        };
        let want = (n - self.buf.len()).max(window) as u64;
        let more = want.min(self.len - end) as usize;
        let old = self.buf.len();
        self.buf.resize(old + more, 0);
        let mut tail = std::mem::take(&mut self.buf);
        let result = self.read_exact_at(end, &mut tail[old..], what);
        self.buf = tail;
        if result.is_err() {
            self.buf.truncate(old);
        }
        result
    }

    fn eof(&self, n: usize, what: &'static str) -> Error {
        Error::from(ErrorDetails::UnexpectedEof {
            offset: self.offset(),
            what,
            needed: n as u64,
            available: self.len - self.offset(),
        })
    }
}

impl<R: Read + Seek> Source for SeekSource<R> {
    fn offset(&self) -> u64 {
        self.buf_at + self.pos as u64
    }

    fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        SeekSource::skip(self, n, what)
    }

    fn remaining(&self) -> Option<u64> {
        Some(self.len - self.offset())
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]> {
        if n as u64 > self.len - self.offset() {
            return Err(self.eof(n, what));
        }
        self.fill(n, what)?;
        self.note(self.offset(), n);
        let start = self.pos;
        self.pos += n;
        Ok(&self.buf[start..start + n])
    }

    fn peek(&mut self, n: usize) -> Result<&[u8]> {
        let n = n.min((self.len - self.offset()) as usize);
        self.fill(n, "bytes to look ahead at")?;
        self.note(self.offset(), n);
        Ok(&self.buf[self.pos..self.pos + n])
    }

    fn peek_ahead(&mut self, skip: u64, n: usize) -> Result<Option<Vec<u8>>> {
        let at = self.offset().saturating_add(skip);
        if at > self.len {
            return Ok(None);
        }
        let mut out = vec![0; n.min((self.len - at) as usize)];
        self.read_at(at, &mut out, "bytes to look ahead at")?;
        if let Some(record) = &mut self.record {
            record.push(at, &out);
        }
        Ok(Some(out))
    }

    fn take_vec<T: Element>(&mut self, n: u64, what: &'static str) -> Result<Vec<T>> {
        let total = check_present::<T>(self.offset(), n, self.remaining(), what)?;
        // Present bytes always fit in memory's address space on 64-bit hosts; the vector is
        // read into directly, past the window.
        let count = usize::try_from(n).map_err(|_| self.eof(usize::MAX, what))?;
        let mut out: Vec<T> = zeroed_vec(count)?;
        if !self.parallel_reads {
            crate::pages::fault_in_on_every_core(&mut out);
        }
        let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        let from_buf = (self.buf.len() - self.pos).min(dst.len());
        dst[..from_buf].copy_from_slice(&self.buf[self.pos..self.pos + from_buf]);
        let rest_at = self.offset() + from_buf as u64;
        self.read_at(rest_at, &mut dst[from_buf..], what)?;
        if let Some(record) = &mut self.record {
            record.push(self.buf_at + self.pos as u64, dst);
        }
        self.seek_to(self.offset() + total as u64);
        if cfg!(target_endian = "big") {
            out.iter_mut().for_each(|x| *x = x.to_le());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorDetails;
    use std::io::Cursor;

    #[test]
    fn reads_skips_and_looks_ahead_without_moving() {
        let data: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
        let mut src = SeekSource::new(Cursor::new(&data), data.len() as u64);
        assert_eq!(src.take(3, "x").unwrap(), &[0, 1, 2]);
        src.skip(150_000, "x").unwrap();
        assert_eq!(src.offset(), 150_003);
        assert_eq!(src.u8("x").unwrap(), data[150_003]);
        assert_eq!(
            src.peek_ahead(10, 2).unwrap(),
            Some(vec![data[150_014], data[150_015]])
        );
        assert_eq!(src.peek_ahead(60_000, 2).unwrap(), None);
        let v: Vec<u16> = src.take_vec(1000, "x").unwrap();
        assert_eq!(v[0], u16::from_le_bytes([data[150_004], data[150_005]]));
        assert_eq!(src.offset(), 152_004);
        src.seek_to(1);
        assert_eq!(src.u8("x").unwrap(), 1);
        assert!(matches!(
            src.skip(1 << 20, "the rest").map_err(Error::into_details),
            Err(ErrorDetails::UnexpectedEof { offset: 2, .. })
        ));
        let got = src.take_vec::<u64>(1 << 40, "values");
        assert!(matches!(
            got.as_ref().map_err(Error::details),
            Err(ErrorDetails::UnexpectedEof { offset: 2, .. })
        ));
    }
}
