//! Defect 3: a steady mix of fast and slow requests is not a queue. 4
//! clients, calls alternately 1 ms and 20 ms (sleeps, nothing queues):
//! the limit used to halve from 32 to 1 within a few windows (the
//! baseline was the fastest sample, compared with the mean).

use std::time::Duration;

use sidejob::adaptive::Adaptive;

use super::{adaptive, limits_for, Clients, Outcome};

#[test]
fn a_mix_of_fast_and_slow_calls_does_not_collapse_either_rule() {
    for rule in [Adaptive::gradient(), Adaptive::vegas()] {
        let name = rule.algorithm_name();
        let resource = adaptive(32, rule, Duration::from_millis(10));
        let _clients = Clients::start(&resource, 4, |n| {
            Outcome::Answered(Duration::from_millis(if n % 2 == 0 { 1 } else { 20 }))
        });
        let limits = limits_for(&resource, Duration::from_secs(2));
        // Never below the 4 clients: nothing queues.
        assert!(
            limits.iter().all(|&limit| limit >= 4),
            "{name} collapsed: {limits:?}; {:?}",
            resource.adaptive_stats()
        );
    }
}
