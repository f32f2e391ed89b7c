//! [`Supervisor`]: a capacity-limited supervisor of spawned children, each on
//! its own thread, that knows its live children at every moment.
//!
//! # Protocol
//!
//! A spawn takes a slot on a shard of the core [`Resource`] (home shard
//! first, then the probe), registers the child in that shard's live set, and
//! only then starts the thread. The child runs its closure under
//! `catch_unwind`; when it returns or panics, it leaves the live set, frees
//! its slot, and only then does the thread's result become available to
//! [`ChildHandle::join`]. So the live set never holds more children than the
//! slots taken, and the slots never exceed the capacity.
//!
//! Shutdown sets `closing`, then cancels every child in every live set under
//! that set's lock. A spawn checks `closing` under the same lock before it
//! registers. So each child is either registered before its shard is swept,
//! and cancelled by the sweep, or refused.
//!
//! # Orderings
//!
//! `closing` is written `Release` and read `Acquire`, and it is read under
//! the shard lock the sweep takes. A child's `cancelled` and `finished` flags
//! are `Release`/`Acquire`, so a child that sees itself cancelled, or a
//! spawner that sees it finished, also sees what happened before. The
//! counters are `Relaxed` figures.

use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::child::{ChildContext, ChildHandle, ChildId, ChildPanicked, ChildState};
use crate::error::{panic_message, BuildError, SpawnError};
use crate::home::home_shard;
use crate::resource::{Resource, ResourceBuilder};
use crate::shard::limit_for;
use crate::sync::{
    lock, spawn_named, wait_timeout, AtomicBool, AtomicU64, Condvar, Mutex, Ordering,
};

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
    shared: Arc<Shared>,
}

/// What the supervisor and its children share.
struct Shared {
    resource: Resource,
    shards: Box<[CachePadded<SupervisorShard>]>,
    /// Set by shutdown: from then on, spawns are refused.
    closing: AtomicBool,
    /// Wakes a shutdown waiting for children to end.
    exits: Condvar,
    exit_lock: Mutex<()>,
    name: String,
    stack_size: Option<usize>,
}

/// One shard's live set and counters.
struct SupervisorShard {
    live: Mutex<LiveSet>,
    spawned: AtomicU64,
    finished: AtomicU64,
    panicked: AtomicU64,
    rejected: AtomicU64,
    closed: AtomicU64,
    spawn_failed: AtomicU64,
}

/// The children alive on one shard.
struct LiveSet {
    /// Ids handed out on this shard so far.
    issued: u64,
    children: HashMap<ChildId, Arc<ChildState>>,
}

impl SupervisorShard {
    fn new() -> Self {
        SupervisorShard {
            live: Mutex::new(LiveSet {
                issued: 0,
                children: HashMap::new(),
            }),
            spawned: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            spawn_failed: AtomicU64::new(0),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Shared {
    /// A child ended: leave the live set, free the slot, count it, and wake
    /// a shutdown that waits for children.
    fn child_ended(&self, shard: usize, id: ChildId, panicked: bool) {
        lock(&self.shards[shard].live).children.remove(&id);
        self.resource.release_slot(shard);
        bump(&self.shards[shard].finished);
        if panicked {
            bump(&self.shards[shard].panicked);
        }
        if self.closing.load(Ordering::Acquire) {
            let _guard = lock(&self.exit_lock);
            self.exits.notify_all();
        }
    }

    fn live_count(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| lock(&shard.live).children.len())
            .sum()
    }
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
        let count = shared.shards.len();
        let home = home_shard(count);
        let shard = match shared.resource.admit_from(home) {
            Ok(shard) => shard,
            Err(_) if shared.closing.load(Ordering::Acquire) => {
                bump(&shared.shards[home].closed);
                return Err(SpawnError::Closed(child));
            }
            Err(_) => {
                bump(&shared.shards[home].rejected);
                return Err(SpawnError::Overload(child));
            }
        };
        let state = Arc::new(ChildState::new());
        let id = {
            let mut live = lock(&shared.shards[shard].live);
            if shared.closing.load(Ordering::Acquire) {
                drop(live);
                shared.resource.release_slot(shard);
                bump(&shared.shards[shard].closed);
                return Err(SpawnError::Closed(child));
            }
            let id = ChildId(live.issued * count as u64 + shard as u64);
            live.issued += 1;
            // Counted before it joins the live set, so `live` never exceeds
            // `spawned`; taken back below if the thread does not start.
            bump(&shared.shards[shard].spawned);
            live.children.insert(id, Arc::clone(&state));
            id
        };
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
                let context = ChildContext::new(id, Arc::clone(&state));
                let outcome = catch_unwind(AssertUnwindSafe(|| child(&context)))
                    .map_err(|panic| ChildPanicked::new(panic_message(&*panic).to_owned()));
                shared.child_ended(shard, id, outcome.is_err());
                state.mark_finished();
                outcome
            }
        };
        match spawn_named(format!("{}-{}", shared.name, id.0), shared.stack_size, body) {
            Ok(thread) => Ok(ChildHandle::new(id, state, thread)),
            Err(error) => {
                lock(&shared.shards[shard].live).children.remove(&id);
                shared.shards[shard].spawned.fetch_sub(1, Ordering::Relaxed);
                shared.resource.release_slot(shard);
                bump(&shared.shards[shard].spawn_failed);
                let child = lock(&closure)
                    .take()
                    .expect("a thread that never started never took its closure");
                Err(SpawnError::Thread(error, child))
            }
        }
    }

    /// The ids of the children alive right now, in order.
    ///
    /// Exactly the live set: a child is in it from its successful `spawn`
    /// until it ends. Each shard's set is read under its lock.
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
        let mut ids: Vec<ChildId> = self
            .shared
            .shards
            .iter()
            .flat_map(|shard| {
                lock(&shard.live)
                    .children
                    .keys()
                    .copied()
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort_unstable();
        ids
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
        self.shared.live_count()
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
        self.shared.shards.len()
    }

    /// The most children alive at once.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::Supervisor::new(3).capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.resource.capacity()
    }

    /// Changes the capacity at run time, as [`Resource::set_capacity`] does:
    /// growing admits at once; shrinking stops no child, and spawns are
    /// refused until fewer than the new capacity live.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds what the shards can hold (2²⁴ − 1 per shard).
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(0);
    /// assert!(supervisor.spawn(|_| ()).is_err());
    /// supervisor.set_capacity(1);
    /// supervisor.spawn(|_| ())?.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_capacity(&self, capacity: usize) {
        self.shared.resource.set_capacity(capacity);
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
        let count = self.shared.shards.len();
        let sum = |field: fn(&SupervisorShard) -> &AtomicU64| {
            self.shared
                .shards
                .iter()
                .map(|shard| field(shard).load(Ordering::Relaxed))
                .sum()
        };
        let shards = self
            .shared
            .shards
            .iter()
            .enumerate()
            .map(|(index, shard)| SupervisorShardStats {
                limit: limit_for(capacity, count, index) as usize,
                usage: self.shared.resource.shard_usage(index),
                live: lock(&shard.live).children.len(),
            })
            .collect::<Vec<_>>();
        SupervisorStats {
            capacity,
            live: shards.iter().map(|s| s.live).sum(),
            spawned: sum(|s| &s.spawned),
            finished: sum(|s| &s.finished),
            panicked: sum(|s| &s.panicked),
            rejected: sum(|s| &s.rejected),
            closed: sum(|s| &s.closed),
            spawn_failed: sum(|s| &s.spawn_failed),
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
        shared.closing.store(true, Ordering::Release);
        let mut cancelled = 0;
        for shard in shared.shards.iter() {
            let live = lock(&shard.live);
            for state in live.children.values() {
                state.cancel();
                cancelled += 1;
            }
        }
        let deadline = Instant::now().checked_add(grace);
        let mut guard = lock(&shared.exit_lock);
        // A child that ends takes `exit_lock` to wake us, so checking the
        // count under it cannot miss the last exit.
        while shared.live_count() > 0 {
            let left = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => break,
                },
                None => Duration::from_secs(3600),
            };
            guard = wait_timeout(&shared.exits, guard, left);
        }
        drop(guard);
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
        self.shared.closing.load(Ordering::Acquire)
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

/// What [`Supervisor::shutdown`] did.
///
/// # Examples
///
/// ```
/// let report = sidejob::Supervisor::new(1).shutdown(std::time::Duration::ZERO);
/// assert_eq!((report.cancelled, report.remaining.len()), (0, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Children that were asked to stop.
    pub cancelled: usize,
    /// Children still running when the grace period ended, in order. They
    /// stay tracked until they end.
    pub remaining: Vec<ChildId>,
}

/// A snapshot of a [`Supervisor`]'s counters, from [`Supervisor::stats`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::new(0);
/// let _ = supervisor.spawn(|_| ());
/// assert_eq!(supervisor.stats().rejected, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SupervisorStats {
    /// The most children alive at once.
    pub capacity: usize,
    /// Children alive now.
    pub live: usize,
    /// Children started, ever. Counted as a child joins the live set.
    pub spawned: u64,
    /// Children that ended (returned or panicked), ever. Counted just after
    /// a child leaves the live set, so for a moment a child may be in
    /// neither `live` nor `finished`: `spawned >= live + finished` always,
    /// with equality once every ending child's thread is done.
    pub finished: u64,
    /// Children that panicked, ever.
    pub panicked: u64,
    /// Spawns refused with `Overload`, ever.
    pub rejected: u64,
    /// Spawns refused because the supervisor was shut down, ever.
    pub closed: u64,
    /// Spawns whose thread the OS refused to start, ever.
    pub spawn_failed: u64,
    /// Each shard's figures, in shard order.
    pub shards: Vec<SupervisorShardStats>,
}

/// One shard's figures within [`SupervisorStats`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::builder().capacity(3).shards(2).build()?;
/// let limits: Vec<usize> = supervisor.stats().shards.iter().map(|s| s.limit).collect();
/// assert_eq!(limits, [2, 1]);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SupervisorShardStats {
    /// The shard's share of the capacity.
    pub limit: usize,
    /// Slots held on this shard: its live children, plus any spawn or exit
    /// under way.
    pub usage: usize,
    /// Children alive on this shard.
    pub live: usize,
}

/// Configures a [`Supervisor`]; made by [`Supervisor::builder`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::builder()
///     .capacity(64) // required
///     .shards(4) // default: the number of CPUs
///     .name("fsm") // child threads: fsm-<id>
///     .stack_size(256 * 1024)
///     .build()?;
/// # drop(supervisor);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SupervisorBuilder {
    resource: ResourceBuilder,
    name: Option<String>,
    stack_size: Option<usize>,
}

impl SupervisorBuilder {
    /// The most children alive at once. Required.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Supervisor::builder().build().unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.resource = self.resource.capacity(capacity);
        self
    }

    /// The number of shards the capacity and the live set are split over.
    /// Default: the number of CPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Supervisor::builder().capacity(1).shards(0).build().unwrap_err();
    /// assert_eq!(err.setting(), "shards");
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.resource = self.resource.shards(shards);
        self
    }

    /// The prefix of the children's thread names: `{name}-{id}`. Default:
    /// `sidejob-child`.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder().capacity(1).name("job").build()?;
    /// let child = supervisor.spawn(|_| std::thread::current().name().map(str::to_owned))?;
    /// assert!(child.join()?.unwrap().starts_with("job-"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// The stack size of each child's thread, in bytes. Default: the
    /// platform's (see [`std::thread::Builder::stack_size`]). A size the OS
    /// refuses makes [`Supervisor::spawn`] fail with [`SpawnError::Thread`].
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::builder().capacity(1).stack_size(64 * 1024).build()?;
    /// supervisor.spawn(|_| ())?.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Builds the supervisor.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting: `capacity` not set or too large,
    /// `shards` 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS), `name` with a
    /// NUL byte.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Supervisor::builder().capacity(1).name("a\0b").build().unwrap_err();
    /// assert_eq!(err.setting(), "name");
    /// ```
    pub fn build(self) -> Result<Supervisor, BuildError> {
        let resource = self.resource.build()?;
        let name = self.name.unwrap_or_else(|| "sidejob-child".to_owned());
        if name.contains('\0') {
            return Err(BuildError::new("name", "must not contain a NUL byte"));
        }
        let shards = (0..resource.shard_count())
            .map(|_| CachePadded::new(SupervisorShard::new()))
            .collect();
        Ok(Supervisor {
            shared: Arc::new(Shared {
                resource,
                shards,
                closing: AtomicBool::new(false),
                exits: Condvar::new(),
                exit_lock: Mutex::new(()),
                name,
                stack_size: self.stack_size,
            }),
        })
    }
}
