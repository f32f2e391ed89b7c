//! [`AsyncPooled`] and [`AsyncOwnedPooled`]: an object taken from an
//! [`AsyncObjectPool`](crate::AsyncObjectPool), returned when dropped.
//!
//! The return is synchronous, as the blocking face's: onto the taker's
//! home stack, or straight to the oldest waiter (whose task it wakes). No
//! task is spawned and no `check` runs on the way back.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use super::super::engine::Held;
use super::super::engine::MemberBox;
use super::super::engine::PoolShared;
use super::manager::{AsyncManaged, AsyncManager};

/// An object taken from an [`AsyncObjectPool`](crate::AsyncObjectPool),
/// borrowing the pool; dropping it returns the object.
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::AsyncManager for Conns {
/// #     type Object = Vec<u8>;
/// #     type Error = std::io::Error;
/// #     async fn create(&self) -> std::io::Result<Vec<u8>> { Ok(Vec::new()) }
/// # }
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
/// let mut conn = pool.try_take().await?;
/// conn.push(1); // a `&mut Vec<u8>`
/// drop(conn); // back in the pool
/// assert_eq!(*pool.try_take().await?, [1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[must_use = "dropping a taken object returns it to the pool at once"]
pub struct AsyncPooled<'a, M: AsyncManager> {
    pool: &'a PoolShared<AsyncManaged<M>>,
    held: Held<M::Object>,
}

/// An object taken from an [`AsyncObjectPool`](crate::AsyncObjectPool),
/// holding the pool by `Arc`: `'static`, for spawned tasks. Dropping it
/// returns the object.
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::AsyncManager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     async fn create(&self) -> std::io::Result<u8> { Ok(7) }
/// # }
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
/// let conn = pool.try_take_owned().await?;
/// let value = tokio::spawn(async move { *conn }).await?;
/// assert_eq!(value, 7);
/// assert_eq!(pool.status().idle, 1); // returned by the task
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[must_use = "dropping a taken object returns it to the pool at once"]
pub struct AsyncOwnedPooled<M: AsyncManager> {
    pool: Arc<PoolShared<AsyncManaged<M>>>,
    held: Held<M::Object>,
}

impl<'a, M: AsyncManager> AsyncPooled<'a, M> {
    pub(super) fn new(
        pool: &'a PoolShared<AsyncManaged<M>>,
        mut member: MemberBox<M::Object>,
        home: usize,
    ) -> Self {
        // Where the object goes back: the taker's home stack.
        member.set_home(home);
        AsyncPooled {
            pool,
            held: Held::new(member),
        }
    }

    /// The member box, for the tag.
    pub(super) fn member(&self) -> Option<&MemberBox<M::Object>> {
        self.held.member()
    }

    /// Holds the pool by `Arc` instead, for an [`AsyncOwnedPooled`].
    pub(super) fn into_owned(
        mut this: Self,
        pool: Arc<PoolShared<AsyncManaged<M>>>,
    ) -> AsyncOwnedPooled<M> {
        AsyncOwnedPooled {
            pool,
            held: Held::new(this.held.take_member()),
        }
    }

    /// Destroys the object instead of returning it (it is broken), and frees
    /// its slot: the oldest waiter gets the slot to make a replacement.
    ///
    /// # Panics
    ///
    /// If [`AsyncManager::destroy`] panics, after the slot is freed.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// sidejob::AsyncPooled::fail(pool.try_take().await?);
    /// assert_eq!((pool.status().size, pool.stats().destroyed), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn fail(mut this: Self) {
        let member = this.held.take_member();
        this.pool.destroy_or_resume(member);
    }

    /// Takes the object out of the pool for good and frees its slot. The
    /// pool does not destroy it.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = String;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<String> { Ok("conn".into()) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// let owned: String = sidejob::AsyncPooled::detach(pool.try_take().await?);
    /// assert_eq!((owned.as_str(), pool.status().size), ("conn", 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn detach(mut this: Self) -> M::Object {
        let member = this.held.take_member();
        this.pool.detach(member)
    }
}

impl<M: AsyncManager> AsyncOwnedPooled<M> {
    /// The member box, for the tag.
    pub(super) fn member(&self) -> Option<&MemberBox<M::Object>> {
        self.held.member()
    }

    /// As [`AsyncPooled::fail`].
    ///
    /// # Panics
    ///
    /// If [`AsyncManager::destroy`] panics, after the slot is freed.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// sidejob::AsyncOwnedPooled::fail(pool.try_take_owned().await?);
    /// assert_eq!(pool.status().size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn fail(mut this: Self) {
        let member = this.held.take_member();
        this.pool.destroy_or_resume(member);
    }

    /// As [`AsyncPooled::detach`].
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(5) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// assert_eq!(sidejob::AsyncOwnedPooled::detach(pool.try_take_owned().await?), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn detach(mut this: Self) -> M::Object {
        let member = this.held.take_member();
        this.pool.detach(member)
    }
}

impl<M: AsyncManager> Deref for AsyncPooled<'_, M> {
    type Target = M::Object;

    #[inline]
    fn deref(&self) -> &M::Object {
        self.held.object()
    }
}

impl<M: AsyncManager> DerefMut for AsyncPooled<'_, M> {
    #[inline]
    fn deref_mut(&mut self) -> &mut M::Object {
        self.held.object_mut()
    }
}

impl<M: AsyncManager> Deref for AsyncOwnedPooled<M> {
    type Target = M::Object;

    #[inline]
    fn deref(&self) -> &M::Object {
        self.held.object()
    }
}

impl<M: AsyncManager> DerefMut for AsyncOwnedPooled<M> {
    #[inline]
    fn deref_mut(&mut self) -> &mut M::Object {
        self.held.object_mut()
    }
}

impl<M: AsyncManager> Drop for AsyncPooled<'_, M> {
    #[inline]
    fn drop(&mut self) {
        if let Some(member) = self.held.take() {
            self.pool.give_back(member);
        }
    }
}

impl<M: AsyncManager> Drop for AsyncOwnedPooled<M> {
    #[inline]
    fn drop(&mut self) {
        if let Some(member) = self.held.take() {
            self.pool.give_back(member);
        }
    }
}

impl<M: AsyncManager> fmt::Debug for AsyncPooled<'_, M>
where
    M::Object: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsyncPooled").field(&**self).finish()
    }
}

impl<M: AsyncManager> fmt::Debug for AsyncOwnedPooled<M>
where
    M::Object: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsyncOwnedPooled").field(&**self).finish()
    }
}
