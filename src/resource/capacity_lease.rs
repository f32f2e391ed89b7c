//! [`CapacityLease`]: the right to set a resource's capacity, held by one
//! source at a time (see [`Resource::lease_capacity`]).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::error::BuildError;

use super::Resource;

/// The right to set a [`Resource`]'s capacity, taken with
/// [`Resource::lease_capacity`]: while it lives, the resource's own
/// [`set_capacity`](Resource::set_capacity) is refused and only the lease
/// sets the capacity. A [`fleet`](crate::fleet) node holds one for its
/// grants. Dropping it gives the capacity back to the user, as last set (a
/// deadline set with [`set_until`](CapacityLease::set_until) still lowers
/// it when it comes).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
///
/// let resource = Arc::new(sidejob::Resource::builder().capacity(1).shards(1).build()?);
/// let lease = resource.lease_capacity()?;
/// lease.set_until(8, Instant::now() + Duration::from_millis(20), 1)?;
/// assert_eq!(resource.capacity(), 8);
/// std::thread::sleep(Duration::from_millis(40));
/// let _permit = resource.try_acquire()?; // the first acquire past the deadline lowers it
/// assert_eq!(resource.capacity(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping the lease gives the capacity back to the user at once"]
pub struct CapacityLease {
    resource: Arc<Resource>,
}

impl CapacityLease {
    pub(super) fn new(resource: Arc<Resource>) -> Self {
        CapacityLease { resource }
    }

    /// The resource whose capacity this lease sets.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(4));
    /// let lease = resource.lease_capacity()?;
    /// assert_eq!(lease.resource().capacity(), 4);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }

    /// Sets the capacity for good (no deadline), as
    /// [`Resource::set_capacity`] does for the user.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` if it is above 2²⁴ − 1 =
    /// 16,777,215; nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(4));
    /// resource.lease_capacity()?.set(0)?;
    /// assert!(resource.try_acquire().is_err());
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn set(&self, capacity: usize) -> Result<(), BuildError> {
        self.resource.lease_set(capacity)
    }

    /// Sets the capacity to `capacity` until `until`, and to `fallback`
    /// from then on: a capacity leased from elsewhere, good only until its
    /// lease ends (a fleet's grant is one). A later `set` or `set_until`
    /// replaces it.
    ///
    /// Every acquire checks the deadline before it admits, and the first
    /// one past it (or a read of [`Resource::capacity`] or
    /// [`Resource::stats`]) lowers the capacity to `fallback`: a process stopped
    /// past the deadline (`SIGSTOP`, a VM pause) admits nothing on the
    /// stale capacity when it resumes, whichever thread runs first. The
    /// check reads the kernel's coarse clock (Linux's vDSO, a few ns that
    /// overlap the admission's own CAS) while the deadline is more than a
    /// second away, and the time-stamp counter within that second or on an
    /// OS without a coarse clock, so a fleet node renewing ahead of its
    /// deadline admits at a plain resource's cost. As with
    /// [`Resource::set_capacity`], permits held at the deadline are not
    /// revoked. A thread stopped between its check and its admission admits
    /// once on resuming; so may one that runs in the first microseconds of
    /// a virtual machine resumed from a pause of over a second, before the
    /// guest kernel's clock has ticked.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` if `capacity` or `fallback` is
    /// above 2²⁴ − 1 = 16,777,215; nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(2));
    /// let lease = resource.lease_capacity()?;
    /// lease.set_until(64, Instant::now() + Duration::from_secs(10), 0)?;
    /// assert_eq!(resource.capacity(), 64);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn set_until(
        &self,
        capacity: usize,
        until: Instant,
        fallback: usize,
    ) -> Result<(), BuildError> {
        self.resource.lease_set_until(capacity, until, fallback)
    }
}

impl Drop for CapacityLease {
    fn drop(&mut self) {
        self.resource.lease_ended();
    }
}

impl fmt::Debug for CapacityLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapacityLease")
            .field("capacity", &self.resource.capacity())
            .finish_non_exhaustive()
    }
}
