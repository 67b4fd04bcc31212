//! How many threads the parallel paths use.

/// Threads for work split across cores: the cores there are, at most 4.
pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}
