//! How many threads the parallel paths use, and the one way they split work.

/// Threads for work split across cores: the cores there are, at most 4. Converters use it
/// for their own parallel reads, so that every path agrees on the count.
pub fn workers() -> usize {
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

/// Items per part when `len` items are split between the cores: all of them (one part)
/// unless `parallel`; never 0.
pub(crate) fn share(len: usize, parallel: bool) -> usize {
    let threads = if parallel { workers() } else { 1 };
    len.div_ceil(threads).max(1)
}

/// Rows `0..rows` of a CSR matrix with `entries` entries cut into runs holding about equal
/// numbers of them, one per core (one run below 2^20 entries, where threads cost more than
/// they save). `first_row_at(e)` is the first row whose entries start at or after entry
/// `e` (a `partition_point` on the sorted row offsets). Runs are never empty.
pub(crate) fn runs_of_rows(
    rows: usize,
    entries: usize,
    first_row_at: impl Fn(usize) -> usize,
) -> Vec<std::ops::Range<usize>> {
    let threads = if entries < 1 << 20 { 1 } else { workers() };
    let mut starts: Vec<usize> = (0..threads)
        .map(|k| first_row_at(entries * k / threads).min(rows))
        .collect();
    starts.push(rows);
    starts.dedup();
    starts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// The producer's end of [`pipeline`]: hands items to the consumer and takes back the ones
/// it is done with, for reuse.
pub struct Producer<T> {
    to_consumer: std::sync::mpsc::SyncSender<T>,
    spent: std::sync::mpsc::Receiver<T>,
}

impl<T> Producer<T> {
    /// Hands `item` over, waiting until the consumer takes it; `false` once the consumer has
    /// stopped (failed), when the producer should stop too.
    pub fn send(&self, item: T) -> bool {
        self.to_consumer.send(item).is_ok()
    }

    /// An item the consumer is done with, if one is back.
    pub fn spare(&self) -> Option<T> {
        self.spent.try_recv().ok()
    }

    /// The `made` items once the consumer has given each back (fewer if it stopped), for
    /// reuse after the pipeline.
    pub(crate) fn take_back(&self, made: usize) -> Vec<T> {
        (0..made).map_while(|_| self.spent.recv().ok()).collect()
    }

    /// An item to fill: one the consumer is done with, else a new one from `make` while
    /// fewer than `most` were made (`made` counts them), else the next one the consumer
    /// gives back (waiting for it). `None` once the consumer has stopped.
    pub(crate) fn recycled(
        &self,
        made: &mut usize,
        most: usize,
        make: impl FnOnce() -> T,
    ) -> Option<T> {
        if let Ok(item) = self.spent.try_recv() {
            return Some(item);
        }
        if *made < most {
            *made += 1;
            return Some(make());
        }
        self.spent.recv().ok()
    }
}

/// Runs `produce` on the calling thread and `consume` on a second one, so that reading and
/// decoding overlap on two cores. Items pass one at a time (the producer waits while the
/// consumer is busy), so at most three are alive; `consume` returns each item when done, for
/// the producer to reuse ([`Producer::spare`]). Items are consumed in the order produced.
///
/// `consume`'s error wins over `produce`'s: it concerns an item produced before whatever
/// stopped `produce`, so the first error in the input's order is the one reported.
pub fn pipeline<T: Send>(
    produce: impl FnOnce(&Producer<T>) -> crate::Result<()>,
    consume: impl FnMut(&mut T) -> crate::Result<()> + Send,
) -> crate::Result<()> {
    let (producer, items, give_back) = channels(0);
    std::thread::scope(|scope| {
        let consumer = scope.spawn(move || consume_all(items, give_back, consume));
        let produced = produce(&producer);
        drop(producer);
        let consumed = consumer
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        consumed.and(produced)
    })
}

/// [`pipeline`] with the sides swapped: `produce` on a second thread, `consume` on the
/// calling one (a writer that cannot move between threads, fed by an encoder). Up to
/// `waiting` items wait for the consumer (0: each is handed over as the consumer takes it).
pub(crate) fn pipeline_to_caller<T: Send>(
    waiting: usize,
    produce: impl FnOnce(&Producer<T>) -> crate::Result<()> + Send,
    consume: impl FnMut(&mut T) -> crate::Result<()>,
) -> crate::Result<()> {
    let (producer, items, give_back) = channels(waiting);
    std::thread::scope(|scope| {
        let producing = scope.spawn(move || produce(&producer));
        let consumed = consume_all(items, give_back, consume);
        let produced = producing
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        consumed.and(produced)
    })
}

type Channels<T> = (
    Producer<T>,
    std::sync::mpsc::Receiver<T>,
    std::sync::mpsc::Sender<T>,
);

/// A channel to the consumer holding up to `waiting` items (0: a rendezvous) and a channel
/// back for spent items.
fn channels<T>(waiting: usize) -> Channels<T> {
    let (to_consumer, items) = std::sync::mpsc::sync_channel::<T>(waiting);
    let (give_back, spent) = std::sync::mpsc::channel::<T>();
    (Producer { to_consumer, spent }, items, give_back)
}

/// Consumes every item until the producer is done or `consume` fails (dropping `items` then
/// tells the producer to stop).
fn consume_all<T>(
    items: std::sync::mpsc::Receiver<T>,
    give_back: std::sync::mpsc::Sender<T>,
    mut consume: impl FnMut(&mut T) -> crate::Result<()>,
) -> crate::Result<()> {
    for mut item in items {
        consume(&mut item)?;
        let _ = give_back.send(item);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{pipeline, pipeline_to_caller, Producer};
    use crate::{Error, Result};

    /// Sends 0..100, one to an item from `item` (a spare one or a new one).
    fn send_hundred(producer: &Producer<Vec<i32>>, mut item: impl FnMut() -> Vec<i32>) {
        for k in 0..100 {
            let mut item = item();
            item.clear();
            item.push(k);
            assert!(producer.send(item));
        }
    }

    /// A consumer that fails on item 3.
    fn fails_at_three(k: &mut i32) -> Result<()> {
        match k {
            3 => Err(Error::invalid("the consumer's error at 3")),
            _ => Ok(()),
        }
    }

    #[test]
    fn a_pipeline_to_the_caller_consumes_in_order_and_reuses_at_most_its_items() {
        let mut seen = Vec::new();
        let mut made = 0;
        let consume = |item: &mut Vec<i32>| {
            seen.extend_from_slice(item);
            Ok(())
        };
        pipeline_to_caller(
            2,
            |producer| {
                send_hundred(producer, || {
                    producer.recycled(&mut made, 4, Vec::new).unwrap()
                });
                assert!(made <= 4, "{made}");
                Ok(())
            },
            consume,
        )
        .unwrap();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        // The consumer's error wins over the producer's later one; the producer, waiting for
        // an item back, learns that it stopped.
        let err = pipeline_to_caller(
            0,
            |producer| {
                let mut made = 0;
                for k in 0..10 {
                    if producer.recycled(&mut made, 2, || 0).is_none() || !producer.send(k) {
                        break;
                    }
                }
                Err(Error::invalid("the producer's later error"))
            },
            fails_at_three,
        )
        .unwrap_err();
        assert!(err.to_string().contains("at 3"), "{err}");
    }

    #[test]
    fn a_pipeline_consumes_in_order_and_reports_the_first_error_in_that_order() {
        let mut seen = Vec::new();
        pipeline(
            |producer| {
                send_hundred(producer, || producer.spare().unwrap_or_default());
                Ok(())
            },
            |item: &mut Vec<i32>| {
                seen.extend_from_slice(item);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        // The consumer fails on item 3 while the producer fails later: the consumer's error
        // wins, and the producer learns that it stopped.
        let mut sent_after_failure = false;
        let err = pipeline(
            |producer| {
                for k in 0..10 {
                    if !producer.send(k) {
                        sent_after_failure = true;
                        break;
                    }
                }
                Err(Error::invalid("the producer's later error"))
            },
            fails_at_three,
        )
        .unwrap_err();
        assert!(err.to_string().contains("at 3"), "{err}");
        assert!(sent_after_failure);
    }
}
