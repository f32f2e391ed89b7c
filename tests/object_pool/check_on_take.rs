//! `check_on_take`: an idle object that fails `Manager::check` when taken
//! is destroyed and the take goes on, so an object that died while idle is
//! never handed out (#16, item 5).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use sidejob::ObjectPool;

use crate::support;
use support::homes::{home_shard, on_home};
use support::objects::{Members, Script};
use support::panics::quiet_all_panics;

fn checked_pool(members: &Arc<Members>, max_size: usize, shards: usize) -> ObjectPool<Script> {
    ObjectPool::builder(Script(members.clone()))
        .max_size(max_size)
        .shards(shards)
        .check_on_take(true)
        .build()
        .unwrap()
}

#[test]
fn an_object_that_died_idle_is_destroyed_and_the_next_one_taken() {
    let members = Members::new();
    let pool = checked_pool(&members, 3, 1);
    let (a, b) = (pool.try_take().unwrap(), pool.try_take().unwrap());
    let (first, second) = (a.id, b.id);
    drop(a);
    drop(b); // on top of the stack
    members.dead.lock().unwrap().push(second);
    let taken = pool.try_take().unwrap();
    assert_eq!(taken.id, first, "the dead one was skipped");
    assert_eq!(members.destroyed(), [second]);
    let stats = pool.stats();
    assert_eq!((stats.failed_take_checks, stats.destroyed), (1, 1));
    assert_eq!(stats.takes, 3, "the discarded pop is not a take");
}

#[test]
fn when_every_idle_object_died_a_new_one_is_made() {
    let members = Members::new();
    let pool = checked_pool(&members, 2, 1);
    let held: Vec<_> = (0..2).map(|_| pool.try_take().unwrap()).collect();
    let ids: Vec<u32> = held.iter().map(|member| member.id).collect();
    drop(held);
    members.dead.lock().unwrap().extend(&ids);
    let fresh = pool.take(Duration::from_secs(5)).unwrap();
    assert!(!ids.contains(&fresh.id));
    assert_eq!(pool.stats().failed_take_checks, 2);
    assert_eq!(pool.status().size, 1);
}

#[test]
fn a_dead_object_found_on_another_shard_is_not_handed_out() {
    let members = Members::new();
    let pool = checked_pool(&members, 2, 2);
    let home = home_shard(2);
    let dead = on_home(2, 1 - home, || {
        let member = pool.try_take().unwrap();
        member.id
    });
    members.dead.lock().unwrap().push(dead);
    let taken = pool.try_take().unwrap();
    assert_ne!(taken.id, dead);
    assert_eq!(members.destroyed(), [dead]);
}

#[test]
fn off_by_default_and_reconfigurable() {
    let members = Members::new();
    let pool = support::objects::pool(&members, 1);
    assert!(!pool.config().check_on_take);
    let id = pool.try_take().unwrap().id;
    members.dead.lock().unwrap().push(id);
    let taken = pool.try_take().unwrap();
    assert_eq!(taken.id, id, "not checked on take by default");
    members.dead.lock().unwrap().clear();
    drop(taken);
    pool.reconfigure(|config| config.check_on_take = true)
        .unwrap();
    assert!(pool.config().check_on_take);
    members.dead.lock().unwrap().push(id);
    let taken = pool.try_take().unwrap();
    assert_ne!(taken.id, id, "checked on take once turned on");
    assert_eq!(members.destroyed(), [id]);
}

#[test]
fn a_new_object_and_one_handed_from_a_return_are_not_checked_again() {
    let members = Members::new();
    let pool = checked_pool(&members, 1, 1);
    let taken = pool.try_take().unwrap();
    assert_eq!(members.checks.load(Ordering::SeqCst), 0, "a new object");
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| pool.take(Duration::from_secs(10)).unwrap().id);
        support::objects::eventually("the taker waits", || pool.status().waiting == 1);
        drop(taken); // checked once, on return, then handed to the waiter
        waiter.join().unwrap();
    });
    // The waiter's object went back after its take: two return checks.
    assert_eq!(members.checks.load(Ordering::SeqCst), 2);
}

#[test]
fn a_panicking_check_on_take_destroys_the_object_and_reaches_the_taker() {
    quiet_all_panics();
    let members = Members::new();
    let pool = checked_pool(&members, 1, 1);
    let id = pool.try_take().unwrap().id;
    members.panic_check.store(true, Ordering::SeqCst);
    let taken = catch_unwind(AssertUnwindSafe(|| pool.try_take().map(|member| member.id)));
    assert!(taken.is_err(), "the panic reached the taker");
    assert_eq!(members.destroyed(), [id]);
    assert_eq!(pool.status().size, 0, "its slot is free");
    assert_ne!(pool.try_take().unwrap().id, id);
}

#[test]
fn a_dead_tagged_object_is_not_handed_to_a_tagged_take() {
    let members = Members::new();
    let pool = checked_pool(&members, 2, 1);
    let wait = Duration::from_secs(5);
    let id = pool.take_tagged(&("db", "doc"), wait).unwrap().id;
    members.dead.lock().unwrap().clear();
    assert_eq!(pool.status().tagged, 1);
    members.dead.lock().unwrap().push(id);
    let taken = pool.take_tagged(&("db", "doc"), wait).unwrap();
    assert_ne!(taken.id, id);
    assert_eq!(taken.tag(), Some(&("db", "doc")));
    assert_eq!(members.destroyed(), [id]);
}
