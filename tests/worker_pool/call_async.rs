//! `call_async` is a `Send` future that needs no runtime: awaited from a
//! minimal executor it resolves to the same result as `call`.

use std::thread;

use crate::support;
use sidejob::{CallError, WorkerPool};
use support::block_on::block_on;
use support::workers::{Harness, Job};

fn assert_send<T: Send>(_: &T) {}

#[test]
fn an_async_call_resolves_to_the_reply() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(4)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    let future = pool.call_async(Job::Run(3));
    assert_send(&future);
    assert_eq!(block_on(future).unwrap(), 3);
    // Also when the reply comes later than the first poll.
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    let later = pool.call_async(Job::Run(4));
    let opener = thread::spawn({
        let gate = harness.gate.clone();
        move || gate.send(()).unwrap()
    });
    assert_eq!(block_on(later).unwrap(), 4);
    opener.join().unwrap();
}

#[test]
fn a_refused_async_call_resolves_at_once_with_the_request() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(1)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    match block_on(pool.call_async(Job::Run(5))) {
        Err(CallError::Overload(Job::Run(5))) => {}
        other => panic!("unexpected {other:?}"),
    }
    harness.open(1);
    pool.shutdown();
    assert!(matches!(
        block_on(pool.call_async(Job::Run(6))),
        Err(CallError::Closed(Job::Run(6)))
    ));
}

#[test]
fn a_dropped_async_call_is_skipped_and_its_slot_freed() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(2)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    drop(pool.call_async(Job::Run(1)));
    harness.open(1);
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!((stats.handled, stats.skipped, stats.usage), (1, 1, 0));
}
