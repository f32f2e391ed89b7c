//! [`Expiry`]: a capacity good until a deadline, checked by every acquire.
//!
//! A capacity leased from elsewhere (a fleet's budget in Redis) is good
//! only until its lease ends. A timer that lowers it then is not enough: a
//! process stopped (`SIGSTOP`, a long GC-like stall, a VM pause) past the
//! deadline resumes every thread at once, and the request threads would
//! admit on the stale capacity before the timer's thread ran. So an acquire
//! of a resource with a deadline reads the clock first, and the first one
//! past the deadline lowers the capacity to its fallback itself.
//!
//! A resource without a deadline pays one load of a read-mostly word and a
//! branch. One with a deadline reads a clock as well, the cheapest that
//! can tell: the kernel's coarse clock ([`crate::clock::coarse_nanos`],
//! the vDSO, about 4 ns) while the deadline is more than
//! [`COARSE_LAG`] away (a fleet renews its leases long before that), and
//! the time-stamp counter (the process's one clock, [`crate::clock`],
//! about 9 ns, made at the first deadline: a resource never leased does not
//! pay for making it) from then on, or where the OS has no coarse clock.
//! The coarse clock lags the present by a tick or a few, never by
//! [`COARSE_LAG`], and never runs ahead of it: a coarse reading before
//! `safe_until` (the deadline less that lag) is before the deadline.
//!
//! A refusal admits nothing, so one that the reserve alone proves (the
//! capacity scarce, nothing in it: every slot held) is made before any
//! clock is read, when the fallback is no higher than the capacity (every
//! slot held before the deadline is held after it). A fallback above the
//! capacity (a fleet's floor above a small grant) is read first, so it is
//! in force at the deadline even while the lease's slots are all held.
//! Reading the capacity or the stats checks the deadline too.
//!
//! What it cannot do: a thread that passed the check, then was stopped
//! before its CAS, admits once on resuming; and a permit admitted before
//! the deadline stays held after it (nothing is revoked). A virtual
//! machine paused for longer than [`COARSE_LAG`] resumes with the coarse
//! clock stale until the guest kernel's next tick (the resumed CPU takes
//! its own at once; the one that keeps time may take microseconds more):
//! an acquire in that window reads the deadline as still ahead, the same
//! one admission at a resume as above. And a renewal is one call: a thread
//! that arms a nearer deadline and is stopped between its stores of
//! `safe_until` and the deadline leaves acquires to the old ones until it
//! resumes.
//!
//! # Orderings
//!
//! Arming sets the capacity, then stores `safe_until` and the deadline,
//! each with `Release`; an acquire loads the deadline, then `safe_until`,
//! each with `Acquire`, so a thread that sees either sees the capacity set
//! with it. One that sees a newer `safe_until` than its deadline sees the
//! newer arm's capacity too, which that `safe_until` covers. Arming and
//! expiring are serialised by a lock that acquires never take, except the
//! first acquire past a deadline.

use std::time::Instant;

use crate::admission::ShardedCounter;
use crate::clock::{clock, coarse_nanos, COARSE_LAG};
use crate::error::BuildError;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};

/// The deadline of a resource's capacity, if it has one.
pub(super) struct Expiry {
    /// The clock's raw reading at which the capacity stops being good;
    /// [`NONE`] when it is good for ever. Raw, so a check is one read of
    /// the clock and a compare, with no scaling.
    deadline: AtomicU64,
    /// The coarse clock's reading ([`coarse_nanos`]) before which the
    /// deadline is surely ahead: the deadline less [`COARSE_LAG`] on that
    /// clock; 0 (never) with no deadline, one within the lag, or no coarse
    /// clock.
    safe_until: AtomicU64,
    /// The capacity from the deadline on.
    fallback: AtomicUsize,
    /// Whether the fallback is at most the capacity it follows: then every
    /// slot held before the deadline is a slot held after it, and a refusal
    /// needs no clock. A fallback above the capacity must be read first.
    lowers: AtomicBool,
    /// Serialises arming, disarming and expiring; holds whether a
    /// [`CapacityLease`](super::CapacityLease) owns the capacity, so that a
    /// user's write and a claim are one step each.
    lock: Mutex<bool>,
}

/// A deadline that never comes.
const NONE: u64 = 0;

impl Expiry {
    /// An expiry with no deadline.
    pub(super) fn new() -> Expiry {
        Expiry {
            deadline: AtomicU64::new(NONE),
            safe_until: AtomicU64::new(0),
            fallback: AtomicUsize::new(0),
            lowers: AtomicBool::new(false),
            lock: Mutex::new(false),
        }
    }

    /// Whether the capacity has a deadline (one load of a read-mostly
    /// word; `passed` reads it again, from the same line).
    #[inline]
    pub(super) fn is_armed(&self) -> bool {
        // Relaxed: a hint; `passed` loads it again with Acquire.
        self.deadline.load(Ordering::Relaxed) != NONE
    }

    /// Whether a refusal stands past the deadline as before it: the
    /// fallback is at most the capacity in force (every slot held now is
    /// held then), so a refusal may be made without reading the clock.
    #[inline]
    pub(super) fn refusal_outlives(&self) -> bool {
        // Relaxed: set with the capacity under the lock; a reader racing a
        // new arm refuses on that arm's capacity, whose deadline is ahead.
        self.lowers.load(Ordering::Relaxed)
    }

    /// Whether the capacity is past its deadline. One load when there is
    /// none; a read of the coarse clock while it is far.
    #[inline]
    pub(super) fn passed(&self) -> bool {
        // Acquire: pairs with `arm`'s Release (see the module's orderings).
        let deadline = self.deadline.load(Ordering::Acquire);
        deadline != NONE && self.reached(deadline)
    }

    /// Whether the clock has reached `deadline` (a raw reading): the
    /// coarse clock answers while the deadline is far, the precise one
    /// near it.
    #[inline]
    fn reached(&self, deadline: u64) -> bool {
        // Acquire: pairs with `arm`'s Release (see the module's orderings).
        let safe_until = self.safe_until.load(Ordering::Acquire);
        if coarse_nanos().is_some_and(|now| now < safe_until) {
            return false;
        }
        clock().raw() >= deadline
    }

    /// Past the deadline: lowers `counter`'s capacity to the fallback, once.
    #[cold]
    pub(super) fn expire(&self, counter: &ShardedCounter) {
        let _serial = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have expired it, or a renewal armed it again.
        if self.passed() {
            // The fallback was checked when it was armed.
            let _ = counter.set_capacity(self.fallback.load(Ordering::Relaxed));
            self.safe_until.store(0, Ordering::Relaxed);
            self.deadline.store(NONE, Ordering::Relaxed);
        }
    }

    /// Sets `counter`'s capacity to `capacity` until `until`, and to
    /// `fallback` from then on.
    pub(super) fn arm(
        &self,
        counter: &ShardedCounter,
        capacity: usize,
        until: Instant,
        fallback: usize,
    ) -> Result<(), BuildError> {
        crate::admission::check_capacity(capacity)?;
        crate::admission::check_capacity(fallback)?;
        // Made (the first time) before the lock, which acquires may wait on.
        let clock = clock();
        let _serial = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        // Both clocks before `left`'s present, so that the deadlines below
        // fall at or before `until` on each; the coarse one lags, and
        // `safe_until` is the lag before that.
        let coarse = coarse_nanos();
        let raw = clock.raw();
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            self.safe_until.store(0, Ordering::Relaxed);
            self.deadline.store(NONE, Ordering::Relaxed);
            return counter.set_capacity(fallback);
        }
        counter.set_capacity(capacity)?;
        self.fallback.store(fallback, Ordering::Relaxed);
        self.lowers.store(fallback <= capacity, Ordering::Relaxed);
        // The clock scales raw readings linearly: a span's nanoseconds over
        // its raw units is the rate.
        const SPAN: u64 = 1 << 40;
        let nanos_per_raw = clock.delta_as_nanos(0, SPAN) as f64 / SPAN as f64;
        let raw_left = if nanos_per_raw > 0.0 {
            (left.as_nanos() as f64 / nanos_per_raw) as u64
        } else {
            u64::MAX
        };
        let deadline = raw.saturating_add(raw_left.max(1)).max(1);
        // The deadline less the lag, on the coarse clock.
        let safe_until = match (coarse, left.checked_sub(COARSE_LAG)) {
            (Some(now), Some(far)) => {
                now.saturating_add(u64::try_from(far.as_nanos()).unwrap_or(u64::MAX))
            }
            _ => 0,
        };
        // Release, both: the capacity above is set before any thread sees
        // this deadline, or this `safe_until`.
        self.safe_until.store(safe_until, Ordering::Release);
        self.deadline.store(deadline, Ordering::Release);
        Ok(())
    }

    /// Claims the capacity for a lease; `false` if one holds it already.
    pub(super) fn claim(&self) -> bool {
        let mut leased = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        !std::mem::replace(&mut *leased, true)
    }

    /// The lease that claimed the capacity is gone: the user owns it again
    /// (a deadline the lease armed still lowers it when it comes).
    pub(super) fn unclaim(&self) {
        *self.lock.lock().unwrap_or_else(|e| e.into_inner()) = false;
    }

    /// Sets `counter`'s capacity to `capacity` for good: no deadline. As
    /// the user (`by_lease` false) only while no lease holds the capacity.
    pub(super) fn disarm(
        &self,
        counter: &ShardedCounter,
        capacity: usize,
        by_lease: bool,
    ) -> Result<(), BuildError> {
        let leased = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if *leased && !by_lease {
            return Err(BuildError::new(
                "capacity",
                "a CapacityLease (a fleet's grant) sets this resource's capacity while it is held",
            ));
        }
        counter.set_capacity(capacity)?;
        self.safe_until.store(0, Ordering::Relaxed);
        self.deadline.store(NONE, Ordering::Relaxed);
        Ok(())
    }
}

impl std::fmt::Debug for Expiry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expiry")
            .field("deadline", &self.deadline.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
