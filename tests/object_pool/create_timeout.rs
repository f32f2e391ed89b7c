//! Create timeouts (pooler's `member_start_timeout`, #16 item 4): a hung
//! `Manager::create` never holds a taker past its deadline or the pool's
//! `create_timeout`, keeps its slot until the call returns, and the object
//! it finally makes is destroyed, which frees the slot (to a waiter first).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sidejob::{ObjectPool, TakeError};

use crate::support;
use support::objects::{eventually, Members, Script};
use support::panics::quiet_deliberate_panics;

/// Short enough to wait out in a test.
const CREATE_TIMEOUT: Duration = Duration::from_millis(100);
/// Longer than any test: a hang this long is a bug, not a slow machine.
const HANG: Duration = Duration::from_secs(30);

fn pool(members: &Arc<Members>, max_size: usize) -> ObjectPool<Script> {
    ObjectPool::builder(Script(members.clone()))
        .max_size(max_size)
        .shards(1)
        .create_timeout(CREATE_TIMEOUT)
        .build()
        .unwrap()
}

/// Waits until the late creations have all returned and been dealt with:
/// none is being made, and the pool is back to `size` (a late object's
/// `destroy` is seen by the manager a moment before its slot is freed).
fn settled(pool: &ObjectPool<Script>, size: usize) {
    eventually("the late creations are dealt with", || {
        let status = pool.status();
        status.creating == 0 && status.size == size
    });
}

#[test]
fn a_hung_creation_fails_try_take_with_create_timeout() {
    let members = Members::new();
    let pool = pool(&members, 2);
    members.hold_creates();
    let started = Instant::now();
    let err = pool.try_take().map(|_| ()).unwrap_err();
    assert!(matches!(err, TakeError::CreateTimeout), "{err:?}");
    assert!(started.elapsed() >= CREATE_TIMEOUT);
    assert!(started.elapsed() < HANG, "it gave up at the timeout");
    assert_eq!(err.to_string(), "timed out creating an object");
    // The hung call keeps its slot.
    let status = pool.status();
    assert_eq!((status.size, status.creating), (1, 1));
    assert_eq!(pool.stats().create_timeouts, 1);

    members.release_creates();
    eventually("the late object is destroyed", || {
        members.destroyed() == [1]
    });
    settled(&pool, 0); // its slot is free again
    let stats = pool.stats();
    assert_eq!((stats.creates, stats.destroyed, stats.takes), (1, 1, 0));
    assert_eq!(members.live(), 0);
}

#[test]
fn take_returns_by_its_own_deadline_without_a_create_timeout() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(1)
        .build()
        .unwrap();
    members.hold_creates();
    let started = Instant::now();
    let err = pool.take(CREATE_TIMEOUT).map(|_| ()).unwrap_err();
    assert!(matches!(err, TakeError::Timeout), "{err:?}");
    assert!(started.elapsed() < HANG, "it returned at its deadline");
    let stats = pool.stats();
    assert_eq!((stats.timeouts, stats.create_timeouts), (1, 1));

    members.release_creates();
    eventually("the late object is destroyed", || {
        members.destroyed() == [1]
    });
    settled(&pool, 0);
    // The pool works as before.
    assert_eq!(pool.try_take().unwrap().id, 2);
}

#[test]
fn the_pool_bound_answers_create_timeout_when_it_comes_before_the_deadline() {
    let members = Members::new();
    let pool = pool(&members, 1);
    members.hold_creates();
    let err = pool.take(HANG).map(|_| ()).unwrap_err();
    assert!(matches!(err, TakeError::CreateTimeout), "{err:?}");
    assert_eq!(pool.stats().timeouts, 0);
    members.release_creates();
    settled(&pool, 0);
}

#[test]
fn the_slot_a_late_object_frees_goes_to_a_waiter() {
    let members = Members::new();
    let pool = pool(&members, 1);
    members.hold_creates();
    assert!(matches!(pool.try_take(), Err(TakeError::CreateTimeout)));
    thread::scope(|scope| {
        let waiter = scope.spawn(|| pool.take(HANG).map(|member| member.id));
        eventually("the taker waits", || pool.status().waiting == 1);
        // The late object is destroyed; its slot goes to the waiter, which
        // makes its own object.
        members.release_creates();
        assert_eq!(waiter.join().unwrap().unwrap(), 2);
    });
    assert_eq!(members.destroyed(), [1]);
    assert_eq!(pool.status().size, 1);
}

#[test]
fn a_late_failure_or_panic_frees_the_slot() {
    let members = Members::new();
    let pool = pool(&members, 2);
    members.hold_creates();
    members
        .fail_next
        .store(1, std::sync::atomic::Ordering::SeqCst);
    assert!(matches!(pool.try_take(), Err(TakeError::CreateTimeout)));
    quiet_deliberate_panics();
    members
        .panic_next
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // The second creation is the one that panics (the first fails).
    assert!(matches!(pool.try_take(), Err(TakeError::CreateTimeout)));
    assert_eq!(pool.status().size, 2);
    members.release_creates();
    eventually("both slots are free", || pool.status().size == 0);
    let stats = pool.stats();
    assert_eq!((stats.creates, stats.create_failures), (0, 2));
    assert_eq!(stats.create_timeouts, 2);
    assert!(pool.try_take().is_ok(), "the pool still works");
}

#[test]
fn a_creation_within_the_timeout_is_handed_out() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let member = pool.take(HANG).unwrap();
    assert_eq!(member.id, 1);
    drop(member);
    assert_eq!(pool.stats().create_timeouts, 0);
}

#[test]
fn build_waits_at_most_the_create_timeout_for_init_size() {
    let members = Members::new();
    members.hold_creates();
    let started = Instant::now();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(4)
        .init_size(3)
        .create_timeout(CREATE_TIMEOUT)
        .build()
        .unwrap();
    // All three hang; build gave up on them together, not one after the
    // other, and long before they return.
    assert!(started.elapsed() < HANG);
    let status = pool.status();
    assert_eq!((status.size, status.creating, status.idle), (3, 3, 0));
    assert_eq!(pool.stats().create_timeouts, 3);

    members.release_creates();
    eventually("the three late objects are destroyed", || {
        members.destroyed().len() == 3
    });
    settled(&pool, 0);
}

#[test]
fn refill_is_bounded_too() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let (open, gate) = std::sync::mpsc::channel::<()>();
    // Only the maintainer's first creation hangs.
    *members.create_gate.lock().unwrap() = Some(gate);
    pool.reconfigure(|config| config.min_idle = 1).unwrap();
    // The maintainer gives up on it and makes another, which works.
    eventually("an idle object is ready", || pool.status().idle == 1);
    let status = pool.status();
    assert_eq!((status.size, status.creating), (2, 1));
    assert!(pool.stats().create_timeouts >= 1);
    drop(open);
    eventually("the late object is destroyed", || {
        members.destroyed().len() == 1
    });
}

#[test]
fn a_zero_create_timeout_is_refused_by_name() {
    let err = ObjectPool::builder(Script(Members::new()))
        .max_size(1)
        .create_timeout(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "create_timeout");
    assert_eq!(
        err.to_string(),
        "invalid setting `create_timeout`: must be above zero"
    );
}
