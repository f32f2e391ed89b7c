//! Tagged takes for the async face: the blocking face's lookup order (the
//! engine's `find_tagged`), the same queue, and the tag taught by an
//! awaited [`AsyncTaggedManager::tag`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::engine::tag_of;
use super::super::engine::Held;
use super::super::engine::MemberBox;
use super::super::engine::PoolShared;
use super::super::error::TakeError;
use super::manager::{AsyncManaged, AsyncTaggedManager};
use super::take::TakeWatch;
use super::{AsyncObjectPool, AsyncOwnedPooled, AsyncPooled};

/// An object being taught its tag: if the take is dropped meanwhile, the
/// object, half taught, is destroyed (its slot freed, to a waiter first):
/// what it knows is unknown.
struct Teaching<'a, M: AsyncTaggedManager> {
    shared: &'a PoolShared<AsyncManaged<M>>,
    held: Held<M::Object>,
}

impl<M: AsyncTaggedManager> Drop for Teaching<'_, M> {
    fn drop(&mut self) {
        if let Some(member) = self.held.take() {
            // A panicking `destroy` while unwinding would abort.
            let _ = self.shared.destroy(member);
        }
    }
}

impl<M: AsyncTaggedManager> AsyncObjectPool<M> {
    /// Takes an object tagged `tag`, waiting up to `timeout`, with the
    /// lookup order of [`ObjectPool::take_tagged`](crate::ObjectPool::take_tagged)
    /// (CouchDB's): the exact tag, the same group, an untagged object, a new
    /// object, the least recently used tagged objects evicted at
    /// `max_size`; otherwise it waits in the FIFO queue. An object that
    /// does not carry `tag` yet is taught it by [`AsyncTaggedManager::tag`].
    ///
    /// # Errors
    ///
    /// Those of [`take`](Self::take), and [`TakeError::Tag`] when teaching
    /// the tag failed (the object was destroyed).
    ///
    /// # Panics
    ///
    /// If `create`, `check` or `tag` panics, once the slot or object is
    /// dealt with.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe as [`take`](Self::take); a take dropped while `tag`
    /// runs destroys the half-taught object (freeing its slot) rather than
    /// keep an object whose state is unknown.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # struct Workers;
    /// # impl sidejob::AsyncManager for Workers {
    /// #     type Object = Vec<String>;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<Vec<String>> { Ok(Vec::new()) }
    /// # }
    /// impl sidejob::AsyncTaggedManager for Workers {
    ///     type Tag = (&'static str, &'static str);
    ///     async fn tag(&self, loaded: &mut Vec<String>, tag: &Self::Tag) -> std::io::Result<()> {
    ///         loaded.push(format!("{}/{}", tag.0, tag.1));
    ///         Ok(())
    ///     }
    /// }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Workers).max_size(2).build().await?;
    /// let wait = Duration::from_secs(1);
    /// drop(pool.take_tagged(&("db", "a"), wait).await?); // made and taught "db/a"
    /// let worker = pool.take_tagged(&("db", "b"), wait).await?; // same group: the same worker
    /// assert_eq!(*worker, ["db/a", "db/b"]);
    /// assert_eq!(worker.tag(), Some(&("db", "b")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn take_tagged(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<AsyncPooled<'_, M>, TakeError<M::Error>> {
        let shared = &*self.shared;
        let watch = TakeWatch::new(shared.cancelled_takes());
        let taken = shared.take_tagged_async(tag, timeout).await;
        watch.finish(taken.map(|member| AsyncPooled::new(shared, member, shared.home())))
    }

    /// [`take_tagged`](Self::take_tagged), for an [`AsyncOwnedPooled`].
    ///
    /// # Errors
    ///
    /// As [`take_tagged`](Self::take_tagged).
    ///
    /// # Panics
    ///
    /// As [`take_tagged`](Self::take_tagged).
    ///
    /// # Cancel safety
    ///
    /// As [`take_tagged`](Self::take_tagged).
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
    /// impl sidejob::AsyncTaggedManager for Conns {
    ///     type Tag = (u32, u32);
    /// }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// let owned = pool.take_tagged_owned(&(1, 2), std::time::Duration::from_secs(1)).await?;
    /// let tag = tokio::spawn(async move { owned.tag().copied() }).await?;
    /// assert_eq!(tag, Some((1, 2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn take_tagged_owned(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<AsyncOwnedPooled<M>, TakeError<M::Error>> {
        let pooled = self.take_tagged(tag, timeout).await?;
        Ok(AsyncPooled::into_owned(pooled, Arc::clone(&self.shared)))
    }
}

impl<M: AsyncTaggedManager> PoolShared<AsyncManaged<M>> {
    /// Found by the lookup order, else waited for, then taught `tag`.
    async fn take_tagged_async(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let deadline = Instant::now().checked_add(timeout);
        let member = loop {
            match self.find_tagged(tag)? {
                Some(found) => match self.accept_async(found, true, deadline).await? {
                    Some(member) => break member,
                    // It failed its check and was destroyed: look again.
                    None => continue,
                },
                None => break self.wait_in_queue(deadline).await?,
            }
        };
        self.teach_async(member, tag).await
    }

    /// Teaches `idle` the tag, unless it carries it already.
    async fn teach_async(
        &self,
        idle: MemberBox<M::Object>,
        tag: &M::Tag,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        if tag_of::<M::Object, M::Tag>(&idle) == Some(tag) {
            return Ok(idle);
        }
        let mut teaching = Teaching {
            shared: self,
            held: Held::new(idle),
        };
        let taught = self.manager().0.tag(teaching.held.object_mut(), tag).await;
        let mut idle = teaching.held.take_member();
        match taught {
            Ok(()) => {
                idle.set_tag(Box::new(tag.clone()));
                Ok(idle)
            }
            Err(error) => {
                self.destroy_or_resume(idle);
                Err(TakeError::Tag(error))
            }
        }
    }
}

impl<M: AsyncTaggedManager> AsyncPooled<'_, M> {
    /// The object's tag, if a tagged take taught it one.
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
    /// impl sidejob::AsyncTaggedManager for Conns {
    ///     type Tag = (u32, u32);
    /// }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(2).build().await?;
    /// assert_eq!(pool.try_take().await?.tag(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn tag(&self) -> Option<&M::Tag> {
        tag_of::<M::Object, M::Tag>(self.member()?)
    }
}

impl<M: AsyncTaggedManager> AsyncOwnedPooled<M> {
    /// The object's tag, if a tagged take taught it one.
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
    /// impl sidejob::AsyncTaggedManager for Conns {
    ///     type Tag = (u32, u32);
    /// }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(2).build().await?;
    /// assert_eq!(pool.try_take_owned().await?.tag(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn tag(&self) -> Option<&M::Tag> {
        tag_of::<M::Object, M::Tag>(self.member()?)
    }
}
