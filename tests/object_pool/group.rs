//! Pool groups, ported from pooler's group tests: a take across members,
//! adding and removing pools at run time, graceful against immediate
//! removal.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::support;
use sidejob::{PoolGroup, Removal, TakeError};
use support::objects::{eventually, pool, Members, Script};

const WAIT: Duration = Duration::from_secs(5);

fn group_of(sizes: &[usize]) -> (PoolGroup<usize, Script>, Vec<Arc<Members>>) {
    let group = PoolGroup::new();
    let members: Vec<_> = sizes.iter().map(|_| Members::new()).collect();
    for (key, (size, members)) in sizes.iter().zip(&members).enumerate() {
        group.add_pool(key, pool(members, *size)).unwrap();
    }
    (group, members)
}

#[test]
fn a_take_goes_across_members_until_every_one_is_full() {
    let (group, members) = group_of(&[1, 1, 1]);
    let held: Vec<_> = (0..3).map(|_| group.try_take().unwrap()).collect();
    assert!(
        members.iter().all(|m| m.live() == 1),
        "one from each member"
    );
    assert!(matches!(group.try_take(), Err(TakeError::Overload)));
    assert!(matches!(
        group.take(Duration::from_millis(20)),
        Err(TakeError::Timeout)
    ));
    drop(held);
    assert!(group.try_take().is_ok());
}

#[test]
fn takes_start_at_a_random_member() {
    let (group, _members) = group_of(&[1, 1, 1]);
    let mut starts = HashSet::new();
    for _ in 0..200 {
        // Every member has room, so the take is served where it starts.
        let _taken = group.try_take().unwrap();
        let status = group.status();
        starts.extend(
            status
                .iter()
                .filter(|(_, s)| s.in_use == 1)
                .map(|(key, _)| *key),
        );
    }
    assert_eq!(starts.len(), 3, "each member was first at least once");
}

#[test]
fn a_group_take_waits_at_a_member_and_is_served() {
    let (group, _members) = group_of(&[1]);
    let held = group.try_take().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| group.take(WAIT).map(|got| got.id));
        eventually("the taker waits", || group.status()[0].1.waiting == 1);
        drop(held);
        assert_eq!(waiter.join().unwrap().unwrap(), 1);
    });
}

#[test]
fn a_duplicate_key_is_refused_and_the_pool_handed_back() {
    let (group, _members) = group_of(&[1]);
    let spare = Members::new();
    let refused = group.add_pool(0, pool(&spare, 7)).unwrap_err();
    assert_eq!(refused.key(), &0);
    let (_, pool) = refused.into_inner();
    assert_eq!(pool.max_size(), 7);
    assert_eq!(group.len(), 1);
}

#[test]
fn a_graceful_removal_retires_the_pool_and_leaves_it_usable() {
    let (group, members) = group_of(&[2, 1]);
    let removed_pool = group.pool(&0).unwrap();
    let held = removed_pool.try_take_owned().unwrap();
    drop(removed_pool.try_take().unwrap()); // one idle member
    let removed = group.remove_pool(&0, Removal::Graceful).unwrap();
    assert_eq!(group.keys(), [1]);
    assert_eq!(members[0].destroyed(), [2], "the idle one at once");
    assert!(!removed.is_closed());
    drop(held);
    assert_eq!(members[0].destroyed(), [2, 1], "the one in use on return");
    // Whoever holds the pool can still take from it.
    assert!(removed.try_take().is_ok());
    // Group takes no longer reach it.
    let taken = group.try_take().unwrap();
    assert_eq!(members[1].live(), 1);
    assert!(group.try_take().unwrap_err().is_overload());
    drop(taken);
}

#[test]
fn an_immediate_removal_also_refuses_new_takes_and_answers_waiters() {
    let (group, members) = group_of(&[1, 1]);
    let pool = group.pool(&0).unwrap();
    let held = pool.try_take_owned().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| pool.take(WAIT).map(|_| ()));
        eventually("the taker waits", || pool.status().waiting == 1);
        let removed = group.remove_pool(&0, Removal::Immediate).unwrap();
        assert!(matches!(waiter.join().unwrap(), Err(TakeError::Closed)));
        assert!(matches!(removed.try_take(), Err(TakeError::Closed)));
    });
    drop(held);
    assert_eq!(members[0].destroyed(), [1], "destroyed on return");
    assert_eq!(members[0].live(), 0);
    assert!(group.try_take().is_ok(), "the other member still serves");
}

#[test]
fn an_empty_group_is_overloaded() {
    let group: PoolGroup<&str, Script> = PoolGroup::new();
    assert!(matches!(group.try_take(), Err(TakeError::Overload)));
    assert!(matches!(group.take(WAIT), Err(TakeError::Overload)));
    assert!(group.remove_pool(&"none", Removal::Graceful).is_none());
}

#[test]
fn when_every_member_is_closed_takes_answer_closed() {
    let group = PoolGroup::new();
    for key in ["a", "b"] {
        let members = Members::new();
        group.add_pool(key, pool(&members, 1)).unwrap();
    }
    for key in ["a", "b"] {
        group.pool(&key).unwrap().close();
    }
    assert!(matches!(group.try_take(), Err(TakeError::Closed)));
    assert!(matches!(
        group.take(Duration::from_millis(10)),
        Err(TakeError::Closed)
    ));
}

#[test]
fn a_take_waits_on_an_open_member_when_the_others_are_closed() {
    let group = PoolGroup::new();
    let members = Members::new();
    group.add_pool("closed", pool(&Members::new(), 1)).unwrap();
    group.add_pool("open", pool(&members, 1)).unwrap();
    group.pool(&"closed").unwrap().close();
    let held = group.try_take().unwrap();
    // Every open member is full: the wait is on the open one, whatever the
    // random start, and times out there rather than answering Closed.
    for _ in 0..20 {
        assert!(matches!(
            group.take(Duration::from_millis(1)),
            Err(TakeError::Timeout)
        ));
    }
    drop(held);
}
