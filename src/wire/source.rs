//! Where bytes come from: a slice (length known, zero-copy) or any `io::Read` (length unknown,
//! buffers grow only as real bytes arrive). Both track the byte offset for error messages.

use crate::error::ErrorDetails;
use std::io::{self, Read};

use super::element::Element;
use super::values::{decode_le, read_le, zeroed_vec};
use crate::error::{Error, Result};

/// Largest number of bytes read ahead of what is known to exist.
const READ_CHUNK: usize = 1 << 20;

/// First read size: buffers then double only as bytes arrive.
const FIRST_READ: usize = 8 << 10;

/// A cursor over input bytes.
pub trait Source {
    /// Bytes consumed so far: the offset of the next byte.
    fn offset(&self) -> u64;

    /// How many bytes remain, when the input's length is known.
    fn remaining(&self) -> Option<u64>;

    /// The next `n` bytes, consumed. `what` names them in the end-of-input error.
    ///
    /// # Errors
    /// [`crate::ErrorKind::UnexpectedEof`] when fewer than `n` bytes remain; I/O errors of a reader.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]>;

    /// Up to `n` upcoming bytes, not consumed; fewer only at the end of the input.
    ///
    /// # Errors
    /// I/O errors of a reader.
    fn peek(&mut self, n: usize) -> Result<&[u8]>;

    /// Up to `n` bytes starting `skip` bytes past the cursor, not consumed; `None` when fewer
    /// than `skip` bytes remain. Seekable sources read them without buffering what lies
    /// between.
    ///
    /// # Errors
    /// I/O errors of a reader.
    fn peek_ahead(&mut self, skip: u64, n: usize) -> Result<Option<Vec<u8>>> {
        let Ok(skip) = usize::try_from(skip) else {
            return Ok(None);
        };
        let bytes = self.peek(skip.saturating_add(n))?;
        Ok(bytes.get(skip..).map(<[u8]>::to_vec))
    }

    /// The next `n` little-endian values, consumed, in a new vector.
    ///
    /// # Errors
    /// As [`Source::take`]; no more is allocated than the bytes present can fill.
    fn take_vec<T: Element>(&mut self, n: u64, what: &'static str) -> Result<Vec<T>>;

    /// Moves `n` bytes on without looking at them: a seekable source jumps, others read.
    ///
    /// # Errors
    /// [`crate::ErrorKind::UnexpectedEof`] when fewer than `n` bytes remain; I/O errors.
    fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        skip_by_reading(self, n, what)
    }

    /// The input not yet consumed, when all of it is in memory (a slice): readers that can
    /// work on it in place (in parallel, say) use it, then [`Source::take`] what they used.
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }

    /// Whether the input is exhausted.
    ///
    /// # Errors
    /// I/O errors of a reader.
    fn at_end(&mut self) -> Result<bool> {
        Ok(self.peek(1)?.is_empty())
    }

    /// Reads one byte.
    ///
    /// # Errors
    /// As [`Source::take`].
    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    /// Reads a little-endian `u16`.
    ///
    /// # Errors
    /// As [`Source::take`].
    fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(read_le(self.take(2, what)?))
    }

    /// Reads a little-endian `u32`.
    ///
    /// # Errors
    /// As [`Source::take`].
    fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(read_le(self.take(4, what)?))
    }

    /// Reads a little-endian `u64`.
    ///
    /// # Errors
    /// As [`Source::take`].
    fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(read_le(self.take(8, what)?))
    }

    /// Reads at most `limit` bytes in all ([`crate::Options::max_bytes`]), for a source
    /// that streams; a source in memory has its length already.
    fn limit(&mut self, _limit: u64) {}
}

impl<S: Source + ?Sized> Source for &mut S {
    fn offset(&self) -> u64 {
        (**self).offset()
    }

    fn limit(&mut self, limit: u64) {
        (**self).limit(limit);
    }

    fn remaining(&self) -> Option<u64> {
        (**self).remaining()
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]> {
        (**self).take(n, what)
    }

    fn peek(&mut self, n: usize) -> Result<&[u8]> {
        (**self).peek(n)
    }

    fn peek_ahead(&mut self, skip: u64, n: usize) -> Result<Option<Vec<u8>>> {
        (**self).peek_ahead(skip, n)
    }

    fn take_vec<T: Element>(&mut self, n: u64, what: &'static str) -> Result<Vec<T>> {
        (**self).take_vec(n, what)
    }

    fn in_memory(&self) -> Option<&[u8]> {
        (**self).in_memory()
    }

    fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        (**self).skip(n, what)
    }
}

/// Checks that `n` values of `T` can be among the `remaining` bytes (when known); returns
/// their length in bytes.
pub(crate) fn check_present<T>(
    offset: u64,
    n: u64,
    remaining: Option<u64>,
    what: &'static str,
) -> Result<u128> {
    let needed = u128::from(n) * std::mem::size_of::<T>() as u128;
    match remaining {
        Some(available) if needed > u128::from(available) => Err(ErrorDetails::UnexpectedEof {
            offset,
            what,
            needed: u64::try_from(needed).unwrap_or(u64::MAX),
            available,
        }
        .into()),
        _ => Ok(needed),
    }
}

/// Input held in memory.
#[derive(Debug, Clone)]
pub struct SliceSource<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> SliceSource<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        SliceSource {
            data,
            pos: 0,
            base: 0,
        }
    }

    /// A cursor over `data`, which starts at byte `base` of a larger input.
    pub fn with_base(data: &'a [u8], base: u64) -> Self {
        SliceSource { data, pos: 0, base }
    }

    /// The bytes not yet consumed.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }
}

/// [`Source::skip`] for sources that cannot jump: the bytes are read, a MiB at a time.
fn skip_by_reading<S: Source + ?Sized>(src: &mut S, n: u64, what: &'static str) -> Result<()> {
    let mut left = n;
    while left > 0 {
        let step = left.min(1 << 20) as usize;
        src.take(step, what)?;
        left -= step as u64;
    }
    Ok(())
}

impl Source for SliceSource<'_> {
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn remaining(&self) -> Option<u64> {
        Some((self.data.len() - self.pos) as u64)
    }

    #[inline]
    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]> {
        let available = self.data.len() - self.pos;
        if n > available {
            return Err(ErrorDetails::UnexpectedEof {
                offset: self.base + self.pos as u64,
                what,
                needed: n as u64,
                available: available as u64,
            }
            .into());
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn peek(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.data.len().min(self.pos.saturating_add(n));
        Ok(&self.data[self.pos..end])
    }

    fn take_vec<T: Element>(&mut self, n: u64, what: &'static str) -> Result<Vec<T>> {
        let bytes = check_present::<T>(self.offset(), n, self.remaining(), what)?;
        // Present bytes always fit in usize.
        decode_le(self.take(bytes as usize, what)?)
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self.rest())
    }
}

/// Reads into `dst`, returning how many bytes arrived (0 at end of input).
fn read_some<R: Read>(reader: &mut R, dst: &mut [u8]) -> Result<usize> {
    loop {
        match reader.read(dst) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ErrorDetails::Io(e).into()),
        }
    }
}

/// Input from a reader whose length is unknown (or given as a hint, for files).
#[derive(Debug)]
pub struct IoSource<R> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    offset: u64,
    eof: bool,
    /// Bytes known to be in the input, for files; `None` for streams.
    known_len: Option<u64>,
    /// The most bytes this source may read in all.
    limit: u64,
    /// Whether the reader splits large reads between the cores itself (each core then takes
    /// the page faults of what it reads into), so that new vectors need no prefaulting.
    parallel_reads: bool,
    /// How to move the reader to an offset, for a seekable one ([`IoSource::seekable`]).
    seek: Option<fn(&mut R, u64) -> std::io::Result<u64>>,
}

impl<R: Read> IoSource<R> {
    /// A source over `reader`, reading at most `limit` bytes in all.
    pub fn new(reader: R, limit: u64) -> Self {
        IoSource {
            reader,
            buf: Vec::new(),
            pos: 0,
            offset: 0,
            eof: false,
            known_len: None,
            limit,
            parallel_reads: false,
            seek: None,
        }
    }

    /// Lets [`Source::skip`] jump past bytes by seeking instead of reading them.
    pub(crate) fn seekable(mut self) -> Self
    where
        R: std::io::Seek,
    {
        self.seek = Some(|reader, to| reader.seek(std::io::SeekFrom::Start(to)));
        self
    }

    /// Tells the source that `reader` reads large buffers on every core itself.
    pub(crate) fn with_parallel_reads(mut self, yes: bool) -> Self {
        self.parallel_reads = yes;
        self
    }

    /// Declares that the input holds exactly `len` bytes (a file's size), so that vectors are
    /// allocated once instead of grown.
    pub fn with_known_len(mut self, len: u64) -> Self {
        self.known_len = Some(len);
        self
    }

    fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Total bytes pulled from the reader so far.
    fn pulled(&self) -> u64 {
        self.offset + self.buffered() as u64
    }

    fn check_limit(&self, extra: usize, what: &'static str) -> Result<()> {
        if self.offset.saturating_add(extra as u64) > self.limit {
            return Err(ErrorDetails::LimitExceeded {
                offset: self.offset,
                what,
                limit: self.limit,
            }
            .into());
        }
        Ok(())
    }

    /// Makes at least `n` bytes available in the buffer, or as many as the input still has.
    fn fill(&mut self, n: usize) -> Result<()> {
        if self.buffered() >= n || self.eof {
            return Ok(());
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        while self.buf.len() < n && !self.eof {
            let old = self.buf.len();
            // Grow with what has arrived, never far ahead of it.
            let want = (n - old).clamp(FIRST_READ, old.clamp(FIRST_READ, READ_CHUNK));
            self.buf.resize(old + want, 0);
            let got = read_some(&mut self.reader, &mut self.buf[old..]);
            let got = got.inspect_err(|_| self.buf.truncate(old))?;
            self.buf.truncate(old + got);
            if got == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    fn eof_error(&self, needed: usize, what: &'static str) -> Error {
        Error::from(ErrorDetails::UnexpectedEof {
            offset: self.offset,
            what,
            needed: needed as u64,
            available: self.buffered() as u64,
        })
    }
}

impl<R: Read> Source for IoSource<R> {
    fn limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    fn offset(&self) -> u64 {
        self.offset
    }

    fn remaining(&self) -> Option<u64> {
        self.known_len.map(|len| len.saturating_sub(self.offset))
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]> {
        self.check_limit(n, what)?;
        self.fill(n)?;
        if self.buffered() < n {
            return Err(self.eof_error(n, what));
        }
        let start = self.pos;
        self.pos += n;
        self.offset += n as u64;
        Ok(&self.buf[start..start + n])
    }

    fn peek(&mut self, n: usize) -> Result<&[u8]> {
        self.fill(n)?;
        let end = self.buf.len().min(self.pos + n);
        Ok(&self.buf[self.pos..end])
    }

    fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        let buffered = self.buffered() as u64;
        let fits = |len: u64| self.offset.checked_add(n).is_some_and(|end| end <= len);
        match (self.seek, self.known_len) {
            (Some(seek), Some(len)) if n > buffered && fits(len) && fits(self.limit) => {
                let to = self.pulled() + (n - buffered);
                seek(&mut self.reader, to)?;
                self.buf.clear();
                self.pos = 0;
                self.offset += n;
                Ok(())
            }
            _ => skip_by_reading(self, n, what),
        }
    }

    fn take_vec<T: Element>(&mut self, n: u64, what: &'static str) -> Result<Vec<T>> {
        let total = check_present::<T>(self.offset, n, self.remaining(), what)?;
        // No limit (u64::MAX) lets even impossible sizes stream on to the end of the input.
        if self.limit < u64::MAX && self.offset as u128 + total > u128::from(self.limit) {
            return Err(ErrorDetails::LimitExceeded {
                offset: self.offset,
                what,
                limit: self.limit,
            }
            .into());
        }
        // More than the address space can only end at the end of the input (or the limit).
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let size = std::mem::size_of::<T>();
        // A known length allows one exact allocation; otherwise grow as bytes arrive.
        let step = if self.remaining().is_some() {
            n
        } else {
            (FIRST_READ / size).max(1)
        };
        // With a known length the vector is allocated zeroed by the allocator (fresh pages,
        // no memset), so the read is the only pass over it.
        let mut out: Vec<T> = if step == n {
            let mut out = zeroed_vec(n)?;
            if !self.parallel_reads {
                crate::pages::fault_in_on_every_core(&mut out);
            }
            out
        } else {
            Vec::new()
        };
        let mut old = 0;
        let start_offset = self.offset;
        while old < n {
            let grow = (n - old).min(step.max(old));
            if out.len() < old + grow {
                out.try_reserve_exact(grow).map_err(|_| {
                    Error::from(ErrorDetails::OutOfMemory {
                        bytes: grow as u128 * size as u128,
                    })
                })?;
                out.resize(old + grow, T::zeroed());
            }
            let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut out[old..old + grow]);
            let mut filled = 0;
            let from_buf = self.buffered().min(dst.len());
            dst[..from_buf].copy_from_slice(&self.buf[self.pos..self.pos + from_buf]);
            self.pos += from_buf;
            filled += from_buf;
            while filled < dst.len() {
                let got = read_some(&mut self.reader, &mut dst[filled..])?;
                if got == 0 {
                    self.eof = true;
                    let have = (self.pulled() - start_offset) as usize + filled;
                    self.offset = start_offset;
                    return Err(ErrorDetails::UnexpectedEof {
                        offset: start_offset,
                        what,
                        needed: u64::try_from(total).unwrap_or(u64::MAX),
                        available: have as u64,
                    }
                    .into());
                }
                filled += got;
            }
            self.offset += dst.len() as u64;
            old += grow;
        }
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

    #[test]
    fn a_seekable_source_jumps_past_bytes_and_reads_on_after_them() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
        for seekable in [false, true] {
            let src = IoSource::new(std::io::Cursor::new(bytes.clone()), u64::MAX)
                .with_known_len(bytes.len() as u64);
            let mut src = if seekable { src.seekable() } else { src };
            assert_eq!(src.take(10, "").unwrap(), &bytes[..10]);
            src.skip(5, "").unwrap(); // within what is buffered
            src.skip(200_000, "").unwrap(); // past it
            assert_eq!(src.offset(), 200_015);
            assert_eq!(src.take(4, "").unwrap(), &bytes[200_015..200_019]);
            let err = src.skip(100_000, "the rest").unwrap_err();
            assert!(
                matches!(err.details(), ErrorDetails::UnexpectedEof { .. }),
                "{err:?}"
            );
        }
    }

    #[test]
    fn slice_source_reads_little_endian_and_reports_eof() {
        let data = [1u8, 0x34, 0x12, 9, 0, 0, 0];
        let mut s = SliceSource::new(&data);
        assert_eq!(s.u8("a").unwrap(), 1);
        assert_eq!(s.u16("b").unwrap(), 0x1234);
        match s.u64("c").map_err(Error::into_details) {
            Err(ErrorDetails::UnexpectedEof {
                offset: 3,
                needed: 8,
                available: 4,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(s.u32("d").unwrap(), 9);
        assert!(s.at_end().unwrap());
    }

    #[test]
    fn io_source_grows_only_with_real_bytes() {
        let data: Vec<u8> = (0..40u8).collect();
        let mut s = IoSource::new(&data[..], u64::MAX);
        assert_eq!(s.peek(4).unwrap(), &[0, 1, 2, 3]);
        assert_eq!(s.take(2, "x").unwrap(), &[0, 1]);
        let v: Vec<u16> = s.take_vec(3, "v").unwrap();
        assert_eq!(v, vec![0x0302, 0x0504, 0x0706]);
        assert_eq!(s.offset(), 8);
        // A claim of 2^40 values fails at the end of the input without allocating for them.
        match s
            .take_vec::<u64>(1 << 40, "huge")
            .map_err(Error::into_details)
        {
            Err(ErrorDetails::UnexpectedEof {
                offset: 8,
                available: 32,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn io_source_honours_its_limit() {
        let data = [0u8; 64];
        let mut s = IoSource::new(&data[..], 16);
        s.take(10, "a").unwrap();
        let got = s.take(10, "b");
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::LimitExceeded { limit: 16, .. })
            ),
            "{got:?}"
        );
    }
}
