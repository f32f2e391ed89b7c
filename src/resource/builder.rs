//! [`ResourceBuilder`]: a resource's capacity and shard count.

use crate::adaptive::Adaptive;
use crate::admission::{Priority, ShardedCounter, Shares, Sizing, PRIORITIES};
use crate::error::BuildError;

use super::{Resource, DEFAULT_NAME};

/// Configures a [`Resource`]; made by [`Resource::builder`].
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::builder()
///     .capacity(64) // required
///     .shards(8) // default: the number of CPUs
///     .build()?;
/// assert_eq!(resource.stats().shards[0].limit, 8); // until capacity moves to where it is used
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ResourceBuilder {
    sizing: Sizing,
    shares: [Option<f64>; PRIORITIES],
    name: Option<String>,
    adaptive: Option<Adaptive>,
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
        self.sizing.capacity = Some(capacity);
        self
    }

    /// The number of shards, from 1 to [`MAX_SHARDS`](crate::MAX_SHARDS). Default: the number of
    /// CPUs. More shards than capacity is valid: the capacity moves to the
    /// shards whose threads use it.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(1).shards(4).build()?;
    /// assert!(resource.try_acquire().is_ok()); // found on shard 0
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.sizing.shards = Some(shards);
        self
    }

    /// The part of the capacity that requests of `priority` may fill, in
    /// (0, 1]. [`Priority::Critical`]'s is always 1, and a lower priority's
    /// share may not exceed a higher one's. An unset share is the share of
    /// the priority above it: 1 for all by default, and setting `Normal`
    /// alone sets `Sheddable` with it.
    ///
    /// A request of priority `p` is admitted only if the usage after it
    /// stays at most ⌊share(p) × capacity⌋ (shares follow
    /// [`Resource::set_capacity`]), so the higher priorities always find the
    /// slots the lower ones must leave. The check is strict under
    /// concurrency and exact for one caller at a time. A priority whose
    /// share is below 1 admits through the resource's reserve, one shared
    /// word, instead of its thread's shard: give shares below 1 to the
    /// traffic you would shed, and leave the hot path at 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::{Priority, Resource};
    ///
    /// let resource = Resource::builder()
    ///     .capacity(10)
    ///     .share(Priority::Normal, 0.9) // one slot kept for critical calls
    ///     .share(Priority::Sheddable, 0.5)
    ///     .build()?;
    /// let normal: Vec<_> = std::iter::from_fn(|| resource.try_acquire().ok()).collect();
    /// assert_eq!(normal.len(), 9);
    /// assert!(resource.try_acquire_with(Priority::Sheddable).is_err());
    /// assert!(resource.try_acquire_with(Priority::Critical).is_ok());
    ///
    /// let err = Resource::builder().capacity(1).share(Priority::Sheddable, 0.0).build();
    /// assert_eq!(err.unwrap_err().setting(), "share");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn share(mut self, priority: Priority, share: f64) -> Self {
        self.shares[priority.index()] = Some(share);
        self
    }

    /// The resource's name, which its metrics carry as their `name` label
    /// (see [`Metered`](crate::Metered)). Default: `"resource"`.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = sidejob::Resource::builder().capacity(8).name("search").build()?;
    /// assert_eq!(resource.name(), "search");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Makes the capacity adaptive: the capacity set here is the initial
    /// limit, and from then on `adaptive`'s rule sets it, each window,
    /// within its `[min_limit, max_limit]`, from the latency and drops the
    /// permits report (see [`adaptive`](crate::adaptive)). Off by default,
    /// and then it costs nothing. With it on, a sampled permit reads the
    /// clock when taken and when dropped; a
    /// [`set_capacity`](Resource::set_capacity) still applies, and the rule
    /// goes on from there.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::Adaptive;
    ///
    /// let resource = sidejob::Resource::builder()
    ///     .capacity(16)
    ///     .adaptive(Adaptive::aimd().min_limit(4).max_limit(64))
    ///     .build()?;
    /// let permit = resource.try_acquire()?;
    /// permit.dropped(); // the guarded call timed out: the limit backs off
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn adaptive(mut self, adaptive: Adaptive) -> Self {
        self.adaptive = Some(adaptive);
        self
    }

    /// Builds the resource.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting when `capacity` was not set or
    /// is above 2²⁴ − 1, `shards` is 0 or above
    /// [`MAX_SHARDS`](crate::MAX_SHARDS), or a `share` is outside (0, 1],
    /// not 1 for `Critical`, or above a higher priority's; with
    /// [`adaptive`](Self::adaptive), when `min_limit` is 0, `max_limit` is
    /// below it or above 2²⁴ − 1, the capacity lies outside them, the
    /// `window` or `min_samples` is zero, `drop_after` is below 1, a rule's
    /// parameter is out of its range, or a `share` gives its priority no
    /// slot at `min_limit` (each error names its setting).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().capacity(1).shards(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `shards`: must be at least 1");
    /// ```
    pub fn build(self) -> Result<Resource, BuildError> {
        let (capacity, shards) = self.sizing.checked()?;
        let shares = Shares::checked(self.shares)?;
        if let Some(adaptive) = &self.adaptive {
            adaptive.check(capacity)?;
            // A priority with no slot at the least limit would be refused
            // everything there, and a limit nothing is admitted under never
            // learns to grow.
            if let Some((priority, share)) = shares.starved_at(adaptive.min_limit) {
                let least = (1.0 / share).ceil();
                return Err(BuildError::new(
                    "share",
                    format!(
                        "the {priority} share ({share}) of the adaptive `min_limit` ({}) is no slot; \
                         a `min_limit` of at least {least} gives it one",
                        adaptive.min_limit
                    ),
                ));
            }
        }
        let name = self.name.unwrap_or_else(|| DEFAULT_NAME.to_owned());
        Ok(Resource::from_counter(
            ShardedCounter::new(capacity, shards, shares),
            name,
            self.adaptive,
        ))
    }
}
