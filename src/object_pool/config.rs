//! [`PoolConfig`]: an [`ObjectPool`](crate::ObjectPool)'s limits and timers,
//! set by the builder and changed at run time with
//! [`ObjectPool::reconfigure`](crate::ObjectPool::reconfigure).

use std::time::Duration;

use crate::error::BuildError;

/// How many takers may wait at once unless
/// [`queue_max`](crate::ObjectPoolBuilder::queue_max) says otherwise.
pub const DEFAULT_QUEUE_MAX: usize = 50;

/// An [`ObjectPool`](crate::ObjectPool)'s limits and timers.
///
/// Read it with [`ObjectPool::config`](crate::ObjectPool::config); change it
/// with [`ObjectPool::reconfigure`](crate::ObjectPool::reconfigure). The
/// pool keeps it as an `arc-swap` snapshot, read without locks.
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
/// # }
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(8).soft_limit(2).build()?;
/// let config = pool.config();
/// assert_eq!((config.max_size, config.soft_limit, config.min_idle), (8, Some(2), 0));
/// assert_eq!(config.queue_max, sidejob::DEFAULT_QUEUE_MAX);
/// assert_eq!((config.idle_timeout, config.max_lifetime), (None, None));
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PoolConfig {
    /// The most objects that exist at once, counting those being made.
    pub max_size: usize,
    /// Idle objects are reaped after `idle_timeout` only while the pool holds
    /// more than this many objects. `None` (the default) means `max_size`:
    /// untagged objects are never reaped for idling.
    pub soft_limit: Option<usize>,
    /// Idle objects kept ready by the maintainer thread.
    pub min_idle: usize,
    /// How many takers may wait at once.
    pub queue_max: usize,
    /// How long an object may stay idle before it is reaped (see
    /// `soft_limit`). `None`: never.
    pub idle_timeout: Option<Duration>,
    /// How long an object lives, from its creation. An expired object is
    /// never handed out. `None`: forever.
    pub max_lifetime: Option<Duration>,
    /// Each object's lifetime is shortened by a random part of this, so that
    /// objects made together do not all expire together. Must be smaller
    /// than `max_lifetime`.
    pub lifetime_jitter: Duration,
    /// Whether a take asks [`Manager::check`](crate::Manager::check) if an
    /// object found idle still works before handing it out (r2d2's
    /// `test_on_check_out`). One that fails is destroyed and the take goes
    /// on: the next idle object, or a new one. Catches objects that died
    /// while idle (a killed process, a connection the server closed) at
    /// the price of a `check` per take from the idle objects. New objects
    /// and objects handed straight from a return (checked on return) are
    /// not checked again. Default: off.
    pub check_on_take: bool,
    /// How long a creation may take before its taker gives up on it with
    /// [`TakeError::CreateTimeout`](crate::TakeError::CreateTimeout). The hung call keeps its slot until it
    /// returns; the object it then makes is destroyed. `None` (the default):
    /// no creation timeout; [`ObjectPool::take`](crate::ObjectPool::take)'s own deadline still
    /// holds.
    pub create_timeout: Option<Duration>,
}

impl PoolConfig {
    pub(super) fn new(max_size: usize) -> Self {
        PoolConfig {
            max_size,
            soft_limit: None,
            min_idle: 0,
            queue_max: DEFAULT_QUEUE_MAX,
            idle_timeout: None,
            max_lifetime: None,
            lifetime_jitter: Duration::ZERO,
            check_on_take: false,
            create_timeout: None,
        }
    }

    /// Whether a pop from an idle stack needs the cold path: to nudge the
    /// maintainer (`min_idle`), to check a lifetime, or to run the check on
    /// take.
    pub(super) fn needs_after_pop(&self) -> bool {
        self.min_idle > 0 || self.max_lifetime.is_some() || self.check_on_take
    }

    /// Refuses settings that contradict each other, naming the setting.
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        if self.max_size == 0 {
            return Err(BuildError::new("max_size", "must be at least 1"));
        }
        let soft_limit = self.soft_limit.unwrap_or(self.max_size);
        for (setting, value) in [("min_idle", self.min_idle), ("soft_limit", soft_limit)] {
            if value > self.max_size {
                return Err(BuildError::new(
                    setting,
                    format!("{value} is above `max_size` ({})", self.max_size),
                ));
            }
        }
        if self.idle_timeout == Some(Duration::ZERO) {
            return Err(BuildError::new("idle_timeout", "must be above zero"));
        }
        if self.create_timeout == Some(Duration::ZERO) {
            return Err(BuildError::new("create_timeout", "must be above zero"));
        }
        match self.max_lifetime {
            Some(Duration::ZERO) => Err(BuildError::new("max_lifetime", "must be above zero")),
            Some(lifetime) if self.lifetime_jitter >= lifetime => Err(BuildError::new(
                "lifetime_jitter",
                format!(
                    "{:?} is not smaller than `max_lifetime` ({lifetime:?})",
                    self.lifetime_jitter
                ),
            )),
            None if !self.lifetime_jitter.is_zero() => Err(BuildError::new(
                "lifetime_jitter",
                "needs a `max_lifetime` to shorten",
            )),
            _ => Ok(()),
        }
    }

    /// How often the maintainer looks at the idle objects: often enough to
    /// reap within a quarter of the shortest timer, and at least once a
    /// second. A failed refill is retried after its own backoff (see
    /// `engine/backoff.rs`), not at every round.
    pub(crate) fn maintenance_interval(&self) -> Duration {
        let shortest = [self.idle_timeout, self.max_lifetime]
            .into_iter()
            .flatten()
            .min();
        match shortest {
            Some(timer) => (timer / 4).clamp(Duration::from_millis(5), Duration::from_secs(1)),
            None => Duration::from_secs(1),
        }
    }

    /// Whether anything needs the maintainer thread.
    pub(crate) fn needs_maintainer(&self) -> bool {
        self.min_idle > 0 || self.idle_timeout.is_some() || self.max_lifetime.is_some()
    }
}

/// The admission core names the setting `capacity`; a pool calls it
/// `max_size`.
pub(super) fn max_size_error(error: BuildError) -> BuildError {
    match error.setting() {
        "capacity" => BuildError::new("max_size", error.reason().to_owned()),
        _ => error,
    }
}
