//! The bound: queued plus in-progress messages never exceed capacity; when
//! every mailbox is full, calls and casts fail at once with the request back.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::{CallError, CastError, WorkerPool};
use support::workers::{Harness, Job};

#[test]
fn full_mailboxes_refuse_at_once_and_hand_the_request_back() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(4)
        .shards(2)
        .build(harness.factory())
        .unwrap();
    for n in 0..4 {
        pool.cast(Job::Wait(n)).unwrap();
    }
    // Both workers are held at the gate with one more message queued each.
    for _ in 0..2 {
        harness.started.recv().unwrap();
    }
    assert_eq!(pool.usage(), 4);
    assert!(matches!(
        pool.cast(Job::Run(9)),
        Err(CastError::Overload(Job::Run(9)))
    ));
    assert!(matches!(
        pool.call(Job::Run(8)),
        Err(CallError::Overload(Job::Run(8)))
    ));
    assert_eq!(pool.stats().rejected, 2);
    harness.open(4);
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!((stats.accepted, stats.handled, stats.usage), (4, 4, 0));
}

/// Messages admitted and not yet finished, as the senders and the workers
/// see them. A sender counts a message in after `cast` accepted it, and the
/// handler counts it out when done, so this never overstates the real number
/// (which the pool bounds by capacity).
static OUTSTANDING: AtomicI64 = AtomicI64::new(0);

struct Sleepy;

impl sidejob::Worker for Sleepy {
    type Request = ();
    type Reply = ();

    fn handle_call(&mut self, _: ()) {
        thread::sleep(Duration::from_micros(50));
        OUTSTANDING.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn many_senders_never_exceed_capacity() {
    const SENDERS: usize = 8;
    const CASTS: usize = 2_000;
    const CAPACITY: usize = 6;
    let pool = WorkerPool::builder()
        .capacity(CAPACITY)
        .shards(3)
        .build(|_| Sleepy)
        .unwrap();
    let peak = AtomicI64::new(0);
    let start = Barrier::new(SENDERS);
    thread::scope(|scope| {
        for _ in 0..SENDERS {
            scope.spawn(|| {
                start.wait();
                for _ in 0..CASTS {
                    if pool.cast(()).is_ok() {
                        let now = OUTSTANDING.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        assert!(now <= CAPACITY as i64, "{now} outstanding");
                    }
                    assert!(pool.usage() <= CAPACITY);
                }
            });
        }
    });
    pool.shutdown();
    let stats = pool.stats();
    assert_eq!(stats.usage, 0);
    assert_eq!(stats.accepted, stats.handled);
    assert_eq!(stats.accepted + stats.rejected, (SENDERS * CASTS) as u64);
    assert!(stats.rejected > 0, "the load should exceed capacity");
    assert_eq!(OUTSTANDING.load(Ordering::SeqCst), 0);
    assert!(peak.load(Ordering::SeqCst) <= CAPACITY as i64);
}
