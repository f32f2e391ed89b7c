//! [`ShardedCounter`]: a capacity leased out to a row of [`Shard`]s, the
//! rest kept in a [`Reserve`], admitted home-shard first. The mechanism
//! under the `Resource`, `Supervisor`, `TaskSupervisor` and `ObjectPool`
//! faces.
//!
//! # How capacity follows demand
//!
//! Each shard's limit is a lease on the capacity; the reserve holds what no
//! shard leases. The leases and the reserve always sum to the capacity,
//! counting the slots an operation has in hand between two of its steps.
//!
//! * **Fast path.** An admission takes a free slot of its home shard (one
//!   CAS on that shard's line); a release gives the slot back to the shard
//!   and reads the reserve's mode, a line nobody writes while capacity is
//!   plentiful.
//! * **Leasing** ([`lease`](super::lease)). A home shard with no free slot
//!   leases from the reserve, or takes one free slot of another shard: the
//!   slot moves home, so the next admission there is a fast one. A thread
//!   keeps the capacity it uses, wherever it started.
//! * **Refusing.** While capacity is plentiful (mode `Spread`), a refusal is
//!   a snapshot: every shard and the reserve were seen full, and seen again
//!   unchanged. After such a refusal, or a shrink below what the reserve
//!   holds, a [sweep](super::sweep) gathers every free slot into the reserve
//!   and capacity is `Scarce`: each release then hands its slot to the
//!   reserve, no shard keeps a free slot, and a refusal reads the reserve
//!   alone. Capacity turns plentiful again when a lease finds half of it
//!   free.
//! * **Resizing** ([`sweep`](super::sweep)). A grow adds to the reserve; a
//!   shrink takes from it, into debt if need be, which releases pay back.
//!   No shard is ever over its limit, and no release takes a lock.
//!
//! # Orderings
//!
//! * The shard words and the reserve are read with `Acquire` or `SeqCst` and
//!   changed by read-modify-writes (see [`shard`](super::shard) and
//!   [`reserve`](super::reserve)); so a refusal's two reads of everything
//!   bracket one moment at which all were as seen.
//! * The release and the sweep form a store-then-load pair: a release
//!   writes its shard (`SeqCst`) and then reads the reserve's mode
//!   (`SeqCst`); a sweep writes the mode (`SeqCst`) and then reads each
//!   shard (`SeqCst`). In the single total order of `SeqCst` operations one
//!   of them comes first, so either the release sees the sweep and hands its
//!   free slot back, or the sweep sees the free slot and takes it. A chunk
//!   lease and its mode check pair with the sweep the same way. Without this,
//!   a free slot could stay on a shard while capacity is `Scarce` and a
//!   refusal reading the reserve alone would be false (loom checks it).
//! * A release whose ticket is marked [`FROM_RESERVE`] (its slot was leased
//!   under scarcity) takes no part in that pair: it reads no mode and leaves
//!   no free slot on its shard, since its one CAS takes the usage and the
//!   limit down together before the slot goes to the reserve.
//! * Resizes are serialised by a mutex the fast path never takes. The
//!   capacity is an atomic written under that mutex and read as a figure,
//!   never to admit. A resize changes it and then the reserve, between two
//!   steps of a sequence count (`resizes`, odd in between); a snapshot
//!   reads the count, the capacity and the reserve with `SeqCst` and keeps
//!   only a read whose count was even and unchanged in the read after, so
//!   it never pairs a new capacity with an old reserve (loom model (aj)).
//!   The rejection counters (on each shard's line) are `Relaxed` counters.

use crossbeam_utils::CachePadded;

use crate::error::{BuildError, Overload};
use crate::sync::{lock, seqcst_pair, yield_now, AtomicU64, AtomicUsize, Mutex, Ordering};

use super::priority::{Priority, Shares, PRIORITIES};
use super::reserve::{Mode, Reserve, View};
use super::samples::SampleTotals;
use super::shard::{Shard, ShardCounts};
use super::sizing::limit_for;

/// Marks an admission's *ticket* (what it hands its caller to release
/// with) whose slot was leased from the reserve while capacity was scarce:
/// its release hands the slot straight back to the reserve, without reading
/// the reserve's mode first. Under scarcity that read is on the line every
/// refusal reads, and it cost the admitting thread a third of its time
/// (see `docs/benchmarks/history.md`, #40). A ticket is a shard index,
/// below [`MAX_SHARDS`](super::MAX_SHARDS), or one with this bit.
pub(crate) const FROM_RESERVE: usize = super::MAX_SHARDS;

/// The shard of an admission's ticket.
#[inline]
pub(crate) fn shard_of(ticket: usize) -> usize {
    ticket & !FROM_RESERVE
}

/// How many double reads a snapshot tries before it settles for the last
/// (few under loom, whose every read is a branch to explore).
const SNAPSHOT_ROUNDS: usize = if cfg!(sidejob_loom) { 2 } else { 64 };

/// The capacity, the reserve and every shard's counts, read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The resize sequence when the rest was read: odd while a resize is
    /// half done (see [`ShardedCounter::resizes`]).
    resizes: u64,
    capacity: usize,
    reserve: super::reserve::View,
    pub(crate) shards: Vec<ShardCounts>,
}

impl Snapshot {
    /// Slots held: the capacity less its free slots (the reserve's and the
    /// shards'). This counts the slots an admission has taken and not yet
    /// landed on its shard (held by it since it took them), which a sum of
    /// the shards' usage would miss; it exceeds the capacity only while a
    /// shrink's debt is unpaid.
    pub(crate) fn usage(&self) -> usize {
        let free: i64 = self
            .shards
            .iter()
            .map(|counts| counts.limit.saturating_sub(counts.usage) as i64)
            .sum::<i64>()
            + self.reserve.free();
        (self.capacity as i64 - free).max(0) as usize
    }

    /// The capacity, as it was when the rest was read.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots no shard leases (negative in a shrink's debt).
    pub(crate) fn reserve(&self) -> i64 {
        self.reserve.free()
    }
}

/// A capacity of slots leased to shards, each an atomic usage word on its
/// own cache line, and a reserve of the slots no shard holds.
#[derive(Debug)]
pub(crate) struct ShardedCounter {
    pub(super) shards: Box<[CachePadded<Shard>]>,
    pub(super) reserve: CachePadded<Reserve>,
    pub(super) shares: Shares,
    pub(super) capacity: AtomicUsize,
    /// Twice the resizes done, odd while one is half done (its capacity
    /// and its reserve not both changed): a sequence count the
    /// [`snapshot`](Self::snapshot) reads around the capacity, so that no
    /// figure is read off a resize half done. Written under `resize`.
    pub(super) resizes: AtomicU64,
    pub(super) resize: Mutex<()>,
}

impl ShardedCounter {
    /// `capacity` slots over `shards` shards, both already checked
    /// ([`Sizing::checked`](super::Sizing::checked)), each priority filling
    /// its share.
    pub(crate) fn new(capacity: usize, shards: usize, shares: Shares) -> Self {
        ShardedCounter {
            shards: (0..shards)
                .map(|index| CachePadded::new(Shard::new(limit_for(capacity, shards, index))))
                .collect(),
            reserve: CachePadded::new(Reserve::new(0)),
            shares,
            capacity: AtomicUsize::new(capacity),
            resizes: AtomicU64::new(0),
            resize: Mutex::new(()),
        }
    }

    /// Admits one slot of `Normal` priority starting at shard `start`;
    /// returns the shard it came from. The caller owns the slot and must
    /// give it back with [`release`](Self::release) exactly once.
    #[inline]
    pub(crate) fn admit_from(&self, start: usize) -> Result<usize, Overload> {
        self.admit(start, Priority::Normal)
    }

    /// Admits one slot of `priority` starting at shard `start`, as
    /// [`admit_from`](Self::admit_from) does.
    #[inline]
    pub(crate) fn admit(&self, start: usize, priority: Priority) -> Result<usize, Overload> {
        self.admit_numbered(start, priority)
            .map(|(ticket, _)| shard_of(ticket))
    }

    /// Like [`admit`](Self::admit), with the grant's number on its shard
    /// (modulo 2^15), whichever path admitted it: an adaptive limit samples
    /// the permits whose number is a multiple of its stride, with no
    /// counter of its own. Returns a *ticket*, not a bare shard: the shard
    /// ([`shard_of`]), marked [`FROM_RESERVE`] when the slot was leased
    /// under scarcity. The release methods take either.
    #[inline]
    pub(crate) fn admit_numbered(
        &self,
        start: usize,
        priority: Priority,
    ) -> Result<(usize, u64), Overload> {
        if self.shares.whole(priority) {
            if let Ok(grant) = self.shards[start].try_admit() {
                return Ok((start, grant));
            }
            // Every slot held: refuse here, one read, before the slow
            // path's call. Scarce with a slot: lease it here.
            let reserve = self.reserve.load();
            if reserve.all_held() {
                return Err(self.refused(start, priority));
            }
            if reserve.mode() == Mode::Scarce {
                if let Some(admitted) = self.lease_scarce(start, reserve) {
                    return Ok(admitted);
                }
            }
        }
        self.admit_slow(start, priority)
    }

    /// Capacity is scarce and the reserve, seen as `seen`, has a slot:
    /// leases it to shard `start` and admits there, as the slow path's
    /// first step would, without its setup. `None` when the reserve moved
    /// since `seen` or holds enough to leave scarcity (the slow path then
    /// decides).
    #[inline(never)]
    fn lease_scarce(&self, start: usize, seen: View) -> Option<(usize, u64)> {
        if self.plentiful(seen.free()) {
            return None;
        }
        self.reserve.update(seen, -1, Mode::Scarce).ok()?;
        let grant = self.shards[start].admit_leased(1);
        // Leased while capacity stays scarce: its release hands the slot
        // straight back to the reserve.
        Some((start | FROM_RESERVE, grant))
    }

    /// Refuses `priority` from shard `start`, counted, when the capacity is
    /// scarce with nothing in the reserve: no shard keeps a free slot then,
    /// so every slot is held (the evidence
    /// [`admit_numbered`](Self::admit_numbered) refuses on before its slow
    /// path). One read of the reserve, no shard's. `None` otherwise, and
    /// the caller admits as usual. A leased resource asks this before it
    /// reads the clock: a refusal admits nothing, past a deadline or not.
    #[inline]
    pub(crate) fn refuse_at_once(&self, start: usize, priority: Priority) -> Option<Overload> {
        (self.shares.whole(priority) && self.reserve.load().all_held())
            .then(|| self.refused(start, priority))
    }

    /// Counts a refusal of `priority` whose probe started at shard `start`.
    #[cold]
    #[inline(never)]
    pub(super) fn refused(&self, start: usize, priority: Priority) -> Overload {
        self.shards[start].count_refusal(priority.index());
        Overload
    }

    /// Gives back a slot by its admission's `ticket` (see
    /// [`admit_numbered`](Self::admit_numbered)), or by its bare shard.
    #[inline]
    pub(crate) fn release(&self, ticket: usize) {
        if ticket & FROM_RESERVE != 0 {
            // Leased under scarcity: back to the reserve, whatever the mode
            // now (had capacity turned plentiful, the slot is as well there).
            return self.release_to_reserve(shard_of(ticket));
        }
        let shard = ticket;
        if self.reserve.load().mode() == Mode::Scarce {
            return self.release_to_reserve(shard);
        }
        if self.shards[shard].release() {
            self.pay_back();
        } else {
            self.settle(shard);
        }
    }

    /// Gives back a slot admitted on `shard` that was held for `nanos`: a
    /// latency sample for an adaptive limit, added to the shard's
    /// accumulators before the slot is released.
    #[inline]
    pub(crate) fn release_sampled(&self, shard: usize, nanos: u64) {
        let on = &self.shards[shard_of(shard)];
        on.samples.record(nanos, on.held());
        self.release(shard);
    }

    /// Gives back a slot admitted on `shard` whose call ended without its
    /// answer after `nanos`: a censored sample (see
    /// [`ShardSamples::record_censored`](super::samples::ShardSamples::record_censored)).
    #[inline]
    pub(crate) fn release_censored(&self, shard: usize, nanos: u64) {
        let on = &self.shards[shard_of(shard)];
        on.samples.record_censored(nanos, on.held());
        self.release(shard);
    }

    /// Counts a drop reported by a permit of `shard`: the call it guarded
    /// failed from overload downstream.
    #[inline]
    pub(crate) fn record_drop(&self, shard: usize) {
        self.shards[shard_of(shard)].samples.record_drop();
    }

    /// Takes every shard's samples since the last take, merged.
    pub(crate) fn take_samples(&self) -> SampleTotals {
        self.shards
            .iter()
            .fold(SampleTotals::default(), |totals, shard| {
                totals.with_shard(shard.samples.take())
            })
    }

    /// Refusals ever, all shards and priorities.
    pub(crate) fn refusals_total(&self) -> u64 {
        self.shards
            .iter()
            .map(|shard| shard.refusals().iter().sum::<u64>())
            .sum()
    }

    /// Grants ever, all shards.
    pub(crate) fn grants_total(&self) -> u64 {
        self.shards
            .iter()
            .map(|shard| shard.counts().accepted)
            .sum()
    }

    /// A release while capacity is scarce, or of a slot leased under
    /// scarcity: the slot leaves the shard with the usage, in one CAS, and
    /// goes to the reserve. (Had capacity turned plentiful meanwhile, the
    /// slot is as well in the reserve.) Not on the plentiful fast path.
    #[inline(never)]
    fn release_to_reserve(&self, shard: usize) {
        self.shards[shard].release_leaving();
        self.reserve.add(1);
    }

    /// A shard over its limit (closed by a shrink) released a slot: the
    /// slot left the shard, and the reserve gets it.
    #[cold]
    #[inline(never)]
    fn pay_back(&self) {
        self.reserve.add(1);
    }

    /// After `shard` gained a free slot: while capacity is not plentiful, the
    /// slot goes to the reserve (see `# Orderings`).
    #[inline]
    pub(super) fn settle(&self, shard: usize) {
        seqcst_pair();
        if self.reserve.load().mode() != Mode::Spread {
            self.hand_back(shard);
        }
    }

    #[cold]
    #[inline(never)]
    fn hand_back(&self, shard: usize) {
        if let Ok(taken) = self.shards[shard].take_slack(u64::MAX) {
            self.reserve.add(taken as i64);
        }
    }

    /// The total capacity.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// The number of shards.
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The capacity, the reserve and every shard's counts at one moment:
    /// read twice until both reads agree, with no resize half done and no
    /// sweep's slots in transit (the grant counts only grow, the reserve has
    /// a version and the resizes a sequence, so agreeing reads bracket a
    /// moment at which all were as read). Slots move between shards, so a
    /// sum of reads taken at different moments could count one slot twice;
    /// an agreeing pair never does.
    ///
    /// Under churn so heavy that no two reads in [`SNAPSHOT_ROUNDS`] agree,
    /// it takes the resize lock, so no resize can come between, and tries
    /// as many rounds again, each a pair of reads just after a yield of the
    /// CPU. If those fail too it settles for the last
    /// read: its capacity and reserve agree, but a slot that a lease or a
    /// sweep moved while it was read may be counted twice (free on the
    /// shard it left and held on the one it reached), so its usage may be
    /// off by the slots moved meanwhile.
    pub(crate) fn snapshot(&self) -> Snapshot {
        self.agreeing_read(false)
            .unwrap_or_else(|_| self.snapshot_between_resizes())
    }

    /// One read of everything; see [`snapshot`](Self::snapshot).
    fn read_once(&self) -> Snapshot {
        Snapshot {
            resizes: self.resizes.load(Ordering::SeqCst),
            capacity: self.capacity.load(Ordering::SeqCst),
            reserve: self.reserve.load(),
            shards: self.shards.iter().map(|shard| shard.counts()).collect(),
        }
    }

    /// Up to [`SNAPSHOT_ROUNDS`] reads after a first, until one agrees with
    /// the read before it, no resize is half done and no slot is in
    /// transit; `Err` with the last read if none did. With `pause`, it
    /// yields the CPU between two reads (a read cut by the scheduler
    /// seldom agrees with the next).
    fn agreeing_read(&self, pause: bool) -> Result<Snapshot, Snapshot> {
        let mut last = self.read_once();
        for _ in 0..SNAPSHOT_ROUNDS {
            if pause {
                yield_now();
                last = self.read_once();
            }
            let again = self.read_once();
            if again == last && !again.reserve.moving() && again.resizes & 1 == 0 {
                return Ok(again);
            }
            last = again;
        }
        Err(last)
    }

    /// The snapshot's last resort, under the resize lock: no resize is
    /// half done while it is held, so the reads agree unless leases or
    /// sweeps keep moving slots; the last read if they never did (its
    /// capacity and reserve agree, read under the lock). Cold: only after
    /// the rounds ran out. (An adaptive window's resize, which only tries
    /// the lock, skips its window meanwhile.)
    #[cold]
    #[inline(never)]
    fn snapshot_between_resizes(&self) -> Snapshot {
        let _resizing = lock(&self.resize);
        self.agreeing_read(true).unwrap_or_else(|last| last)
    }

    /// Slots held right now, from a [`snapshot`](Self::snapshot).
    pub(crate) fn usage(&self) -> usize {
        self.snapshot().usage()
    }

    /// Refusals whose probe started on shard `shard`, ever, by priority
    /// (in [`Priority::ALL`]'s order): each counter read once, so the
    /// per-shard and per-priority totals made from them agree.
    pub(crate) fn shard_refusals(&self, shard: usize) -> [u64; PRIORITIES] {
        self.shards[shard].refusals()
    }

    /// Changes the capacity; held slots are never revoked (see the
    /// [sweep](super::sweep)).
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` when it is above the most a
    /// resource can hold; nothing changed then.
    pub(crate) fn set_capacity(&self, capacity: usize) -> Result<(), BuildError> {
        super::sizing::check_capacity(capacity)?;
        self.resize_to(capacity);
        Ok(())
    }
}
