//! The resize mode: admissions while the capacity changes every 10 ms.
//!
//! `SIDEJOB_BENCH_MODE=resize`: on each thread count (`SIDEJOB_BENCH_THREADS`,
//! else the number of CPUs), the threads attempt admissions as in the matrix
//! mode (each admitted permit held for a few spin-loop hints) while another
//! thread calls `set_capacity` every 10 ms, growing and shrinking in turn
//! between two capacities: `roomy` (64 x and 32 x threads: usage never
//! reaches either) and `tight` (threads and threads/2: every shrink goes
//! below the usage). The baseline is the mean of the steady goodputs at the
//! two capacities without resizing; the ratio is the resizing run's goodput
//! over it (issue #28's target: at least 0.9).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::matrix::{measure, seconds};

/// How often the capacity changes.
const EVERY: Duration = Duration::from_millis(10);

/// Runs the resize mode and prints one line per case.
pub fn run() {
    let duration = seconds().max(Duration::from_millis(500));
    println!(
        "resize: cpus={} seconds={:.2}; set_capacity every {} ms; goodput in M admitted/s",
        num_cpus::get(),
        duration.as_secs_f64(),
        EVERY.as_millis()
    );
    let mut worst = f64::INFINITY;
    for threads in super::common::thread_counts() {
        for (case, high, low) in [
            ("roomy", 64 * threads, 32 * threads),
            ("tight", threads, (threads / 2).max(1)),
        ] {
            let steady_high = measure(&sidejob::Resource::new(high), threads, duration, 0.0);
            let steady_low = measure(&sidejob::Resource::new(low), threads, duration, 0.0);
            let baseline = (steady_high.goodput + steady_low.goodput) / 2.0;
            let resource = sidejob::Resource::new(high);
            let stop = AtomicBool::new(false);
            let (resizing, resizes) = std::thread::scope(|scope| {
                let resizer = scope.spawn(|| {
                    let mut resizes = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EVERY);
                        let capacity = if resizes.is_multiple_of(2) { low } else { high };
                        resource.set_capacity(capacity).expect("a valid capacity");
                        resizes += 1;
                    }
                    resizes
                });
                let cell = measure(&resource, threads, duration, 0.0);
                stop.store(true, Ordering::Relaxed);
                (cell, resizer.join().expect("resizer panicked"))
            });
            let ratio = resizing.goodput / baseline;
            worst = worst.min(ratio);
            println!(
                "threads {threads:>3} {case}: capacity {high} <-> {low}: steady {:.2} / {:.2}, resizing {:.2} ({resizes} resizes): {ratio:.2} of steady",
                steady_high.goodput, steady_low.goodput, resizing.goodput
            );
        }
    }
    let verdict = if worst >= 0.9 { "ok" } else { "MISSED" };
    println!("target: resizing >= 0.9 x steady: worst {worst:.2} ({verdict})");
}
