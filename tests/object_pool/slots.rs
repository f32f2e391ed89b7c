//! Every removal frees its member's slot exactly once, ported from CouchDB's
//! tests (hard limit 3): a member that fails, dies (fails its check) or is
//! detached makes room for a new one, and a waiter gets that room.

use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::Pooled;
use support::objects::{eventually, pool, Members};

const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_failed_member_frees_its_slot() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let held: Vec<_> = (0..3).map(|_| pool.try_take().unwrap()).collect();
    assert!(pool.try_take().unwrap_err().is_overload());
    let mut held = held.into_iter();
    Pooled::fail(held.next().unwrap());
    assert_eq!(members.destroyed(), [1]);
    assert_eq!(pool.status().size, 2);
    assert_eq!(
        pool.try_take().unwrap().id,
        4,
        "a new member fills the slot"
    );
}

#[test]
fn a_dead_member_is_not_returned_to_the_pool() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let mut member = pool.try_take().unwrap();
    member.healthy = false;
    drop(member);
    assert_eq!(members.destroyed(), [1]);
    let status = pool.status();
    assert_eq!((status.size, status.idle), (0, 0));
    assert_eq!(pool.try_take().unwrap().id, 2);
    assert_eq!(pool.stats().destroyed, 1);
}

#[test]
fn a_dead_members_slot_goes_to_the_waiter() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let mut held = pool.try_take().unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| pool.take(LONG).map(|member| member.id));
        eventually("the taker waits", || pool.status().waiting == 1);
        held.healthy = false;
        drop(held);
        assert_eq!(waiter.join().unwrap().unwrap(), 2, "it made a fresh member");
    });
    assert_eq!(members.live(), 1);
    assert_eq!(pool.status().size, 1);
}

#[test]
fn a_detached_member_leaves_the_pool_for_good() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let member = Pooled::detach(pool.try_take().unwrap());
    members.forget();
    assert_eq!(member.id, 1);
    assert_eq!(pool.status().size, 0);
    assert_eq!(pool.try_take().unwrap().id, 2);
    drop(pool);
    assert_eq!(
        members.destroyed(),
        [2],
        "the pool never destroys a detached member"
    );
}

#[test]
fn a_returned_member_is_reused() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let id = pool.try_take().unwrap().id;
    assert_eq!(pool.try_take().unwrap().id, id);
    assert_eq!(pool.stats().creates, 1);
}
