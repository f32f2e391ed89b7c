//! [`Counters`]: a pool's slow-path figures, on a line of their own. Its
//! fields are its own; the engine counts through [`Counters::count`] and
//! reads through [`Counters::read`].
//!
//! # Orderings
//!
//! All `Relaxed`: figures that order nothing; `creating`, `abandoned` and
//! `replenish` are hints a refill reads and may find a moment stale.

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Slow-path counters; fast-path takes are counted on the idle stacks.
#[derive(Debug, Default)]
pub(in crate::object_pool) struct Counters {
    /// Takes served by a creation or a hand-off rather than a stack.
    direct_takes: AtomicU64,
    waits: AtomicU64,
    timeouts: AtomicU64,
    rejected: AtomicU64,
    creates: AtomicU64,
    create_failures: AtomicU64,
    /// Refill and replenishment rounds that a failed creation ended.
    failed_refills: AtomicU64,
    destroyed: AtomicU64,
    reaped: AtomicU64,
    expired: AtomicU64,
    /// Pops of objects not handed out, expired or failing the check on
    /// take (counted as takes on their stack or the shelf, so subtracted).
    discarded_pops: AtomicU64,
    /// Idle objects that failed `check_on_take`, destroyed.
    failed_take_checks: AtomicU64,
    evicted: AtomicU64,
    /// Creations given up on at a deadline.
    create_timeouts: AtomicU64,
    /// Async takes dropped after their first poll, before they finished.
    cancelled: AtomicU64,
    creating: AtomicUsize,
    /// Of those, creations their waiter gave up on: their objects will be
    /// destroyed, so a refill does not count on them.
    abandoned: AtomicUsize,
    /// Untagged objects that tagged takes took, to be replaced in the
    /// background.
    replenish: AtomicUsize,
    /// A take's check ran past its deadline, and none has answered in time
    /// since: the spell its one event told of.
    checks_late: AtomicBool,
}

/// A figure [`Counters`] counts.
#[derive(Debug, Clone, Copy)]
pub(in crate::object_pool) enum Counted {
    DirectTake,
    Wait,
    Timeout,
    Rejected,
    Create,
    CreateFailure,
    FailedRefill,
    Destroyed,
    Reaped,
    Expired,
    DiscardedPop,
    FailedTakeCheck,
    Evicted,
    CreateTimeout,
    Cancelled,
}

impl Counters {
    #[inline]
    fn counter(&self, what: Counted) -> &AtomicU64 {
        match what {
            Counted::DirectTake => &self.direct_takes,
            Counted::Wait => &self.waits,
            Counted::Timeout => &self.timeouts,
            Counted::Rejected => &self.rejected,
            Counted::Create => &self.creates,
            Counted::CreateFailure => &self.create_failures,
            Counted::FailedRefill => &self.failed_refills,
            Counted::Destroyed => &self.destroyed,
            Counted::Reaped => &self.reaped,
            Counted::Expired => &self.expired,
            Counted::DiscardedPop => &self.discarded_pops,
            Counted::FailedTakeCheck => &self.failed_take_checks,
            Counted::Evicted => &self.evicted,
            Counted::CreateTimeout => &self.create_timeouts,
            Counted::Cancelled => &self.cancelled,
        }
    }

    /// Counts one `what`.
    #[inline]
    pub(in crate::object_pool) fn count(&self, what: Counted) {
        self.counter(what).fetch_add(1, Ordering::Relaxed);
    }

    /// How many `what` so far.
    pub(super) fn read(&self, what: Counted) -> u64 {
        self.counter(what).load(Ordering::Relaxed)
    }

    /// The count of async takes dropped after their first poll, for the
    /// watch a take keeps (see `async_pool/take.rs`).
    #[cfg(feature = "tokio")]
    pub(super) fn cancelled_takes(&self) -> &AtomicU64 {
        &self.cancelled
    }

    /// Creations under way.
    pub(super) fn creating(&self) -> usize {
        self.creating.load(Ordering::Relaxed)
    }

    /// Creations under way that will make an object to keep: less those
    /// their waiter gave up on. Each count moves on its own, so the
    /// difference may be briefly below zero (read as 0).
    pub(super) fn creating_to_keep(&self) -> usize {
        self.creating()
            .saturating_sub(self.abandoned.load(Ordering::Relaxed))
    }

    /// A creation started.
    pub(super) fn creating_started(&self) {
        self.creating.fetch_add(1, Ordering::Relaxed);
    }

    /// A creation ended, however.
    pub(super) fn creating_ended(&self) {
        self.creating.fetch_sub(1, Ordering::Relaxed);
    }

    /// A waiter gave up on a creation under way.
    pub(super) fn abandoned(&self) {
        self.abandoned.fetch_add(1, Ordering::Relaxed);
    }

    /// A creation its waiter gave up on was disposed of.
    pub(super) fn abandoned_disposed(&self) {
        self.abandoned.fetch_sub(1, Ordering::Relaxed);
    }

    /// A take's check ran past its deadline: whether this begins a spell
    /// of late checks (the one to tell of).
    pub(super) fn check_ran_late(&self) -> bool {
        !self.checks_late.swap(true, Ordering::Relaxed)
    }

    /// A take's check answered before its deadline: a spell of late
    /// checks, if any, is over. A read only, unless one was.
    pub(super) fn check_answered_in_time(&self) {
        if self.checks_late.load(Ordering::Relaxed) {
            self.checks_late.store(false, Ordering::Relaxed);
        }
    }

    /// `count` more untagged objects to replace in the background.
    pub(super) fn replenish_more(&self, count: usize) {
        self.replenish.fetch_add(count, Ordering::Relaxed);
    }

    /// The untagged objects to replace, now taken on.
    pub(super) fn take_replenish(&self) -> usize {
        self.replenish.swap(0, Ordering::Relaxed)
    }
}
