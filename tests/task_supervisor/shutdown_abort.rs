//! How `shutdown` aborts the spawned children that outlive its grace (#18):
//! a child not yet polled ends without running, a child woken many times
//! since it first waited is still reached, tracked (not spawned) children
//! run on, and on a multi-threaded runtime every child is aborted and
//! counted once. The abort needs no handle kept per child: a spawned child
//! leaves its waker the first time it waits (see `abortable.rs`).
#![cfg(feature = "tokio")]

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sidejob::TaskSupervisor;
use tokio::sync::{mpsc, Notify};

/// A grace that runs out before anything else happens.
const NO_GRACE: Duration = Duration::ZERO;

/// Longer than any test: an abort that never reaches its child fails the
/// test after this instead of hanging it.
const MISSED: Duration = Duration::from_secs(30);

/// The outcome of an aborted child's handle, or a failure if it never ends.
async fn outcome<T>(handle: sidejob::TaskHandle<T>) -> Result<T, sidejob::TaskError> {
    tokio::time::timeout(MISSED, handle)
        .await
        .expect("the abort never reached the child")
}

#[test]
fn a_child_aborted_before_its_first_poll_never_runs() {
    // The child's runtime is not driven until after the shutdown: nothing
    // polls the child before its abort.
    let idle = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let supervisor = TaskSupervisor::new(2);
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let handle = supervisor
        .try_spawn_on(idle.handle(), move |_| async move {
            flag.store(true, Ordering::SeqCst)
        })
        .unwrap();
    let report = runtime.block_on(supervisor.shutdown(NO_GRACE));
    assert_eq!(report.remaining, [handle.id()]);
    assert!(idle.block_on(handle).unwrap_err().is_aborted());
    assert!(!ran.load(Ordering::SeqCst), "an aborted child ran");
    let stats = supervisor.stats();
    assert_eq!((stats.live, stats.finished, stats.cancelled), (0, 1, 1));
}

#[tokio::test]
async fn a_child_woken_many_times_since_it_first_waited_is_still_aborted() {
    let supervisor = TaskSupervisor::new(1);
    let notify = Arc::new(Notify::new());
    let (woke, mut wakes) = mpsc::unbounded_channel();
    let signal = Arc::clone(&notify);
    let handle = supervisor
        .try_spawn(move |_| async move {
            loop {
                signal.notified().await;
                woke.send(()).unwrap();
            }
        })
        .unwrap();
    for _ in 0..5 {
        notify.notify_one();
        wakes.recv().await.unwrap();
    }
    let report = supervisor.shutdown(NO_GRACE).await;
    assert_eq!(report.remaining, [handle.id()]);
    assert!(outcome(handle).await.unwrap_err().is_aborted());
    assert_eq!(supervisor.count(), 0);
}

#[tokio::test]
async fn tracked_children_run_on_after_the_spawned_ones_are_aborted() {
    let supervisor = TaskSupervisor::new(2);
    let release = Arc::new(Notify::new());
    let signal = Arc::clone(&release);
    let mut tracked = pin!(supervisor
        .try_track(move |_| async move { signal.notified().await })
        .unwrap());
    let mut context = Context::from_waker(Waker::noop());
    assert!(tracked.as_mut().poll(&mut context).is_pending());
    let tracked_id = tracked.id();
    let spawned = supervisor
        .try_spawn(|_| std::future::pending::<()>())
        .unwrap();
    let report = supervisor.shutdown(NO_GRACE).await;
    let mut expected = vec![tracked_id, spawned.id()];
    expected.sort_unstable();
    assert_eq!(report.remaining, expected);
    assert!(outcome(spawned).await.unwrap_err().is_aborted());
    assert_eq!(supervisor.which_children(), [tracked_id], "still alive");
    release.notify_one();
    assert!(matches!(tracked.poll(&mut context), Poll::Ready(())));
    assert!(supervisor.which_children().is_empty());
    supervisor.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_multi_threaded_runtime_every_waiting_child_is_aborted_once() {
    const CHILDREN: usize = 64;
    let supervisor = TaskSupervisor::new(CHILDREN);
    let (started, mut running) = mpsc::unbounded_channel();
    let handles: Vec<_> = (0..CHILDREN)
        .map(|_| {
            let started = started.clone();
            supervisor
                .try_spawn(move |_| async move {
                    started.send(()).unwrap();
                    std::future::pending::<()>().await
                })
                .unwrap()
        })
        .collect();
    for _ in 0..CHILDREN {
        running.recv().await.unwrap();
    }
    let report = supervisor.shutdown(NO_GRACE).await;
    assert_eq!(report.cancelled, CHILDREN);
    assert_eq!(report.remaining.len(), CHILDREN);
    for handle in handles {
        assert!(outcome(handle).await.unwrap_err().is_aborted());
    }
    let stats = supervisor.stats();
    assert_eq!((stats.live, stats.finished), (0, CHILDREN as u64));
    assert_eq!(stats.cancelled, CHILDREN as u64);
    assert_eq!(supervisor.count(), 0);
}
