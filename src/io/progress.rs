//! Progress of long reads and writes, reported to whoever shows it (the CLI's progress bar, a
//! Python callback): the library itself never prints.

use std::io::{self, Read};
use std::sync::Arc;

/// Told `(bytes done, bytes in all)` as a long read or write goes on; called often (about
/// once per 64 KiB to a few MiB), so it should be cheap.
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// A reader that reports how much of `total` bytes it has read.
pub(crate) struct ProgressReader<'p, R> {
    inner: R,
    total: u64,
    done: u64,
    progress: Option<&'p Progress>,
}

impl<'p, R> ProgressReader<'p, R> {
    pub(crate) fn new(inner: R, total: u64, progress: Option<&'p Progress>) -> Self {
        if let Some(report) = progress {
            report(0, total);
        }
        ProgressReader {
            inner,
            total,
            done: 0,
            progress,
        }
    }
}

impl<R: Read> Read for ProgressReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        if let Some(report) = self.progress {
            report(self.done.min(self.total), self.total);
        }
        Ok(n)
    }
}
