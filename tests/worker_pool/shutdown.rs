//! Shutdown stops admitting (`Closed`, request handed back), finishes every
//! message already admitted, so no caller waits forever and no cast is lost,
//! then joins the workers. It is idempotent, and dropping the pool does it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use crate::support;
use sidejob::{CallError, CastError, Worker, WorkerPool};
use support::workers::{Harness, Job};

#[test]
fn pending_calls_and_casts_are_finished_before_shutdown_returns() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(8)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    thread::scope(|scope| {
        let callers: Vec<_> = (1..=3)
            .map(|n| {
                let pool = &pool;
                scope.spawn(move || pool.call(Job::Run(n)))
            })
            .collect();
        while pool.usage() < 4 {
            thread::yield_now();
        }
        pool.cast(Job::Run(4)).unwrap();
        let closer = scope.spawn(|| pool.shutdown());
        while !pool.is_closed() {
            thread::yield_now();
        }
        assert!(matches!(
            pool.call(Job::Run(9)),
            Err(CallError::Closed(Job::Run(9)))
        ));
        assert!(matches!(
            pool.cast(Job::Run(9)),
            Err(CastError::Closed(Job::Run(9)))
        ));
        harness.open(1);
        closer.join().unwrap();
        let mut replies: Vec<u32> = callers
            .into_iter()
            .map(|c| c.join().unwrap().unwrap())
            .collect();
        replies.sort_unstable();
        assert_eq!(replies, [1, 2, 3]);
    });
    let stats = pool.stats();
    assert_eq!((stats.accepted, stats.handled, stats.usage), (5, 5, 0));
    assert_eq!(harness.logged().len(), 5, "the queued cast was handled too");
    pool.shutdown(); // idempotent
}

#[test]
fn concurrent_shutdowns_all_return_after_the_workers_are_joined() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(4)
        .shards(2)
        .build(harness.factory())
        .unwrap();
    for n in 0..4 {
        pool.cast(Job::Run(n)).unwrap();
    }
    thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                pool.shutdown();
                assert_eq!(pool.stats().handled, 4);
            });
        }
    });
}

/// Counts `terminate` calls.
struct Terminating(Arc<AtomicUsize>);

impl Worker for Terminating {
    type Request = ();
    type Reply = ();

    fn handle_call(&mut self, _: ()) {}

    fn terminate(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dropping_the_pool_shuts_it_down_and_terminates_each_worker() {
    let terminated = Arc::new(AtomicUsize::new(0));
    let pool = {
        let terminated = Arc::clone(&terminated);
        WorkerPool::builder()
            .capacity(4)
            .shards(3)
            .build(move |_| Terminating(Arc::clone(&terminated)))
            .unwrap()
    };
    pool.cast(()).unwrap();
    drop(pool);
    assert_eq!(terminated.load(Ordering::SeqCst), 3);
}

/// Shuts its own pool down from inside a handler.
struct SelfStopping(Arc<std::sync::OnceLock<Arc<WorkerPool<SelfStopping>>>>);

impl Worker for SelfStopping {
    type Request = ();
    type Reply = ();

    fn handle_call(&mut self, _: ()) {
        self.0.get().unwrap().shutdown();
    }
}

#[test]
fn shutdown_from_inside_a_handler_does_not_deadlock() {
    let cell = Arc::new(std::sync::OnceLock::new());
    let pool = {
        let cell = Arc::clone(&cell);
        Arc::new(
            WorkerPool::builder()
                .capacity(2)
                .shards(1)
                .build(move |_| SelfStopping(Arc::clone(&cell)))
                .unwrap(),
        )
    };
    cell.set(Arc::clone(&pool)).ok().unwrap();
    pool.call(()).unwrap();
    assert!(pool.is_closed());
    pool.shutdown();
}
