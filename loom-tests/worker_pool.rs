//! The worker pool's protocol: split shards, mailboxes, replies and shutdown.

use super::*;
use sidejob::{CallError, CastError, Worker, WorkerPool};

/// Answers every call with its request plus one.
struct Increment;

impl Worker for Increment {
    type Request = u32;
    type Reply = u32;

    fn handle_call(&mut self, request: u32) -> u32 {
        request + 1
    }
}

fn pool(capacity: usize) -> WorkerPool<Increment> {
    WorkerPool::builder()
        .capacity(capacity)
        .shards(1)
        .build(|_| Increment)
        .unwrap()
}

/// (d) A caller and a caster share one shard of capacity 1 with its
/// worker: at most one message is ever queued or in progress, each slot
/// is released exactly once, and the caller sees its slot free once it
/// holds its reply.
#[test]
fn sender_and_worker_share_one_slot() {
    loom::model(|| {
        let pool = Arc::new(pool(1));
        let caller = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || match pool.call(1) {
                Ok(reply) => {
                    assert_eq!(reply, 2);
                    true
                }
                Err(CallError::Overload(_)) => false,
                Err(other) => panic!("unexpected {other:?}"),
            })
        };
        let cast = match pool.cast(5) {
            Ok(()) => true,
            Err(CastError::Overload(5)) => false,
            Err(other) => panic!("unexpected {other:?}"),
        };
        assert!(pool.usage() <= 1);
        let called = caller.join().unwrap();
        pool.shutdown();
        let stats = pool.stats();
        assert_eq!(stats.usage, 0);
        assert_eq!(stats.accepted, u64::from(called) + u64::from(cast));
        assert_eq!(stats.handled + stats.skipped, stats.accepted);
        assert_eq!(stats.accepted + stats.rejected, 2);
    });
}

/// (e) A call races with shutdown: it is either answered or refused as
/// `Closed`, never left waiting (loom reports a deadlock if it were), and
/// an admitted call is always handled before the workers exit.
#[test]
fn call_racing_shutdown_is_answered_or_refused() {
    loom::model(|| {
        let pool = Arc::new(pool(2));
        let caller = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || match pool.call(7) {
                Ok(reply) => {
                    assert_eq!(reply, 8);
                    true
                }
                Err(CallError::Closed(7)) => false,
                Err(other) => panic!("unexpected {other:?}"),
            })
        };
        pool.shutdown();
        let answered = caller.join().unwrap();
        let stats = pool.stats();
        assert_eq!(stats.usage, 0);
        assert_eq!(stats.handled, u64::from(answered));
        assert_eq!(stats.accepted, u64::from(answered));
    });
}

/// (k) The worker frees the only slot while no sender is looking; then
/// two senders race for it, each with the senders' cached count of
/// releases possibly stale. At least one gets in (a refusal rests on a
/// fresh read of the worker's count, so the free slot is never missed),
/// the bound holds, and every send is accounted for once.
#[test]
fn stale_release_count_never_refuses_a_free_slot() {
    loom::model(|| {
        let pool = Arc::new(pool(1));
        // The reply comes after the slot is free.
        assert_eq!(pool.call(1).unwrap(), 2);
        let other = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || pool.cast(2).is_ok())
        };
        let mine = pool.cast(3).is_ok();
        assert!(pool.usage() <= 1);
        let theirs = other.join().unwrap();
        assert!(mine || theirs, "both refused while the slot was free");
        pool.shutdown();
        let stats = pool.stats();
        assert_eq!(stats.usage, 0);
        assert_eq!(stats.accepted, 1 + u64::from(mine) + u64::from(theirs));
        assert_eq!(stats.handled, stats.accepted);
        assert_eq!(stats.accepted + stats.rejected, 3);
    });
}

/// Panics on request 0, answers any other with itself.
struct Fragile;

impl Worker for Fragile {
    type Request = u32;
    type Reply = u32;

    fn handle_call(&mut self, request: u32) -> u32 {
        assert_ne!(request, 0, "deliberate: request 0 kills the worker");
        request
    }
}

/// (m) A worker that dies and is rebuilt races with shutdown: the rebuild
/// reopens its shard (limit 0 while the worker was dead) only if shutdown
/// has not begun, so once shutdown returns every send is refused as
/// `Closed` and nothing is admitted that no worker will handle (fails if
/// the reopening skips the limits lock or the `closing` check).
#[test]
fn a_rebuild_racing_shutdown_never_reopens_the_pool() {
    // Quiet about the deliberate panic only: a failed assertion still shows.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let deliberate = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|message| message.contains("deliberate"));
        if !deliberate {
            default(info);
        }
    }));
    loom::model(|| {
        let pool = Arc::new(
            WorkerPool::builder()
                .capacity(1)
                .shards(1)
                .build(|_| Fragile)
                .unwrap(),
        );
        let caller = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || match pool.call(0) {
                Err(CallError::WorkerPanicked) | Err(CallError::Closed(0)) => {}
                other => panic!("unexpected {other:?}"),
            })
        };
        pool.shutdown();
        caller.join().unwrap();
        assert!(matches!(pool.cast(1), Err(CastError::Closed(1))));
        let stats = pool.stats();
        assert_eq!(stats.usage, 0);
        assert_eq!(stats.handled + stats.skipped, stats.accepted);
    });
}

/// Calls `shutdown` from inside its handler, on request 0; answers any
/// other with itself.
struct SelfStopping {
    pool: Arc<std::sync::OnceLock<std::sync::Weak<WorkerPool<SelfStopping>>>>,
}

impl Worker for SelfStopping {
    type Request = u32;
    type Reply = u32;

    fn handle_call(&mut self, request: u32) -> u32 {
        if request == 0 {
            if let Some(pool) = self.pool.get().and_then(std::sync::Weak::upgrade) {
                pool.shutdown();
            }
        }
        request
    }
}

/// (z) Shutdown's hand-over: a handler calls `shutdown` while a thread
/// outside does too. The handler's call returns without waiting for its
/// own worker, the outside call holds no lock while it waits and returns
/// only once the worker has exited, so neither deadlocks (loom reports it
/// if one did) and every admitted message was handled when the outside
/// call returns.
#[test]
fn shutdown_from_a_handler_and_from_outside_both_return() {
    loom::model(|| {
        let slot = Arc::new(std::sync::OnceLock::new());
        let factory_slot = Arc::clone(&slot);
        let pool = Arc::new(
            WorkerPool::builder()
                .capacity(2)
                .shards(1)
                .build(move |_| SelfStopping {
                    pool: Arc::clone(&factory_slot),
                })
                .unwrap(),
        );
        slot.set(Arc::downgrade(&pool)).unwrap();
        let caller = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || match pool.call(0) {
                Ok(0) => true,
                Err(CallError::Closed(0)) => false,
                other => panic!("unexpected {other:?}"),
            })
        };
        pool.shutdown();
        // Once it returned, whatever was admitted was handled.
        let stats = pool.stats();
        assert_eq!(stats.usage, 0);
        assert_eq!(stats.handled, stats.accepted);
        let answered = caller.join().unwrap();
        assert_eq!(stats.accepted, u64::from(answered));
    });
}
