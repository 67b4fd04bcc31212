//! A remote source read through a local file of what it has fetched: a conversion that reads
//! its input twice (a `.dbdf` block whose type depends on its non-zeros, a MatrixMarket size
//! line) fetches each byte once, and the first pass still streams.

use std::fs::File;
use std::io::{self, IoSliceMut};
use std::ops::Range;
use std::sync::Mutex;

use serde_daphne::ReadAt;

use super::transfer::write_all_at;

/// A positional source whose reads are kept in a local file (sparse, never larger than the
/// source) and served from it when read again.
#[derive(Debug)]
pub struct FetchedOnce<R> {
    inner: R,
    kept: File,
    /// The byte ranges `kept` holds, sorted and merged.
    held: Mutex<Vec<Range<u64>>>,
}

impl<R: ReadAt> FetchedOnce<R> {
    /// `inner`, its reads kept in `kept` (an empty file of this process's own).
    pub fn new(inner: R, kept: File) -> FetchedOnce<R> {
        FetchedOnce {
            inner,
            kept,
            held: Mutex::new(Vec::new()),
        }
    }

    fn holds(&self, wanted: &Range<u64>) -> bool {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let i = held.partition_point(|r| r.end < wanted.end);
        held.get(i)
            .is_some_and(|r| r.start <= wanted.start && wanted.end <= r.end)
    }

    fn keep(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        write_all_at(&self.kept, bytes, offset)?;
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut new = offset..offset + bytes.len() as u64;
        // Ranges that touch the new one merge with it.
        held.retain(|r| {
            let apart = r.end < new.start || new.end < r.start;
            if !apart {
                new = new.start.min(r.start)..new.end.max(r.end);
            }
            apart
        });
        let at = held.partition_point(|r| r.end < new.start);
        held.insert(at, new);
        Ok(())
    }
}

impl<R: ReadAt> ReadAt for FetchedOnce<R> {
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if self.holds(&(offset..offset + buf.len() as u64)) {
            return self.kept.read_exact_at(buf, offset);
        }
        self.inner.read_exact_at(buf, offset)?;
        self.keep(buf, offset)
    }

    fn read_exact_vectored_at(&self, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<()> {
        let len: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        if self.holds(&(offset..offset + len)) {
            return self.kept.read_exact_vectored_at(bufs, offset);
        }
        self.inner.read_exact_vectored_at(bufs, offset)?;
        let mut at = offset;
        for buf in bufs.iter() {
            self.keep(buf, at)?;
            at += buf.len() as u64;
        }
        Ok(())
    }

    fn min_request(&self) -> usize {
        self.inner.min_request()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Bytes that count the reads made of them.
    #[derive(Debug)]
    struct Counted(Vec<u8>, AtomicUsize);

    impl ReadAt for Counted {
        fn size(&self) -> io::Result<u64> {
            self.0.size()
        }
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.read_exact_at(buf, offset)
        }
    }

    #[test]
    fn a_second_pass_reads_the_kept_bytes_and_ranges_merge() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("dbdf-kept-{}", std::process::id()));
        let kept = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let source = FetchedOnce::new(Counted(bytes.clone(), AtomicUsize::new(0)), kept);
        let reads = [(100u64, 900usize), (1000, 1000), (5000, 10), (0, 100)];
        for pass in 0..2 {
            for &(at, n) in &reads {
                let mut buf = vec![0; n];
                source.read_exact_at(&mut buf, at).unwrap();
                assert_eq!(buf, bytes[at as usize..at as usize + n], "pass {pass}");
            }
        }
        assert_eq!(source.inner.1.load(Ordering::Relaxed), reads.len());
        // 0..2000 is one range now: a read across the first three is served too.
        assert_eq!(*source.held.lock().unwrap(), vec![0..2000, 5000..5010]);
        let mut buf = vec![0; 1500];
        source.read_exact_at(&mut buf, 50).unwrap();
        assert_eq!(buf, bytes[50..1550]);
        assert_eq!(source.inner.1.load(Ordering::Relaxed), reads.len());
        // A read past what is held goes to the source.
        let mut buf = vec![0; 20];
        source.read_exact_at(&mut buf, 4995).unwrap();
        assert_eq!(buf, bytes[4995..5015]);
        assert_eq!(source.inner.1.load(Ordering::Relaxed), reads.len() + 1);
    }
}
