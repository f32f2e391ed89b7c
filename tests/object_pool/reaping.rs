//! Idle reaping above the soft limit, ported from CouchDB's "the pool
//! shrinks on idle" and pooler's "culling never touches members in use or
//! below min_idle". Time-based: short timeouts, generous waits.

use std::time::Duration;

use crate::support;
use sidejob::ObjectPool;
use support::objects::{eventually, Members, Script};

const IDLE: Duration = Duration::from_millis(40);

#[test]
fn idle_members_above_the_soft_limit_are_reaped() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(3)
        .soft_limit(2)
        .idle_timeout(IDLE)
        .build()
        .unwrap();
    let held: Vec<_> = (0..3).map(|_| pool.try_take().unwrap()).collect();
    drop(held);
    assert_eq!(pool.status().size, 3);
    eventually("the pool shrinks to its soft limit", || {
        pool.status().size == 2
    });
    assert_eq!(pool.stats().reaped, 1);
    // It stays there: the soft limit is a floor for reaping.
    std::thread::sleep(IDLE * 5);
    assert_eq!(pool.status().size, 2);
    assert_eq!(members.destroyed().len(), 1);
}

#[test]
fn reaping_never_touches_a_member_in_use() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(3)
        .soft_limit(0)
        .idle_timeout(IDLE)
        .build()
        .unwrap();
    let held = pool.try_take().unwrap();
    drop(pool.try_take().unwrap()); // one idle member
    eventually("the idle member is reaped", || pool.status().idle == 0);
    std::thread::sleep(IDLE * 5);
    let status = pool.status();
    assert_eq!((status.size, status.in_use), (1, 1), "the held one stays");
    assert!(held.healthy);
    assert_eq!(members.destroyed(), [2]);
}

#[test]
fn reaping_never_goes_below_min_idle() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(4)
        .soft_limit(0)
        .min_idle(2)
        .idle_timeout(IDLE)
        .build()
        .unwrap();
    // `take`, not `try_take`: the maintainer makes the `min_idle` objects
    // meanwhile, and a slot it is filling is neither free nor idle yet.
    let held: Vec<_> = (0..4)
        .map(|_| pool.take(Duration::from_secs(10)).unwrap())
        .collect();
    drop(held);
    eventually("idle members shrink to min_idle", || {
        pool.status().idle == 2
    });
    std::thread::sleep(IDLE * 5);
    assert_eq!(pool.status().idle, 2);
    assert_eq!(pool.stats().reaped, 2);
}

#[test]
fn without_an_idle_timeout_nothing_is_reaped() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(3)
        .soft_limit(0)
        .build()
        .unwrap();
    drop(pool.try_take().unwrap());
    std::thread::sleep(IDLE * 3);
    assert_eq!(pool.status().idle, 1);
}
