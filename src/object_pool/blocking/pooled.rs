//! [`Pooled`]: an object taken from an [`ObjectPool`](crate::ObjectPool).

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::object_pool::engine::tag_of;
use crate::object_pool::engine::Held;
use crate::object_pool::engine::MemberBox;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::manager::{Manager, TaggedManager};

/// An object taken from an [`ObjectPool`](crate::ObjectPool); dereferences
/// to it.
///
/// Dropping it returns the object: it is checked with
/// [`Manager::check`] and reused, or destroyed if the check fails. If the
/// holder panics, the object is destroyed instead, since its state is
/// unknown. Either way its slot is accounted for exactly once.
///
/// It borrows the pool, so the pool outlives every object taken from it.
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = Vec<u8>;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<Vec<u8>> { Ok(Vec::new()) }
/// # }
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
/// let mut buffer = pool.try_take()?;
/// buffer.push(1); // DerefMut to the Vec
/// assert_eq!(buffer.len(), 1);
/// drop(buffer); // back to the pool
/// assert_eq!(pool.status().idle, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a taken object returns it to the pool at once"]
pub struct Pooled<'a, M: Manager> {
    pool: &'a PoolShared<M>,
    /// The object's member box, until `fail`, `detach` or `drop` takes it.
    held: Held<M::Object>,
}

impl<'a, M: Manager> Pooled<'a, M> {
    #[inline]
    pub(in crate::object_pool) fn new(
        pool: &'a PoolShared<M>,
        mut member: MemberBox<M::Object>,
        home: usize,
    ) -> Self {
        // Where the object goes back: the taker's home stack.
        member.set_home(home);
        Pooled {
            pool,
            held: Held::new(member),
        }
    }

    pub(in crate::object_pool) fn into_member(mut this: Self) -> MemberBox<M::Object> {
        this.held.take_member()
    }

    /// Destroys the object instead of returning it (it is broken), and frees
    /// its slot: the oldest waiter gets the slot to make a replacement, or,
    /// if `min_idle` asks, the pool makes one in the background.
    ///
    /// # Panics
    ///
    /// If [`Manager::destroy`] panics, after the slot is freed.
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
    /// sidejob::Pooled::fail(pool.try_take()?);
    /// assert_eq!(pool.status().size, 0);
    /// assert_eq!(pool.stats().destroyed, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fail(this: Self) {
        let pool = this.pool;
        pool.destroy_or_resume(Self::into_member(this));
    }

    /// Takes the object out of the pool for good and frees its slot. The
    /// pool does not destroy it.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = String;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<String> { Ok("conn".into()) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let owned: String = sidejob::Pooled::detach(pool.try_take()?);
    /// assert_eq!(owned, "conn");
    /// assert_eq!(pool.status().size, 0); // room for a new one
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach(this: Self) -> M::Object {
        let pool = this.pool;
        pool.detach(Self::into_member(this))
    }
}

impl<M: TaggedManager> Pooled<'_, M> {
    /// The object's tag, if a tagged take taught it one (see
    /// [`ObjectPool::take_tagged`](crate::ObjectPool::take_tagged)).
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
    /// impl sidejob::TaggedManager for Conns {
    ///     type Tag = (u32, u32);
    /// }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(2).build()?;
    /// assert_eq!(pool.try_take()?.tag(), None);
    /// let tagged = pool.take_tagged(&(1, 2), Duration::from_secs(1))?;
    /// assert_eq!(tagged.tag(), Some(&(1, 2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tag(&self) -> Option<&M::Tag> {
        tag_of::<M::Object, M::Tag>(self.held.member()?)
    }
}

impl<M: Manager> Deref for Pooled<'_, M> {
    type Target = M::Object;

    #[inline]
    fn deref(&self) -> &M::Object {
        self.held.object()
    }
}

impl<M: Manager> DerefMut for Pooled<'_, M> {
    #[inline]
    fn deref_mut(&mut self) -> &mut M::Object {
        self.held.object_mut()
    }
}

impl<M: Manager> Drop for Pooled<'_, M> {
    #[inline]
    fn drop(&mut self) {
        if let Some(member) = self.held.take() {
            self.pool.give_back(member);
        }
    }
}

impl<M: Manager> fmt::Debug for Pooled<'_, M>
where
    M::Object: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pooled").field(&**self).finish()
    }
}
