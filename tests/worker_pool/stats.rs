//! Stats: per-shard usage and limit, accepted, rejected, handled, restarts,
//! and latency histograms of queue wait and handling time.

use std::time::Duration;

use crate::support;
use sidejob::{WorkerPool, WorkerPoolStats};
use support::block_on::block_on;
use support::workers::{Harness, Job};

#[test]
fn counters_and_histograms_add_up() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(3)
        .shards(1)
        .latency_sample_every(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    pool.cast(Job::Run(1)).unwrap();
    pool.cast(Job::Run(2)).unwrap();
    assert!(pool.cast(Job::Run(3)).is_err());
    let busy = pool.stats();
    assert_eq!((busy.usage, busy.accepted, busy.rejected), (3, 3, 1));
    assert_eq!((busy.shards[0].limit, busy.shards[0].usage), (3, 3));
    std::thread::sleep(Duration::from_millis(20));
    harness.open(1);
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!(stats.handled, 3);
    assert_eq!(stats.shards[0].handled, 3);
    assert_eq!(stats.queue_wait.count, 3);
    assert_eq!(stats.handling.count, 3);
    // The held job took at least the 20 ms the test waited; the two behind it
    // waited in the queue at least as long.
    assert!(
        stats.handling.max >= Duration::from_millis(19),
        "{:?}",
        stats.handling
    );
    assert!(
        stats.queue_wait.max >= Duration::from_millis(19),
        "{:?}",
        stats.queue_wait
    );
    let h = stats.handling;
    assert!(h.p50 <= h.p90 && h.p90 <= h.p99 && h.p99 <= h.p999 && h.p999 <= h.max);
}

/// Casts `messages` jobs through a one-shard pool that times one message in
/// `sample_every` (as many as by default when `None`); returns its stats once
/// it has shut down.
fn stats_after_casts(sample_every: Option<u32>, messages: u32) -> WorkerPoolStats {
    let harness = Harness::new();
    let builder = WorkerPool::builder().capacity(messages as usize).shards(1);
    let builder = match sample_every {
        Some(every) => builder.latency_sample_every(every),
        None => builder,
    };
    let pool = builder.build(harness.factory()).unwrap();
    for n in 0..messages {
        pool.cast(Job::Run(n)).unwrap();
    }
    pool.shutdown();
    pool.stats()
}

#[test]
fn sampled_latency_keeps_counts_exact() {
    let stats = stats_after_casts(Some(4), 10);
    assert_eq!(stats.handled, 10);
    // Messages 0, 4 and 8 were timed.
    assert_eq!((stats.handling.count, stats.queue_wait.count), (3, 3));
}

#[test]
fn by_default_one_message_in_16_is_timed() {
    let stats = stats_after_casts(None, 40);
    assert_eq!(sidejob::DEFAULT_LATENCY_SAMPLE_EVERY, 16);
    assert_eq!(stats.handled, 40);
    // Messages 0, 16 and 32 were timed.
    assert_eq!((stats.handling.count, stats.queue_wait.count), (3, 3));
}

#[test]
fn any_sampling_interval_builds_and_rounds_up_to_a_power_of_two() {
    let stats = stats_after_casts(Some(3), 10); // rounded up to 4
    assert_eq!(stats.handling.count, 3, "messages 0, 4 and 8");
    let harness = Harness::new();
    let sparse = WorkerPool::builder()
        .capacity(1)
        .latency_sample_every(u32::MAX)
        .build(harness.factory())
        .unwrap();
    sparse.call(Job::Run(1)).unwrap();
    assert_eq!(sparse.stats().handled, 1);
}

#[test]
fn a_reply_brings_the_latencies_of_the_casts_before_it() {
    let harness = Harness::new();
    // Far more casts than a worker keeps before it records its samples.
    const CASTS: u32 = 200;
    let pool = WorkerPool::builder()
        .capacity(CASTS as usize + 2)
        .shards(1)
        .latency_sample_every(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    for n in 1..CASTS {
        pool.cast(Job::Run(n)).unwrap();
    }
    // `call_async` posts the call before it returns, so the held job cast
    // next is queued behind it: the worker stays busy (and does not record
    // its samples for going idle) once it has answered.
    let call = pool.call_async(Job::Run(CASTS));
    pool.cast(Job::Wait(CASTS + 1)).unwrap();
    harness.open(1);
    assert_eq!(block_on(call).unwrap(), CASTS);
    assert_eq!(harness.started.recv().unwrap(), CASTS + 1);
    // The reply alone says the samples are in.
    let stats = pool.stats();
    harness.open(1);
    let messages = u64::from(CASTS) + 1;
    assert_eq!(stats.handled, messages);
    assert_eq!(stats.queue_wait.count, messages);
    assert_eq!(stats.handling.count, messages);
}
