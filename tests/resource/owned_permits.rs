//! Owned permits (#17 item 1): `'static`, released exactly once on whichever
//! thread drops them, also after every handle to their resource is gone,
//! and counted as borrowed permits are.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use sidejob::Resource;

#[test]
fn an_owned_permit_counts_and_releases_like_a_borrowed_one() {
    let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
    let first = resource.try_acquire_owned().unwrap();
    let second = resource.try_acquire_owned().unwrap();
    assert_eq!(resource.usage(), 2);
    assert!(resource.try_acquire_owned().is_err());
    assert!(resource.try_acquire().is_err());
    drop(first);
    assert_eq!(resource.usage(), 1);
    drop(second);
    let stats = resource.stats();
    assert_eq!((stats.usage, stats.accepted, stats.rejected), (0, 2, 2));
}

#[test]
fn owned_permits_move_between_threads() {
    let resource = Arc::new(Resource::builder().capacity(8).shards(2).build().unwrap());
    let permits: Vec<_> = (0..8)
        .map(|start| resource.try_acquire_owned_from(start).unwrap())
        .collect();
    thread::scope(|scope| {
        for permit in permits {
            scope.spawn(move || drop(permit));
        }
    });
    assert_eq!(resource.usage(), 0);
    assert_eq!(resource.stats().accepted, 8);
}

#[test]
fn a_permit_outlives_every_handle_to_its_resource() {
    let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
    let permits = [
        resource.try_acquire_owned_from(0).unwrap(),
        resource.try_acquire_owned_from(1).unwrap(),
    ];
    drop(resource);
    // Released on another thread, after the last handle is gone: the
    // counter is still there to take them back.
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let shards: Vec<usize> = permits.iter().map(|permit| permit.shard()).collect();
        drop(permits);
        done.send(shards).unwrap();
    });
    assert_eq!(finished.recv().unwrap(), [0, 1]);
}

#[test]
fn an_owned_permit_is_static_and_send() {
    fn static_send<T: Send + Sync + 'static>(_: &T) {}
    let resource = Arc::new(Resource::new(1));
    let permit = resource.try_acquire_owned().unwrap();
    static_send(&permit);
}

#[test]
fn a_thread_alternating_between_resources_counts_each_right() {
    let first = Arc::new(Resource::builder().capacity(2).shards(1).build().unwrap());
    let second = Arc::new(Resource::builder().capacity(1).shards(1).build().unwrap());
    for _ in 0..100 {
        let a = first.try_acquire_owned().unwrap();
        let b = second.try_acquire_owned().unwrap();
        assert!(second.try_acquire_owned().is_err());
        drop(a);
        let c = first.try_acquire_owned().unwrap();
        drop(b);
        drop(c);
    }
    assert_eq!((first.usage(), second.usage()), (0, 0));
    assert_eq!(first.stats().accepted, 200);
    assert_eq!(second.stats().accepted, 100);
    // One resource gone: its permits dropped here later still release into
    // a live counter.
    let late = first.try_acquire_owned().unwrap();
    drop(first);
    drop(late);
    assert!(second.try_acquire_owned().is_ok());
}
