//! Defect 7: a slow window cannot halve Gradient. It used to halve at
//! once wherever the latency was twice the tolerance (a GC pause, an
//! outlier window); a window now cuts a tenth at most.

use std::time::{Duration, Instant};

use sidejob::adaptive::Adaptive;

use super::{adaptive, limits_for, Clients, Outcome};

#[test]
fn a_pause_of_a_few_windows_cuts_gradient_a_tenth_a_window_not_in_half() {
    let window = Duration::from_millis(50);
    // No probe (two windows at half the limit, on purpose) in the way.
    let resource = adaptive(
        20,
        Adaptive::gradient().max_limit(20).probe_every(0),
        window,
    );
    let pause = Instant::now() + Duration::from_millis(800);
    // 24 clients at 5 ms (the limit, at its maximum, bounds them), then
    // a pause of about two windows: every call 50 ms, then back.
    let _clients = Clients::start(&resource, 24, move |_| {
        let now = Instant::now();
        if now > pause && now < pause + Duration::from_millis(100) {
            Outcome::Answered(Duration::from_millis(50))
        } else {
            Outcome::Answered(Duration::from_millis(5))
        }
    });
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(resource.capacity(), 20);
    let limits = limits_for(&resource, Duration::from_millis(600));
    let least = limits.iter().copied().min().unwrap();
    // Two or three windows see the slow calls: a tenth each at most.
    assert!(
        least >= 14,
        "cut to {least}: {limits:?}; {:?}",
        resource.adaptive_stats()
    );
}
