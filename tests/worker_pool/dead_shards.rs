//! A shard whose worker cannot run refuses at once (#16, item 3): from a
//! worker's death until a new one is built its limit is 0, so work goes to
//! the other shards, and callers get `Overload` at once when every shard is
//! down. Past OTP's restart intensity (`max_restarts` within
//! `restart_window`) a shard stays down for the pool's life: the calls
//! queued on it get their requests back (`ShardDown`, #39) and its casts
//! are skipped.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sidejob::{CallError, Worker, WorkerPool};

use crate::support;
use support::homes::on_home;
use support::panics::quiet_deliberate_panics;

/// What a [`Fragile`] worker is asked to do.
enum Job {
    /// Reply with the shard.
    Which,
    /// Panic (deliberately).
    Die,
    /// Say it runs, wait for the gate, then panic.
    DieLater {
        running: mpsc::Sender<()>,
        gate: Arc<Mutex<Receiver<()>>>,
    },
}

struct Fragile {
    shard: usize,
}

impl Worker for Fragile {
    type Request = Job;
    type Reply = usize;

    fn handle_call(&mut self, job: Job) -> usize {
        match job {
            Job::Which => self.shard,
            Job::Die => panic!("deliberate: the handler dies"),
            Job::DieLater { running, gate } => {
                let _ = running.send(());
                let _ = gate.lock().unwrap().recv();
                panic!("deliberate: the handler dies")
            }
        }
    }
}

/// A factory that panics for the shards marked broken, counting its calls.
#[derive(Default)]
struct Factory {
    broken: Vec<AtomicBool>,
    calls: AtomicUsize,
    /// Failures left before a broken shard's factory succeeds again
    /// (`usize::MAX`: never).
    failures_left: AtomicUsize,
}

impl Factory {
    fn new(shards: usize) -> Arc<Factory> {
        Arc::new(Factory {
            broken: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            calls: AtomicUsize::new(0),
            failures_left: AtomicUsize::new(usize::MAX),
        })
    }

    fn build(self: &Arc<Self>, shard: usize) -> Fragile {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.broken[shard].load(Ordering::SeqCst) {
            let left = self.failures_left.load(Ordering::SeqCst);
            if left > 0 {
                if left != usize::MAX {
                    self.failures_left.fetch_sub(1, Ordering::SeqCst);
                }
                panic!("deliberate: the factory fails");
            }
        }
        Fragile { shard }
    }
}

fn pool(factory: &Arc<Factory>, shards: usize, max_restarts: u32) -> WorkerPool<Fragile> {
    let factory = Arc::clone(factory);
    WorkerPool::builder()
        .capacity(8 * shards)
        .shards(shards)
        .call_timeout(Duration::from_secs(60))
        .max_restarts(max_restarts)
        .restart_window(Duration::from_secs(60))
        .build(move |shard| factory.build(shard))
        .unwrap()
}

#[test]
fn a_shard_whose_worker_cannot_be_rebuilt_sends_its_work_elsewhere() {
    quiet_deliberate_panics();
    let factory = Factory::new(2);
    let pool = pool(&factory, 2, 10);
    factory.broken[0].store(true, Ordering::SeqCst);
    on_home(2, 0, || {
        assert!(matches!(
            pool.call(Job::Die),
            Err(CallError::WorkerPanicked)
        ));
        // Home is shard 0, whose worker is gone: every call goes to shard 1
        // at once instead of waiting in shard 0's mailbox.
        for _ in 0..20 {
            assert_eq!(pool.call(Job::Which).unwrap(), 1);
        }
    });
    let stats = pool.stats();
    assert!(!stats.shards[0].up);
    assert!(stats.shards[1].up);
    assert_eq!(stats.shards_down, 1);
}

#[test]
fn when_every_shard_is_down_callers_get_overload_at_once() {
    quiet_deliberate_panics();
    let factory = Factory::new(1);
    let pool = pool(&factory, 1, 10);
    factory.broken[0].store(true, Ordering::SeqCst);
    assert!(matches!(
        pool.call(Job::Die),
        Err(CallError::WorkerPanicked)
    ));
    // With a 60 s call timeout, a call queued behind the dead worker would
    // hang; it is refused instead.
    assert!(pool.call(Job::Which).unwrap_err().is_overload());
    assert!(pool.cast(Job::Which).unwrap_err().is_overload());
    assert_eq!(pool.stats().shards_down, 1);
}

#[test]
fn a_shard_rebuilt_after_failed_tries_admits_again() {
    quiet_deliberate_panics();
    let factory = Factory::new(1);
    let pool = pool(&factory, 1, 10);
    factory.failures_left.store(3, Ordering::SeqCst);
    factory.broken[0].store(true, Ordering::SeqCst);
    assert!(matches!(
        pool.call(Job::Die),
        Err(CallError::WorkerPanicked)
    ));
    support::objects::eventually("the worker is rebuilt", || pool.stats().shards[0].up);
    assert_eq!(pool.call(Job::Which).unwrap(), 0);
    let stats = pool.stats();
    assert_eq!((stats.panics, stats.restarts, stats.shards_down), (1, 1, 0));
    assert_eq!(stats.shards[0].limit, 8);
}

#[test]
fn past_the_restart_intensity_a_shard_stays_down_and_answers_its_queue() {
    quiet_deliberate_panics();
    let factory = Factory::new(1);
    // One death and two failed factory calls are three restarts: one more
    // than allowed.
    let pool = pool(&factory, 1, 2);
    factory.broken[0].store(true, Ordering::SeqCst);
    let (open, gate) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    let (running, started) = mpsc::channel();
    std::thread::scope(|scope| {
        let dying = scope.spawn(|| {
            pool.call(Job::DieLater {
                running,
                gate: Arc::clone(&gate),
            })
        });
        // Running, not merely admitted: an admitted call may still be on
        // its way into the mailbox, where the cast below could pass it.
        started.recv().unwrap();
        // Queued behind it: a cast and a call.
        pool.cast(Job::Which).unwrap();
        let queued = scope.spawn(|| pool.call(Job::Which));
        support::objects::eventually("both are queued", || pool.usage() == 3);
        open.send(()).unwrap();
        assert!(matches!(
            dying.join().unwrap(),
            Err(CallError::WorkerPanicked)
        ));
        // It never ran: its request comes back, for another try (#39).
        assert!(matches!(
            queued.join().unwrap(),
            Err(CallError::ShardDown(Job::Which))
        ));
    });
    support::objects::eventually("the queue is answered", || pool.usage() == 0);
    let stats = pool.stats();
    assert_eq!(stats.shards_down, 1);
    assert_eq!(
        (stats.handled, stats.skipped),
        (1, 2),
        "the cast and the call skipped"
    );
    assert_eq!(stats.accepted, stats.handled + stats.skipped);
    let calls = factory.calls.load(Ordering::SeqCst);
    assert_eq!(calls, 1 + 2, "the first build, then two failed rebuilds");
    assert!(pool.call(Job::Which).unwrap_err().is_overload());
    assert_eq!(factory.calls.load(Ordering::SeqCst), calls, "never again");
}

#[test]
fn max_restarts_zero_never_restarts() {
    quiet_deliberate_panics();
    let factory = Factory::new(2);
    let pool = pool(&factory, 2, 0);
    on_home(2, 1, || {
        assert!(matches!(
            pool.call(Job::Die),
            Err(CallError::WorkerPanicked)
        ));
        assert_eq!(
            pool.call(Job::Which).unwrap(),
            0,
            "shard 1 is down for good"
        );
    });
    assert_eq!(factory.calls.load(Ordering::SeqCst), 2, "no rebuild tried");
    let stats = pool.stats();
    assert!(!stats.shards[1].up);
    assert_eq!((stats.restarts, stats.shards_down), (0, 1));
}

#[test]
fn shutdown_does_not_wait_for_a_shard_that_is_down_for_good() {
    quiet_deliberate_panics();
    let factory = Factory::new(1);
    let pool = pool(&factory, 1, 0);
    assert!(pool.call(Job::Die).is_err());
    pool.shutdown();
    assert!(pool.is_closed());
    assert!(matches!(pool.call(Job::Which), Err(CallError::Closed(_))));
}
