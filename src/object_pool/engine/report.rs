//! What the engine reports of itself: its size ([`PoolStatus`]), its
//! counters ([`ObjectPoolStats`]) and what the rates sampler reads.

use crate::rates::Sample;
use crate::sync::{lock, spin_lock};

use super::super::status::{ObjectPoolStats, PoolStatus};
use super::counters::Counted;
use super::hooks::Hooks;
use super::shared::PoolShared;

impl<M: Hooks> PoolShared<M> {
    /// Idle untagged objects, ready for any taker.
    pub(in crate::object_pool) fn untagged_idle_count(&self) -> usize {
        self.idle.iter().map(|stack| spin_lock(stack).len()).sum()
    }

    /// Idle tagged objects.
    pub(in crate::object_pool) fn tagged_idle_count(&self) -> usize {
        self.tags.get().map_or(0, |shelf| shelf.len())
    }

    pub(in crate::object_pool) fn status(&self) -> PoolStatus {
        let tagged = self.tagged_idle_count();
        let idle = self.untagged_idle_count() + tagged;
        let creating = self.counters.creating();
        let size = self.slots.usage();
        PoolStatus {
            max_size: self.slots.capacity(),
            size,
            idle,
            tagged,
            in_use: size.saturating_sub(idle + creating),
            creating,
            waiting: self.gate.waiting(),
        }
    }

    /// Takes that handed an object out, ever.
    fn takes(&self) -> u64 {
        let counters = &self.counters;
        let stack_takes: u64 = self.idle.iter().map(|stack| spin_lock(stack).takes()).sum();
        (stack_takes + counters.read(Counted::DirectTake))
            .saturating_sub(counters.read(Counted::DiscardedPop))
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
            rejected: counters.read(Counted::Rejected) + counters.read(Counted::Timeout),
            completed: takes.saturating_sub(in_use as u64),
            usage: in_use,
        }
    }

    pub(in crate::object_pool) fn stats(&self) -> ObjectPoolStats {
        let counters = &self.counters;
        ObjectPoolStats {
            takes: self.takes(),
            waits: counters.read(Counted::Wait),
            timeouts: counters.read(Counted::Timeout),
            rejected: counters.read(Counted::Rejected),
            creates: counters.read(Counted::Create),
            create_failures: counters.read(Counted::CreateFailure),
            failed_refills: counters.read(Counted::FailedRefill),
            destroyed: counters.read(Counted::Destroyed),
            reaped: counters.read(Counted::Reaped),
            expired: counters.read(Counted::Expired),
            evicted: counters.read(Counted::Evicted),
            failed_take_checks: counters.read(Counted::FailedTakeCheck),
            create_timeouts: counters.read(Counted::CreateTimeout),
            cancelled: counters.read(Counted::Cancelled),
            wait: lock(&self.wait_times).summary(),
        }
    }
}
