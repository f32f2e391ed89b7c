//! What the pool's threads share, and the senders' side of the protocol:
//! admission through the probe, the refusal, and posting a call.

use std::sync::Arc;
use std::time::Duration;

// TSC-based where the CPU's counter is invariant: a raw read is one
// instruction instead of a system call's tens of nanoseconds, and the pool
// reads it for every timed message.

use crossbeam_utils::CachePadded;

use crate::admission::{admit, home_shard, SplitShard};
use std::cell::Cell;

use crate::sync::{lock, wait, AtomicBool, AtomicU64, Condvar, Mutex, Ordering};

use super::envelope::{CallReply, Envelope, Ticks, UNTIMED};
use super::error::{CallError, CastError};
use super::mailbox::Mailbox;
use super::record::ShardRecord;
use super::reply::reply_channel;
use super::Worker;

/// What the pool's threads share.
pub(super) struct Shared<W: Worker> {
    /// Each shard's usage: slots taken by senders, given back by its worker.
    pub(super) shards: Box<[CachePadded<SplitShard>]>,
    /// Refused sends, by the shard where their probe started; apart from the
    /// shards, so counting a refusal never disturbs a probe.
    pub(super) rejections: Box<[CachePadded<AtomicU64>]>,
    /// Set when shutdown begins: from then on a refusal is `Closed`.
    pub(super) closing: AtomicBool,
    /// The capacity the pool was built with (the shards' limits drop to
    /// zero at shutdown).
    pub(super) capacity: usize,
    /// Calls and casts refused because the pool was shut down.
    pub(super) refused_closed: AtomicU64,
    pub(super) mailboxes: Box<[Arc<Mailbox<Envelope<W>>>]>,
    pub(super) closed: AtomicBool,
    pub(super) call_timeout: Duration,
    /// Time the messages whose grant number has these bits clear (the
    /// sampling interval, a power of two, minus one).
    pub(super) sample_mask: u64,
    pub(super) records: Box<[CachePadded<ShardRecord>]>,
    /// Serialises the shard limit changes of shutdown and of workers going
    /// down and up.
    pub(super) limits: Mutex<()>,
    /// The worker threads started and not yet ended; `exited` is signalled
    /// as each ends.
    pub(super) running: Mutex<usize>,
    pub(super) exited: Condvar,
}

// Which pool's worker the current thread is, if any (the address of the
// pool's `Shared`): a shutdown called from a handler must not wait for
// its own thread.
#[cfg(not(sidejob_loom))]
std::thread_local! {
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}

#[cfg(sidejob_loom)]
loom::thread_local! {
    static WORKER_OF: Cell<usize> = Cell::new(0);
}

/// One admitted message, not posted yet: [`Shared::post`] consumes it, so
/// each admission is posted once.
#[must_use = "an admitted message holds its slot until it is posted and handled"]
pub(super) struct Admitted {
    shard: usize,
    grant: u64,
    /// Its post time, if it is timed.
    pub(super) posted: Ticks,
}

/// Why a send was refused.
pub(super) enum Refusal {
    Overload,
    Closed,
}

impl Refusal {
    /// The error a refused call returns, with its request handed back.
    pub(super) fn call_error<R>(self, request: R) -> CallError<R> {
        match self {
            Refusal::Overload => CallError::Overload(request),
            Refusal::Closed => CallError::Closed(request),
        }
    }

    /// The error a refused cast returns, with its request handed back.
    pub(super) fn cast_error<R>(self, request: R) -> CastError<R> {
        match self {
            Refusal::Overload => CastError::Overload(request),
            Refusal::Closed => CastError::Closed(request),
        }
    }
}

impl<W: Worker> Shared<W> {
    /// Marks the current thread as one of this pool's workers.
    pub(super) fn enter_worker(&self) {
        let me = self as *const Self as usize;
        WORKER_OF.with(|of| of.set(me));
    }

    /// Whether the current thread is one of this pool's workers.
    pub(super) fn on_a_worker(&self) -> bool {
        let me = self as *const Self as usize;
        WORKER_OF.with(|of| of.get() == me)
    }

    /// A worker thread is about to start.
    pub(super) fn worker_starting(&self) {
        *lock(&self.running) += 1;
    }

    /// The current worker thread is done serving this pool.
    pub(super) fn leave_worker(&self) {
        WORKER_OF.with(|of| of.set(0));
    }

    /// A worker thread ended (or never started).
    pub(super) fn worker_ended(&self) {
        let mut running = lock(&self.running);
        *running -= 1;
        self.exited.notify_all();
    }

    /// Waits until every worker thread has ended.
    pub(super) fn wait_for_workers(&self) {
        let mut running = lock(&self.running);
        while *running > 0 {
            running = wait(&self.exited, running);
        }
    }

    /// Closes the pool, once: marks it closing, sets every shard's limit to
    /// 0 (every later send is refused), then marks it closed and stops the
    /// mailboxes. A worker exits once its mailbox is stopped and its shard
    /// holds no slot.
    pub(super) fn close(&self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        // Under the limits lock: a worker rebuilt meanwhile reads `closing`
        // under it and leaves its shard closed.
        let limits = lock(&self.limits);
        for shard in self.shards.iter() {
            shard.set_limit(0);
        }
        drop(limits);
        // Only now: once `is_closed` says so, every send is refused.
        self.closed.store(true, Ordering::Release);
        for mailbox in self.mailboxes.iter() {
            mailbox.stop();
        }
    }

    /// Takes a slot for one message; returns the admission, with the
    /// message's post time if it is one of the timed messages (decided by
    /// its grant number, so an untimed message costs no clock read on either
    /// side).
    #[inline]
    pub(super) fn admit(&self) -> Result<Admitted, Refusal> {
        let start = home_shard(self.shards.len());
        match admit(&self.shards, start) {
            Some(admission) => {
                let timed = admission.grant & self.sample_mask == 0;
                Ok(Admitted {
                    shard: admission.shard,
                    grant: admission.grant,
                    posted: if timed { self.now() } else { UNTIMED },
                })
            }
            None => Err(self.refusal(start)),
        }
    }

    /// Posts the message of `admitted` to its shard's mailbox.
    #[inline]
    #[allow(unsafe_code)]
    pub(super) fn post(&self, admitted: Admitted, envelope: Envelope<W>) {
        // SAFETY: an `Admitted` is made only by `admit`, for an admission
        // on that shard whose slot is held until the worker releases it
        // after taking this message, and it is consumed here, so each grant
        // is posted once. Every shard's limit is at most the share its
        // mailbox was made for: the builder sizes both from it, and a
        // limit only ever drops to 0 and comes back to it.
        unsafe { self.mailboxes[admitted.shard].post(admitted.grant, envelope) };
    }

    /// A raw reading of the clock, never [`UNTIMED`].
    #[inline]
    pub(super) fn now(&self) -> Ticks {
        UNTIMED.saturating_add(crate::clock::clock().raw().max(1))
    }

    #[cold]
    fn refusal(&self, start: usize) -> Refusal {
        self.rejections[start].fetch_add(1, Ordering::Relaxed);
        if self.closing.load(Ordering::Acquire) {
            self.refused_closed.fetch_add(1, Ordering::Relaxed);
            Refusal::Closed
        } else {
            Refusal::Overload
        }
    }

    /// Posts a call and returns the receiver of its reply.
    #[inline]
    pub(super) fn post_call(
        &self,
        request: W::Request,
    ) -> Result<CallReply<W>, CallError<W::Request>> {
        let admitted = match self.admit() {
            Ok(admitted) => admitted,
            Err(refusal) => return Err(refusal.call_error(request)),
        };
        let (reply, receiver) = reply_channel();
        let posted = admitted.posted;
        self.post(
            admitted,
            Envelope {
                request,
                reply: Some(reply),
                posted,
            },
        );
        Ok(receiver)
    }
}
