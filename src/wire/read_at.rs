//! The positional-read seam: lazy reads ([`crate::DbdfFile`]) from any source that reads bytes
//! at an offset, such as a local file, memory, or an object in a store that the caller
//! reaches (the `dbdf` crate's object-store reader is one). The trait is synchronous and
//! takes `&self`, so one source serves every handle and thread that reads it.

use std::fmt;
use std::io::{self, IoSliceMut, Read, Seek, SeekFrom};
use std::sync::Arc;

/// A source of positional reads: its length, and its bytes at any offset.
///
/// Remote sources tell readers, through [`ReadAt::min_request`], that a request costs a round
/// trip whatever its size: readers then read headers ahead in large windows and fetch each
/// block they read in one request.
///
/// ```
/// use std::sync::Arc;
/// use serde_daphne::{DbdfFile, Dense, Options, ReadAt};
///
/// let bytes = serde_daphne::to_vec(&Dense(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]]))?;
/// assert_eq!(bytes.size()?, bytes.len() as u64);
/// let source: Arc<dyn ReadAt> = Arc::new(bytes);
/// let mut file = Options::new().open_at(source, None)?;
/// assert_eq!(file.read_window::<f64>(0, 1..2, 0..2)?, ndarray::array![[3.0, 4.0]]);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
pub trait ReadAt: Send + Sync + fmt::Debug {
    /// The source's length in bytes.
    ///
    /// # Errors
    /// I/O errors.
    fn size(&self) -> io::Result<u64>;

    /// Fills `buf` with the bytes at `offset`.
    ///
    /// # Errors
    /// [`io::ErrorKind::UnexpectedEof`] when the source ends first; I/O errors.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// Fills `bufs`, in order, with the consecutive bytes from `offset`: one request for a
    /// remote source, one system call for a local file. The default reads each buffer in turn.
    ///
    /// # Errors
    /// As [`ReadAt::read_exact_at`].
    fn read_exact_vectored_at(&self, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<()> {
        let mut at = offset;
        for buf in bufs.iter_mut() {
            self.read_exact_at(buf, at)?;
            at += buf.len() as u64;
        }
        Ok(())
    }

    /// The size below which a read costs as much as a read of this size (a remote source's
    /// round trip); 0, the default, for local sources. Readers of a source with a minimum read
    /// ahead by at least this much and fetch each block they read whole, in one request.
    fn min_request(&self) -> usize {
        0
    }

    /// From what length on reads that run on from one to the next are served from bytes
    /// the source fetched ahead (a read-ahead layer over a remote object; shorter runs it may
    /// read as asked, a request each): readers then read such runs of a dense block's rows
    /// as they need them, where fetching them whole first would hold the same bytes twice.
    /// `None`, the default: never.
    fn reads_ahead(&self) -> Option<u64> {
        None
    }
}

/// Sources shared or borrowed read as the source itself.
macro_rules! forward_read_at {
    ($($outer:ty),*) => {$(
        impl<T: ReadAt + ?Sized> ReadAt for $outer {
            fn size(&self) -> io::Result<u64> {
                (**self).size()
            }
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                (**self).read_exact_at(buf, offset)
            }
            fn read_exact_vectored_at(
                &self,
                bufs: &mut [IoSliceMut<'_>],
                offset: u64,
            ) -> io::Result<()> {
                (**self).read_exact_vectored_at(bufs, offset)
            }
            fn min_request(&self) -> usize {
                (**self).min_request()
            }
            fn reads_ahead(&self) -> Option<u64> {
                (**self).reads_ahead()
            }
        }
    )*};
}
forward_read_at!(Arc<T>, &T, Box<T>);

impl ReadAt for Vec<u8> {
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let bytes = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

#[cfg(unix)]
impl ReadAt for std::fs::File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
    fn read_exact_vectored_at(
        &self,
        mut bufs: &mut [IoSliceMut<'_>],
        mut offset: u64,
    ) -> io::Result<()> {
        while !bufs.is_empty() {
            let n = bufs.len().min(crate::positional::MAX_BUFFERS);
            let (now, rest) = bufs.split_at_mut(n);
            crate::positional::read_exact_vectored_at(self, now, offset)?;
            offset += now.iter().map(|b| b.len() as u64).sum::<u64>();
            bufs = rest;
        }
        Ok(())
    }
}

// Windows reads at an offset with `seek_read`, which also moves the handle's cursor.
#[cfg(windows)]
impl ReadAt for std::fs::File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        use std::os::windows::fs::FileExt;
        while !buf.is_empty() {
            match self.seek_read(buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Fills `buf` from byte `at` of `source` (a file, memory), each core reading its share (and
/// taking the page faults of the memory it fills).
///
/// # Errors
/// I/O errors; `UnexpectedEof` if the source ends first.
#[cfg_attr(not(unix), allow(dead_code))] // the positional paths are Unix's
pub(crate) fn read_exact_at_on_every_core(
    source: &dyn ReadAt,
    buf: &mut [u8],
    at: u64,
) -> io::Result<()> {
    crate::pages::read_fresh(buf, |start, piece| {
        source.read_exact_at(piece, at + start as u64)
    })
}

/// A [`ReadAt`] read as a `Read + Seek` cursor: each read is one positional read (one request
/// of a remote source), never more than the source holds.
#[derive(Debug)]
pub struct Positional<T> {
    source: T,
    pos: u64,
    len: u64,
}

impl<T: ReadAt> Positional<T> {
    /// A cursor at the start of `source`, of `len` bytes.
    pub fn new(source: T, len: u64) -> Positional<T> {
        Positional {
            source,
            pos: 0,
            len,
        }
    }

    /// The source.
    pub fn source(&self) -> &T {
        &self.source
    }

    /// [`Read::read`], each core reading its share of `buf` (for a local source).
    ///
    /// # Errors
    /// As [`ReadAt::read_exact_at`].
    #[cfg_attr(not(unix), allow(dead_code))] // the positional paths are Unix's
    pub(crate) fn read_on_every_core(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.len.saturating_sub(self.pos)) as usize;
        read_exact_at_on_every_core(&self.source, &mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<T: ReadAt> Read for Positional<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.len.saturating_sub(self.pos)) as usize;
        self.source.read_exact_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        let total: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        if total > self.len.saturating_sub(self.pos) {
            // Near the end: what is there, through the plain path.
            return match bufs.iter_mut().find(|b| !b.is_empty()) {
                Some(buf) => self.read(buf),
                None => Ok(0),
            };
        }
        self.source.read_exact_vectored_at(bufs, self.pos)?;
        self.pos += total;
        Ok(total as usize)
    }
}

impl<T> Seek for Positional<T> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
        };
        self.pos = pos.ok_or(io::ErrorKind::InvalidInput)?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_exactly_what_the_source_holds() {
        let bytes: Vec<u8> = (0..100u8).collect();
        let mut cursor = Positional::new(bytes.clone(), 100);
        cursor.seek(SeekFrom::Start(95)).unwrap();
        let mut buf = [0u8; 10];
        assert_eq!(cursor.read(&mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], &bytes[95..]);
        assert_eq!(cursor.read(&mut buf).unwrap(), 0);
        cursor.seek(SeekFrom::Start(10)).unwrap();
        let (mut a, mut b) = ([0u8; 3], [0u8; 4]);
        let mut bufs = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
        assert_eq!(cursor.read_vectored(&mut bufs).unwrap(), 7);
        assert_eq!((a, b), ([10, 11, 12], [13, 14, 15, 16]));
        let err = bytes.read_exact_at(&mut [0u8; 2], 99).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
