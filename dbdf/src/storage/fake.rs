//! A remote object for the storage layer's tests: bytes in memory read after a pause, as
//! over a network, counting requests, bytes and the most in flight at once.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_daphne::ReadAt;

/// Bytes in memory read as a remote object is: counting requests, bytes and the most in
/// flight at once, and failing requests that touch `poisoned`.
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) bytes: Vec<u8>,
    pub(crate) requests: AtomicUsize,
    pub(crate) fetched: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) most_in_flight: AtomicUsize,
    pub(crate) poisoned: Option<u64>,
}

impl Remote {
    pub(crate) fn new(len: usize, poisoned: Option<u64>) -> Arc<Remote> {
        Arc::new(Remote {
            bytes: (0..len).map(|i| (i * 7 % 251) as u8).collect(),
            requests: AtomicUsize::new(0),
            fetched: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
            poisoned,
        })
    }
}

impl ReadAt for Remote {
    fn size(&self) -> io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(5));
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.requests.fetch_add(1, Ordering::SeqCst);
        let end = offset + buf.len() as u64;
        if self.poisoned.is_some_and(|p| offset <= p && p < end) {
            return Err(io::Error::other("the poisoned byte"));
        }
        buf.copy_from_slice(&self.bytes[offset as usize..end as usize]);
        self.fetched.fetch_add(buf.len(), Ordering::SeqCst);
        Ok(())
    }

    fn min_request(&self) -> usize {
        1000
    }
}
