//! What the engine reports of itself: its size ([`PoolStatus`]), its
//! counters ([`ObjectPoolStats`]) and what the rates sampler reads.

use crate::rates::Sample;
use crate::sync::{lock, spin_lock, AtomicU64, Ordering};

use super::super::status::{ObjectPoolStats, PoolStatus};
use super::hooks::Hooks;
use super::shared::PoolShared;

impl<M: Hooks> PoolShared<M> {
    /// Idle untagged objects, ready for any taker.
    pub(in crate::object_pool) fn untagged_idle_count(&self) -> usize {
        self.idle
            .iter()
            .map(|stack| spin_lock(stack).members.len())
            .sum()
    }

    /// Idle tagged objects.
    pub(in crate::object_pool) fn tagged_idle_count(&self) -> usize {
        self.tags.get().map_or(0, |shelf| shelf.len())
    }

    pub(in crate::object_pool) fn status(&self) -> PoolStatus {
        let tagged = self.tagged_idle_count();
        let idle = self.untagged_idle_count() + tagged;
        let creating = self.counters.creating.load(Ordering::Relaxed);
        let size = self.slots.usage();
        PoolStatus {
            max_size: self.slots.capacity(),
            size,
            idle,
            tagged,
            in_use: size.saturating_sub(idle + creating),
            creating,
            waiting: self.gate.waiting.load(Ordering::Relaxed),
        }
    }

    /// Takes that handed an object out, ever.
    fn takes(&self) -> u64 {
        let counters = &self.counters;
        let stack_takes: u64 = self.idle.iter().map(|stack| spin_lock(stack).takes).sum();
        (stack_takes + counters.direct_takes.load(Ordering::Relaxed))
            .saturating_sub(counters.discarded_pops.load(Ordering::Relaxed))
    }

    /// What the rates sampler reads of a pool: objects taken, takes refused
    /// (at once or at their deadline), objects back (returned, failed or
    /// detached: taken and no longer in use), and in use now.
    pub(in crate::object_pool) fn sample(&self) -> Sample {
        let counters = &self.counters;
        let in_use = self.status().in_use;
        let takes = self.takes();
        Sample {
            accepted: takes,
            rejected: counters.rejected.load(Ordering::Relaxed)
                + counters.timeouts.load(Ordering::Relaxed),
            completed: takes.saturating_sub(in_use as u64),
            usage: in_use,
        }
    }

    pub(in crate::object_pool) fn stats(&self) -> ObjectPoolStats {
        let counters = &self.counters;
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ObjectPoolStats {
            takes: self.takes(),
            waits: read(&counters.waits),
            timeouts: read(&counters.timeouts),
            rejected: read(&counters.rejected),
            creates: read(&counters.creates),
            create_failures: read(&counters.create_failures),
            failed_refills: read(&counters.failed_refills),
            destroyed: read(&counters.destroyed),
            reaped: read(&counters.reaped),
            expired: read(&counters.expired),
            evicted: read(&counters.evicted),
            failed_take_checks: read(&counters.failed_take_checks),
            create_timeouts: read(&counters.create_timeouts),
            cancelled: read(&counters.cancelled),
            wait: lock(&self.wait_times).summary(),
        }
    }
}
