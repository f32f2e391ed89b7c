//! [`TaskSupervisor`]: a strict, capacity-limited supervisor of async tasks
//! that knows its live children, on the same admission core as every face.
//!
//! Runtime-agnostic at its centre: [`try_track`](TaskSupervisor::try_track)
//! admits a task and hands back a [`Tracked`] future to spawn on any
//! executor; with the `tokio` feature, `try_spawn` spawns it on a tokio
//! runtime and returns a `TaskHandle`.
//!
//! # Protocol
//!
//! A child takes a slot of the sharded counter (on its thread's
//! home shard; no lock or line shared by all shards), then joins its shard's
//! live set under that set's lock, where it reads `closed`. Its [`Tracked`]
//! future owns a guard that ends it exactly once: on completion, on a
//! panicking poll, or on drop. Ending removes it from the live set, frees the
//! slot, counts it, and, if the supervisor is closed, checks every live set
//! and signals `wait` when all are empty. `close` sets `closed` and then
//! takes each set's lock to count, so a child either registered before that
//! shard was counted or saw `closed` and was refused.
//!
//! Cancellation goes by generation: a child's context keeps the number of
//! the generation it was admitted in, and each generation has a tokio-util
//! `CancellationToken`. `cancel_all` moves to a fresh generation and cancels
//! the old token, so the children admitted later start uncancelled. A
//! child clones no token (cloning one locks its node, which all children
//! share); its guard and its context each hold a clone of their shard's
//! anchor, an `Arc` whose count is on the shard's own line. The live-set
//! counters are written under the live set's lock, with no locked
//! instruction.
//!
//! `shutdown` aborts the spawned children that outlive its grace without a
//! handle kept per child: a spawned child leaves its waker in its live-set
//! entry the first time it waits, and `shutdown` wakes it to end (see
//! `abortable.rs`).
//!
//! # Where each part lives
//!
//! `shared.rs` (live sets, counters, ending a child), `tracked.rs` (the
//! future and its guard), `context.rs`, `builder.rs`, `stats.rs`, and with
//! the `tokio` feature `spawn.rs` (spawning and shutdown), `abortable.rs`
//! (a spawned child's abort), `handle.rs` and `task_error.rs`.

#[cfg(feature = "tokio")]
mod abortable;
mod builder;
mod context;
#[cfg(feature = "tokio")]
mod handle;
mod metered;
mod shared;
#[cfg(feature = "tokio")]
mod spawn;
mod stats;
#[cfg(feature = "tokio")]
mod task_error;
mod tracked;

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::admission::home_shard;
use crate::children::{ChildId, SpawnError};
use crate::error::BuildError;
use crate::rates::{RateStats, Rates, Sample};
use crate::sync::{spin_lock, Ordering};

pub use builder::TaskSupervisorBuilder;
pub use context::TaskContext;
#[cfg(feature = "tokio")]
pub use handle::TaskHandle;
pub use stats::{TaskShardStats, TaskSupervisorStats};
#[cfg(feature = "tokio")]
pub use task_error::TaskError;
pub use tracked::Tracked;

use shared::{bump, Anchor, TaskShared};
use tracked::ChildGuard;

/// A strict, capacity-limited supervisor of async tasks that always knows
/// which are alive.
///
/// At most `capacity` children are alive at any instant: a task beyond it is
/// refused at once with [`SpawnError::Overload`], the closure handed back,
/// never queued. Clones share the bound. A child holds its slot from
/// `try_track` (or `try_spawn`) until its future completes, panics or is
/// dropped.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let supervisor = sidejob::TaskSupervisor::new(2);
/// let first = supervisor.try_track(|_| async { "done" }).unwrap();
/// let second = supervisor.try_track(|_| async { "done" }).unwrap();
/// assert!(supervisor.try_track(|_| async { "refused" }).unwrap_err().is_overload());
/// assert_eq!(supervisor.which_children(), [first.id(), second.id()]);
/// assert_eq!((first.await, second.await), ("done", "done"));
/// assert!(supervisor.which_children().is_empty());
/// # });
/// ```
#[derive(Clone)]
pub struct TaskSupervisor {
    /// Fed once a second by the process's sampler (see `crate::rates`).
    /// Declared first, so dropped first: the face leaves the sampler
    /// before it lets go of its core.
    rates: Arc<Rates>,
    shared: Arc<TaskShared>,
    /// One per shard: what a child admitted there clones (see `Anchor`).
    anchors: Arc<[Anchor]>,
}

impl TaskSupervisor {
    /// A supervisor of at most `capacity` live tasks, one shard per CPU.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds what the shards can hold.
    /// [`TaskSupervisor::builder`] reports that as a [`BuildError`] instead.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(64);
    /// assert_eq!(supervisor.capacity(), 64);
    /// ```
    pub fn new(capacity: usize) -> Self {
        match TaskSupervisor::builder().capacity(capacity).build() {
            Ok(supervisor) => supervisor,
            Err(error) => panic!("TaskSupervisor::new({capacity}): {error}"),
        }
    }

    /// A builder, for the shard count and a name.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::builder().capacity(8).shards(2).build()?;
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn builder() -> TaskSupervisorBuilder {
        TaskSupervisorBuilder::default()
    }

    /// Admits `task`: takes a slot and a place in the live set, calls `task`
    /// with the child's [`TaskContext`], and returns the future it made,
    /// wrapped in a [`Tracked`] to spawn on any executor. The child is
    /// counted and listed from now until that future completes, panics or
    /// is dropped.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Overload`] when every slot is taken, and
    /// [`SpawnError::Closed`] after [`close`](Self::close); the closure
    /// comes back, uncalled.
    ///
    /// # Panics
    ///
    /// If `task` panics, after its slot is freed (counted in `panicked`).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let tracked = supervisor.try_track(|context| async move { context.id() })?;
    /// let id = tracked.id();
    /// assert_eq!(tracked.await, id);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn try_track<F, Fut>(&self, task: F) -> Result<Tracked<Fut>, SpawnError<F>>
    where
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future,
    {
        let child = match self.admit() {
            Ok(child) => child,
            Err(Refused::Overload) => return Err(SpawnError::Overload(task)),
            Err(Refused::Closed) => return Err(SpawnError::Closed(task)),
        };
        let context = TaskContext::new(
            child.place().id,
            self.shared.current_generation(),
            Arc::clone(child.anchor()),
        );
        // A panicking closure: the slot is freed and the child counted as
        // panicked before the panic goes on.
        let future = match catch_unwind(AssertUnwindSafe(|| task(context))) {
            Ok(future) => future,
            Err(panic) => {
                child.end_panicked();
                resume_unwind(panic)
            }
        };
        Ok(Tracked::new(future, child))
    }

    /// A slot and a place in the live set, owned by the returned guard.
    /// Always inlined: returned from a call, the guard went through memory
    /// and its copy into the task stalled on store forwarding.
    #[inline(always)]
    fn admit(&self) -> Result<ChildGuard, Refused> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Err(self.refused_closed());
        }
        let start = home_shard(shared.shards.len());
        let Ok(shard) = shared.slots.admit_from(start) else {
            bump(&shared.shards[start].rejected);
            return Err(Refused::Overload);
        };
        match shared.register(shard) {
            Some(place) => Ok(ChildGuard::new(Arc::clone(&self.anchors[shard]), place)),
            None => Err(Refused::Closed),
        }
    }

    #[cold]
    fn refused_closed(&self) -> Refused {
        let start = home_shard(self.shared.shards.len());
        bump(&self.shared.shards[start].closed);
        Refused::Closed
    }

    /// The ids of the children alive now, in order. Exact when nothing
    /// starts or ends meanwhile; never lists a child that has ended.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(3);
    /// let task = supervisor.try_track(|_| async {}).unwrap();
    /// assert_eq!(supervisor.which_children(), [task.id()]);
    /// drop(task);
    /// assert!(supervisor.which_children().is_empty());
    /// ```
    pub fn which_children(&self) -> Vec<ChildId> {
        self.shared.which_children()
    }

    /// How many children hold a slot now.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(3);
    /// let _task = supervisor.try_track(|_| async {}).unwrap();
    /// assert_eq!(supervisor.count(), 1);
    /// ```
    pub fn count(&self) -> usize {
        self.shared.slots.usage()
    }

    /// The most children alive at once.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::TaskSupervisor::new(9).capacity(), 9);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.slots.capacity()
    }

    /// The supervisor's name.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::TaskSupervisor::new(1).name(), "tasks");
    /// ```
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Changes the capacity: growing admits at once, shrinking revokes
    /// nothing (children above the new capacity run on, and no child is
    /// admitted until the count is below it).
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` when the shards cannot hold it;
    /// nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let _held = supervisor.try_track(|_| async {}).unwrap();
    /// supervisor.set_capacity(2)?;
    /// assert!(supervisor.try_track(|_| async {}).is_ok());
    /// assert_eq!(supervisor.set_capacity(usize::MAX).unwrap_err().setting(), "capacity");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn set_capacity(&self, capacity: usize) -> Result<(), BuildError> {
        self.shared.slots.set_capacity(capacity)
    }

    /// Asks every live child to stop: their contexts' `cancelled()`
    /// resolve. Children admitted afterwards start uncancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(2);
    /// let before = supervisor.try_track(|context| async move { context.is_cancelled() }).unwrap();
    /// supervisor.cancel_all();
    /// let after = supervisor.try_track(|context| async move { context.is_cancelled() }).unwrap();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert!(before.await);
    /// assert!(!after.await);
    /// # });
    /// ```
    pub fn cancel_all(&self) {
        self.shared.cancel_all();
    }

    /// Refuses new children from now on ([`SpawnError::Closed`]); cancels
    /// nobody. Once closed, [`wait`](Self::wait) ends when the last child
    /// does.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(2);
    /// supervisor.close();
    /// assert!(matches!(supervisor.try_track(|_| async {}), Err(sidejob::SpawnError::Closed(_))));
    /// ```
    pub fn close(&self) {
        let shared = &self.shared;
        shared.closed.store(true, Ordering::Release);
        // Counted under each live set's lock, after `closed` is set: see
        // the module's `# Protocol`.
        shared.signal_if_idle();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// assert!(!supervisor.is_closed());
    /// supervisor.close();
    /// assert!(supervisor.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// A future that resolves once the supervisor is closed and no child
    /// is alive (tokio-util's `TaskTracker::wait`).
    ///
    /// # Cancel safety
    ///
    /// Dropping it loses nothing; a new one resolves just the same.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let task = supervisor.try_track(|_| async {}).unwrap();
    /// supervisor.close();
    /// task.await;
    /// supervisor.wait().await; // closed, and the last child ended
    /// # });
    /// ```
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        self.shared.idle.clone().cancelled_owned()
    }

    /// The in, out and rejected rates of the last whole second, and the
    /// last 60 seconds' and all-time counts with their average and peak
    /// rates and usage, as Erlang sidejob reports them: "in" is a child
    /// admitted, "out" one ended (however), "rejected" a refusal for
    /// overload.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let task = supervisor.try_track(|_| async {}).unwrap();
    /// assert!(supervisor.try_track(|_| async {}).is_err());
    /// drop(task); // dropped unfinished: ended
    /// let total = supervisor.rates().total;
    /// assert_eq!((total.accepted, total.rejected, total.completed), (1, 1, 1));
    /// ```
    pub fn rates(&self) -> RateStats {
        self.rates.stats(sample(&self.shared))
    }

    /// A snapshot of the counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(2);
    /// let _task = supervisor.try_track(|_| async {}).unwrap();
    /// let stats = supervisor.stats();
    /// assert_eq!((stats.capacity, stats.live, stats.spawned), (2, 1, 1));
    /// ```
    pub fn stats(&self) -> TaskSupervisorStats {
        let shared = &self.shared;
        let capacity = self.capacity();
        // Every shard's live set locked at once (in shard order; nothing
        // else holds two), so the counts are of one moment.
        let sets: Vec<_> = shared
            .shards
            .iter()
            .map(|shard| spin_lock(&shard.live))
            .collect();
        let live: Vec<usize> = sets.iter().map(|set| set.children.len()).collect();
        drop(sets);
        let snapshot = shared.slots.snapshot();
        let shards: Vec<TaskShardStats> = snapshot
            .shards
            .iter()
            .zip(live)
            .map(|(counts, live)| TaskShardStats {
                limit: counts.limit as usize,
                usage: counts.usage as usize,
                live,
            })
            .collect();
        let sum = |field: fn(&shared::TaskShard) -> &crate::sync::AtomicU64| -> u64 {
            shared
                .shards
                .iter()
                .map(|shard| field(shard).load(Ordering::Relaxed))
                .sum()
        };
        TaskSupervisorStats {
            capacity,
            live: shards.iter().map(|shard| shard.live).sum(),
            spawned: sum(|s| &s.spawned),
            finished: sum(|s| &s.finished),
            panicked: sum(|s| &s.panicked),
            cancelled: sum(|s| &s.cancelled),
            rejected: sum(|s| &s.rejected),
            closed: sum(|s| &s.closed),
            shards,
        }
    }
}

/// Why a child was not admitted.
enum Refused {
    Overload,
    Closed,
}

/// What the rates sampler reads of a task supervisor: children admitted,
/// refused for overload, ended, and alive (their slots) now.
fn sample(shared: &TaskShared) -> Sample {
    let sum = |field: fn(&shared::TaskShard) -> &crate::sync::AtomicU64| -> u64 {
        shared
            .shards
            .iter()
            .map(|shard| field(shard).load(Ordering::Relaxed))
            .sum()
    };
    Sample {
        accepted: sum(|shard| &shard.spawned),
        rejected: sum(|shard| &shard.rejected),
        completed: sum(|shard| &shard.finished),
        usage: shared.slots.usage(),
    }
}

impl fmt::Debug for TaskSupervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSupervisor")
            .field("name", &self.shared.name)
            .field("capacity", &self.capacity())
            .field("count", &self.count())
            .field("closed", &self.is_closed())
            .finish()
    }
}
