//! The object pool's hand-offs: a returned object or a freed slot reaches a
//! waiting taker, with no lost wake-up and no object handed out twice.

use super::*;

use std::time::Duration;

use loom::sync::atomic::AtomicBool;
use sidejob::{Manager, ObjectPool, PoolGroup, TaggedManager, TakeError};

/// Long enough never to pass: loom models no time, so a waiter that
/// nobody serves would be reported as a deadlock.
const FOREVER: Duration = Duration::from_secs(3600);

/// Makes numbered objects; the first creation fails if told to.
struct Numbers {
    made: AtomicUsize,
    fail_first: AtomicBool,
}

#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused")
    }
}

impl std::error::Error for Refused {}

impl Manager for Numbers {
    type Object = usize;
    type Error = Refused;

    fn create(&self) -> Result<usize, Refused> {
        if self.fail_first.swap(false, Ordering::SeqCst) {
            return Err(Refused);
        }
        Ok(self.made.fetch_add(1, Ordering::SeqCst))
    }
}

impl TaggedManager for Numbers {
    type Tag = (u8, u8);
}

fn pool(fail_first: bool) -> Arc<ObjectPool<Numbers>> {
    let numbers = Numbers {
        made: AtomicUsize::new(0),
        fail_first: AtomicBool::new(fail_first),
    };
    Arc::new(
        ObjectPool::builder(numbers)
            .max_size(1)
            .shards(1)
            .build()
            .unwrap(),
    )
}

/// (h) One object: a holder returns it while another taker waits for
/// it. The taker always gets it (the return either finds the waiter or
/// the waiter's scan finds the object), only one object is ever made,
/// and it ends idle with nobody left waiting.
#[test]
fn return_racing_a_waiter_reaches_it() {
    loom::model(|| {
        let pool = pool(false);
        let holders = Arc::new(Holders::new(1));
        let returner = {
            let (pool, holders) = (Arc::clone(&pool), Arc::clone(&holders));
            thread::spawn(move || {
                if let Ok(object) = pool.try_take() {
                    holders.enter();
                    holders.leave();
                    drop(object);
                }
            })
        };
        let object = pool.take(FOREVER).expect("the waiter is served");
        holders.enter();
        assert_eq!(*object, 0, "only one object is ever made");
        holders.leave();
        drop(object);
        returner.join().unwrap();
        let status = pool.status();
        assert_eq!((status.size, status.idle, status.waiting), (1, 1, 0));
        assert_eq!(pool.stats().creates, 1);
    });
}

/// (i) A creation fails while another taker waits for the slot: the
/// failure hands the slot on, so exactly one taker gets the error and
/// the other gets the one object made; nobody waits forever.
#[test]
fn creation_failure_racing_a_waiter_hands_on_the_slot() {
    loom::model(|| {
        let pool = pool(true);
        let other = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || match pool.try_take() {
                Ok(_) => Ok(()),
                Err(error) => Err(error),
            })
        };
        let mine = pool.take(FOREVER).map(|object| *object);
        let other = other.join().unwrap();
        match (&mine, &other) {
            (Ok(0), Err(TakeError::Create(_))) => {}
            (Err(TakeError::Create(_)), Ok(())) => {}
            // The other taker found the slot taken while the failing
            // creation held it, and did not wait (`try_take`).
            (Err(TakeError::Create(_)), Err(TakeError::Overload)) => {}
            outcome => panic!("unexpected {outcome:?}"),
        }
        let stats = pool.stats();
        assert_eq!(stats.create_failures, 1);
        let status = pool.status();
        assert_eq!(
            (status.size, status.creating, status.waiting),
            (stats.creates as usize, 0, 0)
        );
    });
}

/// (j) As (h) with a tagged object, which idles on the tag shelf instead
/// of a stack: its return reads `waiting` under the shelf's lock, and a
/// waiter's scan looks at the shelf, so the waiter is served either way.
#[test]
fn tagged_return_racing_a_waiter_reaches_it() {
    loom::model(|| {
        let pool = pool(false);
        let returner = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let object = pool.take_tagged(&(1, 2), FOREVER).expect("served");
                assert_eq!(object.tag(), Some(&(1, 2)));
                drop(object);
            })
        };
        let object = pool.take(FOREVER).expect("the waiter is served");
        assert_eq!(*object, 0, "only one object is ever made");
        drop(object);
        returner.join().unwrap();
        let status = pool.status();
        assert_eq!((status.size, status.idle, status.waiting), (1, 1, 0));
        assert_eq!(pool.stats().creates, 1);
    });
}

/// Counts the objects made and destroyed; when the last handle to the pool
/// lets go of the manager (the pool's or a creation helper's), every
/// object made must have been destroyed exactly once.
#[derive(Default)]
struct Counted {
    made: AtomicUsize,
    destroyed: AtomicUsize,
}

impl Manager for Counted {
    type Object = usize;
    type Error = Refused;

    fn create(&self) -> Result<usize, Refused> {
        Ok(self.made.fetch_add(1, Ordering::SeqCst))
    }

    fn destroy(&self, _object: usize) {
        self.destroyed.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        assert_eq!(
            self.made.load(Ordering::SeqCst),
            self.destroyed.load(Ordering::SeqCst),
            "an object was lost or destroyed twice"
        );
    }
}

/// (n) A creation on its helper thread races its taker's deadline (a
/// `create_timeout` so short that the taker gives up unless the object is
/// already there): the object is either handed to the taker or, late,
/// destroyed by the helper, never both and never lost (the manager's drop
/// checks), and a late object frees its slot to the next waiter, which is
/// always served: loom reports a waiter left waiting as a deadlock.
#[test]
fn create_timeout_racing_the_late_object() {
    loom::model(|| {
        let pool = ObjectPool::builder(Counted::default())
            .max_size(1)
            .shards(1)
            .create_timeout(Duration::from_nanos(1))
            .build()
            .unwrap();
        match pool.try_take() {
            Ok(object) => drop(object),
            Err(TakeError::CreateTimeout) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
        // The slot comes back, whether the object went idle or the late
        // object is destroyed: this take gets the object, or the slot and
        // then (likely) a timeout of its own creation.
        match pool.take(FOREVER) {
            Ok(object) => drop(object),
            Err(TakeError::CreateTimeout) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
        let stats = pool.stats();
        assert!(stats.creates <= 2);
    });
}

/// (o) A group take waits at two members (one object each, both held)
/// while both objects come back at once: whichever member frees first
/// serves it, exactly one object is handed to it, the other ends idle at
/// its member, and neither queue keeps an entry. Loom reports a take left
/// waiting as a deadlock.
#[test]
fn a_group_wait_is_served_by_either_member_once() {
    loom::model(|| {
        let group = Arc::new(PoolGroup::new());
        for key in [0u8, 1] {
            let numbers = Numbers {
                made: AtomicUsize::new(0),
                fail_first: AtomicBool::new(false),
            };
            let pool = ObjectPool::builder(numbers)
                .max_size(1)
                .shards(1)
                .build()
                .unwrap();
            group.add_pool(key, pool).unwrap();
        }
        let returners: Vec<_> = [0u8, 1]
            .map(|key| group.pool(&key).unwrap().try_take_owned().unwrap())
            .into_iter()
            .map(|object| thread::spawn(move || drop(object)))
            .collect();
        let got = group.take(FOREVER).expect("the group take is served");
        for returner in returners {
            returner.join().unwrap();
        }
        let status = group.status();
        let idle: usize = status.iter().map(|(_, status)| status.idle).sum();
        let waiting: usize = status.iter().map(|(_, status)| status.waiting).sum();
        assert_eq!((idle, waiting), (1, 0), "{status:?}");
        drop(got);
    });
}
