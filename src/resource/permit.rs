//! Permits: proof of one admitted unit of a [`Resource`], given back on drop.

use super::anchor::{keep, AnchorRef};
use super::Resource;
use std::fmt;
use std::num::NonZeroU64;

use crate::adaptive::STAMP_BITS;
use crate::admission::{shard_of, FROM_RESERVE};

/// One unit of a [`Resource`]'s capacity, held until dropped.
///
/// Made by [`Resource::try_acquire`]. Dropping it releases its slot exactly
/// once, also when the holder unwinds from a panic.
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::new(1);
/// {
///     let permit = resource.try_acquire()?;
///     assert!(permit.shard() < resource.shard_count());
///     assert_eq!(resource.usage(), 1);
/// } // released here
/// assert_eq!(resource.usage(), 0);
/// # Ok::<(), sidejob::Overload>(())
/// ```
#[must_use = "a permit is released as soon as it is dropped"]
pub struct Permit<'a> {
    resource: &'a Resource,
    /// The admission's ticket: its shard, marked when its slot goes
    /// straight back to the reserve (see `admission::counter`).
    ticket: usize,
    /// The stamp of the clock when an adaptive limit sampled the permit;
    /// 0 when it is not sampled.
    started: u64,
}

impl<'a> Permit<'a> {
    #[inline]
    pub(crate) fn new(resource: &'a Resource, ticket: usize, started: u64) -> Self {
        Permit {
            resource,
            ticket,
            started,
        }
    }

    /// Releases the permit and reports a *drop* to the resource's adaptive
    /// limit: the call it guarded failed from overload downstream (a
    /// timeout, a 503, an [`Overload`](crate::Overload) from the next hop),
    /// and the limit backs off. The hold time is not a latency sample.
    /// Without an adaptive limit it only releases.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::Adaptive;
    ///
    /// let resource = sidejob::Resource::builder().capacity(4).adaptive(Adaptive::aimd()).build()?;
    /// let permit = resource.try_acquire()?;
    /// permit.dropped();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dropped(mut self) {
        if let Some(governor) = &self.resource.governor {
            governor.dropped(&self.resource.counter, self.ticket);
        }
        self.started = 0;
    }

    /// Releases the permit for a call that ended without its answer: it
    /// was cancelled (its caller gave up, a timeout fired) or failed for a
    /// reason that is not overload. Its hold is a *censored* sample for the
    /// resource's adaptive limit: the latency was at least that long, so it
    /// counts in the window's mean, not its minimum; held past
    /// [`Adaptive::drop_after`](crate::adaptive::Adaptive::drop_after) ×
    /// the baseline it is a drop. So calls that time out still tell the
    /// limit the downstream is slow, where leaving them out would let only
    /// the fast survivors speak. Without an adaptive limit it only
    /// releases.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::Adaptive;
    ///
    /// let resource = sidejob::Resource::builder().capacity(4).adaptive(Adaptive::gradient()).build()?;
    /// let permit = resource.try_acquire()?;
    /// // ... the caller's deadline passed before the call answered ...
    /// permit.cancelled();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancelled(self) {
        // Released here, once: the drop's release must not run.
        let this = std::mem::ManuallyDrop::new(self);
        if this.started == 0 {
            this.resource.counter.release(this.ticket);
        } else {
            this.resource.finish_cancelled(this.ticket, this.started);
        }
    }

    /// Releases the permit without a latency sample, for a call whose hold
    /// time says nothing of the downstream (an answer from a cache, a call
    /// refused before it ran). Without an adaptive limit it only releases,
    /// as a drop does.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(1);
    /// resource.try_acquire()?.ignore();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn ignore(mut self) {
        self.started = 0;
    }

    /// The shard this permit was taken from.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(2).shards(2).build()?;
    /// assert_eq!(resource.try_acquire_from(1)?.shard(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn shard(&self) -> usize {
        shard_of(self.ticket)
    }

    /// The resource this permit belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::new(1);
    /// let permit = resource.try_acquire()?;
    /// assert!(std::ptr::eq(permit.resource(), &resource));
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn resource(&self) -> &'a Resource {
        self.resource
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.started == 0 {
            self.resource.counter.release(self.ticket);
        } else {
            self.resource.finish_sampled(self.ticket, self.started);
        }
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("shard", &self.shard())
            .finish()
    }
}

/// A [`Permit`] that keeps its resource's counter alive: `'static` and
/// `Send`.
///
/// Made by [`Resource::try_acquire_owned`], for work that outlives the
/// borrow or moves to another thread (async tasks, tower response futures).
/// Dropping it releases its slot exactly once, on whichever thread drops
/// it, also after every handle to the resource is gone. It holds a
/// reference kept by its home shard, not the resource's own `Arc`, so
/// taking one never writes a cache line that other shards' threads write.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
///
/// let resource = Arc::new(sidejob::Resource::new(1));
/// let permit = resource.try_acquire_owned()?;
/// let worker = std::thread::spawn(move || permit.shard());
/// assert!(worker.join().unwrap() < resource.shard_count());
/// assert_eq!(resource.usage(), 0);
/// # Ok::<(), sidejob::Overload>(())
/// ```
#[must_use = "a permit is released as soon as it is dropped"]
pub struct OwnedPermit {
    /// Taken by `drop`.
    anchor: Option<AnchorRef>,
    /// The shard plus one in the low `SHARD_BITS` bits, nonzero, so that
    /// `Option<OwnedPermit>` and the enums holding a permit need no tag of
    /// their own (a tag made the permit move through memory in pieces, and
    /// a tower layer's request twice as slow); above them, the sample's
    /// stamp as [`Permit`]'s, 0 when not sampled. One word: a second made
    /// a tower layer's request a third slower.
    tag: NonZeroU64,
}

/// The bits of an owned permit's tag that hold its shard plus one.
const SHARD_BITS: u32 = 64 - STAMP_BITS;
const SHARD_MASK: u64 = (1 << SHARD_BITS) - 1;
// The largest ticket (a shard index marked `FROM_RESERVE`) plus one fits.
const _: () = assert!(((FROM_RESERVE | (crate::MAX_SHARDS - 1)) as u64) < SHARD_MASK);

impl OwnedPermit {
    #[inline]
    pub(super) fn new(anchor: AnchorRef, ticket: usize, started: u64) -> Self {
        let tag = (started << SHARD_BITS) | (ticket as u64 + 1);
        OwnedPermit {
            anchor: Some(anchor),
            tag: NonZeroU64::MIN.saturating_add(tag - 1),
        }
    }

    /// The sample's stamp, 0 when not sampled.
    #[inline]
    fn started(&self) -> u64 {
        self.tag.get() >> SHARD_BITS
    }

    /// Leaves the permit unsampled (also a tower layer's, handed on to an
    /// upgraded connection: its hold time is the session's, no latency).
    #[inline]
    pub(crate) fn unsample(&mut self) {
        self.tag = NonZeroU64::MIN.saturating_add((self.tag.get() & SHARD_MASK) - 1);
    }

    /// Releases the permit and reports a drop, as [`Permit::dropped`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::adaptive::Adaptive;
    ///
    /// let resource = Arc::new(sidejob::Resource::builder().capacity(4).adaptive(Adaptive::aimd()).build()?);
    /// resource.try_acquire_owned()?.dropped();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dropped(mut self) {
        self.mark_dropped();
    }

    /// Releases the permit for a call that ended without its answer, as
    /// [`Permit::cancelled`]: a censored sample, or a drop past
    /// [`Adaptive::drop_after`](crate::adaptive::Adaptive::drop_after).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::adaptive::Adaptive;
    ///
    /// let resource = Arc::new(sidejob::Resource::builder().capacity(4).adaptive(Adaptive::aimd()).build()?);
    /// resource.try_acquire_owned()?.cancelled();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn cancelled(self) {
        // Unsampled, it is released as a plain drop is.
        if self.started() != 0 {
            self.cancel_sampled();
        }
    }

    /// [`cancelled`](Self::cancelled) for a sampled permit.
    #[cold]
    #[inline(never)]
    fn cancel_sampled(mut self) {
        if let Some(anchor) = self.anchor.take() {
            match &anchor.governor {
                Some(governor) => {
                    governor.finish_cancelled(&anchor.counter, self.ticket(), self.started())
                }
                None => anchor.counter.release(self.ticket()),
            }
            keep(anchor);
        }
    }

    /// Releases the permit without a latency sample, as [`Permit::ignore`].
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(1));
    /// resource.try_acquire_owned()?.ignore();
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    pub fn ignore(mut self) {
        self.unsample();
    }

    /// Whether the permit's resource has an adaptive limit.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn adapts(&self) -> bool {
        self.anchor
            .as_ref()
            .is_some_and(|anchor| anchor.governor.is_some())
    }

    /// Reports a drop now; the permit, still held, is released unsampled
    /// when dropped (a response whose body still streams).
    pub(crate) fn mark_dropped(&mut self) {
        if let Some(anchor) = &self.anchor {
            if let Some(governor) = &anchor.governor {
                governor.dropped(&anchor.counter, self.ticket());
            }
        }
        self.unsample();
    }

    /// Restarts a sampled permit's clock: the sample runs from now (a
    /// tower layer's `call`, after a permit taken in `poll_ready`).
    #[inline]
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn restart(&mut self) {
        if self.started() != 0 {
            if let Some(governor) = self.anchor.as_ref().and_then(|a| a.governor.as_ref()) {
                let shard = self.tag.get() & SHARD_MASK;
                let tag = (governor.start(0) << SHARD_BITS) | shard;
                self.tag = NonZeroU64::MIN.saturating_add(tag - 1);
            }
        }
    }

    /// The shard this permit was taken from.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(1));
    /// assert!(resource.try_acquire_owned()?.shard() < resource.shard_count());
    /// # Ok::<(), sidejob::Overload>(())
    /// ```
    #[inline]
    pub fn shard(&self) -> usize {
        shard_of(self.ticket())
    }

    /// The admission's ticket: the shard, marked when its slot goes
    /// straight back to the reserve.
    #[inline]
    fn ticket(&self) -> usize {
        ((self.tag.get() & SHARD_MASK) - 1) as usize
    }
}

impl Drop for OwnedPermit {
    #[inline]
    fn drop(&mut self) {
        if let Some(anchor) = self.anchor.take() {
            match &anchor.governor {
                Some(governor) if self.started() != 0 => {
                    governor.finish(&anchor.counter, self.ticket(), self.started())
                }
                _ => anchor.counter.release(self.ticket()),
            }
            keep(anchor);
        }
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("shard", &self.shard())
            .finish()
    }
}
