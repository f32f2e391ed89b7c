//! Faults injected where user code can fail in an object pool: a
//! `Manager::destroy` or `TaggedManager::tag` that panics. Each lets the
//! panic through with the slot freed, and never a wedged pool or wrong
//! counts. (A panicking `create` or `check` has its own file:
//! `object_pool_panics.rs`.)

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sidejob::{Manager, ObjectPool, Pooled, TaggedManager, TakeError};

use crate::support;
use support::panics::quiet_all_panics;

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
    quiet_all_panics();
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
    quiet_all_panics();
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
    quiet_all_panics();
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
    quiet_all_panics();
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
