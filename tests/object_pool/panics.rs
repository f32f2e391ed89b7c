//! Panics never corrupt the counts: a holder that panics has its member
//! destroyed (its state is unknown) and its slot freed; a panicking
//! `create` or `check` frees the slot and the panic reaches the caller.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use crate::support;
use support::objects::{pool, Members};
use support::panics::quiet_all_panics;

#[test]
fn a_panicking_holders_member_is_destroyed_not_returned() {
    quiet_all_panics();
    let members = Members::new();
    let pool = pool(&members, 2);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _member = pool.try_take().unwrap();
        panic!("the holder panics");
    }));
    assert!(outcome.is_err());
    assert_eq!(members.destroyed(), [1]);
    let status = pool.status();
    assert_eq!((status.size, status.idle, status.in_use), (0, 0, 0));
    assert_eq!(pool.try_take().unwrap().id, 2);
}

#[test]
fn a_panicking_create_frees_its_slot() {
    quiet_all_panics();
    let members = Members::new();
    let pool = pool(&members, 1);
    members.panic_next.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| pool.try_take().map(|_| ()))).is_err());
    let status = pool.status();
    assert_eq!((status.size, status.creating), (0, 0));
    assert_eq!(pool.stats().create_failures, 1);
    assert_eq!(pool.try_take().unwrap().id, 2);
}

#[test]
fn a_panicking_check_destroys_the_member() {
    quiet_all_panics();
    let members = Members::new();
    let pool = pool(&members, 1);
    let member = pool.try_take().unwrap();
    members.panic_check.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(member))).is_err());
    assert_eq!(members.destroyed(), [1]);
    assert_eq!(pool.status().size, 0);
    assert_eq!(pool.try_take().unwrap().id, 2);
}
