//! [`ResourceBuilder`]: a resource's capacity and shard count.

use crate::admission::{ShardedCounter, Sizing};
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
/// assert_eq!(resource.stats().shards[0].limit, 8);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ResourceBuilder {
    sizing: Sizing,
    name: Option<String>,
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
        self.sizing.shards = Some(shards);
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

    /// Builds the resource.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting when `capacity` was not set or
    /// exceeds what the shards can hold, or `shards` is 0 or above
    /// [`MAX_SHARDS`](crate::MAX_SHARDS).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().capacity(1).shards(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `shards`: must be at least 1");
    /// ```
    pub fn build(self) -> Result<Resource, BuildError> {
        let (capacity, shards) = self.sizing.checked()?;
        let name = self.name.unwrap_or_else(|| DEFAULT_NAME.to_owned());
        Ok(Resource::from_counter(
            ShardedCounter::new(capacity, shards),
            name,
        ))
    }
}
