//! Positional reads of a remote object that run on from one to the next, served from chunks
//! fetched ahead, several at once, as GDAL's `/vsicurl/` reads ahead: a reader that walks an
//! object from start to end by positional reads of its own (a `.dbdf` file's blocks in file
//! order) waits for the wire about once, not once per read, and holds at most `ahead + 1`
//! chunks whatever the object's size. (A reader that only reads in order takes a
//! [`super::Stream`] instead.)

use std::collections::BTreeMap;
use std::io::{self, IoSliceMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use serde_daphne::ReadAt;

use super::{Fetch, InTransit, Way};

/// Bytes a chunk holds: large enough that a request's round trip is small beside its
/// transfer, small enough that a few in flight stay within the memory bound. Runs of reads
/// from this length on are read ahead ([`ReadAt::reads_ahead`]).
pub(crate) const CHUNK: u64 = 8 << 20;
/// Chunks fetched ahead of the one being read, at most: a single request of a store such as
/// s3s-fs runs at a fraction of the wire (eight of 8 MiB reach curl's one stream, four did
/// not). Fewer when the process has more in transit ([`InTransit`]: an upload besides).
pub(crate) const AHEAD: usize = 8;
/// Chunks fetched ahead at the start of a run: doubled, up to the most, each time the reader
/// has to wait for one, as Linux grows its read-ahead. A reader slower than the wire (a
/// sink that compresses, or one that waits for its own uploads) never waits, so it holds
/// this few.
const FIRST_AHEAD: usize = 2;
/// Short reads a stride apart fetched ahead at once, once two strides alike are seen: a
/// walk over the headers of equal blocks (a tiled `.dbdf` without its index) waits for
/// the wire once per this many headers, not once per header.
const STRIDES: u64 = 8;
/// The longest read fetched ahead by its stride (a header and the bytes after it).
const STRIDE_READ: u64 = 1 << 20;

/// A [`ReadAt`] over `inner` that detects sequential reads and serves them from chunks
/// fetched ahead on threads of their own. Reads that jump (a footer, a projection's column
/// chunks) go straight to `inner`, exactly as asked, and drop what was fetched ahead.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn ReadAt>,
    /// `inner`'s bytes handed over as fetched, where it can.
    fetch: Option<Arc<dyn Fetch>>,
    size: u64,
    chunk: u64,
    ahead: usize,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Chunks by index: fetching (`None`), fetched, or failed (removed, to be read again by
    /// the reader that needs it, which then sees the real error).
    chunks: BTreeMap<u64, Option<Arc<Chunk>>>,
    /// Where the last read ended, and how many bytes the reads have run on without a jump.
    end: u64,
    streak: u64,
    /// Bumped on each jump, so that chunks fetched for an abandoned run are not kept.
    run: u64,
    /// Chunks fetched ahead now, from [`FIRST_AHEAD`] to the most (0 until the first run).
    window: usize,
    strides: Strides,
}

/// Short reads a stride apart, and those fetched ahead of the reader.
#[derive(Debug, Default)]
struct Strides {
    /// Where the last short read began, the stride and length it had, and how many reads
    /// in a row had them.
    last: u64,
    stride: u64,
    len: u64,
    seen: u32,
    /// Reads fetched ahead by where they begin: fetching (`None`), fetched, or failed
    /// (removed, to be read as asked).
    pieces: BTreeMap<u64, Option<Arc<Chunk>>>,
    /// Bumped when the pattern breaks, so that pieces fetched for it are not kept.
    run: u64,
}

/// A chunk's bytes, and its share of the bytes in transit while it is held ahead of the
/// reader (none for one read when needed).
struct Chunk {
    bytes: Box<dyn AsRef<[u8]> + Send + Sync>,
    _share: Option<InTransit>,
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chunk({} bytes)", (*self.bytes).as_ref().len())
    }
}

impl ReadAhead {
    /// `inner` read ahead by [`CHUNK`]s, [`AHEAD`] of them in flight.
    ///
    /// # Errors
    /// As `inner`'s [`ReadAt::size`].
    pub(crate) fn new(
        inner: Arc<dyn ReadAt>,
        fetch: Option<Arc<dyn Fetch>>,
    ) -> io::Result<ReadAhead> {
        ReadAhead::with_chunks(inner, fetch, CHUNK, AHEAD)
    }

    /// `inner` read ahead by chunks of `chunk` bytes, `ahead` of them in flight, handed
    /// over as `fetch` fetches them where it is given.
    ///
    /// # Errors
    /// As `inner`'s [`ReadAt::size`].
    pub(crate) fn with_chunks(
        inner: Arc<dyn ReadAt>,
        fetch: Option<Arc<dyn Fetch>>,
        chunk: u64,
        ahead: usize,
    ) -> io::Result<ReadAhead> {
        let size = inner.size()?;
        Ok(ReadAhead {
            shared: Arc::new(Shared {
                inner,
                fetch,
                size,
                chunk: chunk.max(1),
                ahead,
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            }),
        })
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts fetching chunk `index` on a thread of its own, unless it is held, past the end,
    /// or more than the process may have in transit (the reader then reads it when needed).
    fn start(self: &Arc<Shared>, state: &mut State, index: u64) {
        let at = index * self.chunk;
        if at >= self.size || state.chunks.contains_key(&index) {
            return;
        }
        let len = self.chunk.min(self.size - at) as usize;
        let Some(share) = InTransit::try_take(Way::Fetched, len as u64) else {
            return;
        };
        state.chunks.insert(index, None);
        let run = state.run;
        self.fetch(at, len, share, move |state, chunk| {
            if state.run == run {
                match chunk {
                    Some(chunk) => state.chunks.insert(index, Some(chunk)),
                    None => state.chunks.remove(&index),
                };
            }
        });
    }

    /// Fetches the `len` bytes at `at` on a thread of its own, within `share` of the bound in
    /// transit, then hands them (`None` if the fetch failed) to `place`, which keeps them
    /// where they are still wanted, and wakes the readers waiting.
    fn fetch(
        self: &Arc<Shared>,
        at: u64,
        len: usize,
        share: InTransit,
        place: impl FnOnce(&mut State, Option<Arc<Chunk>>) + Send + 'static,
    ) {
        let shared = Arc::clone(self);
        std::thread::spawn(move || {
            let fetched = shared.read(at, len);
            let _share = Some(share);
            let chunk = fetched.ok().map(|bytes| Arc::new(Chunk { bytes, _share }));
            place(&mut shared.lock(), chunk);
            shared.changed.notify_all();
        });
    }

    /// Notes a short read of `len` bytes at `offset`; when it is the third a stride apart,
    /// starts fetching the next [`STRIDES`] (the pieces). Whether this read is a piece.
    fn stride(self: &Arc<Shared>, state: &mut State, offset: u64, len: u64) -> bool {
        let s = &mut state.strides;
        let alike = offset > s.last && offset - s.last == s.stride && len == s.len;
        match alike {
            true => s.seen += 1,
            false => {
                (s.stride, s.len, s.seen) = (offset.wrapping_sub(s.last), len, 1);
                if !s.pieces.is_empty() {
                    s.pieces.clear();
                    s.run += 1;
                }
            }
        }
        s.last = offset;
        s.pieces = s.pieces.split_off(&offset);
        if s.seen >= 3 && len <= STRIDE_READ {
            for k in 1..=STRIDES {
                let Some(at) = k.checked_mul(s.stride).and_then(|d| offset.checked_add(d)) else {
                    break;
                };
                if at + len > self.size {
                    break;
                }
                if s.pieces.contains_key(&at) {
                    continue;
                }
                let Some(share) = InTransit::try_take(Way::Fetched, len) else {
                    break;
                };
                s.pieces.insert(at, None);
                let run = s.run;
                self.fetch(at, len as usize, share, move |state, piece| {
                    let s = &mut state.strides;
                    if s.run == run && s.pieces.contains_key(&at) {
                        match piece {
                            Some(piece) => s.pieces.insert(at, Some(piece)),
                            None => s.pieces.remove(&at),
                        };
                    }
                });
            }
        }
        state.strides.pieces.contains_key(&offset)
    }

    /// The piece fetched ahead at `offset`, waited for; `None` if its fetch failed or was
    /// dropped (the reader then reads as asked, and sees any error itself).
    fn piece(&self, offset: u64) -> Option<Arc<Chunk>> {
        let mut state = self.lock();
        loop {
            match state.strides.pieces.get(&offset) {
                Some(Some(piece)) => return Some(Arc::clone(piece)),
                Some(None) => state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
                None => return None,
            }
        }
    }

    /// The `len` bytes at `at`, as fetched where they can be.
    fn read(&self, at: u64, len: usize) -> io::Result<Box<dyn AsRef<[u8]> + Send + Sync>> {
        if let Some(fetch) = &self.fetch {
            return fetch.fetch(at, len);
        }
        let mut bytes = vec![0u8; len];
        self.inner.read_exact_at(&mut bytes, at)?;
        Ok(Box::new(bytes))
    }

    /// The bytes of chunk `index`: waited for if in flight, read here if not held. A wait
    /// for a chunk fetched ahead of an earlier read (`ahead`) doubles the window.
    fn chunk(self: &Arc<Shared>, index: u64, ahead: bool) -> io::Result<Arc<Chunk>> {
        let mut state = self.lock();
        loop {
            match state.chunks.get(&index) {
                Some(Some(bytes)) => return Ok(Arc::clone(bytes)),
                Some(None) => {
                    if ahead {
                        state.window = (state.window * 2).min(self.ahead);
                    }
                    state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                None => break,
            }
        }
        drop(state);
        let at = index * self.chunk;
        let bytes = self.read(at, self.chunk.min(self.size.saturating_sub(at)) as usize)?;
        let _share = None;
        Ok(Arc::new(Chunk { bytes, _share }))
    }
}

impl ReadAhead {
    /// Fills `bufs` with the consecutive bytes from `offset`.
    fn read_run(&self, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<()> {
        let shared = &self.shared;
        let len: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        let end = offset + len;
        if len == 0 {
            return Ok(());
        }
        if end > shared.size {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let (first, last) = (offset / shared.chunk, (end - 1) / shared.chunk);
        let ahead = {
            let mut state = shared.lock();
            // A skip forward within a chunk (a block's header, read before) runs on.
            let skip = offset
                .checked_sub(state.end)
                .is_some_and(|gap| gap < shared.chunk && !state.chunks.is_empty());
            if (offset != state.end && !skip) || state.window == 0 {
                // A jump (or the first read): what was fetched ahead is no longer wanted.
                state.chunks.clear();
                state.streak = 0;
                state.run += 1;
                state.window = FIRST_AHEAD.min(shared.ahead);
            }
            state.end = end;
            state.streak += len;
            // A run shorter than a chunk reads as asked: a few adjacent small reads (a
            // projection's neighbouring columns) fetch nothing they do not use.
            if state.streak < shared.chunk && state.chunks.is_empty() {
                let strided = shared.stride(&mut state, offset, len);
                drop(state);
                if let Some(piece) = strided.then(|| shared.piece(offset)).flatten() {
                    let bytes = (*piece.bytes).as_ref();
                    if let Some(bytes) = bytes.get(..len as usize) {
                        Scatter { bufs, i: 0, at: 0 }.put(bytes);
                        return Ok(());
                    }
                }
                return shared.inner.read_exact_vectored_at(bufs, offset);
            }
            // A run: pieces fetched by their stride are no longer wanted.
            if !state.strides.pieces.is_empty() {
                state.strides = Strides {
                    run: state.strides.run + 1,
                    ..Strides::default()
                };
            }
            // Which chunks this read needs (the first 64) earlier reads fetched ahead: a mask,
            // not a vector, since every read of a run comes here.
            let ahead = (first..=last.min(first + 63))
                .enumerate()
                .fold(0u64, |mask, (k, i)| {
                    mask | u64::from(state.chunks.contains_key(&i)) << k
                });
            for index in first..=first + state.window as u64 {
                shared.start(&mut state, index);
            }
            ahead
        };
        let mut out = Scatter { bufs, i: 0, at: 0 };
        for index in first..=last {
            let k = index - first;
            let chunk = shared.chunk(index, k < 64 && ahead >> k & 1 == 1)?;
            let bytes = (*chunk.bytes).as_ref();
            let at = index * shared.chunk;
            let from = offset.max(at);
            let to = end.min(at + bytes.len() as u64);
            out.put(&bytes[(from - at) as usize..(to - at) as usize]);
            let mut state = shared.lock();
            // Chunks behind the read are done with; start the next one ahead.
            let done = if to == at + bytes.len() as u64 {
                index + 1
            } else {
                index
            };
            state.chunks = state.chunks.split_off(&done);
            for next in index + 1..=index + 1 + state.window as u64 {
                shared.start(&mut state, next);
            }
        }
        Ok(())
    }
}

/// Buffers filled in order, as bytes come.
struct Scatter<'b, 'c> {
    bufs: &'b mut [IoSliceMut<'c>],
    /// The buffer being filled, and how much of it is.
    i: usize,
    at: usize,
}

impl Scatter<'_, '_> {
    fn put(&mut self, mut bytes: &[u8]) {
        while let Some(buf) = self.bufs.get_mut(self.i) {
            let n = (buf.len() - self.at).min(bytes.len());
            buf[self.at..self.at + n].copy_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            self.at += n;
            if self.at == buf.len() {
                (self.i, self.at) = (self.i + 1, 0);
            }
            if bytes.is_empty() {
                return;
            }
        }
    }
}

impl ReadAt for ReadAhead {
    fn size(&self) -> io::Result<u64> {
        Ok(self.shared.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read_run(&mut [IoSliceMut::new(buf)], offset)
    }

    /// One read, however many buffers: a dense block's rows read into a band's rows run on
    /// as one (read as many reads, each would read as asked until a chunk's worth).
    fn read_exact_vectored_at(&self, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<()> {
        self.read_run(bufs, offset)
    }

    fn min_request(&self) -> usize {
        self.shared.inner.min_request()
    }

    fn reads_ahead(&self) -> Option<u64> {
        Some(CHUNK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::fake::Remote as Counted;
    use std::sync::atomic::Ordering;

    fn reader(inner: &Arc<Counted>) -> ReadAhead {
        ReadAhead::with_chunks(Arc::clone(inner) as Arc<dyn ReadAt>, None, 1000, 3).unwrap()
    }

    /// A dense block's rows read into a band's rows: one vectored read of many short
    /// buffers, read ahead as one run (as many short reads, each was read as asked).
    #[test]
    fn a_vectored_read_is_one_run_filled_from_the_chunks() {
        let inner = Counted::new(20_000, None);
        let ahead = reader(&inner);
        let mut rows = vec![[0u8; 10]; 900];
        let mut bufs: Vec<IoSliceMut> = rows.iter_mut().map(|r| IoSliceMut::new(r)).collect();
        ahead.read_exact_vectored_at(&mut bufs, 1234).unwrap();
        assert_eq!(rows.concat(), inner.bytes[1234..10_234]);
        // Its ten chunks and a few ahead, not a request per buffer.
        let requests = inner.requests.load(Ordering::SeqCst);
        assert!((10..=14).contains(&requests), "{requests} requests");
        // Buffers of no bytes among them, and a read that ends inside one.
        let (mut a, mut b) = ([0u8; 3], [0u8; 1500]);
        let mut bufs = [IoSliceMut::new(&mut []), IoSliceMut::new(&mut a)];
        ahead.read_exact_vectored_at(&mut bufs, 10_234).unwrap();
        assert_eq!(a, inner.bytes[10_234..10_237]);
        let mut bufs = [IoSliceMut::new(&mut b), IoSliceMut::new(&mut [])];
        ahead.read_exact_vectored_at(&mut bufs, 10_237).unwrap();
        assert_eq!(b, inner.bytes[10_237..11_737]);
    }

    /// A walk over the headers of equal blocks: short reads a stride apart, fetched ahead
    /// several at once after the third, each once; a read off the stride is read as asked.
    #[test]
    fn short_reads_a_stride_apart_are_fetched_ahead_together() {
        let inner = Counted::new(100_000, None);
        let ahead = reader(&inner);
        let read = |at: u64, len: usize| {
            let mut buf = vec![0u8; len];
            ahead.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, inner.bytes[at as usize..at as usize + len], "at {at}");
        };
        for k in 0..30u64 {
            read(k * 3000 + 7, 100);
        }
        // Fetched ahead: several in flight at once; never a piece twice, and at most the
        // pieces past the last read beyond what was read.
        let most = inner.most_in_flight.load(Ordering::SeqCst);
        assert!(most >= 2, "{most} requests in flight at once");
        let requests = inner.requests.load(Ordering::SeqCst);
        assert!(
            (30..=30 + STRIDES as usize).contains(&requests),
            "{requests}"
        );
        // Two alike, then off the stride: each read as asked, nothing fetched ahead.
        let inner = Counted::new(100_000, None);
        let ahead = reader(&inner);
        for at in [0, 3000, 95_000, 50] {
            let mut buf = vec![0u8; 100];
            ahead.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, inner.bytes[at as usize..at as usize + 100], "at {at}");
        }
        assert_eq!(inner.requests.load(Ordering::SeqCst), 4);
        assert_eq!(inner.fetched.load(Ordering::SeqCst), 400);
    }

    /// Tiles read in file order, each after a header the reader knows: a run, not a jump
    /// per tile (each dropping the chunks fetched ahead, to fetch them again).
    #[test]
    fn reads_that_skip_a_few_bytes_forward_run_on() {
        let inner = Counted::new(50_000, None);
        let ahead = reader(&inner);
        for tile in 0..20u64 {
            let at = tile * 2500 + 26;
            let mut buf = vec![0u8; 2474];
            ahead.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, inner.bytes[at as usize..at as usize + 2474]);
        }
        let fetched = inner.fetched.load(Ordering::SeqCst);
        assert!(fetched <= 50_000, "{fetched} bytes fetched for 50,000");
        let requests = inner.requests.load(Ordering::SeqCst);
        assert!(requests <= 52, "{requests} requests");
    }

    #[test]
    fn a_sequential_walk_reads_the_same_bytes_with_chunks_in_flight_and_little_over_fetched() {
        let inner = Counted::new(100_003, None);
        let ahead = reader(&inner);
        let mut at = 0usize;
        // Reads of every size, smaller and larger than a chunk, across chunk boundaries.
        for (i, len) in [1usize, 10, 999, 1000, 1001, 2500, 7, 4000]
            .iter()
            .cycle()
            .enumerate()
        {
            let len = (*len).min(inner.bytes.len() - at);
            let mut buf = vec![0u8; len];
            ahead.read_exact_at(&mut buf, at as u64).unwrap();
            assert_eq!(buf, inner.bytes[at..at + len], "read {i} at {at}");
            at += len;
            if at == inner.bytes.len() {
                break;
            }
        }
        // Chunks in flight at once: several, and never more than the chunk read and 3 ahead.
        let most = inner.most_in_flight.load(Ordering::SeqCst);
        assert!((2..=4).contains(&most), "{most} requests in flight at once");
        // What was fetched past the last read is at most the chunks ahead; nothing twice.
        let fetched = inner.fetched.load(Ordering::SeqCst);
        assert!(
            fetched <= inner.bytes.len() + 1000,
            "{fetched} bytes fetched"
        );
        // A request per chunk (101), and the reads before the run reached a chunk (3).
        assert!(
            inner.requests.load(Ordering::SeqCst) <= 101 + 3,
            "{:?}",
            inner.requests
        );
    }

    /// Walks `inner` from start to end in reads of a chunk, after `before_each` read; the
    /// window of chunks ahead at the end.
    fn walk(ahead: &ReadAhead, inner: &Counted, mut before_each: impl FnMut()) -> usize {
        let mut buf = vec![0u8; 1000];
        for at in (0..inner.bytes.len()).step_by(1000) {
            before_each();
            ahead.read_exact_at(&mut buf, at as u64).unwrap();
            assert_eq!(buf, inner.bytes[at..at + 1000]);
        }
        ahead.shared.lock().window
    }

    #[test]
    fn the_window_grows_only_for_a_reader_that_waits_for_the_wire() {
        // A reader faster than the wire waits for chunks fetched ahead: the window doubles
        // to the most (3).
        let inner = Counted::new(40_000, None);
        let fast = reader(&inner);
        assert_eq!(walk(&fast, &inner, || {}), 3);
        // One slower than the wire (here: each read once every chunk has come) never
        // waits, and keeps the first window: it holds two chunks ahead, not three.
        let inner = Counted::new(40_000, None);
        let slow = reader(&inner);
        let settle = || {
            let mut state = slow.shared.lock();
            while state.chunks.values().any(Option::is_none) {
                state = slow.shared.changed.wait(state).unwrap();
            }
        };
        assert_eq!(walk(&slow, &inner, settle), FIRST_AHEAD);
        assert!(inner.most_in_flight.load(Ordering::SeqCst) <= FIRST_AHEAD + 1);
    }

    #[test]
    fn reads_that_jump_go_to_the_object_as_asked() {
        let inner = Counted::new(50_000, None);
        let ahead = reader(&inner);
        for at in [40_000u64, 10, 30_000, 20_000, 5] {
            let mut buf = vec![0u8; 300];
            ahead.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, inner.bytes[at as usize..at as usize + 300]);
        }
        assert_eq!(inner.requests.load(Ordering::SeqCst), 5);
        assert_eq!(inner.fetched.load(Ordering::SeqCst), 5 * 300);
        let mut past = [0u8; 2];
        let eof = ahead.read_exact_at(&mut past, 49_999).unwrap_err();
        assert_eq!(eof.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_failed_chunk_is_the_error_of_the_read_that_needs_it_only() {
        let inner = Counted::new(20_000, Some(7_500));
        let ahead = reader(&inner);
        let mut buf = vec![0u8; 1000];
        for at in (0..7000).step_by(1000) {
            ahead.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, inner.bytes[at as usize..at as usize + 1000]);
        }
        let err = ahead.read_exact_at(&mut buf, 7000).unwrap_err();
        assert_eq!(err.to_string(), "the poisoned byte");
        let mut after = vec![0u8; 1000];
        ahead.read_exact_at(&mut after, 9000).unwrap();
        assert_eq!(after, inner.bytes[9000..10_000]);
    }
}
