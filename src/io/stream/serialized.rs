//! A value serialized as one stream ([`Options::to_stream`]), with the sidecars a stream's
//! readers want, as a [`super::DbdfWriter`] stream gets them. The serializer knows nothing of
//! where headers fall, so the block index is made by the walk that makes a file's
//! ([`BlockIndex::of_read_at`]), run on a thread of its own over the bytes as they pass:
//! forward only, what it skips dropped, its input a few chunks at most.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use serde::Serialize;

use super::out::MOST_KEPT;
use crate::error::Result;
use crate::io::block_index::BlockIndex;
use crate::io::index::index_all;
use crate::io::meta::runtime_meta_json;
use crate::io::PREFIX_LEN;
use crate::options::Options;
use crate::wire::SeekSource;

/// The bytes handed to the walk at once.
const CHUNK: usize = 1 << 20;

/// Chunks on their way to the walk: memory for the index is this many chunks and the one
/// being filled.
const CHUNKS_QUEUED: usize = 4;

impl Options {
    /// Serializes `value` into `out` as one stream, which is never read back or sought in, and
    /// returns the sidecars its readers want beside it, as [`super::DbdfWriter::finish`] does
    /// for a stream: the `.meta` DAPHNE reads in the runtime dialect (for one matrix or frame),
    /// else its block index (`.index`, unless its headers take over 64 MiB), made from the
    /// bytes as they pass. The value is measured first ([`Options::serialized_len`]); memory beyond
    /// the serializer's is a few MiB.
    ///
    /// ```
    /// use serde_daphne::{BlockIndex, Dense};
    ///
    /// let m = Dense(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]]);
    /// let mut bytes = Vec::new();
    /// let sidecars = serde_daphne::Options::new().to_stream(&mut bytes, &m)?;
    /// assert_eq!(bytes, serde_daphne::to_vec(&m)?);
    /// let (suffix, index) = &sidecars[0];
    /// assert_eq!(*suffix, ".index");
    /// assert_eq!(BlockIndex::from_slice(index)?.file_len(), bytes.len() as u64);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Options::to_writer`]; [`crate::ErrorKind::InvalidValue`] when the bytes written
    /// are not the length measured.
    pub fn to_stream<W: Write, T: ?Sized + Serialize>(
        &self,
        out: W,
        value: &T,
    ) -> Result<Vec<(&'static str, Vec<u8>)>> {
        let len = self.serialized_len(value)?;
        let runtime = self.writes_runtime();
        std::thread::scope(|scope| {
            let (to_walk, chunks) = sync_channel(CHUNKS_QUEUED);
            let walk = (!runtime).then(|| scope.spawn(move || index_of(chunks, len)));
            let mut tee = Tee {
                out,
                to_walk: walk.is_some().then_some(to_walk),
                chunk: Vec::new(),
                prefix: Vec::new(),
                written: 0,
            };
            let written = self.to_writer(&mut tee, value).and_then(|()| {
                tee.out.flush()?;
                tee.pass_chunk();
                Ok(())
            });
            drop(tee.to_walk.take());
            // Joined in any case: the walk ends when its chunks do.
            let index = walk.and_then(|walk| walk.join().ok().flatten());
            written?;
            if tee.written != len {
                return Err(crate::Error::invalid(format!(
                    "internal: {} bytes serialized where {len} were measured",
                    tee.written
                )));
            }
            if runtime {
                let meta = runtime_meta_json(&tee.prefix, len)?;
                return Ok(meta
                    .map(|m| (".meta", m.into_bytes()))
                    .into_iter()
                    .collect());
            }
            Ok(index.map(|i| (".index", i.to_vec())).into_iter().collect())
        })
    }
}

/// The index of a stream of `len` bytes that comes as `chunks`; `None` where the walk fails
/// (the bytes end early) or keeps more than [`MOST_KEPT`].
fn index_of(chunks: Receiver<Vec<u8>>, len: u64) -> Option<BlockIndex> {
    let reader = Chunks {
        chunks,
        chunk: Vec::new(),
        at: 0,
        pos: 0,
    };
    let mut src = SeekSource::new(reader, len).with_exact_reads().recording();
    index_all(&mut src, &Options::new(), None).ok()?;
    let extents = src.take_record()?;
    (extents.len() <= MOST_KEPT).then(|| BlockIndex::of_extents(extents, len))
}

/// Where the serializer writes: `out`, and the walk's chunks (until it ends) or the first
/// bytes (for the `.meta`).
struct Tee<W> {
    out: W,
    to_walk: Option<SyncSender<Vec<u8>>>,
    chunk: Vec<u8>,
    prefix: Vec<u8>,
    written: u64,
}

impl<W> Tee<W> {
    /// Hands the chunk filled to the walk; once it has ended, nothing more goes.
    fn pass_chunk(&mut self) {
        let chunk = std::mem::take(&mut self.chunk);
        if let Some(to_walk) = &self.to_walk {
            if to_walk.send(chunk).is_err() {
                self.to_walk = None;
            }
        }
    }
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        let buf = &buf[..n];
        self.written += n as u64;
        if self.to_walk.is_some() {
            self.chunk.extend_from_slice(buf);
            if self.chunk.len() >= CHUNK {
                self.pass_chunk();
            }
        } else if self.prefix.len() < PREFIX_LEN {
            let k = buf.len().min(PREFIX_LEN - self.prefix.len());
            self.prefix.extend_from_slice(&buf[..k]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A stream's bytes as chunks bring them, read forward only: a seek ahead drops what it
/// passes, one back is refused.
struct Chunks {
    chunks: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    /// The next byte's place in `chunk`.
    at: usize,
    /// The next byte's offset in the stream.
    pos: u64,
}

impl Chunks {
    /// The bytes left of the current chunk, the next one's when it is used up (empty at the
    /// stream's end).
    fn available(&mut self) -> &[u8] {
        while self.at == self.chunk.len() {
            match self.chunks.recv() {
                Ok(chunk) => (self.chunk, self.at) = (chunk, 0),
                Err(_) => return &[],
            }
        }
        &self.chunk[self.at..]
    }
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.available();
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.at += n;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Chunks {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => at,
            SeekFrom::Current(delta) => self
                .pos
                .checked_add_signed(delta)
                .ok_or(io::ErrorKind::InvalidInput)?,
            SeekFrom::End(_) => return Err(io::ErrorKind::Unsupported.into()),
        };
        if target < self.pos {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a stream is walked forward only",
            ));
        }
        while self.pos < target {
            let n = (self.available().len() as u64).min(target - self.pos);
            if n == 0 {
                break;
            }
            self.at += n as usize;
            self.pos += n;
        }
        Ok(self.pos)
    }
}
