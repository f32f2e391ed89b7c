//! The object pool's public types carry the traits users rely on: the pool
//! is shared between threads, a taken object can move to another thread,
//! `TakeError` is a proper error, and everything prints with `Debug`.

use std::error::Error;

use crate::support;
use sidejob::{ObjectPool, ObjectPoolBuilder, Pooled, TakeError};
use support::objects::{pool, Members, Script, StartFailed};

fn is_send_sync<T: Send + Sync>() {}
fn is_send<T: Send>() {}
fn is_error<T: Error + Send + Sync + 'static>() {}

#[test]
fn thread_safety_and_error_traits() {
    is_send_sync::<ObjectPool<Script>>();
    is_send::<Pooled<'static, Script>>();
    is_error::<TakeError<StartFailed>>();
    let err = TakeError::Create(StartFailed(7));
    assert_eq!(
        err.source().unwrap().to_string(),
        "member 7 refused to start"
    );
    assert!(TakeError::<StartFailed>::Timeout.source().is_none());
}

#[test]
fn a_taken_object_can_be_returned_from_another_thread() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let member = pool.try_take().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(member));
    });
    assert_eq!(pool.status().idle, 1);
    assert_eq!(pool.try_take().unwrap().id, 1);
}

#[test]
fn every_public_type_has_a_useful_debug() {
    let members = Members::new();
    let pool = pool(&members, 2);
    let member = pool.try_take().unwrap();
    assert_eq!(
        format!("{member:?}"),
        "Pooled(Member { id: 1, healthy: true })"
    );
    let printed = format!("{pool:?}");
    assert!(printed.starts_with("ObjectPool { status: PoolStatus { max_size: 2, size: 1,"));
    assert!(format!("{:?}", pool.stats()).contains("takes: 1"));
    let builder: ObjectPoolBuilder<Script> = ObjectPool::builder(Script(members)).max_size(3);
    assert!(format!("{builder:?}").contains("max_size: Some(3)"));
    assert_eq!(
        format!("{:?}", TakeError::<StartFailed>::QueueFull),
        "QueueFull"
    );
}
