//! AsyncObjectPool's tagged takes (#19): CouchDB's lookup order (exact
//! tag, same group, untagged, new, eviction at `max_size`), a failed
//! teaching, and a take dropped while `tag` runs, which destroys the
//! half-taught object and frees its slot.
#![cfg(feature = "tokio")]

use crate::support;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sidejob::{AsyncManager, AsyncObjectPool, AsyncTaggedManager, TakeError};
use support::async_objects::{poll_once, runtime, yield_once, CountingWaker};

const WAIT: Duration = Duration::from_secs(5);

/// Workers that remember what they were taught; teaching takes
/// `teach_polls` polls and fails for the document "bad".
#[derive(Default)]
struct Workers {
    made: AtomicUsize,
    alive: Arc<AtomicUsize>,
    teach_polls: AtomicUsize,
}

#[derive(Debug)]
struct Worker {
    id: usize,
    taught: Vec<String>,
    alive: Arc<AtomicUsize>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

impl AsyncManager for Workers {
    type Object = Worker;
    type Error = std::io::Error;

    async fn create(&self) -> std::io::Result<Worker> {
        self.alive.fetch_add(1, Ordering::SeqCst);
        Ok(Worker {
            id: self.made.fetch_add(1, Ordering::SeqCst),
            taught: Vec::new(),
            alive: Arc::clone(&self.alive),
        })
    }
}

impl AsyncTaggedManager for Workers {
    type Tag = (&'static str, &'static str);

    fn tag(
        &self,
        worker: &mut Worker,
        tag: &Self::Tag,
    ) -> impl Future<Output = std::io::Result<()>> + Send {
        let polls = self.teach_polls.load(Ordering::SeqCst);
        let tag = *tag;
        async move {
            for _ in 0..polls {
                yield_once().await;
            }
            if tag.1 == "bad" {
                return Err(std::io::Error::other("cannot load"));
            }
            worker.taught.push(format!("{}/{}", tag.0, tag.1));
            Ok(())
        }
    }
}

#[test]
fn tagged_takes_follow_couchdbs_lookup_order() {
    runtime().block_on(async {
        let pool = AsyncObjectPool::builder(Workers::default())
            .max_size(2)
            .build()
            .await
            .unwrap();
        // New, taught "db/a".
        let first = pool.take_tagged(&("db", "a"), WAIT).await.unwrap();
        let first_id = first.id;
        drop(first);
        // Exact tag: the same worker, nothing taught again.
        let again = pool.take_tagged(&("db", "a"), WAIT).await.unwrap();
        assert_eq!((again.id, again.taught.len()), (first_id, 1));
        drop(again);
        // Same group: the same worker, taught "db/b" too.
        let group = pool.take_tagged(&("db", "b"), WAIT).await.unwrap();
        assert_eq!(group.id, first_id);
        assert_eq!(group.taught, ["db/a", "db/b"]);
        assert_eq!(group.tag(), Some(&("db", "b")));
        // Another group while that one is out: a new worker.
        let other = pool.take_tagged(&("other", "x"), WAIT).await.unwrap();
        assert_ne!(other.id, first_id);
        drop((group, other));
        // At max_size with both idle and tagged: a third group evicts the
        // least recently used one (one, for max_size 2) and makes a new one.
        let third = pool.take_tagged(&("third", "y"), WAIT).await.unwrap();
        assert_eq!(third.taught, ["third/y"]);
        assert_eq!(pool.stats().evicted, 1);
        assert_eq!(pool.status().size, 2);
    });
}

#[test]
fn a_failed_teaching_destroys_the_object_and_frees_its_slot() {
    runtime().block_on(async {
        let workers = Workers::default();
        let alive = Arc::clone(&workers.alive);
        let pool = AsyncObjectPool::builder(workers)
            .max_size(1)
            .build()
            .await
            .unwrap();
        let taken = pool.take_tagged(&("db", "bad"), WAIT).await;
        assert!(matches!(taken, Err(TakeError::Tag(_))), "{taken:?}");
        assert_eq!((pool.status().size, alive.load(Ordering::SeqCst)), (0, 0));
    });
}

#[test]
fn a_take_dropped_while_tag_runs_destroys_the_half_taught_object() {
    runtime().block_on(async {
        let workers = Workers::default();
        workers.teach_polls.store(3, Ordering::SeqCst);
        let alive = Arc::clone(&workers.alive);
        let pool = AsyncObjectPool::builder(workers)
            .max_size(1)
            .init_size(1)
            .build()
            .await
            .unwrap();
        let waker = Arc::new(CountingWaker::default());
        {
            let mut take = pin!(pool.take_tagged(&("db", "a"), WAIT));
            assert!(poll_once(take.as_mut(), &waker).is_pending());
            assert!(poll_once(take.as_mut(), &waker).is_pending());
        }
        let status = pool.status();
        assert_eq!((status.size, status.idle), (0, 0), "{status:?}");
        assert_eq!(alive.load(Ordering::SeqCst), 0);
        assert_eq!(pool.stats().cancelled, 1);
        assert!(pool.try_take().await.is_ok(), "the slot is whole");
    });
}
