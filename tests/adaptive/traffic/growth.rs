//! Defects 1 and 2: Gradient climbs back from a limit of 1, with jitter,
//! and after a lasting tenfold latency step (it used to stay at 1: its room
//! `round(L × (ratio − 1))` was 0 at L = 1 unless every sample equalled
//! the baseline).

use std::time::Duration;

use sidejob::adaptive::Adaptive;

use super::{adaptive, sink_with_drops, until, Clients, Outcome};

#[test]
fn gradient_climbs_back_from_one_under_jittered_latency() {
    let resource = adaptive(16, Adaptive::gradient(), Duration::from_millis(10));
    sink_with_drops(&resource, 8);
    // No queue downstream: 8 clients, 2 ms a call (the sleep's own jitter).
    let _clients = Clients::start(&resource, 8, |_| {
        Outcome::Answered(Duration::from_millis(2))
    });
    let limits = until(&resource, Duration::from_secs(6), |limit| limit >= 6);
    assert!(
        *limits.last().unwrap() >= 6,
        "stayed low: {limits:?}; {:?}",
        resource.adaptive_stats()
    );
}

#[test]
fn gradient_and_vegas_climb_back_after_a_lasting_tenfold_step() {
    for rule in [Adaptive::gradient(), Adaptive::vegas()] {
        let name = rule.algorithm_name();
        let resource = adaptive(16, rule, Duration::from_millis(10));
        let step = std::time::Instant::now() + Duration::from_millis(500);
        // 8 clients, no queue: 1 ms a call, then 10 ms for good.
        let clients = Clients::start(&resource, 8, move |_| {
            if std::time::Instant::now() < step {
                Outcome::Answered(Duration::from_millis(1))
            } else {
                Outcome::Answered(Duration::from_millis(10))
            }
        });
        std::thread::sleep(Duration::from_millis(1500));
        let limits = until(&resource, Duration::from_secs(8), |limit| limit >= 6);
        drop(clients);
        assert!(
            *limits.last().unwrap() >= 6,
            "{name} stayed low after the step: {limits:?}; {:?}",
            resource.adaptive_stats()
        );
    }
}
