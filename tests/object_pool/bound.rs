//! The size bound holds at every instant: 8 threads hammer a pool of 4 with
//! slow creations, failures and broken members, and no more than 4 members
//! ever exist, counting those being made.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::{ObjectPool, Pooled, TakeError};
use support::objects::{Members, Script};

const MAX: usize = 4;
const THREADS: usize = 8;
const ROUNDS: usize = 150;

#[test]
fn no_more_than_max_size_members_ever_exist() {
    let members = Members::new();
    *members.create_delay.lock().unwrap() = Some(Duration::from_millis(1));
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(MAX)
        .queue_max(THREADS)
        .shards(2)
        .build()
        .unwrap();
    let holders = AtomicUsize::new(0);
    let peak_holders = AtomicUsize::new(0);
    let outcomes = [(); 4].map(|_| AtomicUsize::new(0));
    let start = Barrier::new(THREADS);
    thread::scope(|s| {
        for thread in 0..THREADS {
            let (pool, members, start) = (&pool, &members, &start);
            let (holders, peak_holders, outcomes) = (&holders, &peak_holders, &outcomes);
            s.spawn(move || {
                start.wait();
                for round in 0..ROUNDS {
                    if (thread + round) % 37 == 0 {
                        members.fail_next.fetch_add(1, Ordering::SeqCst);
                    }
                    let taken = if round % 3 == 0 {
                        pool.try_take()
                    } else {
                        pool.take(Duration::from_secs(30))
                    };
                    match taken {
                        Ok(mut member) => {
                            let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                            peak_holders.fetch_max(now, Ordering::SeqCst);
                            assert!(pool.status().size <= MAX);
                            thread::yield_now();
                            holders.fetch_sub(1, Ordering::SeqCst);
                            match round % 11 {
                                0 => Pooled::fail(member),
                                1 => member.healthy = false,
                                _ => {}
                            }
                            outcomes[0].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(TakeError::Overload) => {
                            outcomes[1].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(TakeError::Create(_)) => {
                            outcomes[2].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(other) => panic!("unexpected {other:?}"),
                    }
                }
            });
        }
    });
    assert!(
        members.peak.load(Ordering::SeqCst) <= MAX,
        "members alive at once"
    );
    assert!(
        peak_holders.load(Ordering::SeqCst) <= MAX,
        "holders at once"
    );
    assert!(outcomes[0].load(Ordering::Relaxed) > 0);

    // At rest, every member is accounted for.
    let status = pool.status();
    assert_eq!((status.in_use, status.creating, status.waiting), (0, 0, 0));
    assert_eq!(status.size, status.idle);
    assert_eq!(status.size, members.live());
    let stats = pool.stats();
    assert_eq!(
        stats.creates - stats.destroyed,
        members.live() as u64,
        "{stats:?}"
    );
    drop(pool);
    assert_eq!(members.live(), 0, "closing destroys every member");
}
