//! [`Gate`]: the line every return reads: the pool's clock, whether it is
//! closed, how many takers wait, the generation, and the settings a take
//! or return checks without loading the configuration. Its fields are its
//! own; the engine reads and moves them through the methods below.
//!
//! # Orderings
//!
//! All `Relaxed`: each field is a hint or a setting read on a path that
//! decides again under the lock it names (the wait queue's, an idle
//! stack's: see the face's `# Orderings`), or a figure.

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::super::config::PoolConfig;
use super::clock::PoolClock;

#[derive(Debug)]
pub(in crate::object_pool) struct Gate {
    /// The pool clock; its coarse reading, which a return stamps, lives on
    /// this line, which the return reads anyway.
    clock: PoolClock,
    closed: AtomicBool,
    /// The wait queue's length; see the module's `# Protocol`.
    waiting: AtomicUsize,
    /// Raised by `retire_all`; an object of an older generation is
    /// destroyed when it comes back.
    generation: AtomicU64,
    /// `min_idle`'s value, for takes to know whether to nudge the
    /// maintainer without loading the configuration.
    min_idle: AtomicUsize,
    /// Whether a pop needs the cold path: `min_idle` is set (nudge the
    /// maintainer), some object may have a lifetime (check it), or objects
    /// are checked on take.
    after_pop: AtomicBool,
    /// `check_on_take`'s value, read by the cold take paths.
    check_on_take: AtomicBool,
    /// Set while `max_size` was lowered below the size: returned objects
    /// are destroyed until the pool fits.
    oversized: AtomicBool,
}

impl Gate {
    /// An open gate for `config`, generation 0, nobody waiting.
    pub(super) fn new(config: &PoolConfig) -> Self {
        Gate {
            clock: PoolClock::new(),
            closed: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            min_idle: AtomicUsize::new(config.min_idle),
            after_pop: AtomicBool::new(config.needs_after_pop()),
            check_on_take: AtomicBool::new(config.check_on_take),
            oversized: AtomicBool::new(false),
        }
    }

    /// The pool's clock.
    #[inline]
    pub(super) fn clock(&self) -> &PoolClock {
        &self.clock
    }

    /// Whether the pool was closed.
    #[inline]
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Marks the pool closed (the caller then closes the wait queue).
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    /// How many takers wait, as the wait queue last said.
    #[inline]
    pub(super) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The wait queue's length, stored under its lock.
    #[inline]
    pub(super) fn set_waiting(&self, waiting: usize) {
        self.waiting.store(waiting, Ordering::Relaxed);
    }

    /// The current generation.
    #[inline]
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Moves to a new generation (`retire_all`).
    pub(super) fn next_generation(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `max_size` was lowered below the size.
    #[inline]
    pub(super) fn is_oversized(&self) -> bool {
        self.oversized.load(Ordering::Relaxed)
    }

    /// Marks the pool as over its `max_size`, or back within it.
    pub(super) fn set_oversized(&self, oversized: bool) {
        self.oversized.store(oversized, Ordering::Relaxed);
    }

    /// Whether an object returned of generation `generation` may go
    /// straight back to idle: nobody waits for it, the pool is open and
    /// within its size, and the generation is current.
    #[inline]
    pub(super) fn keeps_idle(&self, generation: u64) -> bool {
        self.waiting() == 0
            && !self.is_closed()
            && !self.is_oversized()
            && self.generation() == generation
    }

    /// Whether the maintainer keeps idle objects (`min_idle` above 0).
    #[inline]
    pub(super) fn keeps_min_idle(&self) -> bool {
        self.min_idle.load(Ordering::Relaxed) > 0
    }

    /// The configuration changed: its `min_idle` and `check_on_take`.
    pub(super) fn set_settings(&self, min_idle: usize, check_on_take: bool) {
        self.min_idle.store(min_idle, Ordering::Relaxed);
        self.check_on_take.store(check_on_take, Ordering::Relaxed);
    }

    /// Whether a pop needs the cold path.
    #[inline]
    pub(super) fn after_pop(&self) -> bool {
        self.after_pop.load(Ordering::Relaxed)
    }

    /// From now on a pop takes the cold path.
    pub(super) fn set_after_pop(&self) {
        self.after_pop.store(true, Ordering::Relaxed);
    }

    /// Whether idle objects are checked before they are handed out.
    #[inline]
    pub(super) fn check_on_take(&self) -> bool {
        self.check_on_take.load(Ordering::Relaxed)
    }
}
