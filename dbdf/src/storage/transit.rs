//! The bytes the process has in transit ([`InTransit`]): chunks fetched ahead of readers,
//! and parts on their way to a store. Both ways share one bound, so that a conversion from a
//! bucket to a bucket holds what a download or an upload alone would, and files written side
//! by side (SystemDS's part files, one per core) send what one would.

use std::sync::{Condvar, Mutex};

/// Which way bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// Fetched ahead of a reader, until it takes them.
    Fetched,
    /// On their way to a store, until it answers.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    Sent,
}

/// Bytes in transit, both ways together: eight chunks fetched ahead (what reaches curl's
/// speed from s3s-fs) or four parts sent (what fills a link a single stream does not). A
/// bound of its own for each way, 96 MiB in all, took a SystemDS conversion from bucket to
/// bucket over 256 MiB (258 MiB; 238 MiB with this one, at 0.9x the speed).
const BOUND: u64 = 64 << 20;

/// Bytes in transit: fetched, sent.
static IN_TRANSIT: Mutex<[u64; 2]> = Mutex::new([0, 0]);
static GIVEN_BACK: Condvar = Condvar::new();

/// A share of the bytes in transit, given back when dropped.
#[derive(Debug)]
pub(crate) struct InTransit {
    way: Way,
    bytes: u64,
}

/// Whether `bytes` more may go `way` now: within the bound, or at once when nothing goes that
/// way (so that each way always moves, whatever the other holds).
fn fits(used: &[u64; 2], way: Way, bytes: u64) -> bool {
    used[way as usize] == 0 || used[0] + used[1] + bytes <= BOUND
}

impl InTransit {
    /// A share of `bytes` going `way`, waiting until it fits. Only for bytes that others
    /// give back whatever this thread does (requests on their way, answered in time).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn wait_for(way: Way, bytes: u64) -> InTransit {
        let mut used = IN_TRANSIT.lock().unwrap_or_else(|e| e.into_inner());
        while !fits(&used, way, bytes) {
            used = GIVEN_BACK.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        used[way as usize] += bytes;
        InTransit { way, bytes }
    }

    /// A share of `bytes` going `way` if it fits now: a reader fetching ahead never waits for
    /// its own chunks to be taken.
    pub(crate) fn try_take(way: Way, bytes: u64) -> Option<InTransit> {
        let mut used = IN_TRANSIT.lock().unwrap_or_else(|e| e.into_inner());
        fits(&used, way, bytes).then(|| {
            used[way as usize] += bytes;
            InTransit { way, bytes }
        })
    }
}

impl Drop for InTransit {
    fn drop(&mut self) {
        let mut used = IN_TRANSIT.lock().unwrap_or_else(|e| e.into_inner());
        used[self.way as usize] -= self.bytes;
        GIVEN_BACK.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_are_bounded_together_and_each_way_always_moves() {
        let used = [0, 0];
        assert!(fits(&used, Way::Sent, BOUND * 3)); // alone, however large
        let used = [BOUND - 16, 0];
        assert!(fits(&used, Way::Fetched, 16));
        assert!(!fits(&used, Way::Fetched, 17));
        // The other way within the bound, or alone.
        assert!(fits(&[BOUND - 16, 8], Way::Sent, 8));
        assert!(!fits(&[BOUND - 16, 8], Way::Sent, 9));
        assert!(fits(&used, Way::Sent, BOUND));
        assert!(fits(&[BOUND * 5, 0], Way::Sent, 1));
    }

    #[test]
    fn a_share_waits_while_it_would_not_fit_and_goes_once_one_is_given_back() {
        // Shares of the other tests of this process are at most fetched chunks; this one sends.
        let first = InTransit::wait_for(Way::Sent, BOUND - 10);
        let (went, gone) = std::sync::mpsc::channel();
        let second = std::thread::spawn(move || {
            let share = InTransit::wait_for(Way::Sent, 20);
            went.send(()).unwrap();
            drop(share);
        });
        assert!(gone
            .recv_timeout(std::time::Duration::from_millis(300))
            .is_err());
        drop(first);
        gone.recv_timeout(std::time::Duration::from_secs(60))
            .unwrap();
        second.join().unwrap();
        assert!(InTransit::try_take(Way::Sent, BOUND).is_some());
    }
}
