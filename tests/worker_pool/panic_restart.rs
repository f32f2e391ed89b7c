//! A panicking handler costs its caller `WorkerPanicked`; the worker is
//! rebuilt by the factory and handles the rest of its mailbox: nothing queued
//! is lost, slots stay exact, and restarts are counted.

use std::thread;

use crate::support;
use sidejob::{CallError, WorkerPool};
use support::panics::quiet_deliberate_panics;
use support::workers::{Harness, Job};

#[test]
fn a_panic_is_reported_and_the_queue_behind_it_survives() {
    quiet_deliberate_panics();
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(16)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    // Hold the worker so the panicking call and the jobs behind it queue up.
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    thread::scope(|scope| {
        let doomed = scope.spawn(|| pool.call(Job::Panic));
        let after = scope.spawn(|| {
            // Queue behind the panic once it is posted.
            while pool.usage() < 2 {
                thread::yield_now();
            }
            (1..=5).map(|n| pool.cast(Job::Run(n))).collect::<Vec<_>>()
        });
        let casts = after.join().unwrap();
        assert!(casts.iter().all(Result::is_ok));
        harness.open(1);
        assert!(matches!(
            doomed.join().unwrap(),
            Err(CallError::WorkerPanicked)
        ));
    });
    assert_eq!(pool.call(Job::Run(6)).unwrap(), 6);
    let order: Vec<u32> = harness.logged().into_iter().map(|(_, n)| n).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5, 6], "nothing queued was lost");
    let stats = pool.stats();
    assert_eq!((stats.panics, stats.restarts), (1, 1));
    assert_eq!(stats.shards[0].restarts, 1);
    assert_eq!(stats.usage, 0);
    assert_eq!(stats.handled, 8);
}

#[test]
fn panicking_casts_and_calls_keep_counts_exact() {
    quiet_deliberate_panics();
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(8)
        .shards(2)
        // Forty deaths in a second: past the default restart intensity,
        // which would put the shards down for good (tested on its own in
        // `worker_pool_dead_shards.rs`).
        .max_restarts(u32::MAX)
        .build(harness.factory())
        .unwrap();
    for round in 0..20 {
        let _ = pool.cast(Job::Panic);
        assert!(matches!(
            pool.call(Job::Panic),
            Err(CallError::WorkerPanicked)
        ));
        assert_eq!(pool.call(Job::Run(round)).unwrap(), round);
    }
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!(stats.usage, 0);
    assert_eq!(stats.accepted, stats.handled);
    assert_eq!(stats.panics, stats.restarts);
    assert_eq!(stats.panics, 40);
}
