//! The bound is strict: under many threads offering more load than capacity,
//! the number of permits held never exceeds capacity, not even for an instant.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;

use sidejob::Resource;

#[test]
fn concurrent_holders_never_exceed_capacity() {
    const THREADS: usize = 16;
    const ATTEMPTS: usize = 20_000;
    for (capacity, shards) in [(1, 4), (3, 4), (5, 2), (8, 8), (7, 3)] {
        let resource = Resource::builder()
            .capacity(capacity)
            .shards(shards)
            .build()
            .unwrap();
        let holders = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    start.wait();
                    for _ in 0..ATTEMPTS {
                        if let Ok(permit) = resource.try_acquire() {
                            let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            assert!(now <= capacity, "{now} holders, capacity {capacity}");
                            assert!(resource.usage() <= capacity);
                            std::hint::spin_loop();
                            holders.fetch_sub(1, Ordering::SeqCst);
                            drop(permit);
                        }
                    }
                });
            }
        });
        let stats = resource.stats();
        assert_eq!(stats.usage, 0, "every permit released");
        assert_eq!(stats.accepted + stats.rejected, (THREADS * ATTEMPTS) as u64);
        assert!(peak.load(Ordering::SeqCst) <= capacity);
        assert!(stats.accepted > 0);
    }
}

#[test]
fn owned_permits_moving_between_threads_keep_the_bound() {
    use std::sync::{mpsc, Arc};
    let resource = Arc::new(Resource::builder().capacity(4).shards(2).build().unwrap());
    let holders = Arc::new(AtomicUsize::new(0));
    let (send, receive) = mpsc::sync_channel::<sidejob::OwnedPermit>(8);
    let consumer = {
        let holders = Arc::clone(&holders);
        thread::spawn(move || {
            for permit in receive {
                holders.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
            }
        })
    };
    thread::scope(|scope| {
        for _ in 0..4 {
            let send = send.clone();
            let resource = &resource;
            let holders = &holders;
            scope.spawn(move || {
                for _ in 0..5_000 {
                    if let Ok(permit) = resource.try_acquire_owned() {
                        let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= 4);
                        send.send(permit).unwrap();
                    }
                }
            });
        }
    });
    drop(send);
    consumer.join().unwrap();
    assert_eq!(resource.usage(), 0);
}
