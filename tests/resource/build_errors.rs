//! Bad settings get a `BuildError` that names the setting and says why.

use sidejob::{BuildError, Resource, MAX_SHARDS};

fn message(err: BuildError) -> String {
    err.to_string()
}

#[test]
fn zero_shards_is_refused_by_name() {
    let err = Resource::builder()
        .capacity(4)
        .shards(0)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "shards");
    assert_eq!(message(err), "invalid setting `shards`: must be at least 1");
}

#[test]
fn too_many_shards_is_refused_by_name() {
    let err = Resource::builder()
        .capacity(4)
        .shards(MAX_SHARDS + 1)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "shards");
    assert!(message(err).contains(&MAX_SHARDS.to_string()));
}

#[test]
fn a_missing_capacity_is_refused_by_name() {
    let err = Resource::builder().shards(2).build().unwrap_err();
    assert_eq!(err.setting(), "capacity");
    assert_eq!(message(err), "invalid setting `capacity`: must be set");
}

#[test]
fn a_capacity_above_the_maximum_is_refused_by_name() {
    let err = Resource::builder()
        .capacity(usize::MAX)
        .shards(2)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "capacity");
    assert!(message(err).contains("above the maximum of 16777215"));
    // One shard may lease the whole capacity, so the maximum does not grow
    // with the shards.
    assert!(Resource::builder()
        .capacity(16_777_215)
        .shards(1)
        .build()
        .is_ok());
    let err = Resource::builder()
        .capacity(16_777_216)
        .shards(64)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "capacity");
}

#[test]
fn shares_outside_the_rules_are_refused_by_name() {
    use sidejob::Priority;
    let cases = [
        (Priority::Sheddable, 0.0, "must be in (0, 1]"),
        (Priority::Normal, 1.5, "must be in (0, 1]"),
        (Priority::Normal, f64::NAN, "must be in (0, 1]"),
        (Priority::Critical, 0.9, "always 1"),
    ];
    for (priority, share, reason) in cases {
        let err = Resource::builder()
            .capacity(10)
            .share(priority, share)
            .build()
            .unwrap_err();
        assert_eq!(err.setting(), "share");
        assert!(message(err).contains(reason), "{priority} {share}");
    }
    let err = Resource::builder()
        .capacity(10)
        .share(Priority::Normal, 0.5)
        .share(Priority::Sheddable, 0.8)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "share");
    assert!(message(err).contains("the sheddable share (0.8) exceeds the normal share (0.5)"));
}

#[test]
fn build_error_is_a_std_error() {
    let err: Box<dyn std::error::Error + Send + Sync> =
        Box::new(Resource::builder().build().unwrap_err());
    assert!(err.to_string().starts_with("invalid setting"));
}
