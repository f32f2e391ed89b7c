//! [`Supervisor`]: a capacity-limited supervisor of spawned children, each on
//! its own thread, that knows its live children at every moment.
//!
//! # Protocol
//!
//! A spawn takes a slot on a shard of the admission core's sharded counter
//! (its home shard, to which capacity moves), registers the child in that shard's live set, and
//! only then starts the thread. The child runs its closure under
//! `catch_unwind`; when it returns or panics, it leaves the live set, frees
//! its slot, and only then does the thread's result become available to
//! [`ChildHandle::join`]. So the live set never holds more children than the
//! slots taken, and the slots never exceed the capacity.
//!
//! The live set and its slots are the shared mechanism of both supervisors
//! (`crate::children::LiveSet`); each child keeps its state (`child.rs`)
//! in it. Shutdown closes the set, then reads every child in every shard's
//! set under that set's lock, and cancels their generation (the live set's
//! cancellation, which the async face shares). A spawn checks the set is
//! open under the same lock before it registers. So each child is either
//! registered before its shard is swept, and cancelled, or refused.
//!
//! # Orderings
//!
//! The live set's (`children/live_set.rs`, with its cancellation's and its
//! drain's) and `shared.rs`'s. A child's `finished` flag is
//! `Release`/`Acquire`, so a spawner that sees it finished also sees what
//! happened before. The counters are `Relaxed` figures.
//!
//! # Design
//!
//! The live set's protocol (admit, end, close, snapshots) is told in
//! `children/live_set.rs`; what this face adds:
//!
//! * **Spawn.** The closure waits in a slot that the thread empties, so that
//!   if the OS refuses the thread (`SpawnError::Thread`) the child is
//!   unregistered, its slot given back and its closure returned; a shutdown
//!   waiting for the live set is woken as by an ending child, and does not
//!   count that child as cancelled. `which_children` lists a child once its
//!   thread has started (spawn marks it, and so does the child), in one
//!   snapshot of every set.
//! * **End.** The child runs under `catch_unwind`. Whether it returns or
//!   panics, it leaves the live set and frees its slot, and only then is its
//!   result available to `join`. `join` therefore never returns while the
//!   child still counts, and `is_finished` means gone. A panic is counted and
//!   its message reaches `join` as `ChildPanicked`. Dropping a handle
//!   detaches the child; the live set keeps tracking it until it ends.
//! * **Shutdown(grace).** Close the set, read every child registered before
//!   (each set under its lock) and cancel their generation. Cancellation is
//!   cooperative: `ChildContext::is_cancelled`, or `wait_cancelled(timeout)`
//!   to sleep until asked. The call then waits for the live set's drain
//!   (the close counted the children; the last of them to leave signals)
//!   until the grace runs out, and until every start under way resolved
//!   (the OS started the thread or refused it), so the report knows which
//!   ran. It reports the children still running, which stay tracked.
//! * **Capacity** can change at run time (`set_capacity`, with the
//!   `Resource` semantics: nothing is stopped, and spawns are refused until
//!   fewer than the new capacity live).

mod builder;
mod child;
mod error;
mod handle;
mod metered;
mod shared;
mod stats;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::admission::home_shard;
use crate::children::{ChildId, Refused, ShutdownReport, SpawnError};
use crate::error::BuildError;
use crate::panics::{drop_quietly, panic_message};
use crate::rates::{RateStats, Rates, Sample};
use crate::sync::{lock, spawn_named, wait_timeout, Mutex, Ordering};

pub use builder::SupervisorBuilder;
pub use child::ChildContext;
use child::ChildState;
pub use error::ChildPanicked;
pub use handle::ChildHandle;
use shared::Shared;
pub use stats::{SupervisorShardStats, SupervisorStats};

/// A supervisor of spawned children with a strict limit on how many are
/// alive at once.
///
/// [`spawn`](Self::spawn) starts a child on its own thread, or fails fast
/// with [`SpawnError::Overload`] (handing the closure back) when `capacity`
/// children are already running. The supervisor always knows its live
/// children ([`which_children`](Self::which_children)). A child's panic is
/// caught, counted, and reported through its handle.
///
/// # Examples
///
/// ```
/// use sidejob::Supervisor;
///
/// let supervisor = Supervisor::new(8);
/// let child = supervisor.spawn(|context| format!("hello from {}", context.id()))?;
/// let id = child.id();
/// assert_eq!(child.join()?, format!("hello from {id}"));
/// assert!(supervisor.which_children().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Supervisor {
    /// Fed once a second by the process's sampler (see `crate::rates`).
    /// Declared first, so dropped first: the face leaves the sampler
    /// before it lets go of its core.
    rates: Arc<Rates>,
    shared: Arc<Shared>,
}

impl Supervisor {
    /// A supervisor of at most `capacity` live children, spread over one
    /// shard per CPU.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds what the shards can hold (2²⁴ − 1 per shard).
    /// [`Supervisor::builder`] reports that as a [`BuildError`] instead.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(16);
    /// assert_eq!(supervisor.capacity(), 16);
    /// ```
    pub fn new(capacity: usize) -> Supervisor {
        match Supervisor::builder().capacity(capacity).build() {
            Ok(supervisor) => supervisor,
            Err(err) => panic!("Supervisor::new({capacity}): {err}"),
        }
    }

    /// Starts configuring a supervisor.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder()
    ///     .capacity(100)
    ///     .shards(4)
    ///     .name("get-fsm")
    ///     .build()?;
    /// assert_eq!(supervisor.capacity(), 100);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn builder() -> SupervisorBuilder {
        SupervisorBuilder::default()
    }

    /// Starts `child` on its own thread, if the supervisor has room.
    ///
    /// The child gets a [`ChildContext`] to learn its id and whether it was
    /// asked to stop. It counts as live from the moment `spawn` returns `Ok`
    /// until it ends; then it leaves the live set and frees its slot, before
    /// [`ChildHandle::join`] returns. A panic in the child is caught: `join`
    /// reports it and the supervisor counts it.
    ///
    /// # Errors
    ///
    /// The closure comes back inside every error:
    /// * [`SpawnError::Overload`], at once, when `capacity` children live;
    /// * [`SpawnError::Closed`] after [`shutdown`](Self::shutdown);
    /// * [`SpawnError::Thread`] when the OS refused to start the thread (the
    ///   slot is given back).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    ///
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let (release, hold) = mpsc::channel::<()>();
    /// let busy = supervisor.spawn(move |_| hold.recv().ok())?;
    /// assert!(supervisor.spawn(|_| ()).unwrap_err().is_overload());
    /// release.send(())?;
    /// busy.join()?;
    /// assert!(supervisor.spawn(|_| ()).is_ok()); // room again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn<F, T>(&self, child: F) -> Result<ChildHandle<T>, SpawnError<F>>
    where
        F: FnOnce(&ChildContext) -> T + Send + 'static,
        T: Send + 'static,
    {
        let shared = &self.shared;
        let shard = match shared.live.take_slot(home_shard(shared.live.shard_count())) {
            Ok(shard) => shard,
            Err(Refused::Closed) => return Err(SpawnError::Closed(child)),
            Err(Refused::Overload) => return Err(SpawnError::Overload(child)),
        };
        let state = Arc::new(ChildState::new());
        // Read before the registration: a shutdown closes the set, then
        // cancels, so a child it swept holds a generation it cancels.
        let generation = shared.live.cancellation().generation();
        let Some(place) = shared.register(shard, &state) else {
            return Err(SpawnError::Closed(child));
        };
        let id = place.id;
        // The closure waits here, so that it can be handed back if the OS
        // refuses the thread.
        let closure = Arc::new(Mutex::new(Some(child)));
        let body = {
            let shared = Arc::clone(shared);
            let state = Arc::clone(&state);
            let closure = Arc::clone(&closure);
            move || {
                let child = lock(&closure).take().expect("a child's closure runs once");
                drop(closure);
                let context = ChildContext::new(id, generation, Arc::clone(&shared));
                // Marked by the child itself too: it finds itself listed.
                state.started.store(true, Ordering::Release);
                let outcome = catch_unwind(AssertUnwindSafe(|| child(&context))).map_err(|panic| {
                    let panicked = ChildPanicked::new(panic_message(&*panic).to_owned());
                    crate::events::warn_event!(
                        target: "sidejob::supervisor",
                        supervisor = %shared.name,
                        child = %id,
                        panic = panicked.message(),
                        "a child panicked",
                    );
                    // A payload whose `Drop` panics must not unwind the
                    // thread before it leaves the live set.
                    drop_quietly(panic);
                    panicked
                });
                shared.child_ended(place, outcome.is_err());
                state.mark_finished();
                outcome
            }
        };
        match spawn_named(
            format!("{}-{}", shared.name, id.number()),
            shared.stack_size,
            body,
        ) {
            Ok(thread) => {
                // Listed from now on, until it ends (it may have already).
                state.started.store(true, Ordering::Release);
                shared.start_resolved();
                Ok(ChildHandle::new(id, state, thread))
            }
            Err(error) => {
                shared.unregister_unstarted(place);
                shared.start_resolved();
                let child = lock(&closure)
                    .take()
                    .expect("a thread that never started never took its closure");
                Err(SpawnError::Thread(error, child))
            }
        }
    }

    /// The ids of the children alive right now, in order.
    ///
    /// Exactly the live set, as one snapshot: a child is in it from its
    /// successful `spawn` until it ends, and every shard's set is read with
    /// all of them locked at once, so the list never holds more children
    /// than were alive together (never more than the capacity). A child
    /// whose thread the OS refused never shows.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    ///
    /// let supervisor = sidejob::Supervisor::new(4);
    /// let (release, hold) = mpsc::channel::<()>();
    /// let child = supervisor.spawn(move |_| hold.recv().ok())?;
    /// assert_eq!(supervisor.which_children(), [child.id()]);
    /// release.send(())?;
    /// child.join()?;
    /// assert!(supervisor.which_children().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn which_children(&self) -> Vec<ChildId> {
        self.shared
            .live
            .ids(|state| state.started.load(Ordering::Acquire))
    }

    /// The number of children alive right now.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(4);
    /// assert_eq!(supervisor.count(), 0);
    /// ```
    pub fn count(&self) -> usize {
        self.shared.live.live_count()
    }

    /// The number of shards the capacity and the live set are split over.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder().capacity(8).shards(2).build()?;
    /// assert_eq!(supervisor.shard_count(), 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shared.live.shard_count()
    }

    /// The most children alive at once.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::Supervisor::new(3).capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.live.slots().capacity()
    }

    /// Changes the capacity at run time, as [`Resource::set_capacity`](crate::Resource::set_capacity) does:
    /// growing admits at once; shrinking stops no child, and spawns are
    /// refused until fewer than the new capacity live.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` if it exceeds what the shards can
    /// hold (2²⁴ − 1 per shard); nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(0);
    /// assert!(supervisor.spawn(|_| ()).is_err());
    /// supervisor.set_capacity(1)?;
    /// supervisor.spawn(|_| ())?.join()?;
    /// assert!(supervisor.set_capacity(usize::MAX).is_err());
    /// assert_eq!(supervisor.capacity(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_capacity(&self, capacity: usize) -> Result<(), BuildError> {
        self.shared.live.slots().set_capacity(capacity)
    }

    /// The in, out and rejected rates of the last whole second, and the
    /// last 60 seconds' and all-time counts with their average and peak
    /// rates and usage, as Erlang sidejob reports them: "in" is a child
    /// spawned, "out" one ended, "rejected" a refusal for overload.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(2);
    /// supervisor.spawn(|_| ())?.join()?;
    /// let total = supervisor.rates().total;
    /// assert_eq!((total.accepted, total.completed), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rates(&self) -> RateStats {
        self.rates.stats(sample(&self.shared))
    }

    /// The supervisor's name: its children's threads' name, and its
    /// metrics' `name` label (see [`SupervisorBuilder::name`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder().capacity(1).name("jobs").build()?;
    /// assert_eq!(supervisor.name(), "jobs");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// A snapshot of the supervisor's counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(2);
    /// supervisor.spawn(|_| ())?.join()?;
    /// let stats = supervisor.stats();
    /// assert_eq!((stats.spawned, stats.finished, stats.live), (1, 1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> SupervisorStats {
        let capacity = self.capacity();
        let (live, totals) = self.shared.live.live_counts_and_totals();
        let snapshot = self.shared.live.slots().snapshot();
        let shards = snapshot
            .shards
            .iter()
            .zip(live)
            .map(|(counts, live)| SupervisorShardStats {
                limit: counts.limit as usize,
                usage: counts.usage as usize,
                live,
            })
            .collect::<Vec<_>>();
        SupervisorStats {
            capacity,
            live: shards.iter().map(|s| s.live).sum(),
            spawned: totals.spawned,
            finished: totals.finished,
            panicked: totals.panicked,
            rejected: totals.rejected,
            closed: totals.closed,
            spawn_failed: totals.spawn_failed,
            shards,
        }
    }

    /// Refuses new spawns, asks every live child to stop, and waits up to
    /// `grace` for them to end.
    ///
    /// Cancellation is cooperative (see [`ChildContext`]). Children still
    /// running when `grace` runs out are reported, not killed: they stay
    /// tracked until they end. Calling it again cancels and waits again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let supervisor = sidejob::Supervisor::new(4);
    /// let polite = supervisor.spawn(|context| context.wait_cancelled(Duration::from_secs(60)))?;
    /// let report = supervisor.shutdown(Duration::from_secs(5));
    /// assert!(report.remaining.is_empty());
    /// assert_eq!(report.cancelled, 1);
    /// assert!(polite.join()?); // it saw the request to stop
    /// assert!(supervisor.spawn(|_| ()).is_err()); // closed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self, grace: Duration) -> ShutdownReport {
        let shared = &self.shared;
        shared.live.close();
        // Every child registered before the close, read under its set's
        // lock (one registering after sees the set closed); asked to stop
        // outside the locks.
        let asked = shared.live.entries();
        shared.live.cancellation().cancel_all();
        shared
            .live
            .drain()
            .wait_until(Instant::now().checked_add(grace));
        // Every swept child's start resolved (the OS started its thread or
        // refused it: a system call's time), so the report knows which ran.
        let mut guard = lock(&shared.exit_lock);
        while shared.starting.load(Ordering::SeqCst) > 0 {
            guard = wait_timeout(&shared.exits, guard, Duration::from_millis(10));
        }
        drop(guard);
        // A child whose thread the OS refused never ran: not cancelled.
        let cancelled = asked
            .iter()
            .filter(|state| !state.refused.load(Ordering::Acquire))
            .count();
        ShutdownReport {
            cancelled,
            remaining: self.which_children(),
        }
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(1);
    /// supervisor.shutdown(std::time::Duration::ZERO);
    /// assert!(supervisor.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.live.is_closed()
    }
}

/// What the rates sampler reads of a supervisor: children spawned,
/// refused for overload, ended, and alive (their slots) now.
fn sample(shared: &Shared) -> Sample {
    let totals = shared.live.totals();
    Sample {
        accepted: totals.spawned,
        rejected: totals.rejected,
        completed: totals.finished,
        usage: shared.live.slots().usage(),
    }
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("capacity", &self.capacity())
            .field("live", &self.count())
            .field("closed", &self.is_closed())
            .finish()
    }
}
