//! An adaptive limit's bad settings are `BuildError`s naming the setting
//! (#29), never a panic and never a resource that silently does not adapt.

use std::time::Duration;

use sidejob::adaptive::{Adaptive, Aimd, Gradient, Vegas};
use sidejob::Resource;

fn setting_of(capacity: usize, adaptive: Adaptive) -> &'static str {
    Resource::builder()
        .capacity(capacity)
        .adaptive(adaptive)
        .build()
        .unwrap_err()
        .setting()
}

#[test]
fn each_bad_setting_is_named() {
    assert_eq!(setting_of(8, Adaptive::aimd().min_limit(0)), "min_limit");
    assert_eq!(
        setting_of(8, Adaptive::aimd().min_limit(10).max_limit(5)),
        "max_limit"
    );
    assert_eq!(
        setting_of(8, Adaptive::aimd().max_limit(1 << 24)),
        "max_limit"
    );
    assert_eq!(
        setting_of(8, Adaptive::aimd().window(Duration::ZERO)),
        "window"
    );
    assert_eq!(
        setting_of(8, Adaptive::aimd().min_samples(0)),
        "min_samples"
    );
    // The initial limit, the builder's capacity, must lie within the bounds.
    assert_eq!(setting_of(2, Adaptive::aimd().min_limit(4)), "capacity");
    assert_eq!(setting_of(2000, Adaptive::aimd()), "capacity");
    // Each rule's own parameters.
    assert_eq!(
        setting_of(8, Adaptive::from(Aimd::default().backoff(0.2))),
        "backoff"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Aimd::default().backoff(1.0))),
        "backoff"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Aimd::default().timeout(Duration::ZERO))),
        "timeout"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Gradient::default().tolerance(0.9))),
        "tolerance"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Gradient::default().tolerance(f64::NAN))),
        "tolerance"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Gradient::default().smoothing(0.0))),
        "smoothing"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Gradient::default().backoff(1.5))),
        "backoff"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Vegas::default().alpha(0))),
        "alpha"
    );
    assert_eq!(
        setting_of(8, Adaptive::from(Vegas::default().alpha(4).beta(3))),
        "beta"
    );
}

#[test]
fn the_message_says_what_was_wrong() {
    let err = Resource::builder()
        .capacity(8)
        .adaptive(Adaptive::gradient().min_limit(10).max_limit(5))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid setting `max_limit`: must be at least `min_limit` (10), was 5"
    );
}

#[test]
fn good_settings_build_and_start_at_the_capacity() {
    for adaptive in [Adaptive::aimd(), Adaptive::gradient(), Adaptive::vegas()] {
        let name = adaptive.algorithm_name();
        let resource = Resource::builder()
            .capacity(12)
            .adaptive(adaptive.min_limit(12).max_limit(12))
            .build()
            .unwrap();
        let stats = resource.adaptive_stats().unwrap();
        assert_eq!((stats.limit, stats.algorithm), (12, name));
        assert_eq!(resource.capacity(), 12);
    }
}
