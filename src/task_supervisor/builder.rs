//! [`TaskSupervisorBuilder`]: capacity, shards and a name.

use std::sync::Arc;

use super::shared::TaskShared;
use super::TaskSupervisor;
use crate::admission::Sizing;
use crate::error::BuildError;
use crate::rates::Rates;

/// Configures a [`TaskSupervisor`]; made by [`TaskSupervisor::builder`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::TaskSupervisor::builder()
///     .capacity(1000)
///     .shards(4)
///     .name("jobs")
///     .build()?;
/// assert_eq!((supervisor.capacity(), supervisor.name()), (1000, "jobs"));
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TaskSupervisorBuilder {
    sizing: Sizing,
    name: Option<String>,
}

impl TaskSupervisorBuilder {
    /// The most children alive at once. Required.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::builder().capacity(3).build()?;
    /// assert_eq!(supervisor.capacity(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.sizing.capacity = Some(capacity);
        self
    }

    /// How many shards the capacity is split over. Default: one per CPU.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::builder().capacity(3).shards(3).build()?;
    /// assert_eq!(supervisor.stats().shards.len(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.sizing.shards = Some(shards);
        self
    }

    /// A name for the supervisor, shown by `Debug`. Default: `"tasks"`.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::builder().capacity(1).name("mail").build()?;
    /// assert_eq!(supervisor.name(), "mail");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the supervisor.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting: no `capacity`, a capacity the
    /// shards cannot hold, or a shard count of zero or above
    /// [`MAX_SHARDS`](crate::MAX_SHARDS).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::TaskSupervisor::builder().build().unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn build(self) -> Result<TaskSupervisor, BuildError> {
        let (capacity, shards) = self.sizing.checked()?;
        let name = self.name.unwrap_or_else(|| String::from("tasks"));
        let shared = Arc::new(TaskShared::new(capacity, shards, name));
        Ok(TaskSupervisor {
            rates: Rates::start(&shared, super::sample),
            anchors: super::shared::anchors(&shared).into(),
            shared,
        })
    }
}
