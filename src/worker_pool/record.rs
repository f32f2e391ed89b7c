//! What one shard's worker records: its counters and latency histograms.

use crate::latency::LatencyHistogram;
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering};

/// What one shard's worker records, for [`WorkerPool::stats`](super::WorkerPool::stats).
pub(super) struct ShardRecord {
    pub(super) handled: AtomicU64,
    pub(super) skipped: AtomicU64,
    pub(super) panics: AtomicU64,
    pub(super) restarts: AtomicU64,
    /// Whether the shard has a live worker (and so admits work).
    pub(super) up: AtomicBool,
    pub(super) latency: Mutex<ShardLatency>,
}

pub(super) struct ShardLatency {
    pub(super) queue_wait: LatencyHistogram,
    pub(super) handling: LatencyHistogram,
}

impl ShardRecord {
    pub(super) fn new() -> Self {
        ShardRecord {
            handled: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            up: AtomicBool::new(true),
            latency: Mutex::new(ShardLatency {
                queue_wait: LatencyHistogram::new(),
                handling: LatencyHistogram::new(),
            }),
        }
    }

    /// Adds one to a counter only this shard's worker writes: a load and a
    /// store, no locked instruction.
    #[inline]
    pub(super) fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}
