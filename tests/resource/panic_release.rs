//! Every permit is released exactly once, also when its holder panics.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread;

use sidejob::Resource;

#[test]
fn a_permit_is_released_when_its_holder_unwinds() {
    let resource = Resource::builder().capacity(1).shards(1).build().unwrap();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _permit = resource.try_acquire().unwrap();
        panic!("handler failed");
    }));
    assert!(outcome.is_err());
    assert_eq!(resource.usage(), 0);
    assert!(resource.try_acquire().is_ok());
}

#[test]
fn an_owned_permit_is_released_when_its_thread_panics() {
    let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
    let permit = resource.try_acquire_owned().unwrap();
    let worker = thread::spawn(move || {
        let _permit = permit;
        panic!("worker failed");
    });
    assert!(worker.join().is_err());
    assert_eq!(resource.usage(), 0);
    let stats = resource.stats();
    assert_eq!((stats.accepted, stats.usage), (1, 0));
}
