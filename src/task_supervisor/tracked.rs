//! [`Tracked`]: a task's future, holding its slot and its place in the live
//! set until it completes, panics or is dropped.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::shared::Anchor;
#[cfg(feature = "tokio")]
use super::shared::TaskShared;
use crate::children::ChildId;
use crate::children::{Ended, Place};

pin_project! {
    /// A task admitted by [`TaskSupervisor::try_track`](super::TaskSupervisor::try_track):
    /// a future yielding the task's output, to spawn on any executor (or to
    /// await in place). Its slot is freed and it leaves the live set exactly
    /// once: when it completes, when a poll panics (the panic goes on to the
    /// executor), or when it is dropped unfinished (aborted, cancelled, its
    /// runtime shut down). `Send` when the task's future is.
    ///
    /// # Cancel safety
    ///
    /// Dropping it at any point frees its slot; it is then counted in
    /// `cancelled`.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let task = supervisor.try_track(|_| async { 40 + 2 }).unwrap();
    /// assert_eq!(supervisor.count(), 1); // counted from `try_track` on
    /// assert_eq!(task.await, 42);
    /// assert_eq!(supervisor.count(), 0);
    /// # });
    /// ```
    #[must_use = "a tracked task holds its slot until it is run or dropped"]
    pub struct Tracked<Fut> {
        #[pin]
        future: Fut,
        child: ChildGuard,
    }
}

/// Ends the child exactly once, however its future ends.
pub(super) struct ChildGuard {
    /// Its shard's anchor: the way to the supervisor.
    anchor: Anchor,
    place: Place,
    /// Inside a poll of the task's future: a drop that finds it set comes
    /// from a panic in that poll.
    polling: bool,
    ended: bool,
}

impl ChildGuard {
    pub(super) fn new(anchor: Anchor, place: Place) -> Self {
        ChildGuard {
            anchor,
            place,
            polling: false,
            ended: false,
        }
    }

    /// Where the child lives.
    pub(super) fn place(&self) -> Place {
        self.place
    }

    /// Its shard's anchor.
    pub(super) fn anchor(&self) -> &Anchor {
        &self.anchor
    }

    /// The closure making the child's future panicked: it ends so.
    pub(super) fn end_panicked(mut self) {
        self.end(Ended::Panicked);
    }

    fn end(&mut self, how: Ended) {
        if !self.ended {
            self.ended = true;
            self.anchor.child_ended(self.place, how);
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let how = if self.polling || std::thread::panicking() {
            Ended::Panicked
        } else {
            Ended::Dropped
        };
        self.end(how);
    }
}

impl<Fut> Tracked<Fut> {
    pub(super) fn new(future: Fut, child: ChildGuard) -> Self {
        Tracked { future, child }
    }

    /// The task's id.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(2);
    /// let task = supervisor.try_track(|_| async {}).unwrap();
    /// assert!(supervisor.which_children().contains(&task.id()));
    /// ```
    pub fn id(&self) -> ChildId {
        self.child.place.id
    }

    #[cfg(feature = "tokio")]
    pub(super) fn place(&self) -> Place {
        self.child.place()
    }

    /// What its supervisor and the other children share.
    #[cfg(feature = "tokio")]
    pub(super) fn shared(&self) -> &TaskShared {
        self.child.anchor()
    }
}

impl<Fut: Future> Future for Tracked<Fut> {
    type Output = Fut::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        let this = self.project();
        this.child.polling = true;
        let polled = this.future.poll(cx);
        this.child.polling = false;
        if polled.is_ready() {
            this.child.end(Ended::Completed);
        }
        polled
    }
}

impl<Fut> fmt::Debug for Tracked<Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracked")
            .field("id", &self.child.place.id)
            .field("ended", &self.child.ended)
            .finish()
    }
}
