//! TaskSupervisor's lifecycle (#18): cancellation reaches `cancelled()`,
//! children admitted after `cancel_all` start uncancelled, `close` refuses
//! without cancelling, `wait` ends with the last child of a closed
//! supervisor, `shutdown` with cooperative and uncooperative tasks, and
//! `set_capacity`.
#![cfg(feature = "tokio")]

use std::time::Duration;

use sidejob::{SpawnError, TaskSupervisor};
use tokio::sync::oneshot;

/// Longer than any test: a shutdown that waits it out is a bug.
const GRACE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn cancellation_reaches_cancelled_and_spares_later_children() {
    let supervisor = TaskSupervisor::new(4);
    let (started, running) = oneshot::channel();
    let waiting = supervisor
        .try_spawn(|context| async move {
            started.send(()).unwrap();
            context.cancelled().await;
            context.is_cancelled()
        })
        .unwrap();
    running.await.unwrap();
    supervisor.cancel_all();
    assert!(waiting.await.unwrap());
    let later = supervisor
        .try_spawn(|context| async move { context.is_cancelled() })
        .unwrap();
    assert!(!later.await.unwrap(), "admitted after cancel_all");
}

#[tokio::test]
async fn close_refuses_without_cancelling_and_wait_ends_with_the_last_child() {
    let supervisor = TaskSupervisor::new(2);
    let (finish, finished) = oneshot::channel::<()>();
    let child = supervisor
        .try_spawn(|context| async move {
            finished.await.unwrap();
            context.is_cancelled()
        })
        .unwrap();
    supervisor.close();
    assert!(matches!(
        supervisor.try_spawn(|_| async {}),
        Err(SpawnError::Closed(_))
    ));
    assert_eq!(supervisor.stats().closed, 1);
    let wait = tokio::spawn(supervisor.wait());
    tokio::task::yield_now().await;
    assert!(!wait.is_finished(), "a child is alive");
    finish.send(()).unwrap();
    assert!(!child.await.unwrap(), "close cancels nobody");
    wait.await.unwrap();
}

#[tokio::test]
async fn wait_on_an_open_supervisor_waits_for_close() {
    let supervisor = TaskSupervisor::new(1);
    let wait = tokio::spawn(supervisor.wait());
    tokio::task::yield_now().await;
    assert!(!wait.is_finished(), "not closed yet");
    supervisor.close();
    wait.await.unwrap();
}

#[tokio::test]
async fn shutdown_returns_as_soon_as_cooperative_children_end() {
    let supervisor = TaskSupervisor::new(3);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            supervisor
                .try_spawn(|context| async move { context.cancelled().await })
                .unwrap()
        })
        .collect();
    let started = std::time::Instant::now();
    let report = supervisor.shutdown(GRACE).await;
    assert!(started.elapsed() < GRACE, "did not wait out the grace");
    assert_eq!(report.cancelled, 3);
    assert!(report.remaining.is_empty());
    for handle in handles {
        handle.await.unwrap();
    }
}

#[tokio::test]
async fn shutdown_aborts_the_uncooperative_after_the_grace() {
    let supervisor = TaskSupervisor::new(2);
    let polite = supervisor
        .try_spawn(|context| async move { context.cancelled().await })
        .unwrap();
    let stubborn = supervisor
        .try_spawn(|_| std::future::pending::<()>())
        .unwrap();
    let report = supervisor.shutdown(Duration::from_millis(100)).await;
    assert_eq!(report.cancelled, 2);
    assert_eq!(report.remaining, [stubborn.id()]);
    assert!(polite.await.is_ok());
    assert!(stubborn.await.unwrap_err().is_aborted());
    assert_eq!(supervisor.count(), 0);
    supervisor.wait().await;
}

#[tokio::test]
async fn set_capacity_grows_at_once_and_shrinks_without_revoking() {
    let supervisor = TaskSupervisor::builder()
        .capacity(1)
        .shards(1)
        .build()
        .unwrap();
    let first = supervisor.try_track(|_| async {}).unwrap();
    assert!(supervisor.try_track(|_| async {}).is_err());
    supervisor.set_capacity(2).unwrap();
    let second = supervisor.try_track(|_| async {}).unwrap();
    supervisor.set_capacity(1).unwrap();
    assert_eq!(supervisor.count(), 2, "nothing revoked");
    assert!(supervisor.try_track(|_| async {}).is_err());
    drop(first);
    assert!(supervisor.try_track(|_| async {}).is_err(), "still at 1");
    drop(second);
    assert!(supervisor.try_track(|_| async {}).is_ok());
    let error = supervisor.set_capacity(usize::MAX).unwrap_err();
    assert_eq!(error.setting(), "capacity");
    assert_eq!(supervisor.capacity(), 1, "a refused resize changes nothing");
}

#[test]
fn clones_share_the_bound() {
    let supervisor = TaskSupervisor::new(1);
    let clone = supervisor.clone();
    let _held = supervisor.try_track(|_| async {}).unwrap();
    assert!(clone.try_track(|_| async {}).unwrap_err().is_overload());
    fn send_sync<T: Send + Sync + Clone + std::fmt::Debug>(_: &T) {}
    send_sync(&clone);
}
