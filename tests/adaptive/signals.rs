//! What a permit tells an adaptive limit (#29): a release is a latency
//! sample, `dropped` a drop that backs the limit off, `ignore` nothing; a
//! window closes on the first release past its time. Without an adaptive
//! limit these only release. The sleeps are the windows' time passing.

use std::sync::Arc;
use std::thread::sleep;
use std::time::Duration;

use sidejob::adaptive::{Adaptive, Window};
use sidejob::{Metered, Resource};

const WINDOW: Duration = Duration::from_millis(20);

fn adaptive(capacity: usize, adaptive: Adaptive) -> Resource {
    Resource::builder()
        .capacity(capacity)
        .shards(2)
        .adaptive(adaptive.window(WINDOW).min_samples(1))
        .build()
        .unwrap()
}

/// Lets the window's time pass, then closes it with one sampled release.
fn close_window(resource: &Resource) {
    sleep(WINDOW * 2);
    drop(resource.try_acquire().unwrap());
}

#[test]
fn without_an_adaptive_limit_the_signals_only_release() {
    let resource = Resource::new(2);
    resource.try_acquire().unwrap().dropped();
    resource.try_acquire().unwrap().ignore();
    let resource = Arc::new(resource);
    resource.try_acquire_owned().unwrap().dropped();
    resource.try_acquire_owned().unwrap().ignore();
    assert_eq!(resource.usage(), 0);
    assert_eq!(resource.stats().accepted, 4);
    assert!(resource.adaptive_stats().is_none());
    let snapshot = resource.snapshot();
    assert!(snapshot.figures.iter().all(|figure| figure.name != "limit"));
}

#[test]
fn every_release_in_a_window_is_one_sample() {
    let resource = adaptive(8, Adaptive::aimd());
    for _ in 0..30 {
        drop(resource.try_acquire().unwrap());
    }
    close_window(&resource);
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!((stats.windows, stats.samples, stats.drops), (1, 31, 0));
    assert!(stats.baseline > Duration::ZERO && stats.baseline <= stats.latency);
}

#[test]
fn held_time_is_the_sample() {
    let resource = adaptive(8, Adaptive::aimd());
    let permit = resource.try_acquire().unwrap();
    sleep(WINDOW * 2);
    drop(permit); // held 40 ms: closes the window with it
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!(stats.samples, 1);
    assert!(stats.latency >= WINDOW * 2, "{:?}", stats.latency);
}

#[test]
fn a_drop_backs_the_limit_off_and_is_no_sample() {
    let resource = adaptive(20, Adaptive::aimd());
    resource.try_acquire().unwrap().dropped();
    let owned = Arc::new(adaptive(20, Adaptive::aimd()));
    owned.try_acquire_owned().unwrap().dropped();
    for resource in [&resource, &*owned] {
        sleep(WINDOW * 2);
        resource.try_acquire().unwrap().dropped(); // past the window: closes it
        let stats = resource.adaptive_stats().unwrap();
        assert_eq!((stats.drops, stats.samples, stats.decreases), (2, 0, 1));
        assert_eq!(resource.capacity(), 18); // 20 × 0.9
        assert_eq!(resource.usage(), 0);
    }
}

#[test]
fn ignored_permits_are_no_sample() {
    let resource = adaptive(8, Adaptive::aimd());
    for _ in 0..50 {
        resource.try_acquire().unwrap().ignore();
    }
    let owned = Arc::new(adaptive(8, Adaptive::aimd()));
    for _ in 0..50 {
        owned.try_acquire_owned().unwrap().ignore();
    }
    for resource in [&resource, &*owned] {
        close_window(resource);
        assert_eq!(resource.adaptive_stats().unwrap().samples, 1);
    }
}

#[test]
fn a_panicking_rule_keeps_the_limit_and_the_counts() {
    let resource = adaptive(
        8,
        Adaptive::custom(|_: usize, _: &Window| -> usize { panic!("a bug in the rule") }),
    );
    let held = resource.try_acquire().unwrap();
    close_window(&resource); // the rule panics inside this release
    assert_eq!(resource.capacity(), 8);
    assert_eq!(resource.usage(), 1);
    assert_eq!(resource.adaptive_stats().unwrap().windows, 1);
    drop(held);
    close_window(&resource);
    assert_eq!(resource.usage(), 0);
    assert_eq!(resource.adaptive_stats().unwrap().windows, 2);
}

#[test]
fn set_capacity_still_applies_and_the_rule_goes_on_from_it() {
    let resource = adaptive(
        8,
        Adaptive::custom(|limit: usize, _: &Window| limit + 1).max_limit(100),
    );
    resource.set_capacity(30).unwrap();
    let held: Vec<_> = (0..29).map(|_| resource.try_acquire().unwrap()).collect();
    close_window(&resource); // the 30th: the application uses the whole limit
    assert_eq!(resource.capacity(), 31);
    drop(held);
}

#[test]
fn no_growth_while_the_application_uses_under_half_the_limit() {
    let resource = adaptive(
        30,
        Adaptive::custom(|limit: usize, _: &Window| limit + 1).max_limit(100),
    );
    for _ in 0..3 {
        close_window(&resource); // one permit at a time, of 30
    }
    assert_eq!(resource.capacity(), 30);
    assert_eq!(resource.adaptive_stats().unwrap().windows, 3);
}

#[test]
fn the_exports_carry_the_limit_and_the_latencies() {
    let resource = adaptive(8, Adaptive::vegas());
    close_window(&resource);
    let snapshot = resource.snapshot();
    let figure = |name: &str| {
        snapshot
            .figures
            .iter()
            .find(|figure| figure.name == name)
            .unwrap_or_else(|| panic!("no figure {name}"))
    };
    assert_eq!(
        snapshot.metric_name(figure("limit")),
        "sidejob_resource_limit"
    );
    assert_eq!(
        snapshot.metric_name(figure("baseline_latency_seconds")),
        "sidejob_resource_baseline_latency_seconds"
    );
    assert_eq!(
        snapshot.metric_name(figure("drops")),
        "sidejob_resource_drops_total"
    );
    figure("window_latency_seconds");
    figure("limit_increases");
    figure("limit_decreases");
}
