//! A Parquet file as the Parquet crate reads it (its `ChunkReader`): every read checked
//! against the file's length before anything is allocated for it (a footer's sizes are the
//! input's word), pages cut out of windows read whole.
//!
//! The crate asks for each page header and then for each page, column after column. From a
//! remote source a window is a whole row group (one request), or a few MiB of a larger one.
//! From a local file a window is one page and the header after it, kept for each column chunk
//! being read: one window for the whole file read ahead 2 MiB from every page, and another
//! column's page replaced it before its read-ahead was used (half again the file's bytes
//! were read, each into a fresh buffer).

use std::io::Read;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{Buf, Bytes};
use parquet::errors::ParquetError;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::SchemaDescriptor;
use serde_daphne::ReadAt;

/// A Parquet file read through windows (see the module's documentation).
pub(super) struct Checked {
    pub(super) file: Arc<dyn ReadAt>,
    len: u64,
    /// What is read of each row group: from a remote source the whole group (or runs of the
    /// picked columns' chunks), from a local file each column chunk read, apart; none until
    /// the footer is read.
    extents: Arc<[Range<u64>]>,
    /// Windows held, the latest last: (where it starts, its bytes).
    windows: Mutex<Vec<(u64, Bytes)>>,
    /// The most windows held: one, or one for each column chunk of a row group and one more.
    most: usize,
}

/// Bytes read from a local file where no extent bounds the read (a footer and what precedes
/// it).
const WINDOW: usize = 2 << 20;

/// The largest row group fetched whole from a remote source.
const GROUP_BYTES: u64 = 64 << 20;

/// Bytes read at a time for a page header not held (Thrift headers are a few dozen bytes,
/// statistics make some hundreds; a longer one is read on).
const HEADER: u64 = 4 << 10;

impl Checked {
    pub(super) fn new(file: Arc<dyn ReadAt>, len: u64) -> Checked {
        Checked {
            file,
            len,
            extents: Arc::from([]),
            windows: Mutex::new(Vec::new()),
            most: 1,
        }
    }

    fn remote(&self) -> bool {
        self.file.min_request() > 0
    }

    /// Reads through the row groups' `extents` ([`extents_of`] from a remote source,
    /// [`chunks_of`] from a local file), `columns` of them a row group.
    pub(super) fn reading(mut self, extents: Vec<Range<u64>>, columns: usize) -> Checked {
        self.extents = extents.into();
        self.most = match self.remote() {
            true => 1,
            false => columns + 1,
        };
        self
    }

    /// Another handle on the file, with windows of its own that start as this one's (the
    /// bytes shared): a small remote file that came whole with its footer is not fetched
    /// again by each row group's reader.
    pub(super) fn try_clone(&self) -> Checked {
        let held = match self.windows.lock() {
            Ok(windows) => windows.clone(),
            Err(_) => Vec::new(),
        };
        Checked {
            file: self.file.clone(),
            len: self.len,
            extents: self.extents.clone(),
            windows: Mutex::new(held),
            most: self.most,
        }
    }

    /// The extent that holds `start`.
    fn extent_at(&self, start: u64) -> Option<&Range<u64>> {
        self.extents.iter().find(|g| g.contains(&start))
    }

    /// Where the read that brings `length` bytes at `start` into a window begins, and its
    /// size. Inside an extent: from a remote source the rest of it when at most
    /// [`GROUP_BYTES`], windows that end with it when larger; from a local file the bytes
    /// asked for and a page header's after them. Elsewhere a window from `start`, or the one
    /// that ends at the end of the file (a footer and its length in one).
    fn extent(&self, start: u64, length: usize) -> (u64, usize) {
        let end = start + length as u64;
        // A remote source's footer comes with one minimum request, its pages (in row groups
        // too large to hold) a few windows at a time.
        let (ahead, tail) = match self.remote() {
            false => (WINDOW, WINDOW),
            true => (4 * WINDOW, self.file.min_request()),
        };
        if let Some(extent) = self.extent_at(start).filter(|g| end <= g.end) {
            let rest = extent.end - start;
            let size = match self.remote() {
                true if rest <= GROUP_BYTES => rest,
                true => (length.max(ahead) as u64).min(rest),
                false => (length as u64).saturating_add(HEADER).min(rest),
            };
            return (start, size as usize);
        }
        let size = length.max(ahead) as u64;
        if start + size <= self.len {
            return (start, size as usize);
        }
        let from = self.len.saturating_sub(length.max(tail) as u64).min(start);
        (from, (self.len - from) as usize)
    }

    fn check(&self, start: u64, length: u64) -> parquet::errors::Result<()> {
        match start.checked_add(length) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(ParquetError::General(format!(
                "{length} bytes at byte {start} run past the end of the {}-byte file",
                self.len
            ))),
        }
    }

    fn windows(&self) -> parquet::errors::Result<MutexGuard<'_, Vec<(u64, Bytes)>>> {
        (self.windows.lock()).map_err(|_| ParquetError::General("a reader panicked".into()))
    }

    /// The held bytes from `start` to the end of the latest window that holds `start`.
    fn held(windows: &[(u64, Bytes)], start: u64) -> Option<Bytes> {
        let (at, held) = (windows.iter().rev())
            .find(|(at, held)| (*at..at + held.len() as u64).contains(&start))?;
        Some(held.slice((start - at) as usize..))
    }

    /// `length` bytes from `start` (checked), out of the window that holds them, read anew
    /// where none does.
    fn bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.check(start, length as u64)?;
        let mut windows = self.windows()?;
        let held = Self::held(&windows, start).unwrap_or_default();
        if held.len() >= length {
            return Ok(held.slice(..length));
        }
        let (from, size) = self.extent(start, length);
        let mut buffer = serde_daphne::lowlevel::zeroed_vec::<u8>(size)
            .map_err(|e| ParquetError::General(e.to_string()))?;
        // What a window holds of the start (the read-ahead of a header, or of the page
        // before) is copied, not read again: each byte of a chunk is read once.
        let held = match from == start {
            true => held,
            false => Self::held(&windows, from).unwrap_or_default(),
        };
        let copied = held.len().min(size);
        buffer[..copied].copy_from_slice(&held[..copied]);
        self.file
            .read_exact_at(&mut buffer[copied..], from + copied as u64)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        let fresh = Bytes::from(buffer);
        // A window read before in the same extent lies behind this one.
        let extent = self.extent_at(from);
        windows.retain(|(at, _)| !extent.is_some_and(|g| g.contains(at)));
        if windows.len() >= self.most {
            windows.remove(0);
        }
        windows.push((from, fresh.clone()));
        let skip = (start - from) as usize;
        Ok(fresh.slice(skip..skip + length))
    }
}

impl Length for Checked {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Checked {
    type T = HeaderRead;

    /// A page header: the bytes a window holds from `start` on (one read for it where none
    /// does), then more as the crate reads on, up to the end of the header's extent (or of
    /// the file).
    fn get_read(&self, start: u64) -> parquet::errors::Result<HeaderRead> {
        self.check(start, 0)?;
        let end = self
            .extent_at(start)
            .map_or(self.len, |g| g.end.min(self.len));
        let held = Self::held(&self.windows()?, start);
        let held = match held {
            Some(held) => held,
            None if end > start => self.bytes(start, (end - start).min(HEADER) as usize)?,
            None => Bytes::new(),
        };
        let held = held.slice(..held.len().min((end - start) as usize));
        Ok(HeaderRead {
            next: start + held.len() as u64,
            held,
            file: self.file.clone(),
            end,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.bytes(start, length)
    }
}

/// A page header's bytes (see [`Checked::get_read`]).
pub(super) struct HeaderRead {
    held: Bytes,
    file: Arc<dyn ReadAt>,
    /// Where the bytes after the held ones start.
    next: u64,
    /// Where the header's extent ends.
    end: u64,
}

impl Read for HeaderRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.held.is_empty() {
            let n = (self.end - self.next).min(HEADER) as usize;
            if n == 0 || buf.is_empty() {
                return Ok(0);
            }
            let mut more = vec![0; n];
            self.file.read_exact_at(&mut more, self.next)?;
            self.next += n as u64;
            self.held = Bytes::from(more);
        }
        let n = buf.len().min(self.held.len());
        buf[..n].copy_from_slice(&self.held[..n]);
        self.held.advance(n);
        Ok(n)
    }
}

/// The bytes of a row group's column chunks read from a remote source (all, or those of the
/// `picked` columns: positions in the schema's root), as runs of adjacent chunks (as its
/// metadata records them: the reads of them are checked against the file's length all the
/// same).
pub(super) fn extents_of(
    group: &RowGroupMetaData,
    schema: &SchemaDescriptor,
    picked: Option<&[usize]>,
) -> Vec<Range<u64>> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for chunk in chunks_of(group, schema, picked) {
        match runs.last_mut() {
            Some(run) if run.end == chunk.start || picked.is_none() => {
                run.start = run.start.min(chunk.start);
                run.end = run.end.max(chunk.end);
            }
            _ => runs.push(chunk),
        }
    }
    runs
}

/// The byte ranges of a row group's column chunks (all, or those of the `picked` columns),
/// as its metadata records them.
pub(super) fn chunks_of<'a>(
    group: &'a RowGroupMetaData,
    schema: &'a SchemaDescriptor,
    picked: Option<&'a [usize]>,
) -> impl Iterator<Item = Range<u64>> + 'a {
    let columns = group.columns().iter().enumerate();
    columns.filter_map(move |(leaf, chunk)| {
        let read = picked.is_none_or(|p| {
            leaf < schema.num_columns() && p.contains(&schema.get_column_root_idx(leaf))
        });
        // As `byte_range`, which panics on a negative offset or size: such a chunk is no
        // extent (its reads are checked all the same; the crate's reader refuses it).
        let at = chunk
            .dictionary_page_offset()
            .unwrap_or(chunk.data_page_offset());
        let (at, n) = (
            u64::try_from(at).ok()?,
            u64::try_from(chunk.compressed_size()).ok()?,
        );
        read.then(|| at..at.saturating_add(n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Bytes in memory that count what is read of them.
    #[derive(Debug)]
    struct Counted(Vec<u8>, AtomicU64);

    impl ReadAt for Counted {
        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.len() as u64)
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.1.fetch_add(buf.len() as u64, Ordering::Relaxed);
            self.0.read_exact_at(buf, offset)
        }
    }

    fn file(len: usize) -> (Arc<Counted>, Vec<u8>) {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        (Arc::new(Counted(bytes.clone(), AtomicU64::new(0))), bytes)
    }

    #[test]
    fn pages_of_columns_read_in_turn_are_read_once() {
        const MIB: usize = 1 << 20;
        let (source, bytes) = file(6 * MIB);
        let chunks = vec![0..3 * MIB as u64, 3 * MIB as u64..6 * MIB as u64];
        let checked = Checked::new(source.clone(), bytes.len() as u64).reading(chunks, 2);
        // Two columns of three pages each, a 100-byte header before each page, read as the
        // Parquet crate reads them: a page of one column, then one of the other.
        let page = MIB - 100;
        for p in 0..3 {
            for column in 0..2 {
                let header = (column * 3 + p) * MIB;
                let mut read = checked.get_read(header as u64).unwrap();
                let mut head = [0; 100];
                read.read_exact(&mut head).unwrap();
                assert_eq!(head, bytes[header..header + 100]);
                let body = checked.get_bytes(header as u64 + 100, page).unwrap();
                assert_eq!(body, bytes[header + 100..header + MIB]);
            }
        }
        // Each byte once. (A window for all read 2 MiB from each page, replaced by the other
        // column's before its second page was read: 10 MiB.)
        assert_eq!(source.1.load(Ordering::Relaxed), 6 * MIB as u64);
    }

    #[test]
    fn a_header_longer_than_a_read_is_read_on_to_its_extents_end() {
        let (source, bytes) = file(3 * HEADER as usize);
        let end = bytes.len() as u64 - 10;
        let extents = std::iter::once(5..end).collect();
        let checked = Checked::new(source, bytes.len() as u64).reading(extents, 1);
        let mut all = Vec::new();
        checked.get_read(7).unwrap().read_to_end(&mut all).unwrap();
        assert_eq!(all, bytes[7..end as usize]);
        // A header past the file's end is an error, not a read.
        assert!(checked.get_read(bytes.len() as u64 + 1).is_err());
    }
}
