//! Lifetimes, ported from pooler's tests: an expired member is never handed
//! out (destroyed when found idle or when returned), and a jitter not
//! smaller than the lifetime is refused.

use std::time::Duration;

use crate::support;
use sidejob::ObjectPool;
use support::objects::{eventually, Members, Script};

const LIFETIME: Duration = Duration::from_millis(60);

#[test]
fn an_expired_member_is_never_handed_out() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .max_lifetime(LIFETIME)
        .shards(1)
        .build()
        .unwrap();
    let first = pool.try_take().unwrap().id;
    std::thread::sleep(LIFETIME * 2);
    // Expired while idle: whether the maintainer or this take finds it, it
    // is not handed out.
    let next = pool.try_take().unwrap();
    assert_ne!(next.id, first);
    assert!(members.destroyed().contains(&first));
    assert!(pool.stats().expired >= 1);
}

#[test]
fn a_member_that_expires_in_use_is_destroyed_on_return() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .max_lifetime(LIFETIME)
        .build()
        .unwrap();
    let held = pool.try_take().unwrap();
    let id = held.id;
    std::thread::sleep(LIFETIME * 2);
    drop(held);
    assert_eq!(members.destroyed(), [id]);
    assert_eq!(pool.status().size, 0);
}

#[test]
fn an_expired_member_is_replaced_when_min_idle_asks() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .min_idle(1)
        .max_lifetime(LIFETIME)
        .build()
        .unwrap();
    eventually("a member is ready", || pool.status().idle == 1);
    eventually("it expired and was replaced", || {
        !members.destroyed().is_empty() && pool.status().idle == 1
    });
    assert!(pool.stats().creates >= 2);
}

#[test]
fn a_jitter_not_smaller_than_the_lifetime_is_refused() {
    let members = Members::new();
    let err = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .max_lifetime(LIFETIME)
        .lifetime_jitter(LIFETIME)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "lifetime_jitter");
    let ok = ObjectPool::builder(Script(members))
        .max_size(2)
        .max_lifetime(LIFETIME)
        .lifetime_jitter(LIFETIME / 2)
        .build();
    assert!(ok.is_ok());
}
