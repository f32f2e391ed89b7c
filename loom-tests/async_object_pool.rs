//! The async object pool's cancellations: a take future dropped while a
//! returner or a freed slot reaches it loses nothing.
//!
//! Each take is polled by hand, once, with a no-op waker, then dropped:
//! loom explores every interleaving of that poll and drop with the other
//! thread's return. `take(FOREVER)` has no deadline (its `checked_add`
//! overflows), so no timer is involved.

use super::*;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sidejob::{AsyncManager, AsyncObjectPool, AsyncPooled};

/// No deadline at all: `Instant::now() + FOREVER` overflows.
const FOREVER: Duration = Duration::MAX;

/// Makes numbered objects, counting those alive.
struct Numbers {
    made: AtomicUsize,
    alive: Arc<AtomicUsize>,
}

/// An object that counts itself alive.
struct Numbered {
    alive: Arc<AtomicUsize>,
}

impl Drop for Numbered {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

impl AsyncManager for Numbers {
    type Object = Numbered;
    type Error = std::io::Error;

    async fn create(&self) -> std::io::Result<Numbered> {
        self.made.fetch_add(1, Ordering::SeqCst);
        self.alive.fetch_add(1, Ordering::SeqCst);
        Ok(Numbered {
            alive: Arc::clone(&self.alive),
        })
    }
}

/// Polls `future` to completion on this thread; loom's `yield_now` lets the
/// other threads run between polls.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::yield_now();
    }
}

fn pool() -> (Arc<AsyncObjectPool<Numbers>>, Arc<AtomicUsize>) {
    let alive = Arc::new(AtomicUsize::new(0));
    let numbers = Numbers {
        made: AtomicUsize::new(0),
        alive: Arc::clone(&alive),
    };
    let pool = block_on(
        AsyncObjectPool::builder(numbers)
            .max_size(1)
            .shards(1)
            .build(),
    )
    .unwrap();
    (Arc::new(pool), alive)
}

/// (s) One object, held: its holder returns it while a taker polls its
/// take once and drops it. Whenever the return lands (before the poll,
/// between the poll and the drop, after the drop), the object ends idle,
/// once, and nobody waits.
#[test]
fn return_racing_a_dropped_waiter_keeps_the_object() {
    loom::model(|| {
        let (pool, alive) = pool();
        let held = block_on(pool.try_take_owned()).unwrap();
        let returner = thread::spawn(move || drop(held));
        {
            let mut take = pin!(pool.take(FOREVER));
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(taken) = take.as_mut().poll(&mut cx) {
                drop(taken.unwrap());
            }
        }
        returner.join().unwrap();
        let status = pool.status();
        assert_eq!(
            (status.size, status.idle, status.waiting),
            (1, 1, 0),
            "{status:?}"
        );
        assert_eq!(alive.load(Ordering::SeqCst), 1);
    });
}

/// (t) One object, held and failed (destroyed, its slot freed) while a
/// taker polls its take once and drops it: a slot handed to the dropped
/// take is freed, not lost, and a later take gets it.
#[test]
fn slot_hand_off_racing_a_cancelled_take_frees_the_slot() {
    loom::model(|| {
        let (pool, alive) = pool();
        let held = block_on(pool.try_take_owned()).unwrap();
        let failer = thread::spawn(move || sidejob::AsyncOwnedPooled::fail(held));
        {
            let mut take = pin!(pool.take(FOREVER));
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(taken) = take.as_mut().poll(&mut cx) {
                drop(taken.unwrap());
            }
        }
        failer.join().unwrap();
        let status = pool.status();
        assert_eq!(
            (status.in_use, status.waiting, status.creating),
            (0, 0, 0),
            "{status:?}"
        );
        assert_eq!(status.size, status.idle, "{status:?}");
        assert_eq!(alive.load(Ordering::SeqCst), status.size);
        let again: AsyncPooled<'_, Numbers> = block_on(pool.try_take()).expect("the slot is whole");
        drop(again);
    });
}
