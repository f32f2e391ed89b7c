//! Every way a TaskSupervisor's child ends frees its slot and leaves the
//! live set exactly once (#18): completion, a panicking poll, an abort, a
//! `Tracked` dropped unpolled, a runtime shut down with tasks pending, and a
//! closure that panics inside `try_track`.
#![cfg(feature = "tokio")]

use std::panic::{catch_unwind, AssertUnwindSafe};

use sidejob::TaskSupervisor;

use crate::support;
use support::panics::quiet_deliberate_panics;

fn supervisor(capacity: usize) -> TaskSupervisor {
    TaskSupervisor::builder()
        .capacity(capacity)
        .shards(1)
        .build()
        .unwrap()
}

fn assert_all_ended(supervisor: &TaskSupervisor) {
    assert_eq!(supervisor.count(), 0);
    assert!(supervisor.which_children().is_empty());
    let stats = supervisor.stats();
    assert_eq!(stats.live, 0);
    assert_eq!(stats.finished, stats.spawned);
}

#[tokio::test]
async fn a_panicking_task_frees_its_slot_once() {
    quiet_deliberate_panics();
    let supervisor = supervisor(1);
    let handle = supervisor
        .try_spawn(|_| async { panic!("deliberate: the task panics") })
        .unwrap();
    let error = handle.await.unwrap_err();
    assert!(error.is_panic());
    assert_eq!(error.panic_message(), Some("deliberate: the task panics"));
    assert_all_ended(&supervisor);
    let stats = supervisor.stats();
    assert_eq!((stats.panicked, stats.cancelled), (1, 0));
    // The slot is free again.
    assert!(supervisor.try_spawn(|_| async {}).is_ok());
}

#[tokio::test]
async fn an_aborted_task_frees_its_slot_once() {
    let supervisor = supervisor(1);
    let handle = supervisor
        .try_spawn(|_| std::future::pending::<()>())
        .unwrap();
    tokio::task::yield_now().await; // it has started
    handle.abort();
    assert!(handle.await.unwrap_err().is_aborted());
    assert_all_ended(&supervisor);
    assert_eq!(supervisor.stats().cancelled, 1);
}

#[test]
fn a_tracked_future_dropped_unpolled_frees_its_slot() {
    let supervisor = supervisor(1);
    let tracked = supervisor.try_track(|_| async {}).unwrap();
    assert!(supervisor.try_track(|_| async {}).is_err());
    drop(tracked);
    assert_all_ended(&supervisor);
    assert_eq!(supervisor.stats().cancelled, 1);
}

#[test]
fn a_runtime_shut_down_with_tasks_pending_frees_their_slots() {
    let supervisor = supervisor(3);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let handles: Vec<_> = (0..3)
        .map(|_| {
            supervisor
                .try_spawn_on(runtime.handle(), |_| std::future::pending::<()>())
                .unwrap()
        })
        .collect();
    assert_eq!(supervisor.count(), 3);
    drop(runtime); // drops the pending tasks
    assert_all_ended(&supervisor);
    assert_eq!(supervisor.stats().cancelled, 3);
    drop(handles);
}

#[test]
fn a_closure_panicking_in_try_track_frees_its_slot_first() {
    quiet_deliberate_panics();
    let supervisor = supervisor(1);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        supervisor
            .try_track(|_| -> std::future::Ready<()> { panic!("deliberate: the closure panics") })
    }));
    assert!(outcome.is_err());
    assert_all_ended(&supervisor);
    assert_eq!(supervisor.stats().panicked, 1);
    assert!(supervisor.try_track(|_| async {}).is_ok());
}

#[test]
fn a_polled_task_that_panics_counts_as_panicked() {
    quiet_deliberate_panics();
    let supervisor = supervisor(1);
    let tracked = supervisor
        .try_track(|_| async { panic!("deliberate: the poll panics") })
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcome = catch_unwind(AssertUnwindSafe(|| runtime.block_on(tracked)));
    assert!(outcome.is_err());
    assert_all_ended(&supervisor);
    assert_eq!(supervisor.stats().panicked, 1);
}

#[test]
fn try_spawn_outside_a_runtime_hands_the_task_back_uncalled() {
    let supervisor = supervisor(1);
    let called = std::cell::Cell::new(false);
    let refused = supervisor
        .try_spawn(|_| {
            called.set(true);
            async {}
        })
        .unwrap_err();
    assert!(matches!(refused, sidejob::SpawnError::NoRuntime(_)));
    assert_eq!(refused.to_string(), "no tokio runtime to spawn the task on");
    assert!(!called.get());
    assert_eq!(supervisor.stats().spawned, 0);
}
