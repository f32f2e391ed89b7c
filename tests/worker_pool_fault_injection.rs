//! Faults injected where user code and the OS can fail in a worker pool: a
//! worker factory that panics while rebuilding a worker, and a worker thread
//! the OS refuses to start. Each gives a clear error, and never a wedged pool
//! or wrong counts. (A factory that panics at build has its own file:
//! `worker_pool_build.rs`.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sidejob::{CallError, Worker, WorkerPool};

mod support;
use support::panics::quiet_all_panics;

/// A worker whose requests say whether to panic.
struct Flaky;

impl Worker for Flaky {
    type Request = bool;
    type Reply = &'static str;

    fn handle_call(&mut self, panic: bool) -> &'static str {
        assert!(!panic, "the handler panics");
        "done"
    }
}

/// A factory that panics while `broken` is set, counting those calls.
#[derive(Default)]
struct FlakyFactory {
    broken: Arc<AtomicBool>,
    rebuilds: Arc<AtomicUsize>,
}

impl FlakyFactory {
    /// A one-shard pool of `Flaky` workers built by this factory.
    fn pool(&self) -> WorkerPool<Flaky> {
        let (broken, rebuilds) = (Arc::clone(&self.broken), Arc::clone(&self.rebuilds));
        WorkerPool::builder()
            .capacity(4)
            .shards(1)
            .call_timeout(Duration::from_secs(30))
            .build(move |_| {
                if broken.load(Ordering::SeqCst) {
                    rebuilds.fetch_add(1, Ordering::SeqCst);
                    panic!("the factory panics");
                }
                Flaky
            })
            .unwrap()
    }
}

#[test]
fn a_factory_panicking_on_rebuild_is_retried_and_nothing_queued_is_lost() {
    quiet_all_panics();
    let factory = FlakyFactory::default();
    let pool = factory.pool();
    factory.broken.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let crash = s.spawn(|| pool.call(true));
        // Wait until the worker is down and its factory failing, then queue
        // a call behind it.
        while factory.rebuilds.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let queued = s.spawn(|| pool.call(false));
        // The crashed call's slot was freed when its handler ended.
        while pool.usage() < 1 {
            std::thread::yield_now();
        }
        assert!(matches!(
            crash.join().unwrap(),
            Err(CallError::WorkerPanicked)
        ));
        factory.broken.store(false, Ordering::SeqCst); // the factory recovers
        assert_eq!(queued.join().unwrap().unwrap(), "done");
    });
    assert_eq!(pool.usage(), 0);
    assert_eq!(pool.stats().restarts, 1);
    assert_eq!(pool.call(false).unwrap(), "done");
}

#[test]
fn shutdown_while_the_factory_keeps_panicking_answers_every_caller() {
    quiet_all_panics();
    let factory = FlakyFactory::default();
    let pool = factory.pool();
    factory.broken.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let crash = s.spawn(|| pool.call(true));
        while factory.rebuilds.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let queued: Vec<_> = (0..2).map(|_| s.spawn(|| pool.call(false))).collect();
        while pool.usage() < 2 {
            std::thread::yield_now();
        }
        pool.shutdown(); // returns although no worker can be built
        assert!(matches!(
            crash.join().unwrap(),
            Err(CallError::WorkerPanicked)
        ));
        for caller in queued {
            // Its request back, unhandled: no worker could be built for it.
            let outcome = caller.join().unwrap();
            assert!(
                matches!(outcome, Err(CallError::Closed(false))),
                "{outcome:?}"
            );
        }
    });
    assert_eq!(pool.usage(), 0);
}

#[test]
fn a_worker_thread_the_os_refuses_is_a_build_error_naming_the_stack_size() {
    let error = WorkerPool::builder()
        .capacity(2)
        .shards(2)
        .stack_size(1 << 47) // larger than the address space
        .build(|_| Flaky)
        .unwrap_err();
    assert_eq!(error.setting(), "stack_size");
    assert!(error
        .reason()
        .starts_with("could not start the worker thread"));
}
