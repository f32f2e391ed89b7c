//! [`PoolGroup`]: object pools of one kind under keys, taken from as one;
//! pidq's typed pools and pooler's groups.
//!
//! The members live in an arc-swap snapshot: a take loads it without a lock
//! and without touching a shared counter, and `add_pool` and `remove_pool`
//! (serialised by a mutex) publish a new one. A take that loaded the old
//! snapshot may still reach a pool being removed; that is what removal
//! allows for (see [`Removal`]).

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::sync::{lock, Mutex};

use super::group_wait::wait_at_any;
use super::owned_pooled::OwnedPooled;
use super::ObjectPool;
use crate::object_pool::engine::Counted;
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::Manager;
use crate::object_pool::status::PoolStatus;

/// How [`PoolGroup::remove_pool`] lets a member pool go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The pool leaves the group and is retired
    /// ([`ObjectPool::retire_all`]): idle objects are destroyed now, objects
    /// in use when they come back. Takers that reached it before the
    /// removal are still served, and whoever holds the pool can go on
    /// using it.
    Graceful,
    /// As `Graceful`, and the pool is closed ([`ObjectPool::close`]): new
    /// takes are refused at once and its waiters are answered
    /// [`TakeError::Closed`].
    Immediate,
}

/// Object pools of one kind under keys, taken from as one: a take starts at
/// a random member and tries the others in order, so that load spreads over
/// the members and one member's overload is not the group's.
///
/// Members are added and removed while the group is in use. The group holds
/// each as `Arc<ObjectPool<M>>`, and its takes hand out [`OwnedPooled`]
/// objects, which keep their pool alive even after it left the group.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use sidejob::{Manager, ObjectPool, PoolGroup, Removal};
///
/// struct Replica(&'static str);
/// impl Manager for Replica {
///     type Object = &'static str;
///     type Error = std::io::Error;
///     fn create(&self) -> std::io::Result<&'static str> {
///         Ok(self.0)
///     }
/// }
///
/// let group = PoolGroup::new();
/// group.add_pool("east", ObjectPool::builder(Replica("east")).max_size(1).build()?)?;
/// group.add_pool("west", ObjectPool::builder(Replica("west")).max_size(1).build()?)?;
///
/// let first = group.try_take()?;
/// let second = group.take(Duration::from_millis(10))?;
/// assert_ne!(*first, *second); // one from each member
/// assert!(group.try_take().unwrap_err().is_overload());
///
/// group.remove_pool(&"east", Removal::Graceful);
/// assert_eq!(group.keys(), ["west"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PoolGroup<K, M: Manager> {
    members: ArcSwap<Vec<(K, Arc<ObjectPool<M>>)>>,
    /// Serialises `add_pool` and `remove_pool`.
    changing: Mutex<()>,
}

impl<K, M> PoolGroup<K, M>
where
    K: Clone + PartialEq + Send + Sync + 'static,
    M: Manager,
{
    /// An empty group.
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
    /// let group: sidejob::PoolGroup<String, Conns> = sidejob::PoolGroup::new();
    /// assert!(group.is_empty());
    /// ```
    pub fn new() -> Self {
        PoolGroup {
            members: ArcSwap::from_pointee(Vec::new()),
            changing: Mutex::new(()),
        }
    }

    /// Adds `pool` under `key`, and returns it as the group holds it.
    ///
    /// # Errors
    ///
    /// [`DuplicatePool`], holding the key and the pool, if a member already
    /// has that key.
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
    /// let group = sidejob::PoolGroup::new();
    /// let build = || sidejob::ObjectPool::builder(Conns).max_size(1).build();
    /// group.add_pool(1, build()?)?;
    /// let refused = group.add_pool(1, build()?).unwrap_err();
    /// assert_eq!(refused.key(), &1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_pool(
        &self,
        key: K,
        pool: ObjectPool<M>,
    ) -> Result<Arc<ObjectPool<M>>, DuplicatePool<K, M>> {
        let _changing = lock(&self.changing);
        let members = self.members.load();
        if members.iter().any(|(existing, _)| *existing == key) {
            return Err(DuplicatePool::new(key, pool));
        }
        let pool = Arc::new(pool);
        let mut next = Vec::clone(&members);
        next.push((key, Arc::clone(&pool)));
        self.members.store(Arc::new(next));
        Ok(pool)
    }

    /// Removes the member under `key` as `removal` says, and returns it;
    /// `None` if there is none.
    ///
    /// # Panics
    ///
    /// If [`Manager::destroy`] panics on an idle object, once every idle
    /// object is destroyed (the pool has left the group by then).
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
    /// use sidejob::Removal;
    /// let group = sidejob::PoolGroup::new();
    /// group.add_pool("a", sidejob::ObjectPool::builder(Conns).max_size(1).build()?)?;
    /// let removed = group.remove_pool(&"a", Removal::Immediate).unwrap();
    /// assert!(removed.is_closed());
    /// assert!(group.remove_pool(&"a", Removal::Immediate).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_pool(&self, key: &K, removal: Removal) -> Option<Arc<ObjectPool<M>>> {
        let changing = lock(&self.changing);
        let members = self.members.load();
        let at = members.iter().position(|(existing, _)| existing == key)?;
        let mut next = Vec::clone(&members);
        let (_, pool) = next.remove(at);
        self.members.store(Arc::new(next));
        drop(changing);
        if removal == Removal::Immediate {
            pool.close();
        }
        pool.retire_all();
        Some(pool)
    }

    /// The member under `key`.
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
    /// let group = sidejob::PoolGroup::new();
    /// group.add_pool("a", sidejob::ObjectPool::builder(Conns).max_size(2).build()?)?;
    /// assert_eq!(group.pool(&"a").unwrap().max_size(), 2);
    /// assert!(group.pool(&"b").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pool(&self, key: &K) -> Option<Arc<ObjectPool<M>>> {
        self.members
            .load()
            .iter()
            .find(|(existing, _)| existing == key)
            .map(|(_, pool)| Arc::clone(pool))
    }

    /// The members' keys, in the order they were added.
    ///
    /// # Examples
    ///
    /// ```
    /// let group: sidejob::PoolGroup<u8, Conns> = sidejob::PoolGroup::new();
    /// assert!(group.keys().is_empty());
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// ```
    pub fn keys(&self) -> Vec<K> {
        self.members
            .load()
            .iter()
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// How many members there are.
    ///
    /// # Examples
    ///
    /// ```
    /// let group: sidejob::PoolGroup<u8, Conns> = sidejob::PoolGroup::new();
    /// assert_eq!(group.len(), 0);
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.members.load().len()
    }

    /// Whether the group has no member.
    ///
    /// # Examples
    ///
    /// ```
    /// let group: sidejob::PoolGroup<u8, Conns> = sidejob::PoolGroup::new();
    /// assert!(group.is_empty());
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes an object from a member without waiting: starts at a random
    /// member and tries the others in order, with
    /// [`ObjectPool::try_take`].
    ///
    /// # Errors
    ///
    /// [`TakeError::Overload`] when no member had an object or room for
    /// one (an empty group has none), or else the first other error a
    /// member gave ([`TakeError::Create`]); a closed member is passed over,
    /// and [`TakeError::Closed`] comes back when every member is closed.
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] panics (the slot is freed first).
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
    /// let group = sidejob::PoolGroup::new();
    /// assert!(group.try_take().unwrap_err().is_overload()); // no member yet
    /// group.add_pool("a", sidejob::ObjectPool::builder(Conns).max_size(1).build()?)?;
    /// let conn = group.try_take()?;
    /// # drop(conn);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_take(&self) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
        let members = self.members.load();
        let start = random_start(members.len());
        let taken = try_each(&members, start);
        if let (Err(TakeError::Overload), Some((_, first))) = (&taken, members.get(start)) {
            // One refusal, counted at the first member tried.
            first.shared.count(Counted::Rejected);
        }
        taken
    }

    /// Takes an object like [`try_take`](Self::try_take), or else waits up
    /// to `timeout` at every open member at once, and is served by
    /// whichever frees an object (or a slot) first, FIFO with each member's
    /// own waiters. A member closing while the group take waits only
    /// drops out of the wait.
    ///
    /// The wait is counted in the stats of the first member it queued at,
    /// from the random start (`waits`, `timeouts`, the wait time).
    ///
    /// # Errors
    ///
    /// Those of [`try_take`](Self::try_take), except that `Overload`
    /// becomes what the wait ends in: [`TakeError::Timeout`], what the
    /// member that served it answered (as [`ObjectPool::take`]), or
    /// [`TakeError::QueueFull`] when every open member's queue was full;
    /// an empty group answers `Overload`, and a group whose members are all
    /// closed `Closed`.
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] panics (the slot is freed first).
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
    /// use std::time::{Duration, Instant};
    /// let group = sidejob::PoolGroup::new();
    /// group.add_pool("a", sidejob::ObjectPool::builder(Conns).max_size(1).build()?)?;
    /// let held = group.take(Duration::from_millis(10))?;
    /// let waited = group.take(Duration::from_millis(10));
    /// assert!(matches!(waited, Err(sidejob::TakeError::Timeout)));
    /// # drop(held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&self, timeout: Duration) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
        let members = self.members.load();
        let start = random_start(members.len());
        match try_each(&members, start) {
            Err(TakeError::Overload) if !members.is_empty() => {}
            taken => return taken,
        }
        // Wait at every member at once, in order from the random start.
        let pools: Vec<&Arc<ObjectPool<M>>> = (0..members.len())
            .map(|offset| &members[(start + offset) % members.len()].1)
            .collect();
        wait_at_any(&pools, Instant::now().checked_add(timeout))
    }

    /// Each member's key and status, in the order they were added.
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
    /// let group = sidejob::PoolGroup::new();
    /// group.add_pool("a", sidejob::ObjectPool::builder(Conns).max_size(3).build()?)?;
    /// let held = group.try_take()?;
    /// let status = group.status();
    /// assert_eq!(status[0].0, "a");
    /// assert_eq!((status[0].1.max_size, status[0].1.in_use), (3, 1));
    /// # drop(held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> Vec<(K, PoolStatus)> {
        self.members
            .load()
            .iter()
            .map(|(key, pool)| (key.clone(), pool.status()))
            .collect()
    }
}

impl<K, M> Default for PoolGroup<K, M>
where
    K: Clone + PartialEq + Send + Sync + 'static,
    M: Manager,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K: fmt::Debug, M: Manager> fmt::Debug for PoolGroup<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members = self.members.load();
        f.debug_struct("PoolGroup")
            .field(
                "keys",
                &members.iter().map(|(key, _)| key).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// `try_take` on each member from `start` on, in order: the first object,
/// else the first error other than a refusal, else `Closed` when every
/// member is closed, else `Overload` (also for an empty group).
fn try_each<K, M: Manager>(
    members: &[(K, Arc<ObjectPool<M>>)],
    start: usize,
) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
    let mut first_error = None;
    let mut all_closed = !members.is_empty();
    for offset in 0..members.len() {
        let (_, pool) = &members[(start + offset) % members.len()];
        // Uncounted: the group counts its own refusal, once (a take that
        // goes on to wait is no refusal).
        let home = pool.shared.home();
        let taken = pool
            .shared
            .try_take(home, None)
            .map(|member| OwnedPooled::new(Arc::clone(&pool.shared), member, home));
        match taken {
            Ok(taken) => return Ok(taken),
            Err(TakeError::Closed) => {}
            Err(TakeError::Overload | TakeError::QueueFull) => all_closed = false,
            Err(error) => {
                all_closed = false;
                first_error.get_or_insert(error);
            }
        }
    }
    Err(first_error.unwrap_or(if all_closed {
        TakeError::Closed
    } else {
        TakeError::Overload
    }))
}

/// A random index below `len` (0 when `len` is 0), from a per-thread
/// generator, so that spreading takes costs no shared counter.
fn random_start(len: usize) -> usize {
    thread_local! {
        static STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(0u8) | 1);
    }
    // Loom replays each schedule and needs every run to choose alike.
    if len == 0 || cfg!(sidejob_loom) {
        return 0;
    }
    STATE.with(|state| {
        // xorshift64*: statistically fine for spreading load, not for secrets.
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        let wide = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        // The high bits, scaled to `len` without a modulo bias worth noting.
        ((u128::from(wide >> 32) * len as u128) >> 32) as usize
    })
}

/// [`PoolGroup::add_pool`](crate::PoolGroup::add_pool) found a member under
/// the same key; holds the key and the pool that were not added.
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
/// let group = sidejob::PoolGroup::new();
/// let build = || sidejob::ObjectPool::builder(Conns).max_size(1).build();
/// group.add_pool("a", build()?)?;
/// let refused = group.add_pool("a", build()?).unwrap_err();
/// assert_eq!(refused.to_string(), "a pool with this key is already in the group");
/// let (key, pool) = refused.into_inner(); // the pool is handed back
/// assert_eq!((key, pool.max_size()), ("a", 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DuplicatePool<K, M: Manager> {
    key: K,
    pool: ObjectPool<M>,
}

impl<K, M: Manager> DuplicatePool<K, M> {
    pub(super) fn new(key: K, pool: ObjectPool<M>) -> Self {
        DuplicatePool { key, pool }
    }

    /// The key already in use.
    ///
    /// # Examples
    ///
    /// See [`DuplicatePool`].
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The key and the pool that were not added.
    ///
    /// # Examples
    ///
    /// See [`DuplicatePool`].
    pub fn into_inner(self) -> (K, ObjectPool<M>) {
        (self.key, self.pool)
    }
}

impl<K: fmt::Debug, M: Manager> fmt::Debug for DuplicatePool<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DuplicatePool")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<K, M: Manager> fmt::Display for DuplicatePool<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pool with this key is already in the group")
    }
}

impl<K: fmt::Debug, M: Manager> std::error::Error for DuplicatePool<K, M> {}
