//! What an [`ObjectPool`](crate::ObjectPool) reports: its size right now
//! ([`PoolStatus`]) and its counters ([`ObjectPoolStats`]).

use crate::latency::LatencyStats;

/// A snapshot of an [`ObjectPool`](crate::ObjectPool)'s size, from [`ObjectPool::status`](crate::ObjectPool::status).
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
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).build()?;
/// let status = pool.status();
/// assert_eq!((status.max_size, status.size), (3, 0));
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PoolStatus {
    /// The size limit.
    pub max_size: usize,
    /// Objects that exist or are being made: `idle + in_use + creating`.
    pub size: usize,
    /// Objects ready to be taken, tagged or not.
    pub idle: usize,
    /// Of the idle objects, those that carry a tag (see
    /// [`take_tagged`](crate::ObjectPool::take_tagged)).
    pub tagged: usize,
    /// Objects taken and not yet returned.
    pub in_use: usize,
    /// Objects being made.
    pub creating: usize,
    /// Takers waiting in [`ObjectPool::take`](crate::ObjectPool::take).
    pub waiting: usize,
}

/// An [`ObjectPool`](crate::ObjectPool)'s counters, from [`ObjectPool::stats`](crate::ObjectPool::stats).
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
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
/// let held = pool.try_take()?;
/// assert!(pool.try_take().is_err());
/// sidejob::Pooled::fail(held);
/// let stats = pool.stats();
/// assert_eq!((stats.takes, stats.rejected, stats.destroyed), (1, 1, 1));
/// assert_eq!(stats.wait.count, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ObjectPoolStats {
    /// Objects handed to takers.
    pub takes: u64,
    /// Takers that joined the wait queue.
    pub waits: u64,
    /// Waiters whose timeout ran out.
    pub timeouts: u64,
    /// Takes refused at once: [`TakeError::Overload`](crate::TakeError::Overload) and
    /// [`TakeError::QueueFull`](crate::TakeError::QueueFull).
    pub rejected: u64,
    /// Objects made.
    pub creates: u64,
    /// Creations that failed (or panicked).
    pub create_failures: u64,
    /// The maintenance's creations to keep `min_idle` objects
    /// ready (or to replace what tagged takes took) that failed, panicked
    /// or ran past `create_timeout`. Each holds the next refill back by a
    /// delay that starts at 10 ms and doubles, with jitter, up to the
    /// maintenance interval (at least 1 s); the first success resets it.
    pub failed_refills: u64,
    /// Objects destroyed, for any reason: failed checks, [`Pooled::fail`](crate::Pooled::fail),
    /// panicking holders, reaping, expiry, `retire_all`, shrinking, and the
    /// pool closing.
    pub destroyed: u64,
    /// Of those, idle objects reaped after `idle_timeout`.
    pub reaped: u64,
    /// Of those, objects whose `max_lifetime` ran out.
    pub expired: u64,
    /// Idle tagged objects destroyed to make room for a tagged take at
    /// `max_size`, least recently used first.
    pub evicted: u64,
    /// Idle objects that failed the check on take (see
    /// [`PoolConfig::check_on_take`](crate::PoolConfig::check_on_take)),
    /// destroyed, ever.
    pub failed_take_checks: u64,
    /// Creations given up on at a deadline, the pool's
    /// [`create_timeout`](crate::PoolConfig::create_timeout) or a
    /// [`take`](crate::ObjectPool::take)'s own; each late object is
    /// destroyed when its call returns (and counted in `creates` and
    /// `destroyed` then).
    pub create_timeouts: u64,
    /// Take futures of an [`AsyncObjectPool`](crate::AsyncObjectPool)
    /// dropped after their first poll and before they finished, whether
    /// they were queued, creating or already handed something (a take that
    /// ends with its own `Timeout` counts in `timeouts` instead). Always 0
    /// for an [`ObjectPool`](crate::ObjectPool).
    pub cancelled: u64,
    /// How long waiters waited, whatever the outcome.
    pub wait: LatencyStats,
}
