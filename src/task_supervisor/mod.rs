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
//! The live sets, their counters and the abort's wakers are the shared
//! mechanism of both supervisors (`crate::children::LiveSet`). Here:
//! `shared.rs` (the live set, the generations, ending a child), `tracked.rs` (the
//! future and its guard), `context.rs`, `builder.rs`, `stats.rs`, and with
//! the `tokio` feature `spawn.rs` (spawning and shutdown), `abortable.rs`
//! (a spawned child's abort), `handle.rs` and `task_error.rs`.
//!
//! # Design
//!
//! The live set's protocol (admit, end, close, snapshots) is told in
//! `children/live_set.rs`; what this face adds:
//!
//! * **The guard.** `try_track` hands back a `Tracked` future whose guard
//!   ends the child exactly once: when the future completes (the slot is
//!   freed then, not when the future is dropped later), when a poll panics
//!   (the guard sees it was inside a poll when it is dropped), or when it is
//!   dropped unfinished (aborted, cancelled, its runtime shut down). A
//!   closure that panics inside `try_track` ends its child before the panic
//!   goes on.
//! * **Cancellation** goes by generation. Each generation has a tokio-util
//!   `CancellationToken`; a child's context keeps only its generation's
//!   number, read at admission. `cancel_all` moves to a new generation under
//!   a lock (the number is stored after the generation, so a context never
//!   holds a number ahead of it) and then cancels the old token: children
//!   admitted later start uncancelled. `is_cancelled` compares numbers;
//!   `cancelled()` clones the token only if its generation is still current.
//!   A child clones no token: cloning one locks its node, which every child
//!   would share.
//! * **No count shared by all shards.** A child's guard and its context each
//!   clone their shard's *anchor* (an `Arc` to what the supervisor shares,
//!   one per shard, cache-padded), not the supervisor's own `Arc`, so spawns
//!   on different shards write no reference count in common. A child's
//!   place (shard, key, id) is 16 bytes and its entry one word: larger
//!   values, moved through memory, stalled on store forwarding (see
//!   `docs/benchmarks/history.md`).
//! * **`wait`** resolves once the supervisor is closed and no child is
//!   alive: `close` closes the set and counts it; the last child to end sees
//!   the set closed and signals (loom model (r) fails if the end reads
//!   `closed` before its removal).
//! * **`try_spawn`** (feature `tokio`) checks for a runtime before anything
//!   else (`NoRuntime` hands the closure back uncalled) and spawns the
//!   `Tracked` future wrapped in an `Abortable`, with no handle kept per
//!   child. `shutdown` closes, cancels, and waits up to the grace; then it
//!   aborts through the live set, which wakes the spawned children that
//!   wait. A spawned child leaves its task's waker in the live set the first
//!   time it waits (once: a task's waker always wakes that task), reading
//!   `aborting` under the same lock, and reads `aborting` at the start of
//!   every poll; so a child either left its waker before the abort visited
//!   its shard and is woken, or saw the abort and ends at once. Ending drops
//!   its future (counted as cancelled) and its handle answers `is_aborted`.
//!   Tracked children, not spawned by the supervisor, are not aborted: their
//!   owner polls them. A child that finishes in its first poll, as most
//!   short tasks do, pays nothing for any of this. The runtime check is
//!   tokio's `Handle::try_current()`, a clone of the runtime's handle: the
//!   one step of `try_spawn` that writes a line every worker writes
//!   (`try_spawn_on` skips it).

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
use crate::children::{ChildId, Refused, SpawnError};
use crate::error::BuildError;
use crate::rates::{RateStats, Rates, Sample};

pub use builder::TaskSupervisorBuilder;
pub use context::TaskContext;
#[cfg(feature = "tokio")]
pub use handle::TaskHandle;
pub use stats::{TaskShardStats, TaskSupervisorStats};
#[cfg(feature = "tokio")]
pub use task_error::TaskError;
pub use tracked::Tracked;

use shared::{Anchor, TaskShared};
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
        // Read before the admission, as a thread child's is: a child
        // admitted before a close is counted by it, so the `cancel_all`
        // after the close (a shutdown's) must find it in a generation it
        // cancels. Read after, it could find the new one and never be
        // cancelled (found by the adversarial review; loom model (ai)).
        let generation = self.shared.live.cancellation().generation();
        let child = match self.admit() {
            Ok(child) => child,
            Err(Refused::Overload) => return Err(SpawnError::Overload(task)),
            Err(Refused::Closed) => return Err(SpawnError::Closed(task)),
        };
        let context = TaskContext::new(child.place().id, generation, Arc::clone(child.anchor()));
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
        let live = &self.shared.live;
        let shard = live.take_slot(home_shard(live.shard_count()))?;
        match live.register(shard, ()) {
            Ok(place) => Ok(ChildGuard::new(Arc::clone(&self.anchors[shard]), place)),
            Err(()) => Err(Refused::Closed),
        }
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
        self.shared.live.ids(|()| true)
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
        self.shared.live.slots().usage()
    }

    /// The most children alive at once.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::TaskSupervisor::new(9).capacity(), 9);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.live.slots().capacity()
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
        self.shared.live.slots().set_capacity(capacity)
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
        self.shared.live.cancellation().cancel_all();
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
        // Counts the children alive for the drain `wait` awaits.
        self.shared.live.close();
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
        self.shared.live.is_closed()
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
        self.shared.live.drain().wait()
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
        let live = &self.shared.live;
        let (counts, totals) = live.live_counts_and_totals();
        let snapshot = live.slots().snapshot();
        let shards: Vec<TaskShardStats> = snapshot
            .shards
            .iter()
            .zip(counts)
            .map(|(counts, live)| TaskShardStats {
                limit: counts.limit as usize,
                usage: counts.usage as usize,
                live,
            })
            .collect();
        TaskSupervisorStats {
            capacity: self.capacity(),
            live: shards.iter().map(|shard| shard.live).sum(),
            spawned: totals.spawned,
            finished: totals.finished,
            panicked: totals.panicked,
            cancelled: totals.cancelled,
            rejected: totals.rejected,
            closed: totals.closed,
            shards,
        }
    }
}

/// What the rates sampler reads of a task supervisor: children admitted,
/// refused for overload, ended, and alive (their slots) now.
fn sample(shared: &TaskShared) -> Sample {
    let totals = shared.live.totals();
    Sample {
        accepted: totals.spawned,
        rejected: totals.rejected,
        completed: totals.finished,
        usage: shared.live.slots().usage(),
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
