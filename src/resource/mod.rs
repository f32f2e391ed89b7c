//! [`Resource`]: the sharded admission counter, the face of the admission
//! core for users who hold permits themselves (the other faces stand on
//! the core's counter, not on `Resource`).
//!
//! It is a thin face over the admission core's
//! `ShardedCounter` (`admission/counter.rs`): this module adds
//! permits, the builder and the stats types. How capacity moves between
//! the shards and the reserve is in `admission/counter.rs`.

mod anchor;
mod builder;
mod capacity_lease;
mod expiry;
mod metered;
mod permit;
mod stats;

use std::fmt;
use std::sync::Arc;

use crate::adaptive::{AdaptiveStats, Governor};
use crate::admission::{home_shard, Priority, ShardedCounter};
use crate::error::{BuildError, Overload};
use crate::rates::{RateStats, Rates, Sample};

use anchor::{anchors, AnchorRef};
use expiry::Expiry;

pub use builder::ResourceBuilder;
pub use capacity_lease::CapacityLease;
pub use permit::{OwnedPermit, Permit};
pub use stats::{PriorityCounts, ResourceStats, ShardStats};

/// A capacity-bounded admission counter, split across shards.
///
/// Each shard is one atomic usage slot on its own cache line, leasing a part
/// of the capacity; the rest waits in a reserve. [`try_acquire`](Resource::try_acquire)
/// starts at the calling thread's home shard; when that is full it leases
/// from the reserve or moves a free slot home from another shard, so the
/// capacity follows the threads that use it. It fails fast with
/// [`Overload`] only when every slot was held at one moment. Usage never
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
    /// Fed once a second by the process's sampler (see `crate::rates`).
    /// Declared first, so dropped first: the face leaves the sampler
    /// before it lets go of its core.
    rates: Arc<Rates>,
    counter: Arc<ShardedCounter>,
    /// The adaptive limit, if the builder asked for one.
    governor: Option<Arc<Governor>>,
    /// One per shard, for owned permits (see `anchor.rs`).
    anchors: Box<[AnchorRef]>,
    /// When the capacity stops being good, if it is leased (see
    /// [`CapacityLease::set_until`]).
    expiry: Expiry,
    name: String,
}

/// A resource's name unless its builder sets one.
pub(super) const DEFAULT_NAME: &str = "resource";

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

    /// Takes a permit, or fails fast with [`Overload`] if every slot is held.
    ///
    /// The permit comes from the calling thread's home shard: its own free
    /// slot, or one leased from the reserve or moved home from another shard
    /// (visited in order, each once), so the capacity follows the threads
    /// that use it. In the common case it touches only the home shard's
    /// cache line, allocates nothing and writes one word. Dropping the
    /// permit gives its slot back.
    ///
    /// # Errors
    ///
    /// [`Overload`] when every slot was held at one moment during the call.
    /// A refusal is counted once in [`ResourceStats::rejected`], however
    /// many shards were probed.
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
        self.acquire(home_shard(self.counter.shard_count()), Priority::Normal)
    }

    /// Like [`try_acquire`](Self::try_acquire), for a request of
    /// `priority`: admitted only if the usage after it stays at most
    /// ⌊share × capacity⌋ (see [`ResourceBuilder::share`]).
    /// `try_acquire` is `try_acquire_with(Priority::Normal)`.
    ///
    /// # Errors
    ///
    /// [`Overload`] when the priority's share of the capacity is in use; the
    /// refusal is counted under its priority in
    /// [`ResourceStats::rejected_by_priority`].
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::{Priority, Resource};
    ///
    /// let resource = Resource::builder().capacity(4).share(Priority::Sheddable, 0.5).build()?;
    /// let _a = resource.try_acquire_with(Priority::Sheddable)?;
    /// let _b = resource.try_acquire_with(Priority::Sheddable)?;
    /// assert!(resource.try_acquire_with(Priority::Sheddable).is_err()); // half is in use
    /// let _c = resource.try_acquire_with(Priority::Normal)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_with(&self, priority: Priority) -> Result<Permit<'_>, Overload> {
        self.acquire(home_shard(self.counter.shard_count()), priority)
    }

    /// Like [`try_acquire`](Self::try_acquire), but from shard
    /// `start % shard_count()` instead of the thread's home shard: the permit
    /// comes from that shard, and a slot moves there if it has none free.
    ///
    /// Useful to keep a task on the same shard whichever thread runs it, or to
    /// reproduce a placement in a test.
    ///
    /// # Errors
    ///
    /// [`Overload`] when every slot was held at one moment during the call.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(3).shards(3).build()?;
    /// let permit = resource.try_acquire_from(2)?;
    /// assert_eq!(permit.shard(), 2);
    /// let next = resource.try_acquire_from(2)?; // shard 2 is full: a slot moves there
    /// assert_eq!(next.shard(), 2);
    /// assert_eq!(resource.stats().shards[2].limit, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_from(&self, start: usize) -> Result<Permit<'_>, Overload> {
        self.acquire(start % self.counter.shard_count(), Priority::Normal)
    }

    /// A permit of `priority` whose probe starts at shard `start`, timed if
    /// an adaptive limit samples it.
    #[inline]
    fn acquire(&self, start: usize, priority: Priority) -> Result<Permit<'_>, Overload> {
        let (ticket, started) = self.admit(start, priority)?;
        Ok(Permit::new(self, ticket, started))
    }

    /// Admits one of `priority` from shard `start`: the admission's ticket
    /// and its sample's stamp (0 when unsampled). Both permits are made
    /// from these.
    #[inline]
    fn admit(&self, start: usize, priority: Priority) -> Result<(usize, u64), Overload> {
        if self.expiry.is_armed() {
            // A refusal admits nothing, deadline or not: one the reserve
            // alone proves reads no clock, unless the fallback would raise
            // the capacity (then the deadline is read first).
            if self.expiry.refusal_outlives() {
                if let Some(overload) = self.counter.refuse_at_once(start, priority) {
                    return Err(self.refused(overload));
                }
            }
            self.check_expiry();
        }
        match self.counter.admit_numbered(start, priority) {
            Ok((ticket, grant)) => Ok((ticket, started(self.governor.as_deref(), grant))),
            Err(overload) => Err(self.refused(overload)),
        }
    }

    /// Like [`try_acquire`](Self::try_acquire), but the permit owns a handle
    /// to the resource, so it is `'static` and can travel between threads.
    ///
    /// The permit keeps the resource's counter alive, also after every
    /// handle to the resource is dropped, through a reference held by the
    /// thread's home shard, on a cache line of that shard's own: threads on
    /// different shards share no line, as with [`try_acquire`](Self::try_acquire).
    /// A thread that drops an owned permit keeps that reference for its next
    /// owned acquire, so acquiring and dropping on one thread costs about
    /// what a borrowed permit does; the kept reference can keep the counter
    /// (a few hundred bytes) alive after the last handle is dropped, until
    /// the thread drops a permit of another resource or exits.
    ///
    /// # Errors
    ///
    /// [`Overload`] when every slot was held at one moment during the call.
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
        self.acquire_owned_from(home_shard(self.counter.shard_count()))
    }

    /// Like [`try_acquire_owned`](Self::try_acquire_owned), but the probe
    /// starts at shard `start % shard_count()`, as in
    /// [`try_acquire_from`](Self::try_acquire_from).
    ///
    /// # Errors
    ///
    /// [`Overload`] when every slot was held at one moment during the call.
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
        self.acquire_owned_from(start % self.counter.shard_count())
    }

    /// Like [`try_acquire_owned`](Self::try_acquire_owned), for a request
    /// of `priority`, as [`try_acquire_with`](Self::try_acquire_with).
    ///
    /// # Errors
    ///
    /// [`Overload`] when the priority's share of the capacity is in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{Priority, Resource};
    ///
    /// let resource = Arc::new(Resource::builder().capacity(1).share(Priority::Sheddable, 0.5).build()?);
    /// assert!(resource.try_acquire_owned_with(Priority::Sheddable).is_err()); // ⌊0.5 × 1⌋ = 0
    /// assert!(resource.try_acquire_owned_with(Priority::Critical).is_ok());
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    #[inline]
    pub fn try_acquire_owned_with(
        self: &Arc<Self>,
        priority: Priority,
    ) -> Result<OwnedPermit, Overload> {
        self.acquire_owned(home_shard(self.counter.shard_count()), priority)
    }

    /// An owned permit whose probe starts at shard `start`, anchored there.
    #[inline]
    fn acquire_owned_from(&self, start: usize) -> Result<OwnedPermit, Overload> {
        self.acquire_owned(start, Priority::Normal)
    }

    /// An owned permit of `priority` whose probe starts at shard `start`,
    /// anchored there.
    #[inline]
    fn acquire_owned(&self, start: usize, priority: Priority) -> Result<OwnedPermit, Overload> {
        let (ticket, started) = self.admit(start, priority)?;
        Ok(OwnedPermit::new(
            anchor::reference(&self.anchors[start]),
            ticket,
            started,
        ))
    }

    /// A refused acquire: an adaptive limit's window may close on it.
    #[cold]
    #[inline(never)]
    fn refused(&self, overload: Overload) -> Overload {
        if let Some(governor) = &self.governor {
            governor.refused(&self.counter);
        }
        overload
    }

    /// Lowers the capacity to its fallback if it is past its deadline.
    #[inline]
    fn check_expiry(&self) {
        if self.expiry.passed() {
            self.expiry.expire(&self.counter);
        }
    }

    /// A resource over `counter`, adapting its capacity if `adaptive`.
    pub(super) fn from_counter(
        counter: ShardedCounter,
        name: String,
        adaptive: Option<crate::adaptive::Adaptive>,
    ) -> Resource {
        let governor = adaptive.map(|adaptive| {
            Arc::new(Governor::new(
                adaptive,
                &counter,
                Governor::clock(),
                name.clone(),
            ))
        });
        let counter = Arc::new(counter);
        let anchors = anchors(&counter, governor.as_ref());
        let rates = Rates::start(&counter, sample);
        Resource {
            counter,
            governor,
            anchors,
            expiry: Expiry::new(),
            rates,
            name,
        }
    }

    /// What the resource's adaptive limit has done, or `None` if it has
    /// none (see [`ResourceBuilder::adaptive`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::{adaptive::Adaptive, Resource};
    ///
    /// assert!(Resource::new(4).adaptive_stats().is_none());
    /// let adaptive = Resource::builder().capacity(4).adaptive(Adaptive::vegas()).build()?;
    /// let stats = adaptive.adaptive_stats().unwrap();
    /// assert_eq!((stats.limit, stats.algorithm), (4, "vegas"));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn adaptive_stats(&self) -> Option<AdaptiveStats> {
        self.governor
            .as_ref()
            .map(|governor| governor.stats(&self.counter))
    }

    /// Releases a sampled permit of `shard` started at `started`.
    #[inline]
    fn finish_sampled(&self, shard: usize, started: u64) {
        match &self.governor {
            Some(governor) => governor.finish(&self.counter, shard, started),
            None => self.counter.release(shard),
        }
    }

    /// Releases a sampled permit of `shard` started at `started` whose
    /// call ended without its answer.
    fn finish_cancelled(&self, shard: usize, started: u64) {
        match &self.governor {
            Some(governor) => governor.finish_cancelled(&self.counter, shard, started),
            None => self.counter.release(shard),
        }
    }

    /// The resource's name (see [`ResourceBuilder::name`]).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::Resource::new(1).name(), "resource");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The in, out and rejected rates of the last whole second, and the
    /// last 60 seconds' and all-time counts with their average and peak
    /// rates and usage, as Erlang sidejob reports them. "In" is a permit
    /// granted, "out" one released. Costs no admission anything: the rates
    /// come from the counts a process-wide sampler reads once a second.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(2);
    /// let held = resource.try_acquire()?;
    /// let rates = resource.rates();
    /// assert_eq!((rates.total.accepted, rates.total.completed, rates.total.peak_usage), (1, 0, 1));
    /// # drop(held);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn rates(&self) -> RateStats {
        self.rates.stats(sample(&self.counter))
    }

    /// The total capacity: the shard limits plus the reserve. Past a
    /// deadline ([`CapacityLease::set_until`]) it reads the fallback: the
    /// reading lowers it, as an acquire would.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(7);
    /// assert_eq!(resource.capacity(), 7);
    /// ```
    pub fn capacity(&self) -> usize {
        self.check_expiry();
        self.counter.capacity()
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
        self.counter.shard_count()
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
        self.counter.usage()
    }

    /// Changes the capacity at run time, through the reserve.
    ///
    /// Growing admits new acquires at once. Shrinking never revokes permits
    /// already held: usage may stay above the new capacity until they are
    /// dropped, and acquires are refused until usage is back under it. A
    /// resize touches the reserve, and the shards only when a shrink needs
    /// their free slots; no release takes a lock after one.
    /// Concurrent resizes are serialised; acquires never wait for one.
    ///
    /// On an [adaptive](ResourceBuilder::adaptive) resource the capacity
    /// set is the limit the next window starts from: a window that was
    /// closing meanwhile leaves it as set.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` if it is above 2²⁴ − 1 =
    /// 16,777,215, or, on an adaptive resource, outside its
    /// `[min_limit, max_limit]` (a limit of 0 would admit nothing, so no
    /// window would ever close to raise it), or while a
    /// [`CapacityLease`] holds the capacity
    /// ([`lease_capacity`](Resource::lease_capacity)); nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::Adaptive;
    ///
    /// let resource = sidejob::Resource::builder().capacity(1).shards(1).build()?;
    /// let held = resource.try_acquire()?;
    /// resource.set_capacity(2)?;
    /// let more = resource.try_acquire()?; // growing admits at once
    /// resource.set_capacity(1)?;
    /// assert_eq!(resource.usage(), 2); // nothing is revoked
    /// drop((held, more));
    /// assert_eq!(resource.capacity(), 1);
    ///
    /// let err = resource.set_capacity(usize::MAX).unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// assert_eq!(resource.capacity(), 1); // unchanged
    ///
    /// let adaptive = sidejob::Resource::builder()
    ///     .capacity(8)
    ///     .adaptive(Adaptive::gradient().min_limit(2).max_limit(64))
    ///     .build()?;
    /// adaptive.set_capacity(32)?;
    /// assert_eq!(adaptive.set_capacity(0).unwrap_err().setting(), "capacity");
    /// assert_eq!(adaptive.capacity(), 32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_capacity(&self, capacity: usize) -> Result<(), BuildError> {
        self.check_adaptive_bounds(capacity)?;
        self.expiry.disarm(&self.counter, capacity, false)
    }

    /// On an adaptive resource, whether `capacity` lies within its bounds.
    fn check_adaptive_bounds(&self, capacity: usize) -> Result<(), BuildError> {
        let Some(governor) = &self.governor else {
            return Ok(());
        };
        let (min, max) = governor.bounds();
        if (min..=max).contains(&capacity) {
            return Ok(());
        }
        Err(BuildError::new(
            "capacity",
            format!(
                "an adaptive limit must lie in [min_limit, max_limit] = [{min}, {max}], not {capacity}"
            ),
        ))
    }

    /// Takes the right to set the capacity: while the returned lease
    /// lives, [`set_capacity`](Resource::set_capacity) is refused and only
    /// the lease sets it, for good or until a deadline
    /// ([`CapacityLease::set_until`]). A capacity has one owner at a time:
    /// the user (the default), an adaptive limit (built with
    /// [`ResourceBuilder::adaptive`], for good), or a lease (a
    /// [`fleet`](crate::fleet)'s node holds one). Dropping the lease gives
    /// the capacity back to the user, at whatever the lease last set.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` if an adaptive limit sets the
    /// capacity, or another lease holds it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let resource = Arc::new(sidejob::Resource::new(4));
    /// let lease = resource.lease_capacity()?;
    /// lease.set(16)?;
    /// assert_eq!(resource.capacity(), 16);
    /// assert!(resource.set_capacity(2).is_err()); // the lease owns it
    /// assert!(resource.lease_capacity().is_err()); // one lease at a time
    /// drop(lease);
    /// resource.set_capacity(2)?; // the user's again
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn lease_capacity(self: &Arc<Self>) -> Result<CapacityLease, BuildError> {
        if self.governor.is_some() {
            return Err(BuildError::new(
                "capacity",
                "an adaptive limit sets this resource's capacity; lease a plain one",
            ));
        }
        if !self.expiry.claim() {
            return Err(BuildError::new(
                "capacity",
                "another CapacityLease holds this resource's capacity",
            ));
        }
        Ok(CapacityLease::new(Arc::clone(self)))
    }

    /// The lease's writes (see [`CapacityLease`]).
    fn lease_set(&self, capacity: usize) -> Result<(), BuildError> {
        self.expiry.disarm(&self.counter, capacity, true)
    }

    fn lease_set_until(
        &self,
        capacity: usize,
        until: std::time::Instant,
        fallback: usize,
    ) -> Result<(), BuildError> {
        self.expiry.arm(&self.counter, capacity, until, fallback)
    }

    fn lease_ended(&self) {
        self.expiry.unclaim();
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
        // Past a deadline, the fallback's capacity, as `capacity` reads.
        self.check_expiry();
        let snapshot = self.counter.snapshot();
        let refusals: Vec<_> = (0..snapshot.shards.len())
            .map(|index| self.counter.shard_refusals(index))
            .collect();
        let shards: Vec<ShardStats> = snapshot
            .shards
            .iter()
            .zip(&refusals)
            .map(|(counts, refused)| ShardStats {
                limit: counts.limit as usize,
                usage: counts.usage as usize,
                accepted: counts.accepted,
                rejected: refused.iter().sum(),
            })
            .collect();
        let by = |priority: Priority| -> u64 {
            refusals
                .iter()
                .map(|refused| refused[priority.index()])
                .sum()
        };
        ResourceStats {
            capacity: snapshot.capacity(),
            usage: snapshot.usage(),
            accepted: shards.iter().map(|s| s.accepted).sum(),
            rejected: shards.iter().map(|s| s.rejected).sum(),
            rejected_by_priority: PriorityCounts {
                critical: by(Priority::Critical),
                normal: by(Priority::Normal),
                sheddable: by(Priority::Sheddable),
            },
            reserve: snapshot.reserve(),
            shards,
        }
    }
}

/// The start of a permit with grant number `grant`: 0 unless `governor`
/// samples it.
#[inline]
fn started(governor: Option<&Governor>, grant: u64) -> u64 {
    match governor {
        None => 0,
        Some(governor) => governor.start(grant),
    }
}

/// What the rates sampler reads of a resource: grants, refusals and usage,
/// summed over the shards; a grant no longer held was released.
fn sample(counter: &ShardedCounter) -> Sample {
    let mut sample = Sample::default();
    let snapshot = counter.snapshot();
    for (index, counts) in snapshot.shards.iter().enumerate() {
        sample.accepted += counts.accepted;
        sample.rejected += counter.shard_refusals(index).iter().sum::<u64>();
    }
    sample.usage = snapshot.usage();
    sample.completed = sample.accepted.saturating_sub(sample.usage as u64);
    sample
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
