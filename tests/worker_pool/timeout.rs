//! A call that times out gets `Timeout`. If its worker had not started it,
//! it is skipped; if it had, it runs to the end. Either way its slot is
//! released exactly once.

use std::time::Duration;

use crate::support;
use sidejob::{CallError, WorkerPool};
use support::workers::{Harness, Job};

#[test]
fn a_call_timed_out_in_the_queue_is_skipped_and_its_slot_freed() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(4)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    let outcome = pool.call_timeout(Job::Run(1), Duration::from_millis(20));
    assert!(matches!(outcome, Err(CallError::Timeout)));
    assert_eq!(pool.usage(), 2, "still queued behind the held job");
    harness.open(1);
    assert_eq!(pool.call(Job::Run(2)).unwrap(), 2);
    let stats = pool.stats();
    assert_eq!(stats.skipped, 1);
    assert_eq!(stats.usage, 0);
    assert_eq!(stats.accepted, stats.handled + stats.skipped);
    let order: Vec<u32> = harness.logged().into_iter().map(|(_, n)| n).collect();
    assert_eq!(order, [0, 2], "the timed-out call never ran");
}

#[test]
fn a_call_timed_out_while_running_finishes_and_frees_its_slot() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(2)
        .shards(1)
        .call_timeout(Duration::from_millis(20))
        .build(harness.factory())
        .unwrap();
    assert!(matches!(pool.call(Job::Wait(7)), Err(CallError::Timeout)));
    assert_eq!(harness.started.recv().unwrap(), 7);
    assert_eq!(pool.usage(), 1);
    harness.open(1);
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!((stats.handled, stats.skipped, stats.usage), (1, 0, 0));
    assert_eq!(harness.logged(), [(0, 7)]);
}
