//! The bytes the process has on their way to the store ([`Sendable`]), shared by every
//! upload: several at once (SystemDS's part files, one per core; a Zarr group's chunks) send
//! what one would, so that memory stays bounded however many files are written side by side.

use std::sync::{Condvar, Mutex};

/// Bytes on their way at once: four parts of an upload (`transfer::PART`), enough to fill a
/// link that a single stream does not.
const SENDING_BYTES: u64 = 64 << 20;

static SENDING: Mutex<u64> = Mutex::new(0);
static SENT: Condvar = Condvar::new();

/// A share of [`SENDING_BYTES`] held by a request on its way; given back when dropped
/// (when the request is answered, whoever waits for it).
pub(super) struct Sendable(u64);

impl Sendable {
    /// A share of `n` bytes, waiting until that many may go (at once when nothing else is on
    /// its way, however large).
    pub(super) fn wait_for(n: u64) -> Sendable {
        let mut sending = SENDING.lock().unwrap_or_else(|e| e.into_inner());
        while *sending > 0 && *sending + n > SENDING_BYTES {
            sending = SENT.wait(sending).unwrap_or_else(|e| e.into_inner());
        }
        *sending += n;
        Sendable(n)
    }
}

impl Drop for Sendable {
    fn drop(&mut self) {
        let mut sending = SENDING.lock().unwrap_or_else(|e| e.into_inner());
        *sending -= self.0;
        SENT.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_share_waits_while_it_would_pass_the_bound_and_goes_once_bytes_are_answered() {
        let first = Sendable::wait_for(SENDING_BYTES - 10);
        let (sent, went) = mpsc::channel();
        let second = std::thread::spawn(move || {
            let share = Sendable::wait_for(20);
            sent.send(()).unwrap();
            drop(share);
        });
        // Held back while the first share is on its way...
        assert!(went.recv_timeout(Duration::from_millis(300)).is_err());
        // ...and sent once it is answered.
        drop(first);
        went.recv_timeout(Duration::from_secs(60)).unwrap();
        second.join().unwrap();
        // A share larger than the bound goes when nothing else is on its way.
        drop(Sendable::wait_for(SENDING_BYTES * 2));
        assert_eq!(*SENDING.lock().unwrap(), 0);
    }
}
