//! No false overload from an expired idle object: a take that finds only an
//! expired object idle, on another shard's stack or on the tag shelf,
//! destroys it and makes a new object in the slot it freed, instead of
//! answering `Overload`. A take is refused only when every slot holds a live
//! object, in use, idle or being made (#16, item 1).
//!
//! The maintainer reaps expired objects too, in the background, and would
//! hide the race; so each test first parks the maintainer in a creation
//! that waits on a gate, which also fills the third slot.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use sidejob::{ObjectPool, Pooled, TakeError};

use crate::support;
use support::homes::{home_shard, on_home};
use support::objects::{eventually, Members, Script};

/// Short enough to wait out in a test; the maintainer's interval is a
/// quarter of it.
const LIFETIME: Duration = Duration::from_millis(200);
/// Three lifetimes: the idle object has surely expired after it.
const PAST_LIFETIME: Duration = Duration::from_millis(600);
/// A take's timeout that never runs out here: it bounds the creation the
/// take makes, too.
const GENEROUS: Duration = Duration::from_secs(30);

/// A pool of three slots on three shards with short lifetimes.
fn pool(members: &Arc<Members>) -> ObjectPool<Script> {
    ObjectPool::builder(Script(members.clone()))
        .max_size(3)
        .shards(3)
        .max_lifetime(LIFETIME)
        .build()
        .unwrap()
}

/// This thread holds object 1; object 2 is idle on another home's stack
/// (untagged, or tagged when `tag` says so); the maintainer is parked in
/// the creation of a third object, which holds the last slot, until the
/// returned sender is dropped. Then the lifetime runs out.
fn held_and_expired<'a>(
    pool: &'a ObjectPool<Script>,
    members: &Members,
    tag: bool,
) -> (Pooled<'a, Script>, mpsc::Sender<()>) {
    let home = home_shard(3);
    let held = pool.try_take().unwrap();
    on_home(3, (home + 1) % 3, || {
        if tag {
            drop(pool.take_tagged(&("db", "doc"), GENEROUS).unwrap());
        } else {
            drop(pool.try_take().unwrap());
        }
    });
    let (open, gate) = mpsc::channel();
    *members.create_gate.lock().unwrap() = Some(gate);
    // Two idle objects wanted: the maintainer makes one, in the last slot,
    // and waits in its `create`.
    pool.reconfigure(|config| config.min_idle = 2).unwrap();
    eventually("the maintainer is parked in a creation", || {
        pool.status().creating == 1
    });
    std::thread::sleep(PAST_LIFETIME);
    assert_eq!(pool.status().size, 3, "nothing reaped the expired object");
    (held, open)
}

#[test]
fn try_take_makes_a_new_object_in_the_slot_an_expired_one_held() {
    let members = Members::new();
    let pool = pool(&members);
    let (_held, _gate) = held_and_expired(&pool, &members, false);
    let fresh = pool.try_take().expect("the expired object's slot is free");
    assert_ne!(fresh.id, 2, "a new object, not the expired one");
    assert_eq!(members.destroyed(), [2]);
    assert_eq!(pool.stats().rejected, 0);
}

#[test]
fn take_makes_a_new_object_without_waiting() {
    let members = Members::new();
    let pool = pool(&members);
    let (_held, _gate) = held_and_expired(&pool, &members, false);
    let fresh = pool.take(GENEROUS).expect("no need to wait");
    assert_ne!(fresh.id, 2);
    assert_eq!(pool.stats().waits, 0);
}

#[test]
fn take_tagged_makes_a_new_object_in_the_freed_slot() {
    let members = Members::new();
    let pool = pool(&members);
    let (_held, _gate) = held_and_expired(&pool, &members, false);
    let fresh = pool
        .take_tagged(&("db", "other"), GENEROUS)
        .expect("the expired object's slot is free");
    assert_ne!(fresh.id, 2);
    assert_eq!(members.destroyed(), [2]);
}

#[test]
fn an_expired_tagged_object_frees_its_slot_for_an_untagged_take() {
    let members = Members::new();
    let pool = pool(&members);
    let (_held, _gate) = held_and_expired(&pool, &members, true);
    match pool.try_take() {
        Ok(fresh) => assert_ne!(fresh.id, 2),
        Err(TakeError::Overload) => panic!("refused while the expired object's slot was free"),
        Err(other) => panic!("unexpected {other}"),
    };
    assert_eq!(members.destroyed(), [2]);
}
