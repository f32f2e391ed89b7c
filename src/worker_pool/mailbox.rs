//! A shard's mailbox: the queue between senders and the shard's worker.
//!
//! Backed by a bounded crossbeam channel, or, under `sidejob_loom`, by a
//! loom-aware queue, so the models explore the worker pool's protocol with
//! the same code around it. The slot protocol bounds what is queued (a sender
//! holds a slot before it sends), so the channel is sized to the shard's share
//! plus one control message and a send never waits.

use std::time::Duration;

/// What a worker found when it looked in its mailbox.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Received<T> {
    Message(T),
    /// The wait timed out with the mailbox still empty (never under loom,
    /// which models no time).
    #[cfg_attr(sidejob_loom, allow(dead_code))]
    Idle,
}

#[cfg(not(sidejob_loom))]
mod backend {
    use super::*;
    use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TrySendError};

    pub(crate) struct MailSender<T>(Sender<T>);
    pub(crate) struct MailReceiver<T>(Receiver<T>);

    pub(crate) fn mailbox<T>(room: usize) -> (MailSender<T>, MailReceiver<T>) {
        let (sender, receiver) = bounded(room);
        (MailSender(sender), MailReceiver(receiver))
    }

    impl<T> MailSender<T> {
        /// Queues `message`. The caller holds the room for it.
        #[inline]
        pub(crate) fn post(&self, message: T) {
            if self.0.try_send(message).is_err() {
                unreachable!("a mailbox holds every message its slots admit");
            }
        }

        /// Queues `message` unless the worker is gone: it never started,
        /// because a build failed part way. The caller holds the room.
        pub(crate) fn post_unless_gone(&self, message: T) {
            if let Err(TrySendError::Full(_)) = self.0.try_send(message) {
                unreachable!("a mailbox holds every message its slots admit");
            }
        }
    }

    impl<T> MailReceiver<T> {
        /// The next message, if one is already waiting.
        #[inline]
        pub(crate) fn try_recv(&self) -> Option<T> {
            self.0.try_recv().ok()
        }

        /// Waits for the next message. The pool keeps a sender alive for as
        /// long as any worker runs, so this only returns with a message.
        pub(crate) fn recv(&self) -> T {
            self.0
                .recv()
                .expect("the pool outlives its workers' mailboxes")
        }

        /// Waits up to `timeout` for the next message.
        pub(crate) fn recv_timeout(&self, timeout: Duration) -> Received<T> {
            match self.0.recv_timeout(timeout) {
                Ok(message) => Received::Message(message),
                Err(RecvTimeoutError::Timeout) => Received::Idle,
                Err(RecvTimeoutError::Disconnected) => {
                    unreachable!("the pool outlives its workers' mailboxes")
                }
            }
        }
    }
}

#[cfg(sidejob_loom)]
mod backend {
    use super::*;
    use loom::sync::{Arc, Condvar, Mutex};
    use std::collections::VecDeque;

    struct Queue<T> {
        messages: Mutex<VecDeque<T>>,
        ready: Condvar,
    }

    pub(crate) struct MailSender<T>(Arc<Queue<T>>);
    pub(crate) struct MailReceiver<T>(Arc<Queue<T>>);

    pub(crate) fn mailbox<T>(room: usize) -> (MailSender<T>, MailReceiver<T>) {
        let queue = Arc::new(Queue {
            messages: Mutex::new(VecDeque::with_capacity(room)),
            ready: Condvar::new(),
        });
        (MailSender(queue.clone()), MailReceiver(queue))
    }

    impl<T> MailSender<T> {
        pub(crate) fn post(&self, message: T) {
            self.0.messages.lock().unwrap().push_back(message);
            self.0.ready.notify_one();
        }

        pub(crate) fn post_unless_gone(&self, message: T) {
            self.post(message);
        }
    }

    impl<T> MailReceiver<T> {
        pub(crate) fn try_recv(&self) -> Option<T> {
            self.0.messages.lock().unwrap().pop_front()
        }

        pub(crate) fn recv(&self) -> T {
            let mut messages = self.0.messages.lock().unwrap();
            loop {
                if let Some(message) = messages.pop_front() {
                    return message;
                }
                messages = self.0.ready.wait(messages).unwrap();
            }
        }

        /// Loom models no time: waits as [`recv`](Self::recv) does.
        pub(crate) fn recv_timeout(&self, _timeout: Duration) -> Received<T> {
            Received::Message(self.recv())
        }
    }
}

pub(crate) use backend::{mailbox, MailReceiver, MailSender};
