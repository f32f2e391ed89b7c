//! Defect 5: calls that time out still speak. The downstream stalls; its
//! clients give up and release their permits as cancelled. Those used to
//! be left out (no sample, no window closed), so the limit stayed where
//! it was; now each is a censored sample, or a drop past `drop_after` ×
//! the baseline, and the limit comes down.

use std::time::{Duration, Instant};

use sidejob::adaptive::Adaptive;

use super::{adaptive, until, Clients, Outcome};

#[test]
fn a_stall_its_clients_give_up_on_brings_every_rule_down() {
    for rule in [Adaptive::gradient(), Adaptive::vegas(), Adaptive::aimd()] {
        let name = rule.algorithm_name();
        let resource = adaptive(24, rule.min_limit(2), Duration::from_millis(20));
        let stall = Instant::now() + Duration::from_millis(600);
        // 16 clients at 2 ms, then a stall: no answer, each gives up after
        // 40 ms.
        let _clients = Clients::start(&resource, 16, move |_| {
            if Instant::now() < stall {
                Outcome::Answered(Duration::from_millis(2))
            } else {
                Outcome::Cancelled(Duration::from_millis(40))
            }
        });
        std::thread::sleep(Duration::from_millis(600));
        let before = resource.capacity();
        let limits = until(&resource, Duration::from_secs(8), |limit| limit <= 4);
        assert!(
            *limits.last().unwrap() <= 4,
            "{name} stayed at {before} and up: {limits:?}; {:?}",
            resource.adaptive_stats()
        );
    }
}

#[test]
fn a_cancelled_permit_is_a_censored_sample_or_past_drop_after_a_drop() {
    // Long beside the holds (the drop's is about 18 ms): with 20 ms, a
    // sleep overshooting by 2 ms on a loaded machine closed a window early
    // (three windows where two were counted on).
    let window = Duration::from_millis(100);
    let resource = adaptive(
        4,
        Adaptive::custom(|limit: usize, _: &sidejob::adaptive::Window| limit).min_samples(1),
        window,
    );
    // A first window sets the baseline near 5 ms.
    let permit = resource.try_acquire().unwrap();
    std::thread::sleep(Duration::from_millis(5));
    drop(permit);
    std::thread::sleep(window * 2);
    drop(resource.try_acquire().unwrap()); // closes it
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!((stats.windows, stats.samples, stats.drops), (1, 2, 0));
    // Cancelled soon: a sample. Cancelled past 4 × the baseline: a drop.
    let permit = resource.try_acquire().unwrap();
    permit.cancelled();
    let permit = resource.try_acquire().unwrap();
    std::thread::sleep(stats.baseline * 5 + Duration::from_millis(5));
    permit.cancelled();
    std::thread::sleep(window * 2);
    drop(resource.try_acquire().unwrap());
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!(
        (stats.windows, stats.samples, stats.drops),
        (2, 4, 1),
        "{stats:?}"
    );
    assert_eq!(resource.usage(), 0);
}
