//! Creation failures, ported from pooler's tests: a creator that always
//! fails leaves the pool usable, with clear errors, and gives back every
//! slot. A failure hands the slot on to the next waiter, which tries in turn.

use std::error::Error;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::{ObjectPool, Pooled, TakeError};
use support::objects::{eventually, Members, Script};

#[test]
fn a_creator_that_always_fails_leaves_the_pool_usable() {
    let members = Members::new();
    members.always_fail.store(true, Ordering::SeqCst);
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .init_size(2)
        .shards(1)
        .build()
        .expect("failed initial creations do not fail the build");
    assert_eq!(pool.status().size, 0);
    assert_eq!(pool.stats().create_failures, 2);

    for _ in 0..5 {
        let err = pool.try_take().unwrap_err();
        assert!(matches!(err, TakeError::Create(_)));
        assert!(err
            .to_string()
            .starts_with("could not create an object: member"));
        assert!(err
            .source()
            .unwrap()
            .to_string()
            .ends_with("refused to start"));
        let err = pool.take(Duration::from_millis(10)).unwrap_err();
        assert!(matches!(err, TakeError::Create(_)), "{err:?}");
    }
    let status = pool.status();
    assert_eq!((status.size, status.creating, status.waiting), (0, 0, 0));

    members.always_fail.store(false, Ordering::SeqCst);
    let a = pool.try_take().unwrap();
    let b = pool.try_take().unwrap();
    assert_ne!(a.id, b.id);
    assert!(
        pool.try_take().unwrap_err().is_overload(),
        "the limit is intact"
    );
}

#[test]
fn a_failed_creation_hands_the_slot_to_the_next_waiter() {
    let members = Members::new();
    let pool = support::objects::pool(&members, 1);
    let held = pool.try_take().unwrap();
    thread::scope(|s| {
        let first = s.spawn(|| pool.take(Duration::from_secs(30)).map(|m| m.id));
        eventually("the first taker waits", || pool.status().waiting == 1);
        let second = s.spawn(|| pool.take(Duration::from_secs(30)).map(|m| m.id));
        eventually("both takers wait", || pool.status().waiting == 2);
        members.fail_next.store(1, Ordering::SeqCst);
        // The slot goes to the first waiter, whose creation fails; the slot
        // then goes to the second, whose creation succeeds.
        Pooled::fail(held);
        assert!(matches!(first.join().unwrap(), Err(TakeError::Create(_))));
        assert_eq!(second.join().unwrap().unwrap(), 3);
    });
    assert_eq!(pool.stats().create_failures, 1);
    assert_eq!(pool.status().size, 1);
}
