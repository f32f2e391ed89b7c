//! Stats: per-shard usage and limit, accepted, rejected, handled, restarts,
//! and latency histograms of queue wait and handling time.

mod block_on;
mod common;

use std::time::Duration;

use block_on::block_on;
use common::{Harness, Job};
use sidejob::WorkerPool;

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

#[test]
fn sampled_latency_keeps_counts_exact() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(16)
        .shards(1)
        .latency_sample_every(4)
        .build(harness.factory())
        .unwrap();
    for n in 0..10 {
        pool.cast(Job::Run(n)).unwrap();
    }
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!(stats.handled, 10);
    // Messages 0, 4 and 8 were timed.
    assert_eq!((stats.handling.count, stats.queue_wait.count), (3, 3));
}

#[test]
fn by_default_one_message_in_16_is_timed() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(64)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    for n in 0..40 {
        pool.cast(Job::Run(n)).unwrap();
    }
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!(sidejob::DEFAULT_LATENCY_SAMPLE_EVERY, 16);
    assert_eq!(stats.handled, 40);
    // Messages 0, 16 and 32 were timed.
    assert_eq!((stats.handling.count, stats.queue_wait.count), (3, 3));
}

#[test]
fn any_sampling_interval_builds_and_rounds_up_to_a_power_of_two() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(16)
        .shards(1)
        .latency_sample_every(3) // rounded up to 4
        .build(harness.factory())
        .unwrap();
    for n in 0..10 {
        pool.cast(Job::Run(n)).unwrap();
    }
    pool.shutdown();
    assert_eq!(pool.stats().handling.count, 3, "messages 0, 4 and 8");
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
