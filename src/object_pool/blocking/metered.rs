//! What an object pool shows a metrics system ([`Metered`]): the same
//! figures for [`ObjectPool`] and, with feature `tokio`,
//! `AsyncObjectPool`, both as face `object_pool`.

use crate::metered::{Metered, Snapshot};
use crate::rates::RateStats;

use super::ObjectPool;
use crate::object_pool::manager::Manager;
use crate::object_pool::status::{ObjectPoolStats, PoolStatus};

/// A pool's figures, whichever face.
pub(in crate::object_pool) fn pool_snapshot(
    name: &str,
    status: &PoolStatus,
    stats: &ObjectPoolStats,
    rates: &RateStats,
) -> Snapshot {
    Snapshot::new("object_pool", name)
        .counter("takes", "objects handed out", stats.takes)
        .counter("waits", "takes that waited in the queue", stats.waits)
        .counter("timeouts", "takes that timed out", stats.timeouts)
        .counter(
            "rejected",
            "takes refused with Overload or QueueFull",
            stats.rejected,
        )
        .counter("creates", "objects made", stats.creates)
        .counter(
            "create_failures",
            "creations that failed",
            stats.create_failures,
        )
        .counter(
            "failed_refills",
            "background creations for min_idle that failed, each backing off",
            stats.failed_refills,
        )
        .counter(
            "create_timeouts",
            "creations given up at a deadline",
            stats.create_timeouts,
        )
        .counter("destroyed", "objects destroyed", stats.destroyed)
        .counter("reaped", "idle objects reaped", stats.reaped)
        .counter("expired", "objects past their lifetime", stats.expired)
        .counter("evicted", "tagged objects evicted for room", stats.evicted)
        .counter(
            "failed_take_checks",
            "idle objects that failed check_on_take",
            stats.failed_take_checks,
        )
        .counter(
            "cancelled",
            "async takes dropped before they answered",
            stats.cancelled,
        )
        .gauge(
            "max_size",
            "the most objects at once",
            status.max_size as f64,
        )
        .gauge(
            "size",
            "objects that exist or are being made",
            status.size as f64,
        )
        .gauge("idle", "idle objects", status.idle as f64)
        .gauge("in_use", "objects in use", status.in_use as f64)
        .gauge("creating", "objects being made", status.creating as f64)
        .gauge("waiting", "takers waiting", status.waiting as f64)
        .latency(
            ["wait_p50_seconds", "wait_p99_seconds", "wait_max_seconds"],
            "time a taker waited in the queue",
            &stats.wait,
        )
        .rates(rates)
}

impl<M: Manager> Metered for ObjectPool<M> {
    fn snapshot(&self) -> Snapshot {
        pool_snapshot(self.name(), &self.status(), &self.stats(), &self.rates())
    }
}
