//! Defect 6: AIMD's timeout is checked per request. One call in ten takes
//! 100 ms, past the 50 ms timeout, while the mean (about 12 ms) is well
//! under it: AIMD used to grow regardless.

use std::time::Duration;

use sidejob::adaptive::{Adaptive, Aimd};

use super::{adaptive, limits_for, Clients, Outcome};

#[test]
fn aimd_backs_off_for_requests_past_its_timeout_whatever_the_mean() {
    let aimd = Aimd::default().timeout(Duration::from_millis(50));
    let resource = adaptive(16, Adaptive::from(aimd), Duration::from_millis(20));
    let _clients = Clients::start(&resource, 24, |n| {
        Outcome::Answered(Duration::from_millis(if n % 10 == 0 { 100 } else { 2 }))
    });
    let limits = limits_for(&resource, Duration::from_secs(2));
    let stats = resource.adaptive_stats().unwrap();
    assert!(
        stats.decreases > 0,
        "never backed off: {limits:?}; {stats:?}"
    );
    assert!(
        limits.last().is_some_and(|&limit| limit < 16),
        "grew past its start: {limits:?}; {stats:?}"
    );
}
