//! A user value whose `Drop` panics never kills a worker thread (#39,
//! defect 3): a request skipped after its caller timed out, and a reply
//! its caller no longer waits for, are dropped under the panic guard, so
//! the shard keeps handling what it admits and every message is accounted
//! for once. A panic payload whose own `Drop` panics, again and again,
//! neither (found by the adversarial review of the fix).

use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sidejob::{CallError, Worker, WorkerPool};

use crate::support;
use support::panics::quiet_deliberate_panics;

/// Panics when dropped, if armed.
#[derive(Debug)]
struct Bomb(bool);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 {
            panic!("deliberate: a Drop that panics");
        }
    }
}

/// Panics with `Chain(n - 1)` when dropped, down to 0: a panic payload
/// whose drop panics with another such payload.
struct Chain(u32);

impl Drop for Chain {
    fn drop(&mut self) {
        if self.0 > 0 {
            std::panic::panic_any(Chain(self.0 - 1));
        }
    }
}

enum Job {
    /// Panics with a `Chain(n)` payload.
    Blow(u32),
    /// Waits for the gate, then answers with a reply that panics when
    /// dropped.
    Blocked(Arc<Mutex<Receiver<()>>>, bool),
    /// Carries a value that panics when dropped.
    Armed(Bomb),
    Work,
}

struct Handler;

impl Worker for Handler {
    type Request = Job;
    type Reply = Bomb;

    fn handle_call(&mut self, job: Job) -> Bomb {
        match job {
            Job::Blocked(gate, armed_reply) => {
                let _ = gate.lock().unwrap().recv();
                Bomb(armed_reply)
            }
            Job::Armed(mut bomb) => {
                bomb.0 = false;
                Bomb(false)
            }
            Job::Work => Bomb(false),
            Job::Blow(n) => std::panic::panic_any(Chain(n)),
        }
    }
}

fn pool() -> WorkerPool<Handler> {
    WorkerPool::builder()
        .capacity(4)
        .shards(1)
        .call_timeout(Duration::from_secs(20))
        .build(|_| Handler)
        .unwrap()
}

/// Every admitted message was handled or skipped, and nothing holds a slot.
fn accounted(pool: &WorkerPool<Handler>) {
    let stats = pool.stats();
    assert_eq!(stats.usage, 0, "{stats:?}");
    assert_eq!(stats.accepted, stats.handled + stats.skipped, "{stats:?}");
    assert_eq!(stats.shards_down, 0, "{stats:?}");
}

#[test]
fn a_skipped_request_whose_drop_panics_leaves_the_worker_running() {
    quiet_deliberate_panics();
    let pool = pool();
    let (open, gate) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    std::thread::scope(|scope| {
        let blocked = scope.spawn(|| pool.call(Job::Blocked(Arc::clone(&gate), false)));
        support::objects::eventually("the handler runs", || pool.usage() == 1);
        // Queued behind it; its caller gives up: the worker skips it, and
        // drops the request.
        let armed = pool.call_timeout(Job::Armed(Bomb(true)), Duration::from_millis(50));
        assert!(matches!(armed, Err(CallError::Timeout)), "{armed:?}");
        open.send(()).unwrap();
        blocked.join().unwrap().expect("answered");
    });
    // The worker lives: the next call is answered, a cast is handled.
    pool.call(Job::Work).expect("the shard still works");
    pool.cast(Job::Work).unwrap_or_else(|_| panic!("admitted"));
    pool.shutdown();
    accounted(&pool);
    assert_eq!(pool.stats().skipped, 1);
}

#[test]
fn a_reply_whose_drop_panics_after_its_caller_left_leaves_the_worker_running() {
    quiet_deliberate_panics();
    let pool = pool();
    let (open, gate) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    // The caller gives up while the handler runs; the reply it would have
    // got is dropped by the worker.
    let late = pool.call_timeout(Job::Blocked(gate, true), Duration::from_millis(50));
    assert!(matches!(late, Err(CallError::Timeout)), "{late:?}");
    open.send(()).unwrap();
    pool.call(Job::Work).expect("the shard still works");
    pool.cast(Job::Work).unwrap_or_else(|_| panic!("admitted"));
    pool.shutdown();
    accounted(&pool);
    assert_eq!(pool.stats().handled, 3);
}

#[test]
fn a_panic_whose_payload_panics_when_dropped_leaves_the_worker_running() {
    support::panics::quiet_all_panics();
    let pool = pool();
    assert!(matches!(
        pool.call(Job::Blow(4)),
        Err(CallError::WorkerPanicked)
    ));
    // Rebuilt, and counted once.
    pool.call(Job::Work).expect("the shard still works");
    pool.cast(Job::Work).unwrap_or_else(|_| panic!("admitted"));
    pool.shutdown();
    accounted(&pool);
    let stats = pool.stats();
    assert_eq!((stats.panics, stats.restarts), (1, 1), "{stats:?}");
}

#[test]
fn a_factory_panic_whose_payload_panics_when_dropped_is_a_build_error() {
    support::panics::quiet_all_panics();
    let err = WorkerPool::builder()
        .capacity(4)
        .shards(2)
        .build(|shard| -> Handler {
            if shard == 1 {
                std::panic::panic_any(Chain(3));
            }
            Handler
        })
        .unwrap_err();
    assert_eq!(err.setting(), "factory", "{err}");
}
