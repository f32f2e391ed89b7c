//! The reply channel of one call: written once by the worker, read by the caller.
//!
//! Backed by the `oneshot` crate, which waits with or without a timeout and
//! as a future, or, under `sidejob_loom`, by a loom-aware cell, so the models
//! check that no caller ever waits forever.

use std::time::Duration;

/// Why no reply was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoReply {
    /// The timeout passed first (never under loom, which models no time).
    #[cfg_attr(sidejob_loom, allow(dead_code))]
    Timeout,
    /// The worker dropped the reply sender without answering.
    Dropped,
}

#[cfg(not(sidejob_loom))]
mod backend {
    use super::*;
    use crossbeam_utils::Backoff;
    use std::time::Instant;

    pub(crate) struct ReplySender<T>(oneshot::Sender<T>);
    pub(crate) struct ReplyReceiver<T>(oneshot::Receiver<T>);
    /// Waits for the reply as a future; no runtime needed.
    pub(crate) type ReplyFuture<T> = oneshot::AsyncReceiver<T>;

    pub(crate) fn reply_channel<T>() -> (ReplySender<T>, ReplyReceiver<T>) {
        let (sender, receiver) = oneshot::channel();
        (ReplySender(sender), ReplyReceiver(receiver))
    }

    impl<T> ReplySender<T> {
        /// Answers the caller; a caller that gave up is not an error.
        pub(crate) fn send(self, reply: T) {
            let _ = self.0.send(reply);
        }

        /// Whether the caller gave up waiting (timed out or dropped).
        pub(crate) fn is_abandoned(&self) -> bool {
            self.0.is_closed()
        }
    }

    impl<T> ReplyReceiver<T> {
        /// Waits for the reply. A short reply is caught by spinning (then
        /// yielding) for a few microseconds, as crossbeam's channels do,
        /// which saves the futex wake-up that parking costs; a longer one
        /// parks until the deadline.
        pub(crate) fn recv_timeout(self, timeout: Duration) -> Result<T, NoReply> {
            let deadline = Instant::now().checked_add(timeout);
            let backoff = Backoff::new();
            while !backoff.is_completed() {
                match self.0.try_recv() {
                    Ok(reply) => return Ok(reply),
                    Err(oneshot::TryRecvError::Disconnected) => return Err(NoReply::Dropped),
                    Err(oneshot::TryRecvError::Empty) => backoff.snooze(),
                }
            }
            match deadline {
                Some(deadline) => self.0.recv_deadline(deadline).map_err(|err| match err {
                    oneshot::RecvTimeoutError::Timeout => NoReply::Timeout,
                    oneshot::RecvTimeoutError::Disconnected => NoReply::Dropped,
                }),
                // A timeout too long to represent: wait for as long as it takes.
                None => self.0.recv().map_err(|_| NoReply::Dropped),
            }
        }

        pub(crate) fn into_future(self) -> ReplyFuture<T> {
            std::future::IntoFuture::into_future(self.0)
        }
    }
}

#[cfg(sidejob_loom)]
mod backend {
    use super::*;
    use loom::sync::{Arc, Condvar, Mutex};

    enum State<T> {
        Waiting,
        Sent(T),
        Dropped,
        Abandoned,
    }

    struct ReplyCell<T> {
        state: Mutex<State<T>>,
        ready: Condvar,
    }

    pub(crate) struct ReplySender<T>(Option<Arc<ReplyCell<T>>>);
    pub(crate) struct ReplyReceiver<T>(Arc<ReplyCell<T>>);

    pub(crate) fn reply_channel<T>() -> (ReplySender<T>, ReplyReceiver<T>) {
        let cell = Arc::new(ReplyCell {
            state: Mutex::new(State::Waiting),
            ready: Condvar::new(),
        });
        (ReplySender(Some(cell.clone())), ReplyReceiver(cell))
    }

    impl<T> ReplySender<T> {
        pub(crate) fn send(mut self, reply: T) {
            let cell = self.0.take().expect("sent once");
            let mut state = cell.state.lock().unwrap();
            if let State::Waiting = *state {
                *state = State::Sent(reply);
            }
            drop(state);
            cell.ready.notify_one();
        }

        pub(crate) fn is_abandoned(&self) -> bool {
            let cell = self.0.as_ref().expect("not yet sent");
            let state = cell.state.lock().unwrap();
            matches!(*state, State::Abandoned)
        }
    }

    impl<T> Drop for ReplySender<T> {
        fn drop(&mut self) {
            if let Some(cell) = self.0.take() {
                let mut state = cell.state.lock().unwrap();
                if let State::Waiting = *state {
                    *state = State::Dropped;
                }
                drop(state);
                cell.ready.notify_one();
            }
        }
    }

    impl<T> Drop for ReplyReceiver<T> {
        fn drop(&mut self) {
            let mut state = self.0.state.lock().unwrap();
            if let State::Waiting = *state {
                *state = State::Abandoned;
            }
        }
    }

    impl<T> ReplyReceiver<T> {
        /// Loom models no time: waits until answered or dropped.
        pub(crate) fn recv_timeout(self, _timeout: Duration) -> Result<T, NoReply> {
            let mut state = self.0.state.lock().unwrap();
            loop {
                match std::mem::replace(&mut *state, State::Waiting) {
                    State::Sent(reply) => return Ok(reply),
                    State::Dropped => return Err(NoReply::Dropped),
                    State::Waiting => state = self.0.ready.wait(state).unwrap(),
                    State::Abandoned => unreachable!("only the receiver abandons"),
                }
            }
        }
    }
}

pub(crate) use backend::*;
