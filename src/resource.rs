//! [`Resource`]: the sharded admission counter every other face is built on.
//!
//! # Shrinking below the usage
//!
//! Each shard's *share* of the capacity is spread exactly ([`limit_for`]), and
//! normally each shard admits up to its share. A shrink can leave a shard
//! holding more than its new share, since held permits are never revoked.
//! Then the other shards must not admit the full share: the overshoot is
//! charged to them, by lowering their admission limits below their shares
//! (or to zero while total usage is above capacity). A release on a shard
//! over its limit is the only event that makes room, and the shard word tells
//! the releaser so, which sends it to [`Resource::rebalance`]; everyone else
//! stays on the fast path. Once no shard is over, every limit is its share
//! again. The invariant, for admissions after the shrink returns, is:
//! the sum over shards of `max(usage, limit)` is at most the capacity, unless
//! every limit is zero.
//!
//! # Orderings
//!
//! Admission, release and limit changes are single atomic steps on one
//! shard's word; the shard module justifies their orderings. Resizes and
//! rebalances are serialised by a mutex the fast path never takes, and they
//! read every shard with `Acquire` after taking it. The capacity itself is a
//! `Relaxed` atomic: it is written only under that mutex and read as a
//! figure, never to admit. The rejection counters are `Relaxed` counters.

use std::fmt;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::error::{BuildError, Overload};
use crate::home::home_shard;
use crate::permit::{OwnedPermit, Permit};
use crate::probe::{self, Admission};
use crate::shard::{limit_for, Shard, MAX_SHARD_LIMIT};
use crate::sync::{lock, AtomicU64, AtomicUsize, Mutex, Ordering};

/// The most shards a resource may have.
///
/// # Examples
///
/// ```
/// let err = sidejob::Resource::builder()
///     .capacity(1)
///     .shards(sidejob::MAX_SHARDS + 1)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "shards");
/// ```
pub const MAX_SHARDS: usize = 1 << 16;

/// A capacity-bounded admission counter, split across shards.
///
/// Each shard is one atomic usage slot on its own cache line, holding an
/// exact share of the capacity. [`try_acquire`](Resource::try_acquire) starts
/// at the calling thread's home shard and probes the others in turn; it fails
/// fast with [`Overload`] only when it saw every shard full. Usage never
/// exceeds capacity, not even for an instant; the one exception is the
/// permits still held when [`set_capacity`](Resource::set_capacity) lowers
/// the capacity below them, which are never revoked (nothing is admitted
/// until usage is back under the new capacity).
///
/// # Examples
///
/// ```
/// use sidejob::Resource;
///
/// let resource = Resource::builder().capacity(2).shards(2).build()?;
/// let first = resource.try_acquire()?;
/// let second = resource.try_acquire()?;
/// assert!(resource.try_acquire().is_err()); // full: fail fast
/// drop(first);
/// assert!(resource.try_acquire().is_ok()); // a slot is free again
/// # drop(second);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Resource {
    shards: Box<[CachePadded<Shard>]>,
    /// Refused acquires, by the shard where their probe started. Apart from
    /// the shard words, so counting a refusal never disturbs probes reading
    /// a full shard.
    rejections: Box<[CachePadded<AtomicU64>]>,
    capacity: AtomicUsize,
    resize: Mutex<()>,
}

impl Resource {
    /// A resource of `capacity` permits spread over one shard per CPU.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds what the shards can hold (2²⁴ − 1 = 16,777,215
    /// permits per shard). [`Resource::builder`] reports that as a [`BuildError`] instead.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(100);
    /// assert_eq!(resource.capacity(), 100);
    /// assert_eq!(resource.shard_count(), num_cpus::get());
    /// ```
    pub fn new(capacity: usize) -> Resource {
        match Resource::builder().capacity(capacity).build() {
            Ok(resource) => resource,
            Err(err) => panic!("Resource::new({capacity}): {err}"),
        }
    }

    /// Starts configuring a resource.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(10).shards(4).build()?;
    /// assert_eq!(resource.shard_count(), 4);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn builder() -> ResourceBuilder {
        ResourceBuilder::default()
    }

    /// Takes a permit, or fails fast with [`Overload`] if every shard is full.
    ///
    /// The probe starts at the calling thread's home shard and visits each
    /// other shard once, in order. In the common case it touches only the home
    /// shard's cache line, allocates nothing and writes one word. Dropping the
    /// permit gives its slot back.
    ///
    /// # Errors
    ///
    /// [`Overload`] when every shard was seen at its limit. A refusal is counted
    /// once in [`ResourceStats::rejected`], however many shards were probed.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(1);
    /// let permit = resource.try_acquire().expect("one slot is free");
    /// assert_eq!(resource.try_acquire().unwrap_err(), sidejob::Overload);
    /// drop(permit);
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit<'_>, Overload> {
        let shard = self.admit_from(home_shard(self.shards.len()))?;
        Ok(Permit::new(self, shard))
    }

    /// Like [`try_acquire`](Self::try_acquire), but the probe starts at shard
    /// `start % shard_count()` instead of the thread's home shard.
    ///
    /// Useful to keep a task on the same shard whichever thread runs it, or to
    /// reproduce a placement in a test.
    ///
    /// # Errors
    ///
    /// [`Overload`] when every shard was seen at its limit.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(3).shards(3).build()?;
    /// let permit = resource.try_acquire_from(2)?;
    /// assert_eq!(permit.shard(), 2);
    /// let next = resource.try_acquire_from(2)?; // shard 2 is full: probe on
    /// assert_eq!(next.shard(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_from(&self, start: usize) -> Result<Permit<'_>, Overload> {
        let shard = self.admit_from(start % self.shards.len())?;
        Ok(Permit::new(self, shard))
    }

    /// Like [`try_acquire`](Self::try_acquire), but the permit owns a handle
    /// to the resource, so it is `'static` and can travel between threads.
    ///
    /// This clones the `Arc`, an atomic increment on a cache line every
    /// holder shares, and the drop decrements it. Prefer
    /// [`try_acquire`](Self::try_acquire) where a borrow will do.
    ///
    /// # Errors
    ///
    /// [`Overload`] when every shard was seen at its limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let resource = Arc::new(sidejob::Resource::new(4));
    /// let permit = resource.try_acquire_owned()?;
    /// std::thread::spawn(move || {
    ///     // ... work under the permit ...
    ///     drop(permit);
    /// })
    /// .join()
    /// .unwrap();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    #[inline]
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedPermit, Overload> {
        let shard = self.admit_from(home_shard(self.shards.len()))?;
        Ok(OwnedPermit::new(Arc::clone(self), shard))
    }

    /// Like [`try_acquire_owned`](Self::try_acquire_owned), but the probe
    /// starts at shard `start % shard_count()`, as in
    /// [`try_acquire_from`](Self::try_acquire_from).
    ///
    /// # Errors
    ///
    /// [`Overload`] when every shard was seen at its limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let resource = Arc::new(sidejob::Resource::builder().capacity(2).shards(2).build()?);
    /// assert_eq!(resource.try_acquire_owned_from(1)?.shard(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_owned_from(self: &Arc<Self>, start: usize) -> Result<OwnedPermit, Overload> {
        let shard = self.admit_from(start % self.shards.len())?;
        Ok(OwnedPermit::new(Arc::clone(self), shard))
    }

    /// Admits one unit starting at shard `start`; returns the shard it came from.
    ///
    /// The caller owns the unit and must give it back with
    /// [`release_slot`](Self::release_slot) exactly once.
    #[inline]
    pub(crate) fn admit_from(&self, start: usize) -> Result<usize, Overload> {
        self.admit_numbered(start).map(|admission| admission.shard)
    }

    /// Like [`admit_from`](Self::admit_from), also telling the grant's
    /// number on its shard (modulo 2^15), for sampling.
    #[inline]
    pub(crate) fn admit_numbered(&self, start: usize) -> Result<Admission, Overload> {
        match probe::admit(&self.shards, start) {
            Some(admission) => Ok(admission),
            None => Err(self.refused(start)),
        }
    }

    /// Counts a refusal whose probe started at shard `start`.
    #[cold]
    #[inline(never)]
    fn refused(&self, start: usize) -> Overload {
        self.rejections[start].fetch_add(1, Ordering::Relaxed);
        Overload
    }

    /// Gives back a unit admitted by [`admit_from`](Self::admit_from).
    #[inline]
    pub(crate) fn release_slot(&self, shard: usize) {
        if self.shards[shard].release() {
            self.rebalance_after_release();
        }
    }

    /// A shard over its limit (after a shrink) released a permit: the room
    /// it made may let other shards admit again.
    #[cold]
    #[inline(never)]
    fn rebalance_after_release(&self) {
        let _resizing = lock(&self.resize);
        self.rebalance(self.capacity.load(Ordering::Relaxed));
    }

    /// Sets every shard's admission limit for `capacity` given what the
    /// shards hold now. The caller holds the resize lock.
    ///
    /// Plans from one read of every shard, lowers limits first (each change
    /// reports the shard's exact usage at that instant) and raises limits
    /// only once the lowered shards are known to fit the plan, so admissions
    /// never see more room than `capacity` leaves. Shards may admit up to
    /// their old limit while the plan is being made; if that spoils it, plan
    /// again from fresh reads.
    fn rebalance(&self, capacity: usize) {
        let count = self.shards.len();
        let capacity = capacity as u64;
        loop {
            let usage: Vec<u64> = self.shards.iter().map(|s| s.usage()).collect();
            let shares: Vec<u64> = (0..count)
                .map(|i| limit_for(capacity as usize, count, i))
                .collect();
            let closed = usage.iter().sum::<u64>() > capacity;
            let plan: Vec<u64> = if closed {
                vec![0; count]
            } else {
                // Charge each shard's overshoot to the shards with room.
                let mut overshoot: u64 = usage
                    .iter()
                    .zip(&shares)
                    .map(|(&u, &share)| u.saturating_sub(share))
                    .sum();
                usage
                    .iter()
                    .zip(&shares)
                    .map(|(&u, &share)| {
                        let cut = overshoot.min(share.saturating_sub(u));
                        overshoot -= cut;
                        share - cut
                    })
                    .collect()
            };
            let mut footprint = 0;
            let mut raises = Vec::new();
            for (index, shard) in self.shards.iter().enumerate() {
                if plan[index] <= shard.limit() {
                    let held = shard.set_limit(plan[index]);
                    footprint += held.max(plan[index]);
                } else {
                    // Below its planned limit, this shard can only grow to
                    // its current, lower limit until raised; over it, it can
                    // only shrink. Either way the plan bounds it.
                    raises.push(index);
                    footprint += usage[index].max(plan[index]);
                }
            }
            match (closed, footprint <= capacity) {
                (false, true) => {
                    for index in raises {
                        self.shards[index].set_limit(plan[index]);
                    }
                    return;
                }
                // Every shard is closed and usage really is above capacity:
                // each later release on a shard that holds any is over its
                // limit of zero and rebalances again.
                (true, false) => return,
                // Releases made room while the shards were being closed, or a
                // shard admitted past the plan before its limit was lowered:
                // plan again from fresh reads.
                _ => continue,
            }
        }
    }

    /// Permits held on shard `shard` right now.
    pub(crate) fn shard_usage(&self, shard: usize) -> usize {
        self.shards[shard].usage() as usize
    }

    /// The total capacity: the sum of the shard limits.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(7);
    /// assert_eq!(resource.capacity(), 7);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// The number of shards.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(7).shards(3).build()?;
    /// assert_eq!(resource.shard_count(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The number of permits held right now, summed over the shards.
    ///
    /// Each shard is read once; under concurrent use the sum is a moment's
    /// picture, never above the capacity, except for the permits still held
    /// after [`set_capacity`](Resource::set_capacity) lowered it below them.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(3);
    /// let _permit = resource.try_acquire()?;
    /// assert_eq!(resource.usage(), 1);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|shard| shard.usage() as usize).sum()
    }

    /// Changes the capacity at run time, spreading it exactly over the shards.
    ///
    /// Growing admits new acquires at once. Shrinking never revokes permits
    /// already held: usage may stay above the new capacity until they are
    /// dropped, and acquires are refused until usage is back under it.
    /// Concurrent resizes are serialised; acquires never wait for one.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds what the shards can hold (2²⁴ − 1 = 16,777,215 per shard).
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(1);
    /// let held = resource.try_acquire()?;
    /// resource.set_capacity(2);
    /// let more = resource.try_acquire()?; // growing admits at once
    /// resource.set_capacity(1);
    /// assert_eq!(resource.usage(), 2); // nothing is revoked
    /// drop((held, more));
    /// assert_eq!(resource.capacity(), 1);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn set_capacity(&self, capacity: usize) {
        let count = self.shards.len();
        if let Err(err) = check_capacity(capacity, count) {
            panic!("Resource::set_capacity({capacity}): {err}");
        }
        let _resizing = lock(&self.resize);
        self.capacity.store(capacity, Ordering::Relaxed);
        self.rebalance(capacity);
    }

    /// A snapshot of the resource's counters.
    ///
    /// Reads each shard's words and takes no lock the acquire path takes.
    /// `accepted + rejected` equals the number of acquire attempts so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(1);
    /// let permit = resource.try_acquire()?;
    /// assert!(resource.try_acquire().is_err());
    /// let stats = resource.stats();
    /// assert_eq!((stats.accepted, stats.rejected, stats.usage), (1, 1, 1));
    /// assert_eq!(stats.shards.iter().map(|s| s.limit).sum::<usize>(), 1);
    /// # drop(permit);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn stats(&self) -> ResourceStats {
        let capacity = self.capacity();
        let count = self.shards.len();
        let shards: Vec<ShardStats> = self
            .shards
            .iter()
            .zip(self.rejections.iter())
            .enumerate()
            .map(|(index, (shard, rejected))| {
                let counts = shard.counts();
                ShardStats {
                    limit: limit_for(capacity, count, index) as usize,
                    usage: counts.usage as usize,
                    accepted: counts.accepted,
                    rejected: rejected.load(Ordering::Relaxed),
                }
            })
            .collect();
        ResourceStats {
            capacity,
            usage: shards.iter().map(|s| s.usage).sum(),
            accepted: shards.iter().map(|s| s.accepted).sum(),
            rejected: shards.iter().map(|s| s.rejected).sum(),
            shards,
        }
    }
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .field("shards", &self.shard_count())
            .finish()
    }
}

pub(crate) fn check_capacity(capacity: usize, shards: usize) -> Result<(), BuildError> {
    let max = (shards as u64).saturating_mul(MAX_SHARD_LIMIT);
    if capacity as u64 > max {
        return Err(BuildError::new(
            "capacity",
            format!("{capacity} exceeds the {max} permits that {shards} shards can hold"),
        ));
    }
    Ok(())
}

/// Configures a [`Resource`]; made by [`Resource::builder`].
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::builder()
///     .capacity(64) // required
///     .shards(8) // default: the number of CPUs
///     .build()?;
/// assert_eq!(resource.stats().shards[0].limit, 8);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ResourceBuilder {
    capacity: Option<usize>,
    shards: Option<usize>,
}

impl ResourceBuilder {
    /// The total number of permits. Required. Zero is valid: a closed gate
    /// that refuses every acquire until [`Resource::set_capacity`] opens it.
    ///
    /// # Examples
    ///
    /// ```
    /// let closed = sidejob::Resource::builder().capacity(0).build()?;
    /// assert!(closed.try_acquire().is_err());
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// The number of shards, from 1 to [`MAX_SHARDS`]. Default: the number of
    /// CPUs. More shards than capacity is valid: the surplus shards get limit
    /// 0 and the probe finds the others.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(1).shards(4).build()?;
    /// assert!(resource.try_acquire().is_ok()); // found on shard 0
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Builds the resource.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting when `capacity` was not set or
    /// exceeds what the shards can hold, or `shards` is 0 or above
    /// [`MAX_SHARDS`].
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().capacity(1).shards(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `shards`: must be at least 1");
    /// ```
    pub fn build(self) -> Result<Resource, BuildError> {
        let (capacity, shards) = self.checked()?;
        Ok(Resource {
            shards: (0..shards)
                .map(|index| CachePadded::new(Shard::new(limit_for(capacity, shards, index))))
                .collect(),
            rejections: (0..shards)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            capacity: AtomicUsize::new(capacity),
            resize: Mutex::new(()),
        })
    }

    /// The capacity and the shard count, checked: what every face that
    /// admits over shards is built from.
    pub(crate) fn checked(&self) -> Result<(usize, usize), BuildError> {
        let shards = self.shards.unwrap_or_else(num_cpus::get);
        if shards == 0 {
            return Err(BuildError::new("shards", "must be at least 1"));
        }
        if shards > MAX_SHARDS {
            return Err(BuildError::new(
                "shards",
                format!("{shards} is above the maximum of {MAX_SHARDS}"),
            ));
        }
        let capacity = self
            .capacity
            .ok_or_else(|| BuildError::new("capacity", "must be set"))?;
        check_capacity(capacity, shards)?;
        Ok((capacity, shards))
    }
}

/// A snapshot of a [`Resource`]'s counters, from [`Resource::stats`].
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::builder().capacity(5).shards(2).build()?;
/// let stats = resource.stats();
/// assert_eq!(stats.capacity, 5);
/// assert_eq!(stats.shards.iter().map(|s| s.limit).collect::<Vec<_>>(), [3, 2]);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceStats {
    /// The total capacity.
    pub capacity: usize,
    /// Permits held, summed over the shards.
    pub usage: usize,
    /// Successful acquires, ever.
    pub accepted: u64,
    /// Refused acquires ([`Overload`]s), ever; one per refused call.
    pub rejected: u64,
    /// Each shard's figures, in shard order.
    pub shards: Vec<ShardStats>,
}

/// One shard's figures within [`ResourceStats`].
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::builder().capacity(2).shards(1).build()?;
/// let _permit = resource.try_acquire()?;
/// let shard = &resource.stats().shards[0];
/// assert_eq!((shard.limit, shard.usage, shard.accepted), (2, 1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardStats {
    /// The shard's share of the capacity. The shares sum to the capacity.
    /// After a shrink that left some shard above its share, other shards
    /// admit less than theirs until the overshoot is released.
    pub limit: usize,
    /// Permits held on this shard.
    pub usage: usize,
    /// Permits this shard granted, ever.
    pub accepted: u64,
    /// Refused acquires whose probe started (at home) on this shard, ever.
    pub rejected: u64,
}
