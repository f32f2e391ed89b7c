//! The reserve: the part of a capacity that no shard holds, in one word.
//!
//! The shards' limits are leases on the capacity. What is not leased sits
//! here: the slots a grow added, the free slots a sweep gathered, the slots
//! releases hand back while capacity is scarce. It can be negative: a shrink
//! below the usage takes its slots from the reserve at once, and the
//! releases that follow pay the debt back.
//!
//! ```text
//!  63                 35   34     33  32   31                 0
//! +----------------------+------+--------+--------------------+
//! | version mod 2^29     |moving| mode   | free + 2^31        |
//! +----------------------+------+--------+--------------------+
//! ```
//!
//! * `free`: slots no shard holds; signed, stored with a bias of 2^31.
//! * `mode`: [`Mode`], which tells releases where their free slot goes.
//! * `moving`: a sweep has taken free slots off a shard and not yet added
//!   them here. A refusal's snapshot is valid only with this bit clear.
//! * `version`: bumped by every change, so an unchanged word means an
//!   unchanged reserve (a probe compares two reads of it).
//!
//! # Orderings
//!
//! Every change is a `SeqCst` read-modify-write and every read `SeqCst`:
//! the mode is the reserve's half of the store-then-load pair with a
//! release (see the [counter](super::counter)), and the slot counts moving
//! between the reserve and the shards need the probe's snapshot to see them
//! in one order with the shards' words. The reserve is touched only off the
//! fast path: by leases, sweeps, resizes, refusals, and releases while
//! capacity is scarce.

use crate::sync::{AtomicU64, Ordering};

const FREE_BITS: u32 = 32;
const BIAS: u64 = 1 << (FREE_BITS - 1);
const FREE_MASK: u64 = (1 << FREE_BITS) - 1;
const MODE_SHIFT: u32 = FREE_BITS;
const MODE_MASK: u64 = 0b11 << MODE_SHIFT;
const MOVING: u64 = 1 << (MODE_SHIFT + 2);
const VERSION_SHIFT: u32 = MODE_SHIFT + 3;
const VERSION_ONE: u64 = 1 << VERSION_SHIFT;

/// Where a released slot goes, and what a refusal must read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Capacity is plentiful: a released slot stays leased to its shard, and
    /// a refusal must see every shard and the reserve full at one moment.
    Spread,
    /// A sweep is gathering the shards' free slots into the reserve; releases
    /// hand theirs back too.
    Sweeping,
    /// No shard holds a free slot: each release hands its slot back here, so
    /// the reserve alone tells whether a slot is free.
    Scarce,
}

impl Mode {
    fn bits(self) -> u64 {
        (match self {
            Mode::Spread => 0,
            Mode::Sweeping => 1,
            Mode::Scarce => 2,
        }) << MODE_SHIFT
    }
}

/// One read of the reserve's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View(u64);

impl View {
    /// Slots no shard holds; negative while a shrink's debt is unpaid.
    #[inline]
    pub(crate) fn free(self) -> i64 {
        (self.0 & FREE_MASK) as i64 - BIAS as i64
    }

    #[inline]
    pub(crate) fn mode(self) -> Mode {
        match (self.0 & MODE_MASK) >> MODE_SHIFT {
            0 => Mode::Spread,
            1 => Mode::Sweeping,
            _ => Mode::Scarce,
        }
    }

    /// Scarce with nothing free: no shard keeps a free slot while capacity
    /// is scarce, so every slot is held, and a refusal on this one read is
    /// exact.
    #[inline]
    pub(crate) fn all_held(self) -> bool {
        self.mode() == Mode::Scarce && self.free() <= 0
    }

    /// Whether a sweep has slots in transit from a shard.
    #[inline]
    pub(crate) fn moving(self) -> bool {
        self.0 & MOVING != 0
    }

    /// This view with `free` changed by `delta` and the version bumped.
    fn add(self, delta: i64) -> u64 {
        let free = (self.0 & FREE_MASK).wrapping_add(delta as u64) & FREE_MASK;
        ((self.0 & !FREE_MASK) | free).wrapping_add(VERSION_ONE)
    }

    fn with_mode(next: u64, mode: Mode) -> u64 {
        (next & !MODE_MASK) | mode.bits()
    }
}

/// The reserve's word. Wrapped in `CachePadded` by its owner.
#[derive(Debug)]
pub(crate) struct Reserve {
    word: AtomicU64,
}

impl Reserve {
    /// A reserve holding `free` slots, in [`Mode::Spread`].
    pub(crate) fn new(free: i64) -> Self {
        Reserve {
            word: AtomicU64::new(View(BIAS).add(free)),
        }
    }

    #[inline]
    pub(crate) fn load(&self) -> View {
        View(self.word.load(Ordering::SeqCst))
    }

    /// Replaces `seen` with `free` changed by `delta` and the mode set to
    /// `mode`; `Err` with the word as it is if it moved since `seen`.
    #[inline]
    pub(crate) fn update(&self, seen: View, delta: i64, mode: Mode) -> Result<View, View> {
        self.replace(seen, View::with_mode(seen.add(delta), mode))
    }

    /// Replaces `seen` with the word `next`; `Err` with the word as it is
    /// if it moved since `seen`.
    #[inline]
    fn replace(&self, seen: View, next: u64) -> Result<View, View> {
        self.word
            .compare_exchange(seen.0, next, Ordering::SeqCst, Ordering::SeqCst)
            .map(|_| View(next))
            .map_err(View)
    }

    /// Adds `delta` slots (negative to take them), whatever else changes,
    /// in one `fetch_add`: `delta` in two's complement plus one version.
    /// The free field never borrows from the bits above it (it stays above
    /// -2^31), and the version wraps off the top of the word.
    pub(crate) fn add(&self, delta: i64) -> View {
        let step = (delta as u64).wrapping_add(VERSION_ONE);
        View(
            self.word
                .fetch_add(step, Ordering::SeqCst)
                .wrapping_add(step),
        )
    }

    /// Takes `want` slots if more than `keep` are free, leaving at least
    /// `keep`; `mode` maps the mode seen to the one to leave. Returns how
    /// many it took and the mode it left; `Err` with the word seen when
    /// `keep` or fewer were free.
    pub(crate) fn lease(
        &self,
        keep: i64,
        want: impl Fn(View) -> (i64, Mode),
    ) -> Result<(i64, Mode), View> {
        let mut seen = self.load();
        loop {
            if seen.free() <= keep {
                return Err(seen);
            }
            let (want, mode) = want(seen);
            let taken = want.clamp(1, seen.free() - keep);
            match self.update(seen, -taken, mode) {
                Ok(_) => return Ok((taken, mode)),
                Err(actual) => seen = actual,
            }
        }
    }

    /// Moves the mode from `from` to `to`; `false` if it was not `from`.
    pub(crate) fn switch(&self, from: Mode, to: Mode) -> bool {
        let mut seen = self.load();
        while seen.mode() == from {
            match self.update(seen, 0, to) {
                Ok(_) => return true,
                Err(actual) => seen = actual,
            }
        }
        false
    }

    /// Marks or clears slots in transit from a shard, adding `arrived` to
    /// the free slots as the mark clears.
    pub(crate) fn set_moving(&self, moving: bool, arrived: i64) {
        let mut seen = self.load();
        loop {
            let next = seen.add(arrived);
            let next = if moving {
                next | MOVING
            } else {
                next & !MOVING
            };
            match self.replace(seen, next) {
                Ok(_) => return,
                Err(actual) => seen = actual,
            }
        }
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn free_is_signed_and_every_change_moves_the_version() {
        let reserve = Reserve::new(3);
        let first = reserve.load();
        assert_eq!(
            (first.free(), first.mode(), first.moving()),
            (3, Mode::Spread, false)
        );
        assert_eq!(reserve.add(-5).free(), -2);
        assert_eq!(reserve.add(2).free(), 0);
        let back = reserve.load();
        assert_ne!(back, first);
        assert_eq!(reserve.lease(0, |_| (1, Mode::Spread)), Err(back));
        reserve.add(4);
        assert_eq!(
            reserve.lease(1, |_| (10, Mode::Scarce)),
            Ok((3, Mode::Scarce))
        );
        assert_eq!(
            (reserve.load().free(), reserve.load().mode()),
            (1, Mode::Scarce)
        );
        reserve.set_moving(true, 0);
        assert!(reserve.load().moving());
        reserve.set_moving(false, 2);
        assert_eq!((reserve.load().free(), reserve.load().moving()), (3, false));
        assert!(reserve.switch(Mode::Scarce, Mode::Spread));
        assert!(!reserve.switch(Mode::Scarce, Mode::Spread));
    }
}
