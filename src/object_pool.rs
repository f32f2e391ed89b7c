//! [`ObjectPool`]: reusable objects (connections, external processes) under
//! a strict size limit, with FIFO waiters, after Erlang's pidq/pooler and
//! CouchDB's process manager.
//!
//! # Protocol
//!
//! *Size* counts every object that exists or is being made: idle, in use or
//! in creation. Each is counted by one slot of a core [`Resource`] whose
//! capacity is `max_size`. A slot is taken before `create` starts and freed
//! exactly once: when creation fails, or when the object is destroyed or
//! detached. So size never exceeds `max_size`, not even for an instant, and
//! no failure path can leak the limit (CouchDB once did).
//!
//! Idle objects wait on per-shard LIFO stacks (see `idle.rs`), each object
//! on the stack of the shard whose slot counts it. A take pops its home
//! shard's stack: one uncontended spin lock, no shared line. A return pushes
//! the object back onto its own stack, unless takers are waiting.
//!
//! Takers that find nothing idle and no free slot may wait, FIFO, in the
//! queue of `wait_queue.rs`. Two hand-offs serve them:
//!
//! * **Objects.** A returner reads `waiting` under its stack's lock before it
//!   pushes. A waiter registers (raising `waiting`) under the queue lock and
//!   then scans every stack under that stack's lock. For any one stack, either
//!   the waiter's scan comes after the push, and finds the object, or the
//!   returner's read comes after the registration, and sees the waiter, which
//!   it then serves under the queue lock. No object idles while a taker waits.
//! * **Slots.** Freeing a slot happens under the queue lock: the slot goes to
//!   the oldest waiter, which creates its own object, or back to the resource.
//!   A waiter tries to take a slot under the same lock before it sleeps, so a
//!   slot freed by a failed creation or a destroyed object wakes the next
//!   waiter.
//!
//! `close` sets `closed`, answers every waiter, then empties each stack
//! under its lock. Returners read `closed` under their stack's lock, so an
//! object pushed after the sweep is impossible: it is destroyed instead.
//!
//! # Orderings
//!
//! `closed` and `waiting` are read on the fast path under an idle stack's
//! lock, and written before (registration, close) or under (serving) the
//! queue lock, which the reader's side then takes. The locks order every
//! access that matters, so the atomics themselves are `Relaxed`. A take
//! reads `closed` only on its cold path (a closed pool has empty stacks),
//! as an early exit. The counters are `Relaxed` figures.

use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::error::{BuildError, TakeError};
use crate::home::home_shard;
use crate::idle::{idle_stacks, Idle, IdleStacks};
use crate::latency::{LatencyHistogram, LatencyStats};
use crate::maintainer::{Maintenance, Wake};
use crate::manager::Manager;
use crate::pooled::Pooled;
use crate::resource::{Resource, ResourceBuilder};
use crate::sync::{
    is_current, lock, spawn_named, spin_lock, AtomicBool, AtomicU64, AtomicUsize, JoinHandle,
    Mutex, Ordering,
};
use crate::wait_queue::{Handoff, WaitQueue};

/// How many takers may wait at once unless
/// [`queue_max`](ObjectPoolBuilder::queue_max) says otherwise.
pub const DEFAULT_QUEUE_MAX: usize = 50;

/// A pool of reusable objects with a strict size limit.
///
/// Made by [`ObjectPool::builder`]. Share it between threads by reference or
/// in an `Arc`; a taken object ([`Pooled`]) borrows the pool and goes back to
/// it when dropped. Dropping the pool closes it (see [`close`](Self::close)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::{Manager, ObjectPool, TakeError};
///
/// struct Buffers;
/// impl Manager for Buffers {
///     type Object = Vec<u8>;
///     type Error = std::convert::Infallible;
///     fn create(&self) -> Result<Vec<u8>, Self::Error> {
///         Ok(Vec::with_capacity(4096))
///     }
/// }
///
/// let pool = ObjectPool::builder(Buffers).max_size(2).build()?;
/// let mut first = pool.try_take()?;
/// first.extend_from_slice(b"hello");
/// let _second = pool.take(Duration::from_millis(10))?;
///
/// // Both objects are out: a third taker is refused, or times out waiting.
/// assert!(matches!(pool.try_take(), Err(TakeError::Overload)));
/// assert!(matches!(pool.take(Duration::from_millis(10)), Err(TakeError::Timeout)));
///
/// drop(first); // back to the pool, for the next taker
/// assert_eq!(&*pool.try_take()?, b"hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ObjectPool<M: Manager> {
    shared: Arc<PoolShared<M>>,
    maintainer: Mutex<Option<JoinHandle<()>>>,
}

/// What the pool, its objects and its maintainer share.
pub(crate) struct PoolShared<M: Manager> {
    manager: M,
    /// One slot per object that exists or is being made.
    slots: Resource,
    /// Idle objects, a LIFO stack per shard.
    idle: IdleStacks<M::Object>,
    /// Read by every return; written only on the slow paths.
    gate: CachePadded<Gate>,
    /// Waiting takers, oldest first.
    waiters: Mutex<WaitQueue<M::Object>>,
    queue_max: usize,
    min_idle: usize,
    /// Present when `min_idle` asks for background refills.
    refill: Option<Maintenance>,
    counters: CachePadded<Counters>,
    wait_times: Mutex<LatencyHistogram>,
}

#[derive(Debug)]
struct Gate {
    closed: AtomicBool,
    /// The wait queue's length; see the module's `# Protocol`.
    waiting: AtomicUsize,
}

/// Slow-path counters; fast-path takes are counted on the idle stacks.
#[derive(Debug, Default)]
struct Counters {
    /// Takes served by a creation or a hand-off rather than a stack.
    direct_takes: AtomicU64,
    waits: AtomicU64,
    timeouts: AtomicU64,
    rejected: AtomicU64,
    creates: AtomicU64,
    create_failures: AtomicU64,
    destroyed: AtomicU64,
    creating: AtomicUsize,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl<M: Manager> ObjectPool<M> {
    /// Starts configuring a pool of the objects `manager` makes.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = ();
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<()> { Ok(()) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns)
    ///     .max_size(8) // required
    ///     .init_size(2) // made before build returns
    ///     .min_idle(1) // kept ready in the background
    ///     .queue_max(100) // waiting takers; default 50
    ///     .shards(2) // default: the number of CPUs
    ///     .build()?;
    /// assert_eq!(pool.status().idle, 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn builder(manager: M) -> ObjectPoolBuilder<M> {
        ObjectPoolBuilder {
            manager,
            max_size: None,
            init_size: 0,
            min_idle: 0,
            queue_max: DEFAULT_QUEUE_MAX,
            shards: None,
            name: "sidejob-pool".to_owned(),
        }
    }

    /// Takes an idle object, the most recently returned first, or makes a new
    /// one if the pool is below `max_size`. Never waits for another holder.
    ///
    /// # Errors
    ///
    /// [`TakeError::Overload`] when nothing is idle and the pool is full,
    /// [`TakeError::Create`] when a new object was needed and the manager
    /// failed to make it, [`TakeError::Closed`] after [`close`](Self::close).
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] panics, the panic goes on to the caller (its
    /// slot is freed first).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let held = pool.try_take()?;
    /// assert!(pool.try_take().unwrap_err().is_overload());
    /// drop(held);
    /// assert!(pool.try_take().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_take(&self) -> Result<Pooled<'_, M>, TakeError<M::Error>> {
        let shared = &*self.shared;
        shared
            .try_take()
            .map(|idle| Pooled::new(shared, idle))
            .inspect_err(|error| {
                if matches!(error, TakeError::Overload) {
                    bump(&shared.counters.rejected);
                }
            })
    }

    /// Takes an object like [`try_take`](Self::try_take), or else waits up to
    /// `timeout` for one, served first come, first served.
    ///
    /// A waiter is handed a returned object, or a freed slot for which it
    /// makes its own object; it never waits for someone else's creation.
    ///
    /// # Errors
    ///
    /// [`TakeError::QueueFull`] at once when `queue_max` takers already wait,
    /// [`TakeError::Timeout`] when nothing came free in time,
    /// [`TakeError::Create`] when this taker's own creation failed,
    /// [`TakeError::Closed`] when the pool is or becomes closed.
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] panics, the panic goes on to the caller (its
    /// slot is freed first).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// std::thread::scope(|s| {
    ///     let held = pool.try_take().unwrap();
    ///     let waiter = s.spawn(|| pool.take(Duration::from_secs(30)).map(|_| ()));
    ///     drop(held); // handed straight to the waiter
    ///     waiter.join().unwrap()
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&self, timeout: Duration) -> Result<Pooled<'_, M>, TakeError<M::Error>> {
        let shared = &*self.shared;
        match shared.try_take() {
            Err(TakeError::Overload) => {}
            taken => return taken.map(|idle| Pooled::new(shared, idle)),
        }
        shared
            .wait_for(timeout)
            .map(|idle| Pooled::new(shared, idle))
    }

    /// A snapshot of the pool's size and what makes it up.
    ///
    /// Each figure is read at a slightly different moment, so under
    /// concurrent change they need not add up exactly; at rest they do.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).init_size(2).build()?;
    /// let held = pool.try_take()?;
    /// let status = pool.status();
    /// assert_eq!((status.size, status.idle, status.in_use), (2, 1, 1));
    /// assert_eq!((status.max_size, status.creating, status.waiting), (4, 0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> PoolStatus {
        self.shared.status()
    }

    /// The pool's counters since it was built.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// drop(pool.try_take()?); // creates
    /// drop(pool.try_take()?); // reuses
    /// let stats = pool.stats();
    /// assert_eq!((stats.takes, stats.creates, stats.waits), (2, 1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> ObjectPoolStats {
        self.shared.stats()
    }

    /// Closes the pool: takes fail with [`TakeError::Closed`], waiters are
    /// answered `Closed`, idle objects are destroyed now and objects in use
    /// when they come back. Idempotent; dropping the pool closes it too.
    ///
    /// # Panics
    ///
    /// If [`Manager::destroy`] panics, the panic goes on to the caller after
    /// every idle object has been dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(2).init_size(1).build()?;
    /// let held = pool.try_take()?;
    /// pool.close();
    /// assert!(matches!(pool.try_take(), Err(sidejob::TakeError::Closed)));
    /// drop(held); // destroyed, not kept
    /// assert_eq!(pool.status().size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.shared.close();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(2).build()?;
    /// assert!(!pool.is_closed());
    /// pool.close();
    /// assert!(pool.is_closed());
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.gate.closed.load(Ordering::Relaxed)
    }

    /// The most objects the pool holds at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).build()?;
    /// assert_eq!(pool.max_size(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn max_size(&self) -> usize {
        self.shared.slots.capacity()
    }

    /// The number of shards (idle stacks and slot shards).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).shards(2).build()?;
    /// assert_eq!(pool.shard_count(), 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shared.idle.len()
    }

    /// The manager the pool was built with.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Debug, PartialEq)]
    /// # struct Conns(&'static str);
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns("db:5432")).max_size(3).build()?;
    /// assert_eq!(pool.manager(), &Conns("db:5432"));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn manager(&self) -> &M {
        &self.shared.manager
    }
}

impl<M: Manager> Drop for ObjectPool<M> {
    fn drop(&mut self) {
        if let Some(refill) = &self.shared.refill {
            refill.stop();
        }
        let maintainer = lock(&self.maintainer).take();
        if let Some(handle) = maintainer {
            if !is_current(&handle) {
                let _ = handle.join();
            }
        }
        if std::thread::panicking() {
            // A second panic from `destroy` would abort; contain it.
            let _ = catch_unwind(AssertUnwindSafe(|| self.shared.close()));
        } else {
            self.shared.close();
        }
    }
}

impl<M: Manager> fmt::Debug for ObjectPool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectPool")
            .field("status", &self.status())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl<M: Manager> PoolShared<M> {
    /// The calling thread's home shard.
    #[inline]
    fn home(&self) -> usize {
        home_shard(self.idle.len())
    }

    /// Pops the top of `shard`'s idle stack.
    #[inline]
    fn pop_idle(&self, shard: usize) -> Option<Idle<M::Object>> {
        let mut stack = spin_lock(&self.idle[shard]);
        let object = stack.objects.pop()?;
        stack.takes += 1;
        drop(stack);
        if let Some(refill) = &self.refill {
            refill.nudge();
        }
        Some(Idle {
            object,
            slot: shard,
        })
    }

    /// The home stack's top, or else the cold path.
    #[inline]
    pub(crate) fn try_take(&self) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        // No `closed` check here: `close` empties the stacks and nothing is
        // pushed after, so a closed pool always takes the cold path.
        match self.pop_idle(self.home()) {
            Some(idle) => Ok(idle),
            None => self.take_cold(),
        }
    }

    /// Nothing idle at home: another shard's idle object, else a new object,
    /// else `Overload`. Looks twice, so an object returned or a slot freed
    /// while the first look went by is still found.
    #[cold]
    #[inline(never)]
    fn take_cold(&self) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        if self.gate.closed.load(Ordering::Relaxed) {
            return Err(TakeError::Closed);
        }
        let home = self.home();
        for _ in 0..2 {
            if let Some(found) = self.find_free(home) {
                return self.accept(found);
            }
        }
        Err(TakeError::Overload)
    }

    /// An idle object from any stack but `home`'s, in probe order.
    fn steal(&self, home: usize) -> Option<Idle<M::Object>> {
        let count = self.idle.len();
        (1..count).find_map(|offset| self.pop_idle((home + offset) % count))
    }

    /// An idle object from any stack, or else a free slot. Never creates:
    /// the caller may hold the queue lock.
    fn find_free(&self, home: usize) -> Option<Handoff<M::Object>> {
        if let Some(idle) = self.pop_idle(home).or_else(|| self.steal(home)) {
            return Some(Handoff::Object(idle));
        }
        self.slots.admit_from(home).ok().map(Handoff::Slot)
    }

    /// Makes an object for a taker in `slot`, counting the take.
    fn create_for_taker(&self, slot: usize) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let made = self.create_in(slot);
        if made.is_ok() {
            bump(&self.counters.direct_takes);
        }
        made
    }

    /// Makes an object counted by `slot`, freeing the slot if that fails.
    fn create_in(&self, slot: usize) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let counters = &self.counters;
        counters.creating.fetch_add(1, Ordering::Relaxed);
        let made = catch_unwind(AssertUnwindSafe(|| self.manager.create()));
        counters.creating.fetch_sub(1, Ordering::Relaxed);
        match made {
            Ok(Ok(object)) => {
                bump(&counters.creates);
                Ok(Idle { object, slot })
            }
            Ok(Err(error)) => {
                bump(&counters.create_failures);
                self.free_slot(slot);
                Err(TakeError::Create(error))
            }
            Err(panic) => {
                bump(&counters.create_failures);
                self.free_slot(slot);
                resume_unwind(panic)
            }
        }
    }

    /// Joins the wait queue, unless something is free after all, and waits.
    #[cold]
    #[inline(never)]
    fn wait_for(&self, timeout: Duration) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let started = Instant::now();
        let home = self.home();
        let mut queue = lock(&self.waiters);
        if self.gate.closed.load(Ordering::Relaxed) {
            return Err(TakeError::Closed);
        }
        // Register first, then look: see the module's `# Protocol`.
        let waiter = queue.push(started.checked_add(timeout));
        self.gate.waiting.store(queue.len(), Ordering::Relaxed);
        let found = self.find_free(home);
        if found.is_some() || queue.len() > self.queue_max {
            queue.remove(waiter.key());
            self.gate.waiting.store(queue.len(), Ordering::Relaxed);
            drop(queue);
            return match found {
                Some(handoff) => self.accept(handoff),
                None => {
                    bump(&self.counters.rejected);
                    Err(TakeError::QueueFull)
                }
            };
        }
        drop(queue);
        bump(&self.counters.waits);

        let handoff = match waiter.wait() {
            Some(handoff) => handoff,
            None => {
                let mut queue = lock(&self.waiters);
                if queue.remove(waiter.key()) {
                    self.gate.waiting.store(queue.len(), Ordering::Relaxed);
                    drop(queue);
                    Handoff::Expired
                } else {
                    drop(queue);
                    waiter.take_filled()
                }
            }
        };
        lock(&self.wait_times).record(started.elapsed());
        self.accept(handoff)
    }

    /// What a taker does with what it found or was handed.
    fn accept(&self, handoff: Handoff<M::Object>) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        match handoff {
            Handoff::Object(idle) => Ok(idle),
            Handoff::Slot(slot) => self.create_for_taker(slot),
            Handoff::Closed => Err(TakeError::Closed),
            Handoff::Expired => {
                bump(&self.counters.timeouts);
                Err(TakeError::Timeout)
            }
        }
    }

    /// Takes back a returned object: reused if its holder did not panic and
    /// it passes [`Manager::check`], destroyed otherwise.
    #[inline]
    pub(crate) fn give_back(&self, idle: Idle<M::Object>) {
        if std::thread::panicking() {
            return self.give_back_from_panic(idle);
        }
        // If `check` panics, the guard destroys the object (its slot freed)
        // as the panic passes through.
        let mut guard = DestroyOnUnwind {
            pool: self,
            idle: Some(idle),
        };
        let idle = guard.idle.as_mut().expect("the guard holds the object");
        let reusable = self.manager.check(&mut idle.object);
        let idle = guard.idle.take().expect("the guard holds the object");
        if reusable {
            self.put_idle(idle);
        } else {
            self.destroy_or_resume(idle);
        }
    }

    /// The holder panicked: the object's state is unknown, so it is
    /// destroyed. A panicking `destroy` now would abort, so it is contained.
    #[cold]
    #[inline(never)]
    fn give_back_from_panic(&self, idle: Idle<M::Object>) {
        let _ = self.destroy(idle);
    }

    /// Keeps a reusable object: onto its slot's stack, or to a waiter.
    #[inline]
    pub(crate) fn put_idle(&self, idle: Idle<M::Object>) {
        let mut stack = spin_lock(&self.idle[idle.slot]);
        let gate = &self.gate;
        if gate.waiting.load(Ordering::Relaxed) == 0 && !gate.closed.load(Ordering::Relaxed) {
            stack.objects.push(idle.object);
            return;
        }
        drop(stack);
        self.put_idle_cold(idle);
    }

    /// Takers wait, or the pool is closed.
    #[cold]
    #[inline(never)]
    fn put_idle_cold(&self, idle: Idle<M::Object>) {
        let mut queue = lock(&self.waiters);
        if self.gate.closed.load(Ordering::Relaxed) {
            drop(queue);
            self.destroy_or_resume(idle);
            return;
        }
        let served = queue.serve(Handoff::Object(idle));
        self.gate.waiting.store(queue.len(), Ordering::Relaxed);
        match served {
            Ok(()) => bump(&self.counters.direct_takes),
            // Nobody waits any more. Holding the queue lock, no taker can
            // register before the push, and `close` cannot sweep before it.
            Err(Handoff::Object(idle)) => {
                spin_lock(&self.idle[idle.slot]).objects.push(idle.object)
            }
            Err(_) => unreachable!("serve hands back what it was given"),
        }
    }

    /// Destroys `idle` and frees its slot; hands back a panic from
    /// [`Manager::destroy`] after the slot is freed.
    pub(crate) fn destroy(
        &self,
        idle: Idle<M::Object>,
    ) -> Result<(), Box<dyn std::any::Any + Send>> {
        let Idle { object, slot } = idle;
        let outcome = catch_unwind(AssertUnwindSafe(|| self.manager.destroy(object)));
        bump(&self.counters.destroyed);
        self.free_slot(slot);
        outcome
    }

    /// [`destroy`](Self::destroy), letting a panic from
    /// [`Manager::destroy`] go on.
    pub(crate) fn destroy_or_resume(&self, idle: Idle<M::Object>) {
        if let Err(panic) = self.destroy(idle) {
            resume_unwind(panic);
        }
    }

    /// Frees `slot`: to the oldest waiter, which makes its own object, or
    /// back to the resource. Under the queue lock, so a waiter that found no
    /// slot before it slept is always served (see `# Protocol`).
    pub(crate) fn free_slot(&self, slot: usize) {
        let mut queue = lock(&self.waiters);
        if !self.gate.closed.load(Ordering::Relaxed) {
            let served = queue.serve(Handoff::Slot(slot));
            self.gate.waiting.store(queue.len(), Ordering::Relaxed);
            if served.is_ok() {
                return;
            }
        }
        self.slots.release_slot(slot);
        drop(queue);
        if let Some(refill) = &self.refill {
            refill.nudge();
        }
    }

    /// Closes the pool; see [`ObjectPool::close`].
    fn close(&self) {
        self.gate.closed.store(true, Ordering::Relaxed);
        let mut queue = lock(&self.waiters);
        queue.close();
        self.gate.waiting.store(0, Ordering::Relaxed);
        drop(queue);
        let mut first_panic = None;
        for (slot, stack) in self.idle.iter().enumerate() {
            let objects = std::mem::take(&mut spin_lock(stack).objects);
            for object in objects {
                if let Err(panic) = self.destroy(Idle { object, slot }) {
                    first_panic.get_or_insert(panic);
                }
            }
        }
        if let Some(panic) = first_panic {
            resume_unwind(panic);
        }
    }

    fn idle_count(&self) -> usize {
        self.idle
            .iter()
            .map(|stack| spin_lock(stack).objects.len())
            .sum()
    }

    fn status(&self) -> PoolStatus {
        let idle = self.idle_count();
        let creating = self.counters.creating.load(Ordering::Relaxed);
        let size = self.slots.usage();
        PoolStatus {
            max_size: self.slots.capacity(),
            size,
            idle,
            in_use: size.saturating_sub(idle + creating),
            creating,
            waiting: self.gate.waiting.load(Ordering::Relaxed),
        }
    }

    fn stats(&self) -> ObjectPoolStats {
        let counters = &self.counters;
        let stack_takes: u64 = self.idle.iter().map(|stack| spin_lock(stack).takes).sum();
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ObjectPoolStats {
            takes: stack_takes + read(&counters.direct_takes),
            waits: read(&counters.waits),
            timeouts: read(&counters.timeouts),
            rejected: read(&counters.rejected),
            creates: read(&counters.creates),
            create_failures: read(&counters.create_failures),
            destroyed: read(&counters.destroyed),
            wait: lock(&self.wait_times).summary(),
        }
    }

    /// Makes one object in the background and keeps it; `false` if the pool
    /// is full or closed, or creation failed.
    fn create_idle(&self) -> bool {
        if self.gate.closed.load(Ordering::Relaxed) {
            return false;
        }
        let Ok(slot) = self.slots.admit_from(self.home()) else {
            return false;
        };
        match self.create_in(slot) {
            Ok(idle) => {
                self.put_idle(idle);
                true
            }
            Err(_) => false,
        }
    }

    /// Tops the idle objects up to `min_idle`, stopping at the first failure
    /// (the next tick retries).
    fn refill(&self) {
        while self.idle_count() + self.counters.creating.load(Ordering::Relaxed) < self.min_idle {
            if !self.create_idle() {
                break;
            }
        }
    }

    /// The maintainer thread's body.
    fn maintain(&self, init_size: usize, started: crossbeam_channel::Sender<()>) {
        for _ in 0..init_size {
            // A failed creation is counted and does not stop the others.
            let _ = catch_unwind(AssertUnwindSafe(|| self.create_idle()));
        }
        drop(started);
        let Some(refill) = &self.refill else { return };
        loop {
            let _ = catch_unwind(AssertUnwindSafe(|| self.refill()));
            if refill.wait() == Wake::Stop {
                return;
            }
        }
    }
}

/// Destroys the object it still holds when dropped, which happens only when
/// [`Manager::check`] panics.
struct DestroyOnUnwind<'a, M: Manager> {
    pool: &'a PoolShared<M>,
    idle: Option<Idle<M::Object>>,
}

impl<M: Manager> Drop for DestroyOnUnwind<'_, M> {
    fn drop(&mut self) {
        if let Some(idle) = self.idle.take() {
            // Already unwinding: a second panic from `destroy` is contained.
            let _ = self.pool.destroy(idle);
        }
    }
}

/// Configures an [`ObjectPool`]; made by [`ObjectPool::builder`].
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
/// # }
/// let err = sidejob::ObjectPool::builder(Conns).max_size(2).min_idle(3).build().unwrap_err();
/// assert_eq!(err.setting(), "min_idle");
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct ObjectPoolBuilder<M> {
    manager: M,
    max_size: Option<usize>,
    init_size: usize,
    min_idle: usize,
    queue_max: usize,
    shards: Option<usize>,
    name: String,
}

impl<M> fmt::Debug for ObjectPoolBuilder<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectPoolBuilder")
            .field("max_size", &self.max_size)
            .field("init_size", &self.init_size)
            .field("min_idle", &self.min_idle)
            .field("queue_max", &self.queue_max)
            .field("shards", &self.shards)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<M: Manager> ObjectPoolBuilder<M> {
    /// The most objects that exist at once: idle, in use and being made.
    /// Required, and at least 1.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let err = sidejob::ObjectPool::builder(Conns).max_size(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `max_size`: must be at least 1");
    /// ```
    pub fn max_size(mut self, max_size: usize) -> Self {
        self.max_size = Some(max_size);
        self
    }

    /// Objects made before [`build`](Self::build) returns (by the
    /// maintainer thread, which `build` waits for). Default 0; at most
    /// `max_size`. A failed creation is counted in
    /// [`ObjectPoolStats::create_failures`] and does not fail the build:
    /// the pool starts smaller and makes objects on demand.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).init_size(3).build()?;
    /// assert_eq!(pool.status().idle, 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn init_size(mut self, init_size: usize) -> Self {
        self.init_size = init_size;
        self
    }

    /// Idle objects kept ready: whenever fewer are idle (or being made), the
    /// maintainer thread makes more, while the pool is below `max_size`.
    /// Default 0 (no background creation); at most `max_size`.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).min_idle(1).build()?;
    /// let taken = pool.try_take()?; // the background thread makes another
    /// # drop(taken);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn min_idle(mut self, min_idle: usize) -> Self {
        self.min_idle = min_idle;
        self
    }

    /// How many takers may wait at once; the next one gets
    /// [`TakeError::QueueFull`] at once. Default [`DEFAULT_QUEUE_MAX`]; 0
    /// makes [`ObjectPool::take`] never wait.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).queue_max(0).build()?;
    /// let _held = pool.try_take()?;
    /// let refused = pool.take(Duration::from_secs(30)).unwrap_err();
    /// assert!(matches!(refused, sidejob::TakeError::QueueFull));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn queue_max(mut self, queue_max: usize) -> Self {
        self.queue_max = queue_max;
        self
    }

    /// The number of shards: idle stacks and slot shards. From 1 to
    /// [`MAX_SHARDS`](crate::MAX_SHARDS); default: the number of CPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let err = sidejob::ObjectPool::builder(Conns).max_size(4).shards(0).build().unwrap_err();
    /// assert_eq!(err.setting(), "shards");
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The maintainer thread's name. Default `sidejob-pool`; the thread is
    /// called `<name>-maintainer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).min_idle(1).name("db").build()?;
    /// # drop(pool);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Builds the pool, making `init_size` objects first.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting when `max_size` is unset or 0,
    /// `init_size` or `min_idle` is above `max_size`, `shards` is 0 or above
    /// [`MAX_SHARDS`](crate::MAX_SHARDS), or the maintainer thread could not
    /// be started (named `name`).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let err = sidejob::ObjectPool::builder(Conns).max_size(2).init_size(3).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `init_size`: 3 is above `max_size` (2)");
    /// ```
    pub fn build(self) -> Result<ObjectPool<M>, BuildError> {
        let max_size = self
            .max_size
            .ok_or_else(|| BuildError::new("max_size", "must be set"))?;
        if max_size == 0 {
            return Err(BuildError::new("max_size", "must be at least 1"));
        }
        for (setting, value) in [("init_size", self.init_size), ("min_idle", self.min_idle)] {
            if value > max_size {
                return Err(BuildError::new(
                    setting,
                    format!("{value} is above `max_size` ({max_size})"),
                ));
            }
        }
        let mut slots = ResourceBuilder::default().capacity(max_size);
        if let Some(shards) = self.shards {
            slots = slots.shards(shards);
        }
        let slots = slots.build().map_err(|error| match error.setting() {
            "capacity" => BuildError::new("max_size", error.reason().to_owned()),
            _ => error,
        })?;
        let shards = slots.shard_count();
        let shared = Arc::new(PoolShared {
            manager: self.manager,
            slots,
            idle: idle_stacks(shards),
            gate: CachePadded::new(Gate {
                closed: AtomicBool::new(false),
                waiting: AtomicUsize::new(0),
            }),
            waiters: Mutex::new(WaitQueue::new()),
            queue_max: self.queue_max,
            min_idle: self.min_idle,
            refill: (self.min_idle > 0).then(Maintenance::new),
            counters: CachePadded::new(Counters::default()),
            wait_times: Mutex::new(LatencyHistogram::new()),
        });
        let mut maintainer = None;
        if self.init_size > 0 || self.min_idle > 0 {
            let (started, init_done) = crossbeam_channel::bounded::<()>(0);
            let body = {
                let shared = Arc::clone(&shared);
                let init_size = self.init_size;
                move || shared.maintain(init_size, started)
            };
            let handle =
                spawn_named(format!("{}-maintainer", self.name), None, body).map_err(|error| {
                    BuildError::new(
                        "name",
                        format!("could not start the maintainer thread: {error}"),
                    )
                })?;
            // Disconnects once the `init_size` objects exist.
            let _ = init_done.recv();
            maintainer = Some(handle);
        }
        Ok(ObjectPool {
            shared,
            maintainer: Mutex::new(maintainer),
        })
    }
}

/// A snapshot of an [`ObjectPool`]'s size, from [`ObjectPool::status`].
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
/// # }
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).build()?;
/// let status = pool.status();
/// assert_eq!((status.max_size, status.size), (3, 0));
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStatus {
    /// The size limit.
    pub max_size: usize,
    /// Objects that exist or are being made: `idle + in_use + creating`.
    pub size: usize,
    /// Objects ready to be taken.
    pub idle: usize,
    /// Objects taken and not yet returned.
    pub in_use: usize,
    /// Objects being made.
    pub creating: usize,
    /// Takers waiting in [`ObjectPool::take`].
    pub waiting: usize,
}

/// An [`ObjectPool`]'s counters, from [`ObjectPool::stats`].
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
/// # }
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
/// let held = pool.try_take()?;
/// assert!(pool.try_take().is_err());
/// sidejob::Pooled::fail(held);
/// let stats = pool.stats();
/// assert_eq!((stats.takes, stats.rejected, stats.destroyed), (1, 1, 1));
/// assert_eq!(stats.wait.count, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectPoolStats {
    /// Objects handed to takers.
    pub takes: u64,
    /// Takers that joined the wait queue.
    pub waits: u64,
    /// Waiters whose timeout ran out.
    pub timeouts: u64,
    /// Takes refused at once: [`TakeError::Overload`] and
    /// [`TakeError::QueueFull`].
    pub rejected: u64,
    /// Objects made.
    pub creates: u64,
    /// Creations that failed (or panicked).
    pub create_failures: u64,
    /// Objects destroyed: failed checks, [`Pooled::fail`], panicking
    /// holders, and the pool closing.
    pub destroyed: u64,
    /// How long waiters waited, whatever the outcome.
    pub wait: LatencyStats,
}
