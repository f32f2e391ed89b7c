//! Ported from pooler's tests: `init_size` members exist at start, and
//! reuse is LIFO, the most recently returned member first.

mod support;
use sidejob::ObjectPool;
use support::objects::{Members, Script};

#[test]
fn init_size_members_exist_when_build_returns() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(5)
        .init_size(3)
        .build()
        .unwrap();
    let status = pool.status();
    assert_eq!((status.size, status.idle, status.in_use), (3, 3, 0));
    assert_eq!(members.live(), 3);
    assert_eq!(pool.stats().creates, 3);
}

#[test]
fn reuse_is_last_in_first_out() {
    let members = Members::new();
    let pool = support::objects::pool(&members, 3);
    let taken: Vec<_> = (0..3).map(|_| pool.try_take().unwrap()).collect();
    let ids: Vec<u32> = taken.iter().map(|member| member.id).collect();
    assert_eq!(ids, [1, 2, 3]);
    drop(taken); // returns 1, then 2, then 3
    let again: Vec<_> = (0..3).map(|_| pool.try_take().unwrap()).collect();
    let ids: Vec<u32> = again.iter().map(|member| member.id).collect();
    assert_eq!(ids, [3, 2, 1]);
    assert_eq!(pool.stats().creates, 3);
}
