//! What a [`WorkerPool`] shows a metrics system ([`Metered`]).

use crate::metered::{Metered, Snapshot};

use super::{Worker, WorkerPool};

impl<W: Worker> Metered for WorkerPool<W>
where
    WorkerPool<W>: Send + Sync,
{
    fn snapshot(&self) -> Snapshot {
        let stats = self.stats();
        Snapshot::new("worker_pool", self.name())
            .counter(
                "accepted",
                "messages accepted into a mailbox",
                stats.accepted,
            )
            .counter("rejected", "messages refused with Overload", stats.rejected)
            .counter(
                "closed",
                "messages refused because the pool closed",
                stats.closed,
            )
            .counter("handled", "messages handled", stats.handled)
            .counter("skipped", "casts dropped unhandled", stats.skipped)
            .counter("panics", "handler panics", stats.panics)
            .counter("restarts", "workers rebuilt", stats.restarts)
            .gauge("usage", "messages in the mailboxes now", stats.usage as f64)
            .gauge(
                "capacity",
                "the most messages in the mailboxes at once",
                stats.capacity as f64,
            )
            .gauge(
                "shards_down",
                "shards with no live worker",
                stats.shards_down as f64,
            )
            .latency(
                [
                    "queue_wait_p50_seconds",
                    "queue_wait_p99_seconds",
                    "queue_wait_max_seconds",
                ],
                "time a message waited in its mailbox (sampled)",
                &stats.queue_wait,
            )
            .latency(
                [
                    "handling_p50_seconds",
                    "handling_p99_seconds",
                    "handling_max_seconds",
                ],
                "time a handler took (sampled)",
                &stats.handling,
            )
            .rates(&self.rates())
    }
}
