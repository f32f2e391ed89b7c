//! `WorkerPool::shutdown` from anywhere, at once (#39, defects 1 and 2):
//! called from handlers and from outside together it never deadlocks (a
//! worker never joins itself nor waits on a lock another shutdown holds),
//! and a call from outside returns only once every admitted message was
//! handled, even when a handler began the shutdown.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use sidejob::{Worker, WorkerPool};

/// Far longer than any shutdown here takes: a call still running then is
/// deadlocked.
const STUCK: Duration = Duration::from_secs(20);

type Pool = WorkerPool<Stopper>;

enum Job {
    /// Tells `entered`, waits for `gate`, calls `shutdown`, tells `shut`,
    /// waits for `gate` again.
    Stop {
        entered: Sender<()>,
        gate: Arc<Mutex<Receiver<()>>>,
        shut: Sender<()>,
    },
    Work,
}

struct Stopper {
    pool: Arc<OnceLock<Weak<Pool>>>,
}

impl Worker for Stopper {
    type Request = Job;
    type Reply = ();

    fn handle_call(&mut self, job: Job) {
        if let Job::Stop {
            entered,
            gate,
            shut,
        } = job
        {
            entered.send(()).unwrap();
            gate.lock().unwrap().recv().unwrap();
            let pool = self.pool.get().and_then(Weak::upgrade).expect("the pool");
            pool.shutdown();
            shut.send(()).unwrap();
            let _ = gate.lock().unwrap().recv();
        }
    }
}

fn pool(capacity: usize, shards: usize) -> Arc<Pool> {
    let slot = Arc::new(OnceLock::new());
    let factory_slot = Arc::clone(&slot);
    let pool = Arc::new(
        WorkerPool::builder()
            .capacity(capacity)
            .shards(shards)
            .call_timeout(STUCK * 2)
            .build(move |_| Stopper {
                pool: Arc::clone(&factory_slot),
            })
            .unwrap(),
    );
    slot.set(Arc::downgrade(&pool)).unwrap();
    pool
}

/// Runs `pool.shutdown()` on a thread of its own; the receiver hears when
/// it returned.
fn shutdown_from_outside(pool: &Arc<Pool>) -> Receiver<()> {
    let (done, returned) = mpsc::channel();
    let pool = Arc::clone(pool);
    std::thread::spawn(move || {
        pool.shutdown();
        let _ = done.send(());
    });
    returned
}

#[test]
fn handlers_on_two_shards_and_a_thread_outside_shut_down_together() {
    let pool = pool(2, 2);
    let (entered, inside) = mpsc::channel();
    let (shut, shut_down) = mpsc::channel();
    let mut gates = Vec::new();
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let (open, gate) = mpsc::channel();
            gates.push(open);
            let gate = Arc::new(Mutex::new(gate));
            let (pool, entered, shut) = (Arc::clone(&pool), entered.clone(), shut.clone());
            // Each shard holds one: the second call goes to the other shard.
            let caller = std::thread::spawn(move || {
                pool.call(Job::Stop {
                    entered,
                    gate,
                    shut,
                })
            });
            inside.recv_timeout(STUCK).expect("a handler runs");
            caller
        })
        .collect();
    let outside = shutdown_from_outside(&pool);
    // Both handlers call `shutdown`, while the one outside waits.
    for open in &gates {
        open.send(()).unwrap();
    }
    for _ in 0..2 {
        shut_down
            .recv_timeout(STUCK)
            .expect("a handler's shutdown returned");
    }
    for open in &gates {
        open.send(()).unwrap();
    }
    outside
        .recv_timeout(STUCK)
        .expect("the shutdown from outside returned");
    for caller in callers {
        caller
            .join()
            .unwrap()
            .expect("each handler's call was answered");
    }
    let stats = pool.stats();
    assert_eq!((stats.usage, stats.handled), (0, 2));
}

#[test]
fn a_shutdown_from_outside_waits_for_a_shutdown_a_handler_began() {
    let pool = pool(8, 1);
    let (entered, inside) = mpsc::channel();
    let (shut, shut_down) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    let caller = {
        let pool = Arc::clone(&pool);
        std::thread::spawn(move || {
            pool.call(Job::Stop {
                entered,
                gate,
                shut,
            })
        })
    };
    inside.recv_timeout(STUCK).expect("the handler runs");
    // Queued behind it, admitted before the shutdown.
    for _ in 0..4 {
        pool.cast(Job::Work).unwrap_or_else(|_| panic!("admitted"));
    }
    open.send(()).unwrap();
    shut_down
        .recv_timeout(STUCK)
        .expect("the handler's shutdown returned at once");
    assert!(pool.is_closed());
    let outside = shutdown_from_outside(&pool);
    // The handler still runs: the shutdown from outside must wait for it
    // and for the four casts behind it.
    assert!(outside.recv_timeout(Duration::from_millis(100)).is_err());
    open.send(()).unwrap();
    outside
        .recv_timeout(STUCK)
        .expect("the shutdown from outside returned");
    assert_eq!(
        pool.stats().handled,
        5,
        "returned before every admitted message was handled"
    );
    caller.join().unwrap().expect("answered");
}
