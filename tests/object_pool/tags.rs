//! Tagged takes, ported from CouchDB's process manager tests (design
//! document affinity): the exact tag first, the same group second, an
//! untagged member third (and replenished), the least recently used tagged
//! member destroyed at the hard limit, tagged idle members reaped.

use std::time::Duration;

use crate::support;
use sidejob::{ObjectPool, TakeError};
use support::objects::{eventually, pool, Members, Script};

const WAIT: Duration = Duration::from_secs(5);

#[test]
fn the_exact_tag_is_picked_first_and_the_same_group_second() {
    let members = Members::new();
    let pool = pool(&members, 4);
    let a = pool.take_tagged(&("db1", "a"), WAIT).unwrap();
    let b = pool.take_tagged(&("db1", "b"), WAIT).unwrap();
    let other = pool.take_tagged(&("db2", "a"), WAIT).unwrap();
    let (a_id, b_id, other_id) = (a.id, b.id, other.id);
    drop((a, b, other));
    assert_eq!(pool.status().tagged, 3);

    // Exact: "a" of db1 finds its member, not b's (returned later).
    let exact = pool.take_tagged(&("db1", "a"), WAIT).unwrap();
    assert_eq!(exact.id, a_id);
    assert_eq!(exact.tag(), Some(&("db1", "a")));
    drop(exact);

    // Same group: "c" of db1 gets a db1 member, never db2's.
    let group = pool.take_tagged(&("db1", "c"), WAIT).unwrap();
    assert!([a_id, b_id].contains(&group.id));
    assert_ne!(group.id, other_id);
    assert_eq!(group.tag(), Some(&("db1", "c")), "taught the new tag");
    assert_eq!(members.taught().last(), Some(&(group.id, ("db1", "c"))));
    drop(group);
    assert_eq!(members.live(), 3, "no member was made for these");
}

#[test]
fn an_untagged_member_is_taught_the_tag_and_replenished() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(3)
        .init_size(1)
        .shards(1)
        .build()
        .unwrap();
    let tagged = pool.take_tagged(&("db", "ddoc"), WAIT).unwrap();
    assert_eq!(tagged.id, 1, "the untagged member was used");
    assert_eq!(members.taught(), [(1, ("db", "ddoc"))]);
    eventually("an untagged replacement is made", || {
        let status = pool.status();
        status.idle == 1 && status.tagged == 0
    });
    drop(tagged);
    let status = pool.status();
    assert_eq!((status.size, status.idle, status.tagged), (2, 2, 1));
    // An untagged take prefers the untagged member.
    assert_eq!(pool.try_take().unwrap().tag(), None);
}

#[test]
fn the_least_recently_used_tagged_member_is_destroyed_at_the_limit() {
    let members = Members::new();
    let pool = pool(&members, 3);
    // Three groups, so that each take makes its own member.
    let held: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|group| pool.take_tagged(&(group, "x"), WAIT).unwrap())
        .collect();
    drop(held);
    // Touch "a" again: now "b" is the least recently used.
    drop(pool.take_tagged(&("a", "x"), WAIT).unwrap());
    let taken = pool.take_tagged(&("other", "x"), WAIT).unwrap();
    assert_eq!(members.destroyed(), [2], "b's member was destroyed");
    assert_eq!(taken.id, 4, "and a new member made in its slot");
    assert_eq!(pool.stats().evicted, 1);
    let status = pool.status();
    assert_eq!((status.size, status.tagged, status.in_use), (3, 2, 1));
}

#[test]
fn tagged_idle_members_are_reaped_to_zero_whatever_the_soft_limit() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(4)
        .soft_limit(4)
        .idle_timeout(Duration::from_millis(40))
        .shards(1)
        .build()
        .unwrap();
    let held: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|key| pool.take_tagged(&("db", key), WAIT).unwrap())
        .collect();
    let untagged = pool.try_take().unwrap();
    drop(held);
    drop(untagged);
    eventually("every tagged member is reaped", || pool.status().size == 1);
    let status = pool.status();
    assert_eq!(
        (status.idle, status.tagged),
        (1, 0),
        "the untagged one stays"
    );
    assert_eq!(members.destroyed().len(), 3);
    assert_eq!(pool.stats().reaped, 3);
}

#[test]
fn a_failed_tagging_destroys_the_member_and_says_so() {
    let members = Members::new();
    let pool = pool(&members, 2);
    members
        .fail_tag
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let error = pool.take_tagged(&("db", "a"), WAIT).unwrap_err();
    assert!(matches!(error, TakeError::Tag(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "could not tag an object: member 1 refused to start"
    );
    assert_eq!(members.destroyed(), [1]);
    assert_eq!(pool.status().size, 0, "its slot is free");
    assert!(pool.take_tagged(&("db", "a"), WAIT).is_ok());
}

#[test]
fn an_untagged_take_uses_a_tagged_member_only_when_nothing_else_is_left() {
    let members = Members::new();
    let pool = pool(&members, 2);
    drop(pool.take_tagged(&("db", "a"), WAIT).unwrap());
    // Room for a new one: made, rather than the tagged one taken.
    let fresh = pool.try_take().unwrap();
    assert_eq!((fresh.id, fresh.tag()), (2, None));
    // At the limit the tagged member is better than an overload.
    let tagged = pool.try_take().unwrap();
    assert_eq!((tagged.id, tagged.tag()), (1, Some(&("db", "a"))));
    assert!(pool.try_take().unwrap_err().is_overload());
}

#[test]
fn a_tagged_waiter_is_served_by_any_return_and_taught() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let held = pool.take_tagged(&("db", "a"), WAIT).unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let got = pool.take_tagged(&("other", "b"), WAIT).unwrap();
            (got.id, got.tag().copied())
        });
        eventually("the taker waits", || pool.status().waiting == 1);
        drop(held);
        assert_eq!(waiter.join().unwrap(), (1, Some(("other", "b"))));
    });
}

#[test]
fn retire_all_and_close_reach_tagged_members() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let first = pool.take_tagged(&("db", "a"), WAIT).unwrap();
    let held = pool.take_tagged(&("db", "b"), WAIT).unwrap();
    drop(first);
    pool.retire_all();
    assert_eq!(members.destroyed(), [1], "the idle tagged one now");
    assert_eq!(pool.stale_count(), 1);
    drop(held);
    assert_eq!(members.destroyed(), [1, 2], "the held one on return");
    assert_eq!(pool.stale_count(), 0);

    drop(pool.take_tagged(&("db", "c"), WAIT).unwrap());
    assert_eq!(pool.status().tagged, 1);
    pool.close();
    assert_eq!(members.live(), 0);
}

#[test]
fn at_the_limit_a_tenth_of_max_size_plus_one_is_evicted_as_couchdb_does() {
    // CouchDB evicts round(0.1 * max + 1) of the oldest idle tagged
    // processes: 2 of 10, 3 of 15.
    const GROUPS: [&str; 15] = [
        "g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10", "g11", "g12", "g13",
        "g14",
    ];
    for (max_size, evicted) in [(10, 2), (15, 3)] {
        let members = Members::new();
        let pool = pool(&members, max_size);
        // One member per group, returned in order: g0's is the oldest.
        for group in &GROUPS[..max_size] {
            drop(pool.take_tagged(&(group, "x"), WAIT).unwrap());
        }
        assert_eq!(pool.status().tagged, max_size);
        let taken = pool.take_tagged(&("new", "x"), WAIT).unwrap();
        let oldest: Vec<u32> = (1..=evicted as u32).collect();
        assert_eq!(members.destroyed(), oldest, "max_size {max_size}");
        assert_eq!(pool.stats().evicted, evicted as u64);
        assert_eq!(
            taken.id,
            max_size as u32 + 1,
            "a new member in a freed slot"
        );
        drop(taken);
        let status = pool.status();
        assert_eq!(status.size, max_size - evicted + 1);
    }
}

#[test]
fn an_owned_tagged_take_keeps_its_tag_and_returns_to_the_shelf() {
    let members = Members::new();
    let pool = pool(&members, 2);
    let owned = pool.take_tagged_owned(&("db", "doc"), WAIT).unwrap();
    assert_eq!(owned.tag(), Some(&("db", "doc")));
    let id = owned.id;
    std::thread::spawn(move || drop(owned)).join().unwrap();
    assert_eq!(pool.status().tagged, 1);
    let again = pool.take_tagged_owned(&("db", "doc"), WAIT).unwrap();
    assert_eq!((again.id, again.tag()), (id, Some(&("db", "doc"))));
    assert_eq!(pool.try_take_owned().unwrap().tag(), None);
}
