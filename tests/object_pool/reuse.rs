//! Ported from pooler's tests: `init_size` members exist at start, and
//! reuse is LIFO, the most recently returned member first.

use crate::support;
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

#[test]
fn reuse_is_last_in_first_out_as_a_thread_sees_it_across_shards() {
    // Two shards, one slot each: the second object's slot is on the other
    // shard. A thread that returns a, then b, gets b back first, and then
    // a, whichever shard counts each (#16, item 2).
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .shards(2)
        .build()
        .unwrap();
    let (a, b) = (pool.try_take().unwrap(), pool.try_take().unwrap());
    let (a_id, b_id) = (a.id, b.id);
    drop(a);
    drop(b);
    assert_eq!(pool.try_take().unwrap().id, b_id);
    let first = pool.try_take().unwrap();
    let second = pool.try_take().unwrap();
    assert_eq!((first.id, second.id), (b_id, a_id));
    drop((first, second)); // b, then a: a is on top now
    assert_eq!(pool.try_take().unwrap().id, a_id);
    assert_eq!(pool.stats().creates, 2);
}

#[test]
fn a_thread_takes_from_its_own_stack_first_and_steals_the_top_of_another() {
    // Each home shard's stack is LIFO over the returns of the threads of
    // that home; a thread whose own stack is empty takes the top of the
    // next one in probe order (before it makes a new object).
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(4)
        .shards(2)
        .build()
        .unwrap();
    let home = support::homes::home_shard(2);
    let (a, b) = (pool.try_take().unwrap(), pool.try_take().unwrap());
    let (a_id, b_id) = (a.id, b.id);
    drop((a, b)); // both on this thread's stack, b on top
    let other = 1 - home;
    let stolen = support::homes::on_home(2, other, || pool.try_take().unwrap().id);
    assert_eq!(stolen, b_id, "the top of this thread's stack");
    // b went back to the other home's stack; this thread still has a.
    assert_eq!(pool.try_take().unwrap().id, a_id);
    let again = support::homes::on_home(2, other, || pool.try_take().unwrap().id);
    assert_eq!(again, b_id);
    assert_eq!(pool.stats().creates, 2);
}
