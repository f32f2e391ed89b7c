//! Faults injected where user code and the OS can fail in a worker pool: a
//! worker factory that panics while rebuilding a worker, and a worker thread
//! the OS refuses to start. Each gives a clear error, and never a wedged pool
//! or wrong counts. (A factory that panics at build has its own file:
//! `worker_pool_build.rs`.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sidejob::{CallError, Worker, WorkerPool};

use crate::support;
use support::panics::quiet_all_panics;

/// What a [`Flaky`] worker is asked to do.
enum Job {
    /// Reply "done".
    Run,
    /// Wait until the gate opens (or its sender is gone), then panic.
    CrashLater(Arc<Mutex<Receiver<()>>>),
}

/// A worker whose requests say whether to panic.
struct Flaky;

impl Worker for Flaky {
    type Request = Job;
    type Reply = &'static str;

    fn handle_call(&mut self, job: Job) -> &'static str {
        if let Job::CrashLater(gate) = job {
            let _ = gate.lock().unwrap().recv();
            panic!("the handler panics");
        }
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
    /// A one-shard pool of `Flaky` workers built by this factory, which
    /// rebuilds every dead worker (the restart intensity has tests of its
    /// own, in `worker_pool_dead_shards.rs`).
    fn pool(&self) -> WorkerPool<Flaky> {
        let (broken, rebuilds) = (Arc::clone(&self.broken), Arc::clone(&self.rebuilds));
        WorkerPool::builder()
            .capacity(4)
            .shards(1)
            .call_timeout(Duration::from_secs(30))
            .max_restarts(u32::MAX)
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

/// A thread making one call.
type Caller<'scope> = std::thread::ScopedJoinHandle<'scope, Result<&'static str, CallError<Job>>>;

/// Runs a call that crashes once `open` sends, and `queued` more calls
/// behind it in the one shard's mailbox; returns their threads' handles
/// once all are queued.
fn crash_with_queue<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    pool: &'env WorkerPool<Flaky>,
    queued: usize,
) -> (mpsc::Sender<()>, Caller<'scope>, Vec<Caller<'scope>>) {
    let (open, gate) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    let crash = scope.spawn(move || pool.call(Job::CrashLater(gate)));
    while pool.usage() < 1 {
        std::thread::yield_now();
    }
    let behind = (0..queued)
        .map(|_| scope.spawn(move || pool.call(Job::Run)))
        .collect();
    while pool.usage() < 1 + queued {
        std::thread::yield_now();
    }
    (open, crash, behind)
}

#[test]
fn a_factory_panicking_on_rebuild_is_retried_and_nothing_queued_is_lost() {
    quiet_all_panics();
    let factory = FlakyFactory::default();
    let pool = factory.pool();
    factory.broken.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let (open, crash, queued) = crash_with_queue(s, &pool, 1);
        open.send(()).unwrap();
        assert!(matches!(
            crash.join().unwrap(),
            Err(CallError::WorkerPanicked)
        ));
        // The worker is down and its factory failing, with a call queued.
        while factory.rebuilds.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        assert!(
            pool.call(Job::Run).unwrap_err().is_overload(),
            "down: no admission"
        );
        factory.broken.store(false, Ordering::SeqCst); // the factory recovers
        for caller in queued {
            assert_eq!(caller.join().unwrap().unwrap(), "done");
        }
    });
    assert_eq!(pool.usage(), 0);
    assert_eq!(pool.stats().restarts, 1);
    assert_eq!(pool.call(Job::Run).unwrap(), "done");
}

#[test]
fn shutdown_while_the_factory_keeps_panicking_answers_every_caller() {
    quiet_all_panics();
    let factory = FlakyFactory::default();
    let pool = factory.pool();
    factory.broken.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let (open, crash, queued) = crash_with_queue(s, &pool, 2);
        open.send(()).unwrap();
        assert!(matches!(
            crash.join().unwrap(),
            Err(CallError::WorkerPanicked)
        ));
        while factory.rebuilds.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        pool.shutdown(); // returns although no worker can be built
        for caller in queued {
            // Its request back, unhandled: no worker could be built for it.
            let outcome = caller.join().unwrap();
            assert!(
                matches!(outcome, Err(CallError::Closed(Job::Run))),
                "{:?}",
                outcome.map_err(|err| err.to_string())
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
