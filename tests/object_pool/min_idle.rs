//! `min_idle` members are kept ready by the background maintainer, and a
//! failed member is replaced (pooler's "fail replaces" test).

use sidejob::{ObjectPool, Pooled};

use crate::support;
use support::objects::{eventually, Members, Script};

#[test]
fn a_failed_member_is_replaced_in_the_background() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(3)
        .init_size(2)
        .min_idle(2)
        .build()
        .unwrap();
    assert_eq!(pool.status().idle, 2);
    let member = pool.try_take().unwrap();
    let failed_id = member.id;
    Pooled::fail(member);
    assert_eq!(members.destroyed(), [failed_id]);
    eventually("two members are idle again", || pool.status().idle == 2);
    let status = pool.status();
    assert_eq!((status.size, status.in_use), (2, 0));
    assert_eq!(pool.stats().creates, 3);
}

#[test]
fn taking_an_idle_member_makes_another_ready() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(4)
        .min_idle(1)
        .build()
        .unwrap();
    eventually("one member is made", || pool.status().idle == 1);
    let held = pool.try_take().unwrap();
    eventually("another member is ready", || pool.status().idle == 1);
    let status = pool.status();
    assert_eq!((status.size, status.in_use), (2, 1));
    drop(held);
    assert_eq!(pool.status().idle, 2, "returns are kept, not culled");
}

#[test]
fn the_maintainer_never_exceeds_max_size() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .min_idle(2)
        .build()
        .unwrap();
    eventually("two members are made", || pool.status().idle == 2);
    let held: Vec<_> = (0..2).map(|_| pool.try_take().unwrap()).collect();
    // The pool is full: no room for the idle members min_idle asks for.
    assert!(pool.try_take().unwrap_err().is_overload());
    assert_eq!(members.peak.load(std::sync::atomic::Ordering::SeqCst), 2);
    drop(held);
    assert_eq!(pool.status().size, 2);
}
