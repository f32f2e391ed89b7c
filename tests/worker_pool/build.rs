//! Building a pool: bad settings get a `BuildError` naming the setting, a
//! panicking factory is reported rather than leaving a dead pool, and worker
//! threads carry the configured name.

use std::time::Duration;

use crate::support;
use sidejob::{Worker, WorkerPool};
use support::panics::quiet_deliberate_panics;

struct Named;

impl Worker for Named {
    type Request = ();
    type Reply = String;

    fn handle_call(&mut self, _: ()) -> String {
        std::thread::current().name().unwrap_or_default().to_owned()
    }
}

#[test]
fn bad_settings_are_named() {
    let setting =
        |result: Result<WorkerPool<Named>, sidejob::BuildError>| result.unwrap_err().setting();
    assert_eq!(setting(WorkerPool::builder().build(|_| Named)), "capacity");
    assert_eq!(
        setting(WorkerPool::builder().capacity(1).shards(0).build(|_| Named)),
        "shards"
    );
    assert_eq!(
        setting(
            WorkerPool::builder()
                .capacity(1)
                .call_timeout(Duration::ZERO)
                .build(|_| Named)
        ),
        "call_timeout"
    );
    assert_eq!(
        setting(
            WorkerPool::builder()
                .capacity(1)
                .tick_interval(Duration::ZERO)
                .build(|_| Named)
        ),
        "tick_interval"
    );
    assert_eq!(
        setting(
            WorkerPool::builder()
                .capacity(1)
                .name("a\0b")
                .build(|_| Named)
        ),
        "name"
    );
}

#[test]
fn a_panicking_factory_is_a_build_error() {
    quiet_deliberate_panics();
    let err = WorkerPool::builder()
        .capacity(4)
        .shards(2)
        .build(|shard| {
            if shard == 1 {
                panic!("deliberate: no database");
            }
            Named
        })
        .unwrap_err();
    assert_eq!(err.setting(), "factory");
    assert!(err.to_string().contains("shard 1"), "{err}");
    assert!(err.to_string().contains("no database"), "{err}");
}

#[test]
fn worker_threads_carry_the_name_and_shard() {
    let pool = WorkerPool::builder()
        .capacity(1)
        .shards(1)
        .name("api")
        .build(|_| Named)
        .unwrap();
    assert_eq!(pool.call(()).unwrap(), "api-0");
    let default = WorkerPool::builder()
        .capacity(1)
        .shards(1)
        .build(|_| Named)
        .unwrap();
    assert_eq!(default.call(()).unwrap(), "sidejob-worker-0");
}

#[test]
fn pinned_workers_still_serve() {
    let pool = WorkerPool::builder()
        .capacity(4)
        .shards(2)
        .pin_workers(true)
        .build(|_| Named)
        .unwrap();
    assert!(pool.call(()).is_ok());
}
