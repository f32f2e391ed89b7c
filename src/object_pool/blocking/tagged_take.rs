//! Tagged takes: [`ObjectPool::take_tagged`] and CouchDB's lookup order
//! (exact tag, same group, untagged, a free slot, the least recently used
//! tagged object evicted), then teaching the object its tag.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::owned_pooled::OwnedPooled;
use super::pooled::Pooled;
use super::ObjectPool;
use crate::object_pool::engine::tag_of;
use crate::object_pool::engine::MemberBox;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::TaggedManager;

impl<M: TaggedManager> ObjectPool<M> {
    /// Takes an object tagged `tag`, waiting up to `timeout`; CouchDB's
    /// design-document affinity. Looks, in order, for:
    ///
    /// 1. an idle object with the exact tag (the most recently returned);
    /// 2. an idle object of the same group;
    /// 3. an idle untagged object (an untagged replacement is then made in
    ///    the background, room permitting, so untagged takers keep finding
    ///    one);
    /// 4. a new object, below `max_size`;
    /// 5. at `max_size`, room made by destroying the least recently used
    ///    idle tagged objects, then a new object. As many as CouchDB's
    ///    process manager evicts: `round(0.1 × max_size + 1)` (one for a
    ///    `max_size` up to 4, two from 5 to 14, three from 15 to 24, ...),
    ///    so a burst of new tags does not evict one object per take;
    ///
    /// and otherwise waits in the same FIFO queue as [`take`](Self::take),
    /// for any object. An object that does not already carry `tag` is
    /// taught it with [`TaggedManager::tag`] and keeps it: returned, it
    /// idles on the tag shelf, where tagged takes find it by tag or group
    /// without a scan. Idle tagged objects are reaped after `idle_timeout`
    /// whatever the soft limit. An untagged take
    /// ([`try_take`](Self::try_take), [`take`](Self::take)) prefers untagged
    /// objects and a new one, and takes a tagged one only when nothing else
    /// is left; the object keeps its tag.
    ///
    /// # Errors
    ///
    /// Those of [`take`](Self::take), and [`TakeError::Tag`] when teaching
    /// the tag failed (the object was destroyed).
    ///
    /// # Panics
    ///
    /// If [`Manager::create`](crate::Manager::create) or [`TaggedManager::tag`] panics, the panic
    /// goes on to the caller (the slot is freed first).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use sidejob::{Manager, ObjectPool, TaggedManager};
    ///
    /// struct Workers;
    /// impl Manager for Workers {
    ///     type Object = Vec<String>; // what each worker has loaded
    ///     type Error = std::io::Error;
    ///     fn create(&self) -> std::io::Result<Vec<String>> {
    ///         Ok(Vec::new())
    ///     }
    /// }
    /// impl TaggedManager for Workers {
    ///     type Tag = (&'static str, &'static str);
    ///     fn tag(&self, loaded: &mut Vec<String>, tag: &Self::Tag) -> std::io::Result<()> {
    ///         loaded.push(format!("{}/{}", tag.0, tag.1));
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let pool = ObjectPool::builder(Workers).max_size(2).build()?;
    /// let wait = Duration::from_secs(1);
    /// drop(pool.take_tagged(&("db", "a"), wait)?); // made and taught "db/a"
    /// // Same group: the same worker, taught "db/b" as well.
    /// let worker = pool.take_tagged(&("db", "b"), wait)?;
    /// assert_eq!(*worker, ["db/a", "db/b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_tagged(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<Pooled<'_, M>, TakeError<M::Error>> {
        self.start_tagging();
        let shared = &*self.shared;
        shared
            .take_tagged(tag, timeout)
            .map(|member| Pooled::new(shared, member, shared.home()))
    }

    /// Like [`take_tagged`](Self::take_tagged), but the guard holds the
    /// pool's shared state by `Arc`, as
    /// [`take_owned`](Self::take_owned)'s does.
    ///
    /// # Errors
    ///
    /// Those of [`take_tagged`](Self::take_tagged).
    ///
    /// # Panics
    ///
    /// As [`take_tagged`](Self::take_tagged).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// impl sidejob::TaggedManager for Conns {
    ///     type Tag = (u32, u32);
    /// }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let owned = pool.take_tagged_owned(&(1, 2), Duration::from_secs(1))?;
    /// let tag = std::thread::spawn(move || owned.tag().copied()).join().unwrap();
    /// assert_eq!(tag, Some((1, 2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_tagged_owned(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
        self.start_tagging();
        self.shared
            .take_tagged(tag, timeout)
            .map(|member| OwnedPooled::new(Arc::clone(&self.shared), member, self.shared.home()))
    }

    /// Starts the maintainer at the first tagged take: it replaces the
    /// untagged objects that tagged takes teach. Should its thread fail to
    /// start, tagged takes still work; untagged objects are then made on
    /// demand instead. (Not under loom, whose models leave replenishment
    /// out.)
    fn start_tagging(&self) {
        if !self.shared.tagging_started() && !cfg!(sidejob_loom) {
            let _ = self.start_maintainer(0);
        }
    }
}

impl<M: TaggedManager> PoolShared<M> {
    /// A tagged take: found by the lookup order, else waited for, then
    /// taught `tag`.
    fn take_tagged(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let deadline = Instant::now().checked_add(timeout);
        let member = loop {
            match self.find_tagged(tag)? {
                Some(found) => match self.accept_found(found, deadline)? {
                    Some(member) => break member,
                    // It failed its check and was destroyed: look again.
                    None => continue,
                },
                None => break self.wait_for(deadline)?,
            }
        };
        self.teach(member, tag)
    }

    /// Teaches `idle` the tag, unless it carries it already.
    fn teach(
        &self,
        mut idle: MemberBox<M::Object>,
        tag: &M::Tag,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        if tag_of::<M::Object, M::Tag>(&idle) == Some(tag) {
            return Ok(idle);
        }
        let object = idle.object_mut();
        match catch_unwind(AssertUnwindSafe(|| self.manager().tag(object, tag))) {
            Ok(Ok(())) => {
                idle.set_tag(Box::new(tag.clone()));
                Ok(idle)
            }
            Ok(Err(error)) => {
                self.destroy_or_resume(idle);
                Err(TakeError::Tag(error))
            }
            Err(panic) => {
                let _ = self.destroy(idle);
                resume_unwind(panic)
            }
        }
    }
}
