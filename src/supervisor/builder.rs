//! [`SupervisorBuilder`]: a supervisor's capacity, shards and threads.

use std::sync::Arc;

use crate::admission::Sizing;
use crate::error::BuildError;
use crate::rates::Rates;
use crate::sync::check_thread_name;

use super::shared::Shared;
use super::Supervisor;

/// Configures a [`Supervisor`]; made by [`Supervisor::builder`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::builder()
///     .capacity(64) // required
///     .shards(4) // default: the number of CPUs
///     .name("fsm") // child threads: fsm-<id>
///     .stack_size(256 * 1024)
///     .build()?;
/// # drop(supervisor);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SupervisorBuilder {
    sizing: Sizing,
    name: Option<String>,
    stack_size: Option<usize>,
}

impl SupervisorBuilder {
    /// The most children alive at once. Required.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Supervisor::builder().build().unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.sizing.capacity = Some(capacity);
        self
    }

    /// The number of shards the capacity and the live set are split over.
    /// Default: the number of CPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Supervisor::builder().capacity(1).shards(0).build().unwrap_err();
    /// assert_eq!(err.setting(), "shards");
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.sizing.shards = Some(shards);
        self
    }

    /// The prefix of the children's thread names: `{name}-{id}`. Default:
    /// `sidejob-child`.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder().capacity(1).name("job").build()?;
    /// let child = supervisor.spawn(|_| std::thread::current().name().map(str::to_owned))?;
    /// assert!(child.join()?.unwrap().starts_with("job-"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The stack size of each child's thread, in bytes. Default: the
    /// platform's (see [`std::thread::Builder::stack_size`]). A size the OS
    /// refuses makes [`Supervisor::spawn`] fail with [`SpawnError::Thread`](super::SpawnError::Thread).
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder().capacity(1).stack_size(64 * 1024).build()?;
    /// supervisor.spawn(|_| ())?.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Builds the supervisor.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting: `capacity` not set or too large,
    /// `shards` 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS), `name` with a
    /// NUL byte.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Supervisor::builder().capacity(1).name("a\0b").build().unwrap_err();
    /// assert_eq!(err.setting(), "name");
    /// ```
    pub fn build(self) -> Result<Supervisor, BuildError> {
        let (capacity, shard_count) = self.sizing.checked()?;
        let name = self.name.unwrap_or_else(|| "sidejob-child".to_owned());
        check_thread_name(&name)?;
        let shared = Arc::new(Shared::new(capacity, shard_count, name, self.stack_size));
        Ok(Supervisor {
            rates: Rates::start(&shared, super::sample),
            shared,
        })
    }
}
