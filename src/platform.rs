//! The switch to the portable paths. Some fast paths are Linux's (unnamed files, `fallocate`,
//! huge pages, a directory swap in one call) or Unix's (positional reads on every core); the
//! other platforms take plain paths instead. Setting the environment variable
//! `SERDE_DAPHNE_PORTABLE=1` makes this process take those plain paths too, so that the tests
//! can run them on Linux (`.ci/run` does). Read once, at the first use.

use std::sync::OnceLock;

/// Whether files are read with positional reads on every core: on Unix, unless the portable
/// paths are asked for.
pub(crate) fn positional_reads() -> bool {
    cfg!(unix) && !portable()
}

/// Whether the portable paths are asked for (`SERDE_DAPHNE_PORTABLE` set, and not to `0`).
pub fn portable() -> bool {
    static PORTABLE: OnceLock<bool> = OnceLock::new();
    *PORTABLE.get_or_init(|| {
        std::env::var_os("SERDE_DAPHNE_PORTABLE").is_some_and(|v| !v.is_empty() && v != "0")
    })
}
