//! [`Abortable`]: a spawned child's future, which `shutdown` can abort
//! without an abort handle kept per child.
//!
//! # Protocol
//!
//! A child that completes in its first poll (most short tasks) costs
//! nothing here: no lock, no handle. The first time its future returns
//! `Pending`, the child leaves its waker in its live-set entry (once: a
//! task's waker always wakes that task, so a later poll's waker is the same
//! task's), under that set's lock, where it also reads `aborting`.
//! `shutdown`'s abort sets `aborting` and then takes each set's lock to wake
//! the wakers left there. So a child either left its waker before its shard
//! was visited, and is woken, or saw `aborting` and ends at once; a woken
//! child reads `aborting` at the start of its next poll and ends, dropping
//! its future (counted in `cancelled`), and its handle answers
//! `TaskError::is_aborted`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::Tracked;

pin_project! {
    /// A tracked child spawned on a runtime: yields its output, or `None`
    /// once `shutdown` aborted it.
    pub(super) struct Abortable<Fut> {
        #[pin]
        tracked: Option<Tracked<Fut>>,
        // Whether its waker is in its live-set entry.
        watched: bool,
    }
}

impl<Fut> Abortable<Fut> {
    pub(super) fn new(tracked: Tracked<Fut>) -> Self {
        Abortable {
            tracked: Some(tracked),
            watched: false,
        }
    }
}

impl<Fut: Future> Future for Abortable<Fut> {
    type Output = Option<Fut::Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(tracked) = this.tracked.as_mut().as_pin_mut() else {
            // Polled again after it ended: it stays ended.
            return Poll::Ready(None);
        };
        if tracked.shared().live.is_aborting() {
            // Dropping the future ends the child, counted as cancelled.
            this.tracked.set(None);
            return Poll::Ready(None);
        }
        match tracked.poll(cx) {
            Poll::Ready(output) => {
                this.tracked.set(None);
                Poll::Ready(Some(output))
            }
            Poll::Pending if *this.watched => Poll::Pending,
            Poll::Pending => {
                // Only a pending child can be in a shutdown's way: the first
                // time, it leaves its waker for the abort.
                if first_wait(this.tracked.as_mut(), cx) {
                    *this.watched = true;
                    Poll::Pending
                } else {
                    this.tracked.set(None);
                    Poll::Ready(None)
                }
            }
        }
    }
}

/// A child's first wait: leaves its waker for the abort; `false` if the
/// abort came first. Out of line: most children never wait.
#[cold]
#[inline(never)]
fn first_wait<Fut>(tracked: Pin<&mut Option<Tracked<Fut>>>, cx: &Context<'_>) -> bool {
    tracked.as_pin_mut().is_some_and(|tracked| {
        let place = tracked.place();
        tracked.shared().live.watch(place, cx.waker())
    })
}

impl<Fut> fmt::Debug for Abortable<Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Abortable")
            .field("tracked", &self.tracked)
            .field("watched", &self.watched)
            .finish()
    }
}

/// What the loom models reach of the abort, which they cannot spawn on a
/// runtime to get: a tracked child wrapped as `try_spawn` wraps it, and
/// `shutdown`'s abort. Compiled only under `sidejob_loom`.
#[cfg(sidejob_loom)]
impl super::TaskSupervisor {
    #[doc(hidden)]
    #[allow(missing_docs)]
    pub fn loom_try_track_abortable<F, Fut>(
        &self,
        task: F,
    ) -> Result<impl Future<Output = Option<Fut::Output>>, crate::children::SpawnError<F>>
    where
        F: FnOnce(super::TaskContext) -> Fut,
        Fut: Future,
    {
        self.try_track(task).map(Abortable::new)
    }

    #[doc(hidden)]
    #[allow(missing_docs)]
    pub fn loom_abort_spawned(&self) {
        self.shared.live.abort_all();
    }
}
