//! How a [`crate::DbdfFile`] reads its file: through a read-only memory map, with plain
//! (positional, on every core) reads, or from any [`ReadAt`] source.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use memmap2::Mmap;

use super::parallel_file::ParallelFile;
use crate::error::Result;
use crate::options::Options;
use crate::wire::read_at::{Positional, ReadAt};
use std::sync::Arc;

/// How a [`crate::DbdfFile`] reads its file: through a read-only memory map or with plain
/// reads ([`Options::memory_map`]), or from a [`ReadAt`] source
/// ([`Options::open_at`]).
#[derive(Debug)]
pub struct FileReader(pub(super) Backing);

#[derive(Debug)]
pub(super) enum Backing {
    Mapped(Cursor<Mmap>),
    Plain(ParallelFile),
    At(Positional<Arc<dyn ReadAt>>),
}

impl FileReader {
    pub(super) fn open(path: &Path, options: &Options) -> Result<FileReader> {
        let file = File::open(path)?;
        if options.memory_map && file.metadata()?.len() > 0 {
            // SAFETY: the map is read-only and private to this reader. Every offset read
            // through it is checked against the length the file had when mapped (the index
            // and SeekSource compare each size with it), so its contents cannot lead a read
            // outside the map; the one remaining hazard, another process truncating the
            // file meanwhile, is documented on Options::memory_map.
            #[allow(unsafe_code)]
            let map = unsafe { Mmap::map(&file)? };
            return Ok(FileReader(Backing::Mapped(Cursor::new(map))));
        }
        Ok(FileReader(Backing::Plain(ParallelFile(file))))
    }

    /// A byte source over `source`, of `len` bytes, reading as its minimum request asks.
    pub(super) fn source_over(
        source: Arc<dyn ReadAt>,
        len: u64,
    ) -> crate::wire::SeekSource<FileReader> {
        let min_request = source.min_request();
        let reads_ahead = source.reads_ahead();
        let reader = FileReader(Backing::At(Positional::new(source, len)));
        crate::wire::SeekSource::new(reader, len)
            .with_min_request(min_request)
            .with_reads_ahead(reads_ahead)
            .with_parallel_reads(min_request == 0 && crate::platform::positional_reads())
    }

    /// The [`ReadAt`] source read, if this reader reads one.
    pub(super) fn source(&self) -> Option<&Arc<dyn ReadAt>> {
        match &self.0 {
            Backing::At(cursor) => Some(cursor.source()),
            _ => None,
        }
    }
}

impl Read for FileReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.0 {
            Backing::Mapped(map) => map.read(buf),
            Backing::Plain(file) => file.read(buf),
            Backing::At(source) => read_positional(source, buf),
        }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        match &mut self.0 {
            Backing::Mapped(map) => map.read_exact(buf),
            Backing::Plain(file) => file.read_exact(buf),
            Backing::At(source) => {
                let n = read_positional(source, buf)?;
                match n == buf.len() {
                    true => Ok(()),
                    false => source.read_exact(&mut buf[n..]),
                }
            }
        }
    }

    // Forwarded: the default fills only the first buffer, a system call per window row.
    fn read_vectored(&mut self, bufs: &mut [std::io::IoSliceMut<'_>]) -> std::io::Result<usize> {
        match &mut self.0 {
            Backing::Mapped(map) => map.read_vectored(bufs),
            Backing::Plain(file) => file.read_vectored(bufs),
            Backing::At(source) => source.read_vectored(bufs),
        }
    }
}

/// A read of a source that needs no minimum request (memory, a local file) on every core
/// when it is large, as a file opened by path is read; one request otherwise.
fn read_positional(cursor: &mut Positional<Arc<dyn ReadAt>>, buf: &mut [u8]) -> io::Result<usize> {
    #[cfg(unix)]
    if cursor.source().min_request() == 0 && super::parallel_file::splits(buf.len()) {
        return cursor.read_on_every_core(buf);
    }
    cursor.read(buf)
}

impl Seek for FileReader {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match &mut self.0 {
            Backing::Mapped(map) => map.seek(pos),
            Backing::Plain(file) => file.seek(pos),
            Backing::At(source) => source.seek(pos),
        }
    }
}
