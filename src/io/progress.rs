//! Progress of long reads and writes, reported to whoever shows it (the CLI's progress bar, a
//! Python callback): the library itself never prints.

use std::sync::Arc;

/// Told `(bytes done, bytes in all)` as a long read or write goes on; called often (about
/// once per 64 KiB to a few MiB), so it should be cheap.
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;
