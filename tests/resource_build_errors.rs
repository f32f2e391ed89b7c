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
fn a_capacity_the_shards_cannot_hold_is_refused_by_name() {
    let err = Resource::builder()
        .capacity(usize::MAX)
        .shards(2)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "capacity");
    assert!(message(err).contains("2 shards can hold"));
}

#[test]
fn build_error_is_a_std_error() {
    let err: Box<dyn std::error::Error + Send + Sync> =
        Box::new(Resource::builder().build().unwrap_err());
    assert!(err.to_string().starts_with("invalid setting"));
}
