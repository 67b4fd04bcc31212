//! Where a [`DbdfWriter`] writes: a file of its own (under a temporary name until finished)
//! or a caller's stream (a streaming upload, say), which is never read back. Of a stream the
//! writer keeps the bytes its sidecars are made from: each header as it passes (for the
//! block index, walked over them alone when the stream ends) and its first bytes (for
//! DAPHNE's `.meta`; telling the dialect of a small file reads them), within [`MOST_KEPT`].

use std::fs::File;
use std::io::{self, BufWriter, Write};

use super::DbdfWriter;
use crate::error::{Error, Result};
use crate::io::block_index::BlockIndex;
use crate::io::meta::runtime_meta_json;
use crate::io::{Counted, PREFIX_LEN};
use crate::options::Options;
use crate::wire::extents::Extents;
use crate::wire::sink::Sink;

/// The most header bytes kept of a stream: past it (a file of tens of millions of blocks)
/// the stream gets no block index, and its readers walk its headers instead.
pub(super) const MOST_KEPT: usize = 64 << 20;

/// The bytes kept from where each block starts: more than any block's header (position,
/// type, shape, value type, non-zero count).
pub(super) const BLOCK_HEAD_MOST: u64 = 64;

/// The writer's output.
pub(super) enum Out<'w> {
    File(BufWriter<File>),
    Stream {
        out: Box<dyn Write + Send + 'w>,
        kept: Kept,
    },
}

impl Write for Out<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::File(file) => file.write(buf),
            Out::Stream { out, kept } => {
                let n = out.write(buf)?;
                kept.passing(&buf[..n]);
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::File(file) => file.flush(),
            Out::Stream { out, .. } => out.flush(),
        }
    }
}

/// The bytes of a stream at the windows asked for, as they pass.
pub(super) struct Kept {
    /// The offset of the next byte to pass.
    at: u64,
    /// Ranges still to keep (they start at or after `at`, asked for before their bytes pass).
    windows: Vec<(u64, u64)>,
    extents: Extents,
    bytes: usize,
    /// Past [`MOST_KEPT`]: nothing more is kept, and there is no index.
    full: bool,
}

impl Kept {
    fn new() -> Kept {
        Kept {
            at: 0,
            windows: Vec::new(),
            extents: Extents::default(),
            bytes: 0,
            full: false,
        }
    }

    /// Keeps the `len` bytes from `from` when they pass.
    pub(super) fn window(&mut self, from: u64, len: u64) {
        if !self.full && len > 0 {
            self.windows.push((from, from.saturating_add(len)));
        }
    }

    fn passing(&mut self, bytes: &[u8]) {
        let (start, end) = (self.at, self.at + bytes.len() as u64);
        let (extents, kept) = (&mut self.extents, &mut self.bytes);
        self.windows.retain(|&(from, to)| {
            let (a, b) = (from.max(start), to.min(end));
            if a < b {
                extents.push(a, &bytes[(a - start) as usize..(b - start) as usize]);
                *kept += (b - a) as usize;
            }
            to > end
        });
        self.at = end;
        if self.bytes > MOST_KEPT {
            self.full = true;
            self.windows = Vec::new();
            self.extents = Extents::default();
        }
    }

    /// The sidecars of the stream of `len` bytes: `.meta` in the runtime dialect (for a file
    /// of one matrix or frame), else the block index, where the headers kept make one.
    fn sidecars(self, len: u64, runtime: bool) -> Result<Vec<(&'static str, Vec<u8>)>> {
        if runtime {
            let prefix = self.extents.finish();
            let first = prefix.runs().next().filter(|(at, _)| *at == 0);
            let meta = runtime_meta_json(first.map_or(&[][..], |(_, bytes)| bytes), len)?;
            return Ok(meta
                .map(|json| (".meta", json.into_bytes()))
                .into_iter()
                .collect());
        }
        let index = (!self.full)
            .then(|| BlockIndex::of_kept(self.extents.finish(), len))
            .flatten();
        Ok(index
            .map(|index| (".index", index.to_vec()))
            .into_iter()
            .collect())
    }
}

impl<'w> DbdfWriter<'w> {
    /// Starts a file written as one stream into `out` (an upload, a pipe), which is never
    /// read back or sought in: nothing but the bytes of the file goes to it, in order. The
    /// sidecars its readers want come back from [`DbdfWriter::finish`] for the caller to put
    /// beside it. A dropped writer has written part of a file: the caller discards it.
    ///
    /// # Errors
    /// As [`Options::create`]. (A runtime-dialect CSR matrix, whose non-zero count
    /// comes before its values, takes a pass per section from
    /// [`DbdfWriter::write_untiled`]; written tile by tile it is spilled to temporary files
    /// whole and written at its end.)
    pub fn to_stream(out: impl Write + Send + 'w, options: &Options) -> Result<DbdfWriter<'w>> {
        options.runtime_writer()?;
        // The first bytes: the runtime's `.meta` is made from them, and telling the dialect
        // of a small file may read all of it.
        let mut kept = Kept::new();
        kept.window(0, PREFIX_LEN as u64);
        let out = Out::Stream {
            out: Box::new(out),
            kept,
        };
        Ok(DbdfWriter {
            // Where a runtime CSR matrix's spills go (files without names).
            path: std::env::temp_dir().join("stream.dbdf"),
            pending: None,
            sink: Some(Sink::new(Counted {
                inner: out,
                written: 0,
            })),
            options: options.clone(),
            current: None,
            objects: 0,
            poisoned: false,
            writeback: None,
        })
    }

    /// Keeps the `len` bytes about to be written, when writing a stream.
    pub(super) fn keep(&mut self, len: u64) {
        let at = self.position();
        if let Some(Out::Stream { kept, .. }) =
            self.sink.as_mut().map(|s| &mut s.writer_mut().inner)
        {
            kept.window(at, len);
        }
    }

    /// Flushes a stream and makes its sidecars.
    pub(super) fn finish_stream(
        out: Out<'w>,
        len: u64,
        runtime: bool,
    ) -> Result<Vec<(&'static str, Vec<u8>)>> {
        let Out::Stream { mut out, kept } = out else {
            return Err(Error::invalid("internal: a file finished as a stream"));
        };
        out.flush()?;
        kept.sidecars(len, runtime)
    }
}
