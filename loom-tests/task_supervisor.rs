//! The task supervisor's protocol: a child ending while another is admitted
//! at the bound, `close` racing the last child's end, `cancel_all` racing
//! an admission, and `shutdown`'s abort racing a spawned child's first wait.

use super::*;

use loom::sync::atomic::AtomicBool;

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

/// A waker that records being woken.
struct Woken(AtomicBool);

impl std::task::Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// (v) `shutdown`'s abort races a spawned child's first wait: the child
/// either finds the abort when it goes to leave its waker, and ends, or
/// left its waker first and is woken, and its next poll ends it. Either
/// way it ends once, counted as cancelled, its slot freed. A child that
/// left its waker after the abort had looked would wait forever.
#[test]
fn an_abort_racing_a_childs_first_wait_reaches_it() {
    loom::model(|| {
        let supervisor = one_slot();
        let child = supervisor
            .loom_try_track_abortable(|_| std::future::pending::<()>())
            .unwrap_or_else(|_| panic!("admitted"));
        let aborter = {
            let supervisor = supervisor.clone();
            thread::spawn(move || supervisor.loom_abort_spawned())
        };
        let woken = Arc::new(Woken(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        let mut child = pin!(child);
        let first = child.as_mut().poll(&mut cx);
        aborter.join().unwrap();
        match first {
            Poll::Ready(ended) => assert!(ended.is_none(), "aborted, not completed"),
            Poll::Pending => {
                assert!(woken.0.load(Ordering::SeqCst), "waiting, never woken");
                assert!(matches!(child.as_mut().poll(&mut cx), Poll::Ready(None)));
            }
        }
        let stats = supervisor.stats();
        assert_eq!((stats.live, stats.finished, stats.cancelled), (0, 1, 1));
        assert_eq!(supervisor.count(), 0);
    });
}

/// (#27) Two children end at once on a closed supervisor while `wait` is
/// polled: whenever `wait` resolves, both slots are already free, so
/// `count()` is 0 (a child used to leave its live set, then free its slot
/// outside the lock, so the other child could find every set empty and
/// wake `wait` in between).
#[test]
fn two_children_ending_at_once_free_their_slots_before_wait_resolves() {
    loom::model(|| {
        let supervisor = TaskSupervisor::builder()
            .capacity(2)
            .shards(1)
            .build()
            .unwrap();
        let children: Vec<_> = (0..2)
            .map(|_| {
                supervisor
                    .try_track(|_| std::future::pending::<()>())
                    .unwrap()
            })
            .collect();
        supervisor.close();
        let droppers: Vec<_> = children
            .into_iter()
            .map(|child| thread::spawn(move || drop(child)))
            .collect();
        // `wait` is a tokio-util token, which loom does not see: the yield
        // lets the children run to any point before the poll, and
        // `which_children`, which takes every live set's lock as the
        // cancelling child's last look did, stands in for the token's own
        // synchronisation (its mutex) before the slots are read.
        thread::yield_now();
        if poll_once(supervisor.wait()).is_ready() {
            assert!(supervisor.which_children().is_empty());
            assert_eq!(supervisor.count(), 0, "wait resolved with a slot held");
        }
        for dropper in droppers {
            dropper.join().unwrap();
        }
        assert!(poll_once(supervisor.wait()).is_ready(), "wait never ends");
        assert_eq!(supervisor.count(), 0);
        assert!(supervisor.which_children().is_empty());
    });
}

/// (ai) A child admitted before `close` is counted by it, so the
/// `cancel_all` after the close (what a shutdown does) cancels it: its
/// context reads as cancelled and its `cancelled()` is ready. With the
/// generation read after the registration, a close and a `cancel_all`
/// between the two left the child in the new generation, uncancelled for
/// good (found by the adversarial review).
#[test]
fn a_child_admitted_before_close_is_cancelled_by_the_next_cancel_all() {
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
                    .ok()?;
                Some((context.unwrap(), tracked))
            })
        };
        supervisor.close();
        supervisor.cancel_all();
        if let Some((context, tracked)) = admitter.join().unwrap() {
            assert!(
                context.is_cancelled(),
                "admitted before the close, never cancelled"
            );
            assert!(poll_once(context.cancelled()).is_ready());
            drop(tracked);
        }
    });
}
