//! `retire_all`, CouchDB's reload: idle members are destroyed now, members
//! in use that predate it when they come back, and `stale_count` tells how
//! many remain ("stale members are cleaned after reload").

use crate::support;
use support::objects::{pool, Members};

#[test]
fn stale_members_are_cleaned_after_retire_all() {
    let members = Members::new();
    let pool = pool(&members, 4);
    let a = pool.try_take().unwrap();
    let b = pool.try_take().unwrap();
    drop(pool.try_take().unwrap()); // member 3 idles
    pool.retire_all();
    assert_eq!(members.destroyed(), [3], "the idle one goes at once");
    assert_eq!(pool.stale_count(), 2);

    let fresh = pool.try_take().unwrap();
    assert_eq!(fresh.id, 4, "new takes get new members");
    drop(fresh);
    assert_eq!(pool.status().idle, 1, "a new member is kept");

    drop(a);
    assert_eq!(pool.stale_count(), 1);
    drop(b);
    assert_eq!(pool.stale_count(), 0);
    assert_eq!(members.destroyed(), [3, 1, 2]);
    let status = pool.status();
    assert_eq!((status.size, status.idle), (1, 1));
}

#[test]
fn a_stale_member_is_not_handed_to_a_waiter() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let old = pool.try_take().unwrap();
    pool.retire_all();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| pool.take(std::time::Duration::from_secs(30)).map(|m| m.id));
        support::objects::eventually("the taker waits", || pool.status().waiting == 1);
        drop(old);
        assert_eq!(waiter.join().unwrap().unwrap(), 2, "it made a new member");
    });
    assert_eq!(pool.stale_count(), 0);
}
