//! A range of an input read from start to end. A local file is read as asked, one positional
//! read per call. A remote object is fetched in chunks, several in flight on threads of
//! their own, as GDAL's `/vsicurl/` and `object_store`'s buffered reader read ahead: a walk
//! over an object waits for the wire about once, not once per chunk, and holds at most
//! `2 * IN_FLIGHT + 1` chunks whatever the object's size. Chunks start small and double, so
//! that a stream read only a little way fetches little more than it reads.

use std::io::{self, Read};
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use serde_daphne::ReadAt;

/// The most bytes a chunk holds: large enough that a request's round trip is small beside
/// its transfer, small enough that every stream's chunks stay well within the memory bound.
const CHUNK: u64 = 4 << 20;
/// Chunks fetched at once, each by a thread of its own.
const IN_FLIGHT: usize = 4;

/// The bytes of a range of an input, read in order ([`Read`]).
pub(crate) struct Stream {
    data: Arc<dyn ReadAt>,
    pos: u64,
    end: u64,
    /// For a remote input: the chunks fetched ahead.
    ahead: Option<Box<Ahead>>,
}

/// Chunks fetched ahead: chunk `k` comes from fetcher `k % IN_FLIGHT`, each of which holds
/// at most one chunk sent and one being fetched.
struct Ahead {
    fetchers: Vec<Receiver<io::Result<Vec<u8>>>>,
    /// The chunks in all, and the next one to take.
    chunks: u64,
    next: u64,
    chunk: Vec<u8>,
    used: usize,
    /// Set by a failed fetch: the chunks after it would not follow on.
    failed: bool,
}

impl Stream {
    /// The bytes of `range` of `data`, up to its end.
    ///
    /// # Errors
    /// As `data`'s [`ReadAt::size`].
    pub(crate) fn new(data: Arc<dyn ReadAt>, range: Range<u64>) -> io::Result<Stream> {
        let end = range.end.min(data.size()?);
        let start = range.start.min(end);
        let ahead = (data.min_request() > 0 && end > start)
            .then(|| Box::new(Ahead::start(&data, start..end)));
        Ok(Stream {
            data,
            pos: start,
            end,
            ahead,
        })
    }
}

impl Ahead {
    fn start(data: &Arc<dyn ReadAt>, range: Range<u64>) -> Ahead {
        let len = range.end - range.start;
        let sizes = Sizes::new(data.min_request() as u64);
        let chunks = sizes.count(len);
        let fetchers = (0..IN_FLIGHT as u64)
            .take(chunks as usize)
            .map(|first| {
                let (send, receive) = sync_channel(1);
                let data = Arc::clone(data);
                std::thread::spawn(move || {
                    for k in (first..chunks).step_by(IN_FLIGHT) {
                        let (at, size) = sizes.chunk(k);
                        let mut bytes = vec![0u8; size.min(len - at) as usize];
                        let fetched = data.read_exact_at(&mut bytes, range.start + at);
                        let failed = fetched.is_err();
                        // A reader that stopped reading takes no more.
                        if send.send(fetched.map(|()| bytes)).is_err() || failed {
                            return;
                        }
                    }
                });
                receive
            })
            .collect();
        Ahead {
            fetchers,
            chunks,
            next: 0,
            chunk: Vec::new(),
            used: 0,
            failed: false,
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed {
            return Err(io::Error::other("an earlier read of this stream failed"));
        }
        if self.used == self.chunk.len() {
            if self.next == self.chunks {
                return Ok(0);
            }
            let fetcher = &self.fetchers[(self.next % IN_FLIGHT as u64) as usize];
            let fetched = fetcher
                .recv()
                .unwrap_or_else(|_| Err(io::Error::other("a fetching thread stopped")));
            self.failed = fetched.is_err();
            self.chunk = fetched?;
            self.next += 1;
            self.used = 0;
        }
        let n = buf.len().min(self.chunk.len() - self.used);
        buf[..n].copy_from_slice(&self.chunk[self.used..self.used + n]);
        self.used += n;
        Ok(n)
    }
}

/// The chunks' sizes: from the input's smallest useful request, doubling up to [`CHUNK`], so
/// that a stream read only a little way (a header) fetches little more than it reads.
#[derive(Clone, Copy)]
struct Sizes {
    first: u64,
    /// Chunks before they reach [`CHUNK`].
    ramp: u32,
}

impl Sizes {
    fn new(min_request: u64) -> Sizes {
        let first = min_request.clamp(1, CHUNK);
        let ramp = (CHUNK / first).ilog2();
        Sizes { first, ramp }
    }

    /// Where chunk `k` starts in the range, and its size.
    fn chunk(self, k: u64) -> (u64, u64) {
        match k < u64::from(self.ramp) {
            true => (self.first * ((1 << k) - 1), self.first << k),
            false => {
                let ramped = self.first * ((1 << self.ramp) - 1);
                (ramped + (k - u64::from(self.ramp)) * CHUNK, CHUNK)
            }
        }
    }

    /// How many chunks `len` bytes take.
    fn count(self, len: u64) -> u64 {
        let ramped = self.first * ((1 << self.ramp) - 1);
        match (0..u64::from(self.ramp)).find(|&k| self.chunk(k).0 + self.chunk(k).1 >= len) {
            Some(k) => k + 1,
            None => u64::from(self.ramp) + (len - ramped).div_ceil(CHUNK),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.ahead {
            Some(ahead) => ahead.read(buf)?,
            None => {
                let n = (buf.len() as u64).min(self.end - self.pos) as usize;
                self.data.read_exact_at(&mut buf[..n], self.pos)?;
                n
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::fake::Remote;
    use std::sync::atomic::Ordering;

    /// Reads `stream` to its end in reads of several sizes.
    fn read_all(stream: &mut Stream) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for len in [1usize, 10, 999, 1000, 1001, 2500, 7, 4000].iter().cycle() {
            let mut buf = vec![0u8; *len];
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
        unreachable!()
    }

    #[test]
    fn a_remote_range_comes_in_order_with_several_requests_in_flight_and_nothing_twice() {
        let remote = Remote::new(100_003, None);
        let data: Arc<dyn ReadAt> = remote.clone();
        let mut stream = Stream::new(data, 17..90_001).unwrap();
        assert_eq!(read_all(&mut stream).unwrap(), remote.bytes[17..90_001]);
        let most = remote.most_in_flight.load(Ordering::SeqCst);
        assert!(
            (2..=IN_FLIGHT).contains(&most),
            "{most} requests in flight at once"
        );
        assert_eq!(remote.fetched.load(Ordering::SeqCst), 90_001 - 17);
        // A request per chunk, their sizes doubling from 1,000 bytes: 1,000 to 64,000.
        assert_eq!(remote.requests.load(Ordering::SeqCst), 7);
    }

    #[test]
    fn a_range_past_the_end_stops_at_the_end_and_an_empty_one_reads_nothing() {
        let remote = Remote::new(5_000, None);
        let data: Arc<dyn ReadAt> = remote.clone();
        let mut stream = Stream::new(Arc::clone(&data), 4_000..9_000).unwrap();
        assert_eq!(read_all(&mut stream).unwrap(), remote.bytes[4_000..]);
        let mut empty = Stream::new(data, 6_000..7_000).unwrap();
        assert_eq!(read_all(&mut empty).unwrap(), b"");
    }

    #[test]
    fn a_failed_request_is_the_error_of_the_read_that_needs_it_and_of_every_later_one() {
        let remote = Remote::new(40_000, Some(25_000));
        let data: Arc<dyn ReadAt> = remote.clone();
        let mut stream = Stream::new(data, 0..40_000).unwrap();
        let mut buf = vec![0u8; 10_000];
        // Chunks end at 1,000, 3,000, 7,000, 15,000, 31,000: the fifth fails.
        stream.read_exact(&mut buf).unwrap();
        assert_eq!(buf, remote.bytes[..10_000]);
        let err = stream.read_exact(&mut buf).unwrap_err();
        assert_eq!(err.to_string(), "the poisoned byte");
        // The sixth chunk is there, but does not follow the fourth.
        let again = stream.read(&mut buf).unwrap_err();
        assert!(again.to_string().contains("earlier read"), "{again}");
    }

    #[test]
    fn chunks_double_from_the_smallest_request_to_their_most_and_cover_the_range() {
        let sizes = Sizes::new(1 << 20);
        let got: Vec<_> = (0..5).map(|k| sizes.chunk(k)).collect();
        let m = 1u64 << 20;
        assert_eq!(
            got,
            [
                (0, m),
                (m, 2 * m),
                (3 * m, 4 * m),
                (7 * m, 4 * m),
                (11 * m, 4 * m)
            ]
        );
        for len in [1, m, m + 1, 3 * m, 7 * m, 7 * m + 1, 100 * m + 5] {
            let count = sizes.count(len);
            let (at, size) = sizes.chunk(count - 1);
            assert!(at < len && at + size >= len, "{len}: {count} chunks");
        }
    }

    #[test]
    fn a_local_file_is_read_as_asked() {
        let bytes: Vec<u8> = (0..3_000u32).map(|i| (i % 256) as u8).collect();
        let data: Arc<dyn ReadAt> = Arc::new(bytes.clone());
        let mut stream = Stream::new(data, 100..2_000).unwrap();
        assert_eq!(read_all(&mut stream).unwrap(), bytes[100..2_000]);
        assert!(stream.ahead.is_none());
    }
}
