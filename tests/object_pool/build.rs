//! Bad settings are `BuildError`s naming the setting.

use crate::support;
use sidejob::ObjectPool;
use support::objects::{Members, Script};

fn refused(
    configure: impl FnOnce(sidejob::ObjectPoolBuilder<Script>) -> sidejob::ObjectPoolBuilder<Script>,
) -> String {
    let builder = ObjectPool::builder(Script(Members::new()));
    let err = configure(builder).build().unwrap_err();
    format!("{}: {err}", err.setting())
}

#[test]
fn bad_settings_are_refused_by_name() {
    assert_eq!(
        refused(|b| b),
        "max_size: invalid setting `max_size`: must be set"
    );
    assert_eq!(
        refused(|b| b.max_size(0)),
        "max_size: invalid setting `max_size`: must be at least 1"
    );
    assert_eq!(
        refused(|b| b.max_size(2).init_size(3)),
        "init_size: invalid setting `init_size`: 3 is above `max_size` (2)"
    );
    assert_eq!(
        refused(|b| b.max_size(2).min_idle(5)),
        "min_idle: invalid setting `min_idle`: 5 is above `max_size` (2)"
    );
    assert_eq!(
        refused(|b| b.max_size(2).shards(0)),
        "shards: invalid setting `shards`: must be at least 1"
    );
    assert!(refused(|b| b.max_size(2).shards(sidejob::MAX_SHARDS + 1)).starts_with("shards:"));
    assert!(refused(|b| b.max_size(usize::MAX).shards(1)).starts_with("max_size:"));
}

#[test]
fn the_limits_may_equal_max_size() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(2)
        .init_size(2)
        .min_idle(2)
        .build()
        .unwrap();
    assert_eq!(pool.status().idle, 2);
    assert_eq!(members.live(), 2);
}

#[test]
fn a_name_with_a_nul_byte_is_refused_up_front() {
    // The maintainer thread is named after the pool; a NUL byte would make
    // starting it panic, at build or later when a setting first needs it.
    assert_eq!(
        refused(|b| b.max_size(2).name("a\0b")),
        "name: invalid setting `name`: must not contain a NUL byte"
    );
}
