//! TaskSupervisor's cancellation generations: each `cancel_all` cancels
//! exactly the children admitted before it, whatever generation they were
//! admitted in; a `cancelled()` future made before the cancel resolves
//! after it; a context's clone answers as the context does; and a child in
//! a reused live-set entry gets its own abort handle, so `shutdown` aborts
//! the right task.
#![cfg(feature = "tokio")]

use std::time::Duration;

use sidejob::{TaskContext, TaskSupervisor};
use tokio::sync::oneshot;

/// Spawns a child that hands its context out and then waits to be
/// cancelled.
fn child_with_context(supervisor: &TaskSupervisor) -> (TaskContext, sidejob::TaskHandle<()>) {
    let (send, mut receive) = oneshot::channel();
    let handle = supervisor
        .try_spawn(move |context| {
            send.send(context.clone()).unwrap();
            async move { context.cancelled().await }
        })
        .unwrap();
    let context = receive
        .try_recv()
        .expect("the closure runs inside try_spawn");
    (context, handle)
}

#[tokio::test]
async fn each_cancel_all_cancels_exactly_the_children_before_it() {
    let supervisor = TaskSupervisor::new(8);
    let (first, first_handle) = child_with_context(&supervisor);
    let early_wait = first.cancelled();
    supervisor.cancel_all();
    assert!(first.is_cancelled());
    early_wait.await; // made before the cancel, resolves after it
    first_handle.await.unwrap();

    let (second, second_handle) = child_with_context(&supervisor);
    let (third, third_handle) = child_with_context(&supervisor);
    assert!(!second.is_cancelled() && !third.is_cancelled());
    let second_clone = second.clone();
    supervisor.cancel_all();
    assert!(second.is_cancelled() && second_clone.is_cancelled());
    assert!(third.is_cancelled());
    second_handle.await.unwrap();
    third_handle.await.unwrap();

    let (fourth, fourth_handle) = child_with_context(&supervisor);
    assert!(!fourth.is_cancelled(), "admitted after the second cancel");
    assert!(
        tokio::time::timeout(Duration::from_millis(50), fourth.cancelled())
            .await
            .is_err(),
        "an uncancelled child's cancelled() stays pending"
    );
    supervisor.cancel_all();
    fourth_handle.await.unwrap();
    // An old generation's context stays cancelled, and its cancelled()
    // resolves at once.
    first.cancelled().await;
    assert!(first.is_cancelled());
}

#[tokio::test]
async fn shutdown_aborts_the_child_in_a_reused_entry() {
    let supervisor = TaskSupervisor::builder()
        .capacity(4)
        .shards(1)
        .build()
        .unwrap();
    // Entries are freed and reused as children come and go.
    for _ in 0..3 {
        let quick = supervisor.try_spawn(|_| async {}).unwrap();
        quick.await.unwrap();
    }
    let stubborn = supervisor
        .try_spawn(|_| std::future::pending::<()>())
        .unwrap();
    let report = supervisor.shutdown(Duration::from_millis(50)).await;
    assert_eq!(report.remaining, [stubborn.id()]);
    assert!(stubborn.await.unwrap_err().is_aborted());
    assert_eq!(supervisor.stats().live, 0);
}
