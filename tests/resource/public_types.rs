//! The public types carry the traits users rely on: `Debug` everywhere, the
//! error traits, thread-safety, and a zero-sized `Overload`.

use std::sync::Arc;

use sidejob::{BuildError, Overload, OwnedPermit, Permit, Resource, ResourceBuilder};

fn is_send_sync<T: Send + Sync>() {}
fn is_static_send<T: Send + 'static>() {}
fn is_error<T: std::error::Error + Send + Sync + 'static>() {}

#[test]
fn thread_safety_and_error_traits() {
    is_send_sync::<Resource>();
    is_send_sync::<Permit<'static>>();
    is_static_send::<OwnedPermit>();
    is_error::<Overload>();
    is_error::<BuildError>();
    assert_eq!(std::mem::size_of::<Overload>(), 0);
    let copy = Overload;
    assert_eq!(copy, Overload.clone());
}

#[test]
fn every_public_type_has_a_useful_debug() {
    let resource = Arc::new(Resource::builder().capacity(4).shards(2).build().unwrap());
    let permit = resource.try_acquire_from(1).unwrap();
    let owned = resource.try_acquire_owned_from(1).unwrap();
    assert_eq!(format!("{permit:?}"), "Permit { shard: 1 }");
    assert_eq!(format!("{owned:?}"), "OwnedPermit { shard: 1 }");
    assert_eq!(
        format!("{resource:?}"),
        "Resource { capacity: 4, usage: 2, shards: 2 }"
    );
    let stats = format!("{:?}", resource.stats());
    assert!(stats.contains("accepted: 2") && stats.contains("ShardStats"));
    let builder: ResourceBuilder = Resource::builder().capacity(1);
    assert!(format!("{builder:?}").contains("capacity: Some(1)"));
    assert_eq!(format!("{Overload:?}"), "Overload");
    assert_eq!(
        Overload.to_string(),
        "overload: every shard is at its limit"
    );
}
