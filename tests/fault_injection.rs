//! Faults injected where user code and the OS can fail: a worker factory
//! that panics while rebuilding a worker, a worker thread the OS refuses to
//! start, and a `Manager::destroy` or `TaggedManager::tag` that panics.
//! Each gives a clear error or lets the panic through, and never a wedged
//! pool or wrong counts. (A factory that panics at build, a panicking
//! `create` or `check`, and a refused child thread have their own files:
//! `pool_build.rs`, `object_pool_panics.rs`, `supervisor_spawn_failure.rs`.)

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sidejob::{
    CallError, Manager, ObjectPool, Pooled, TaggedManager, TakeError, Worker, WorkerPool,
};

fn quiet_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}

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
    quiet_panics();
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
    quiet_panics();
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

/// Objects whose destroy panics when told to.
#[derive(Default)]
struct Fragile {
    live: AtomicUsize,
    panic_destroy: AtomicBool,
    fail_tag: AtomicBool,
    panic_tag: AtomicBool,
}

#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused")
    }
}

impl std::error::Error for Refused {}

struct FragileManager(Arc<Fragile>);

impl Manager for FragileManager {
    type Object = u32;
    type Error = Refused;

    fn create(&self) -> Result<u32, Refused> {
        self.0.live.fetch_add(1, Ordering::SeqCst);
        Ok(0)
    }

    fn destroy(&self, _: u32) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
        assert!(
            !self.0.panic_destroy.swap(false, Ordering::SeqCst),
            "destroy panics"
        );
    }
}

impl TaggedManager for FragileManager {
    type Tag = (u8, u8);

    fn tag(&self, _: &mut u32, _: &(u8, u8)) -> Result<(), Refused> {
        assert!(
            !self.0.panic_tag.swap(false, Ordering::SeqCst),
            "tag panics"
        );
        if self.0.fail_tag.swap(false, Ordering::SeqCst) {
            return Err(Refused);
        }
        Ok(())
    }
}

fn fragile_pool(max_size: usize) -> (ObjectPool<FragileManager>, Arc<Fragile>) {
    let fragile = Arc::new(Fragile::default());
    let pool = ObjectPool::builder(FragileManager(Arc::clone(&fragile)))
        .max_size(max_size)
        .shards(1)
        .build()
        .unwrap();
    (pool, fragile)
}

#[test]
fn a_panicking_destroy_frees_the_slot_then_reaches_the_caller() {
    quiet_panics();
    let (pool, fragile) = fragile_pool(1);
    fragile.panic_destroy.store(true, Ordering::SeqCst);
    let failed = catch_unwind(AssertUnwindSafe(|| Pooled::fail(pool.try_take().unwrap())));
    assert!(failed.is_err(), "the panic reaches the caller of fail");
    let status = pool.status();
    assert_eq!((status.size, status.in_use), (0, 0), "the slot is free");
    assert_eq!(pool.stats().destroyed, 1);
    assert!(pool.try_take().is_ok(), "and the pool goes on");
}

#[test]
fn a_panicking_destroy_during_close_still_destroys_every_idle_object() {
    quiet_panics();
    let (pool, fragile) = fragile_pool(3);
    let held: Vec<_> = (0..3).map(|_| pool.try_take().unwrap()).collect();
    drop(held);
    fragile.panic_destroy.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| pool.close())).is_err());
    assert_eq!(fragile.live.load(Ordering::SeqCst), 0);
    assert_eq!(pool.status().size, 0);
    assert!(matches!(pool.try_take(), Err(TakeError::Closed)));
}

#[test]
fn a_panicking_destroy_during_retire_all_still_retires_every_idle_object() {
    quiet_panics();
    let (pool, fragile) = fragile_pool(3);
    let held: Vec<_> = (0..3).map(|_| pool.try_take().unwrap()).collect();
    drop(held);
    fragile.panic_destroy.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| pool.retire_all())).is_err());
    assert_eq!(fragile.live.load(Ordering::SeqCst), 0);
    assert_eq!((pool.status().size, pool.stale_count()), (0, 0));
    assert!(pool.try_take().is_ok());
}

#[test]
fn a_failing_or_panicking_tag_hook_destroys_the_object_and_frees_its_slot() {
    quiet_panics();
    let (pool, fragile) = fragile_pool(1);
    let wait = Duration::from_secs(5);
    fragile.fail_tag.store(true, Ordering::SeqCst);
    assert!(matches!(
        pool.take_tagged(&(1, 1), wait),
        Err(TakeError::Tag(Refused))
    ));
    assert_eq!(
        (fragile.live.load(Ordering::SeqCst), pool.status().size),
        (0, 0)
    );

    fragile.panic_tag.store(true, Ordering::SeqCst);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        pool.take_tagged(&(1, 1), wait).map(|_| ())
    }));
    assert!(panicked.is_err(), "the panic reaches the taker");
    assert_eq!(
        (fragile.live.load(Ordering::SeqCst), pool.status().size),
        (0, 0)
    );

    let tagged = pool.take_tagged(&(1, 1), wait).unwrap();
    assert_eq!(tagged.tag(), Some(&(1, 1)));
}
