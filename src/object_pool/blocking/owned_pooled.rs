//! [`OwnedPooled`]: an object taken from an [`ObjectPool`](crate::ObjectPool)
//! that keeps the pool alive instead of borrowing it.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::object_pool::engine::tag_of;
use crate::object_pool::engine::Held;
use crate::object_pool::engine::MemberBox;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::manager::{Manager, TaggedManager};

/// An object taken from an [`ObjectPool`](crate::ObjectPool) that holds the
/// pool's shared state by `Arc`, so it can outlive the borrow of the pool,
/// move to a thread of its own, or come from a
/// [`PoolGroup`](crate::PoolGroup). Made by
/// [`ObjectPool::try_take_owned`](crate::ObjectPool::try_take_owned),
/// [`ObjectPool::take_owned`](crate::ObjectPool::take_owned) and the group's
/// takes.
///
/// It behaves as [`Pooled`](crate::Pooled) does: dropping it returns the
/// object, checked; a holder's panic destroys it. Taking one costs an `Arc`
/// clone, a shared count that [`Pooled`](crate::Pooled) avoids. If the
/// pool was closed or dropped meanwhile, the object is destroyed on return.
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<u8> { Ok(7) }
/// # }
/// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
/// let conn = pool.try_take_owned()?;
/// let value = std::thread::spawn(move || *conn).join().unwrap();
/// assert_eq!(value, 7);
/// assert_eq!(pool.status().idle, 1); // returned by the other thread
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a taken object returns it to the pool at once"]
pub struct OwnedPooled<M: Manager> {
    pool: Arc<PoolShared<M>>,
    /// The object's member box, until `fail`, `detach` or `drop` takes it.
    held: Held<M::Object>,
}

impl<M: Manager> OwnedPooled<M> {
    pub(in crate::object_pool) fn new(
        pool: Arc<PoolShared<M>>,
        mut member: MemberBox<M::Object>,
        home: usize,
    ) -> Self {
        // Where the object goes back: the taker's home stack.
        member.set_home(home);
        OwnedPooled {
            pool,
            held: Held::new(member),
        }
    }

    fn into_member(mut this: Self) -> MemberBox<M::Object> {
        this.held.take_member()
    }

    /// Destroys the object instead of returning it, as
    /// [`Pooled::fail`](crate::Pooled::fail) does.
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
    /// sidejob::OwnedPooled::fail(pool.try_take_owned()?);
    /// assert_eq!(pool.stats().destroyed, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fail(this: Self) {
        let pool = Arc::clone(&this.pool);
        pool.destroy_or_resume(Self::into_member(this));
    }

    /// Takes the object out of the pool for good, as
    /// [`Pooled::detach`](crate::Pooled::detach) does.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(5) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// assert_eq!(sidejob::OwnedPooled::detach(pool.try_take_owned()?), 5);
    /// assert_eq!(pool.status().size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach(this: Self) -> M::Object {
        let pool = Arc::clone(&this.pool);
        pool.detach(Self::into_member(this))
    }
}

impl<M: TaggedManager> OwnedPooled<M> {
    /// The object's tag, if a tagged take taught it one (see
    /// [`ObjectPool::take_tagged_owned`](crate::ObjectPool::take_tagged_owned)).
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
    /// assert_eq!(pool.try_take_owned()?.tag(), None);
    /// let tagged = pool.take_tagged_owned(&(1, 2), Duration::from_secs(1))?;
    /// assert_eq!(tagged.tag(), Some(&(1, 2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tag(&self) -> Option<&M::Tag> {
        tag_of::<M::Object, M::Tag>(self.held.member()?)
    }
}

impl<M: Manager> Deref for OwnedPooled<M> {
    type Target = M::Object;

    #[inline]
    fn deref(&self) -> &M::Object {
        self.held.object()
    }
}

impl<M: Manager> DerefMut for OwnedPooled<M> {
    #[inline]
    fn deref_mut(&mut self) -> &mut M::Object {
        self.held.object_mut()
    }
}

impl<M: Manager> Drop for OwnedPooled<M> {
    #[inline]
    fn drop(&mut self) {
        if let Some(member) = self.held.take() {
            self.pool.give_back(member);
        }
    }
}

impl<M: Manager> fmt::Debug for OwnedPooled<M>
where
    M::Object: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedPooled").field(&**self).finish()
    }
}
