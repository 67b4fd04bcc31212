//! How many threads the parallel paths use, and the one way they split work.

/// Threads for work split across cores: the cores there are, at most 4.
pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Runs `work` on every part, each but the last on a scoped thread of its own and the last
/// on the calling thread; returns the results in the parts' order. A panic in a part is
/// resumed on the caller.
pub(crate) fn on_every_core<P: Send, R: Send>(
    parts: impl IntoIterator<Item = P>,
    work: impl Fn(P) -> R + Sync,
) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let mut parts = parts.into_iter().peekable();
        let mut handles = Vec::new();
        let mut last = None;
        while let Some(part) = parts.next() {
            if parts.peek().is_some() {
                handles.push(scope.spawn(move || work(part)));
            } else {
                last = Some(work(part));
            }
        }
        let mut results: Vec<R> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        results.extend(last);
        results
    })
}
