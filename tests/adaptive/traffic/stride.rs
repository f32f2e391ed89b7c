//! Defect 8: permits admitted on the slow path are sampled at the stride
//! too. They used to get grant number 0, so at the limit (every admission
//! on the slow path) every permit was timed, whatever the stride.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use sidejob::adaptive::{Adaptive, Window};
use sidejob::Resource;

#[test]
fn at_the_limit_only_one_permit_in_a_stride_is_timed() {
    // 2 slots on 4 shards, 6 threads: capacity is scarce, kept in the
    // reserve, and every admission leases a slot from it, on the slow
    // path.
    let resource = Arc::new(
        Resource::builder()
            .capacity(2)
            .shards(4)
            .adaptive(
                Adaptive::custom(|limit: usize, _: &Window| limit)
                    .window(Duration::from_millis(20)),
            )
            .build()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(7));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (resource, stop, start) =
                (Arc::clone(&resource), Arc::clone(&stop), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(permit) = resource.try_acquire() {
                        std::hint::black_box(&permit);
                    }
                }
            })
        })
        .collect();
    start.wait();
    thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = resource.adaptive_stats().unwrap();
    let accepted = resource.stats().accepted;
    assert!(stats.windows > 5, "{stats:?}");
    // A window aims for a few hundred samples: far fewer than the grants.
    assert!(
        stats.samples * 4 < accepted,
        "{} of {accepted} permits timed; {stats:?}",
        stats.samples
    );
}
