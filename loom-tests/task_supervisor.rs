//! The task supervisor's protocol: a child ending while another is admitted
//! at the bound, and `close` racing the last child's end.

use super::*;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use sidejob::TaskSupervisor;

/// A supervisor of one slot on one shard.
fn one_slot() -> TaskSupervisor {
    TaskSupervisor::builder()
        .capacity(1)
        .shards(1)
        .build()
        .unwrap()
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    pin!(future).poll(&mut cx)
}

/// (q) One slot: a child completes (its future polled to the end) while
/// another thread asks for a slot. The bound holds at every step, the
/// second child is admitted only into a freed slot, and everything ends
/// counted once.
#[test]
fn a_child_completing_while_another_is_admitted_at_the_bound() {
    loom::model(|| {
        let supervisor = one_slot();
        let holders = Arc::new(Holders::new(1));
        let first = supervisor.try_track(|_| std::future::ready(())).unwrap();
        holders.enter();
        let finisher = {
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                holders.leave();
                assert!(poll_once(first).is_ready());
            })
        };
        let admitter = {
            let (supervisor, holders) = (supervisor.clone(), Arc::clone(&holders));
            thread::spawn(
                move || match supervisor.try_track(|_| std::future::ready(())) {
                    Ok(second) => {
                        holders.enter();
                        holders.leave();
                        drop(second);
                        true
                    }
                    Err(refused) => {
                        assert!(refused.is_overload());
                        false
                    }
                },
            )
        };
        finisher.join().unwrap();
        let admitted = admitter.join().unwrap();
        let stats = supervisor.stats();
        assert_eq!(stats.spawned, 1 + u64::from(admitted));
        assert_eq!((stats.finished, stats.live), (stats.spawned, 0));
        assert!(supervisor.which_children().is_empty());
    });
}

/// (r) `close` races the end of the last child (dropped unfinished on
/// another thread): whichever comes second sees the other, so `wait`
/// resolves, and the child is gone from the live set.
#[test]
fn close_racing_the_last_child_still_ends_wait() {
    loom::model(|| {
        let supervisor = one_slot();
        let child = supervisor
            .try_track(|_| std::future::pending::<()>())
            .unwrap();
        let dropper = thread::spawn(move || drop(child));
        supervisor.close();
        dropper.join().unwrap();
        assert!(poll_once(supervisor.wait()).is_ready(), "wait never ends");
        let stats = supervisor.stats();
        assert_eq!((stats.finished, stats.cancelled, stats.live), (1, 1, 0));
    });
}

/// (u) `cancel_all` races a child's admission: whichever generation the
/// child joins, its context answers consistently. A `cancelled()` that
/// resolves means `is_cancelled()`, at any point of the race, and once both
/// are done, `cancelled()` resolves exactly when `is_cancelled()` says so.
/// A context holding a generation number ahead of the generation it finds
/// would resolve `cancelled()` while not cancelled.
#[test]
fn cancel_all_racing_an_admission_leaves_the_context_consistent() {
    loom::model(|| {
        let supervisor = one_slot();
        let admitter = {
            let supervisor = supervisor.clone();
            thread::spawn(move || {
                let mut context = None;
                let tracked = supervisor
                    .try_track(|given| {
                        context = Some(given);
                        std::future::ready(())
                    })
                    .unwrap();
                let context = context.unwrap();
                if poll_once(context.cancelled()).is_ready() {
                    assert!(context.is_cancelled(), "resolved while not cancelled");
                }
                (context, tracked)
            })
        };
        supervisor.cancel_all();
        let (context, tracked) = admitter.join().unwrap();
        assert_eq!(
            poll_once(context.cancelled()).is_ready(),
            context.is_cancelled()
        );
        drop(tracked);
        assert_eq!(supervisor.stats().live, 0);
    });
}
