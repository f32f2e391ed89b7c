//! What a [`WorkerPool`](super::WorkerPool) reports: [`WorkerPoolStats`]
//! and each shard's [`WorkerShardStats`].

use crate::latency::LatencyStats;

/// A snapshot of a [`WorkerPool`](crate::WorkerPool)'s counters, from [`WorkerPool::stats`](crate::WorkerPool::stats).
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(2).build(|_| Noop)?;
/// pool.cast(())?;
/// pool.shutdown();
/// let stats = pool.stats();
/// assert_eq!(stats.accepted, stats.handled + stats.skipped);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct WorkerPoolStats {
    /// The configured capacity: messages queued and in progress, at most.
    /// Still the configured figure after shutdown, when nothing is admitted.
    pub capacity: usize,
    /// Messages queued or being handled now.
    pub usage: usize,
    /// Calls and casts admitted, ever.
    pub accepted: u64,
    /// Calls and casts refused with `Overload` because every mailbox was
    /// full, ever.
    pub rejected: u64,
    /// Calls and casts refused with `Closed` because the pool was shut down,
    /// ever.
    pub closed: u64,
    /// Messages whose handler ran (returned or panicked), ever.
    pub handled: u64,
    /// Calls skipped because their caller had given up (timed out or dropped
    /// the future) before their worker reached them, and calls and casts
    /// left unhandled at shutdown by a worker that could not be rebuilt,
    /// ever. So `accepted == handled + skipped` once the pool is idle.
    pub skipped: u64,
    /// Handlers that panicked, ever.
    pub panics: u64,
    /// Workers rebuilt by the factory after a panic, ever.
    pub restarts: u64,
    /// Shards without a live worker now: their worker died and is being
    /// rebuilt, or they are down for good past the restart intensity (see
    /// [`max_restarts`](crate::WorkerPoolBuilder::max_restarts)). A shard
    /// down admits nothing.
    pub shards_down: usize,
    /// Time from posting a message to its handler starting, of the timed
    /// messages: one in 16 by default, see
    /// [`latency_sample_every`](crate::WorkerPoolBuilder::latency_sample_every).
    ///
    /// A worker records its samples in batches: a call's sample (and those
    /// of the casts before it on its shard) is in the histograms by the time
    /// its caller has the reply; a cast's, once its worker has run out of
    /// mail or handled a call after it, and at the latest after 64 more
    /// timed messages or at shutdown.
    pub queue_wait: LatencyStats,
    /// Time spent in the handler, of the timed messages.
    pub handling: LatencyStats,
    /// Each shard's figures, in shard order.
    pub shards: Vec<WorkerShardStats>,
}

/// One shard's figures within [`WorkerPoolStats`].
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(5).shards(2).build(|_| Noop)?;
/// let limits: Vec<usize> = pool.stats().shards.iter().map(|s| s.limit).collect();
/// assert_eq!(limits, [3, 2]);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct WorkerShardStats {
    /// The shard's share of the configured capacity: its mailbox bound.
    pub limit: usize,
    /// Messages queued or being handled on this shard now.
    pub usage: usize,
    /// Messages this shard's worker handled, ever.
    pub handled: u64,
    /// Times this shard's worker was rebuilt after a panic, ever.
    pub restarts: u64,
    /// Whether the shard has a live worker, and so admits work.
    pub up: bool,
}
