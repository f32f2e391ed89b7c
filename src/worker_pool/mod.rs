//! [`WorkerPool`]: bounded mailboxes for request handlers, one worker thread
//! per shard, built on the admission core's split shards and probe.
//!
//! # Protocol
//!
//! A sender takes a slot on a shard (home shard first, then the probe) before
//! it posts its message to that shard's mailbox. The shard's worker handles
//! its mailbox in order and gives the slot back when the handler returns,
//! before it delivers the reply, so usage counts the messages queued plus the
//! one being handled, and a caller holding its reply already sees its slot
//! free. When every shard is at its limit, `call` and `cast` fail at once with
//! the request handed back.
//!
//! Every slot is taken by a sender and given back by the shard's one worker,
//! so the shards are [`SplitShard`]s: the senders count admissions on their
//! cache line, the worker counts releases on its own with a plain store, and
//! a sender reads the worker's line only when its cached figure says full.
//! No cache line is written by both sides for every message.
//!
//! A shard's mailbox (`mailbox.rs`) is a ring indexed by the shard's grant
//! numbers: the admission already numbers and bounds the messages, so the
//! mailbox counts nothing itself. It is the crate's one module with
//! `unsafe`; its protocol and the measurement that justified it are in its
//! own docs.
//!
//! Shutdown marks the pool closed, sets every shard's limit to 0 (so every
//! later send is refused, and a refusal on a closed pool is reported as
//! `Closed`), and stops every mailbox. A worker exits once its mailbox is
//! stopped and its shard's usage is zero: every message that got a slot,
//! even one whose sender was still between taking the slot and posting, is
//! handled before the worker exits. The pool counts its running worker
//! threads under a mutex, and each thread, however it ends, counts itself
//! out and signals a condition variable: a `shutdown` from outside waits on
//! it holding no other lock, and one from a handler (a thread-local marks
//! the pool's worker threads) returns at once, so shutdowns from anywhere,
//! at once, never wait on each other.
//!
//! Latencies are sampled by grant number ([`WorkerPoolBuilder::latency_sample_every`]):
//! the sender stamps a timed message with a raw clock reading, the worker
//! keeps its readings in a local batch and records the batch into the shard's
//! histograms when it is full, before a reply, and before the worker waits
//! for mail.
//!
//! # Orderings
//!
//! `closing` is stored with `Release` before the limits drop to 0 and read
//! with `Acquire` after a refusal, so a send refused because of the shutdown
//! reports `Closed`. `closed` is stored with `Release` after the limits are
//! 0, so a thread that sees [`WorkerPool::is_closed`] also sees them and is
//! refused. The slot counts are the split shards', whose orderings are
//! documented there; the worker's release of a slot is `Release`, so a caller
//! that sees its reply (through the reply channel's own synchronisation) also
//! sees the slot free. The statistics counters are `Relaxed`: each is written
//! by one worker (or counts refusals) and read as a figure.
//!
//! A shard's limit goes to 0 when its worker dies and back to its share when
//! a new one is built, both under the `limits` mutex, which shutdown also
//! holds while it zeroes every limit; a worker reads `closing` (`Acquire`)
//! under it and never reopens a shard once shutdown began. A shard's `up`
//! flag is stored with `Release` after its limit changed and read with
//! `Acquire` by the stats, so whoever sees a shard up sees it admitting.
//!
//! [`SplitShard`]: crate::admission::SplitShard
//!
//! # Design
//!
//! A `WorkerPool` is the core's sharded admission and probe plus, per shard, a
//! worker thread and its mailbox: a ring indexed by the shard's grant numbers
//! and sized to the shard's share (`src/worker_pool/mailbox.rs`, the crate's
//! one module with `unsafe`), with a stop flag and a wake-up.
//!
//! Its shards keep their fixed split: a message is served by its shard's
//! worker, so a slot cannot move to another shard without its mailbox and
//! worker. Capacity that follows demand is the `ShardedCounter`'s, under
//! `Resource`, `Supervisor`, `TaskSupervisor` and the object pools; the worker
//! pool keeps the probe over its split shards, as before.
//!
//! * **Slots: split shards.** Every slot of a worker pool is taken by a sender
//!   and given back by the shard's one worker. With the core's one-word
//!   `Shard`, both cores would write that word for every message, and the
//!   worker's locked `fetch_sub` waited for the line each time: a quarter of
//!   the worker's time per cast in the profile. So the pool's shards are
//!   `SplitShard`s (`src/admission/split_shard.rs`): the senders' line holds one word
//!   (admitted count mod 2^40, limit) and a cached copy of the worker's release
//!   count; the worker's own line holds the release count, which it bumps with a
//!   plain store. Usage is admitted minus released. A sender checks against the
//!   cached release count, which only lags, so it only overstates usage: an
//!   admission on it is safe. When it says full, the sender reads the worker's
//!   line and decides on that fresh figure, so a refusal is still genuine. The
//!   probe (`src/admission/probe.rs`) is the core's, generic over the two kinds of shard:
//!   a refusal's snapshot of a split shard is the pair (word, release count).
//!   `accepted` is the release count plus usage, exact without any fold. The
//!   price: usage is two words, so reading it takes a short retry loop
//!   (release count, word, release count again), and only the owning worker may
//!   release, which the pool guarantees.
//! * **Send.** The sender takes a slot on its home shard, or on the next shard
//!   with room, and then posts a message `{ request, reply sender or none,
//!   posted at }` to that shard's mailbox. The envelope is the request plus two
//!   words (24 bytes for a `u64` request): a cast has no reply sender (the null
//!   pointer), and the post time is a raw clock reading. Every byte counts:
//!   the mailbox copies the envelope in and out, and at 32 bytes a slot two
//!   fit a cache line where three 40-byte slots straddled two. Because the
//!   slot comes first, a mailbox never holds more than its share, and a post
//!   never waits. A refusal hands the request back: `Overload(request)`, or
//!   `Closed(request)` after shutdown.
//! * **Mailbox** (`worker_pool/mailbox.rs`). A ring of `R` slots
//!   (`R` the shard's share rounded up to a power of two), indexed by the
//!   shard's *grant number*: the admission already numbers every message and
//!   never lets more than the limit be in flight, so the sender of grant `g`
//!   owns slot `g mod R` alone, writes the envelope and stores the slot's
//!   stamp `g + 1`; the worker, whose count of messages taken equals the
//!   release count, takes grant after grant once its stamp is there. No
//!   second count: a crossbeam channel kept its own head and tail (a locked
//!   instruction each per message, on lines of their own) on top of the
//!   shard's. Consecutive grants are laid a stripe apart (16 stripes), so a
//!   worker that keeps up with its senders reads lines they are done with.
//!   A worker with nothing to take spins on the next stamp, then parks;
//!   the sender, after its stamp, reads `sleeping` and unparks it. The two
//!   sides are a Dekker pair on the shard's word (the admitting CAS, the
//!   worker's usage read) and `sleeping`, all `SeqCst`, no dearer on x86
//!   than `AcqRel`; loom, which treats `SeqCst` accesses as `AcqRel`, gets
//!   `SeqCst` fences there instead, and its model (d) deadlocks if the
//!   sender's is taken out. This is the crate's one `unsafe` module (the
//!   slots are `MaybeUninit` cells handed over by that protocol); each use has
//!   its `SAFETY` reasoning, and its unit tests run under miri in CI.
//! * **Handle.** Each worker takes its mailbox in FIFO order. It frees the slot
//!   when the handler returns and *before* it delivers the reply, so a caller
//!   holding its reply already sees its slot free. Usage counts the messages
//!   queued plus the one being handled.
//! * **Panics.** Handlers run under `catch_unwind`. The worker is dropped (its
//!   state is unknown) and its shard's limit set to 0, so the probe sends new
//!   work to the other shards and, if every shard is down, refuses at once with
//!   `Overload`: nothing waits behind a worker that may never run. The
//!   factory is called at once, before the caller hears `WorkerPanicked`; a new
//!   worker goes on with the rest of the mailbox and its shard admits again.
//!   Nothing queued is lost, unlike Erlang sidejob, where a crashed worker loses
//!   its mailbox. A factory that panics too is retried after 1 ms, then 2, 4,
//!   ... ms, doubling to 100 ms (`worker_pool/restart.rs`).
//! * **Restart intensity,** as OTP's: a worker's death and each failed factory
//!   call count as restarts, and a shard that needed more than `max_restarts`
//!   within `restart_window` (10 in 10 s by default; `max_restarts(0)` never
//!   restarts) stays down for the pool's life. It answers what is left in its
//!   mailbox without a worker: calls get `ShardDown` with their request back
//!   (they never ran: a caller may retry, and the other shards still admit),
//!   casts are counted as skipped. So does a shard whose worker cannot be
//!   rebuilt when the pool closes, except that its callers get `Closed`.
//! * **User values dropped under the guard.** Every user value the worker
//!   lets go of (a request skipped after its caller timed out, a reply whose
//!   caller no longer waits, a worker that panicked, a panic's payload) is
//!   dropped under `catch_unwind`: a `Drop` that panics costs the value, never
//!   the thread. Should the thread unwind all the same, the loop catches it,
//!   puts the shard down for good, and goes on answering its mailbox until the
//!   pool shuts down, so no admitted message waits behind a dead thread
//!   (`tests/worker_pool/panicking_drops.rs`). `WorkerShardStats::up`
//!   and `WorkerPoolStats::shards_down` show which shards are down. A rebuilt
//!   worker reopens its shard under the pool's limits lock, and never once
//!   shutdown has begun, so shutdown's zero limits stay.
//! * **Timeouts.** A timed-out caller drops its end of the reply slot. A worker
//!   that reaches a call whose caller has gone skips it (counted in `skipped`).
//!   A call already running finishes, and its reply is dropped. Either way the
//!   slot is freed exactly once, by the worker. A dropped `call_async` future
//!   behaves the same.
//! * **Shutdown.** Mark the pool closed, set every shard's limit to 0 (every
//!   later send is refused, and a refusal on a closed pool is reported as
//!   `Closed`), and stop every mailbox (a flag, and a wake-up). A worker exits
//!   once its mailbox is stopped and its shard's usage is zero. A sender that took a
//!   slot before the shutdown but had not posted yet still holds the slot, so the
//!   worker waits for its message and handles it. Every admitted message is
//!   handled, every caller answered, and then `terminate` runs. The pool counts
//!   its running worker threads (a mutex and a condition variable each thread
//!   signals as it ends, however it ends). `shutdown` closes the pool once;
//!   called from outside, it then waits, holding no lock, until no worker
//!   runs, and joins the ended threads; called from one of the pool's own
//!   handlers (a thread-local says which pool a worker thread serves), it
//!   returns at once: that worker cannot end while its handler runs, and two
//!   handlers waiting for each other's workers would never return. So any
//!   number of calls, from handlers and from outside at once, all return, and
//!   each call from outside returns only once every admitted message was
//!   handled (`tests/worker_pool/shutdown_anywhere.rs`, loom model (z)).
//!   Dropping the pool shuts it down.
//! * **Stats.** Per-shard counters written by the worker alone (`Relaxed`), and
//!   hdrhistogram histograms of queue wait (post → handler start) and handling
//!   time. Timestamps are raw readings of a `quanta::Clock` (the TSC: one
//!   instruction, where `Instant::now()` cost 31 ns here and quanta's scaled
//!   global clock 12 ns), turned into durations only when recorded. The sender
//!   pays one read for the post time. A busy worker pays one per message,
//!   because it reuses the previous handler's finish time as the next start when
//!   the message was already queued. The worker keeps its samples in a local
//!   batch and records it under the shard's histogram mutex when the batch is
//!   full (64 samples), before every reply (so a caller holding its reply sees
//!   its own sample and those of the casts before it), before it waits for
//!   mail, and at exit: no lock and no histogram work per message while busy.
//!   A pool times one message in 16 by default (`DEFAULT_LATENCY_SAMPLE_EVERY`;
//!   `latency_sample_every(n)` sets it, `1` times every message), chosen by the
//!   grant number the admission CAS returns, so an untimed message reads no
//!   clock on either side; the counts stay exact. The reason is the clock: a
//!   TSC read costs 11 ns on the benchmark VM, a third of a raw channel's whole
//!   per-message cost, so timing every message cannot stay within 1.3x of the
//!   channel (benchmarks/history.md, "One message in 16 timed by default"). The sample
//!   is systematic, every 16th grant per shard: its percentiles describe the
//!   stream unless latencies repeat with a period of 16 messages.
//!
//! The loom models run this protocol with the mailbox ring itself (its atomics,
//! cells, lock and park/unpark come from `src/sync.rs`, so loom checks every
//! access to the slots) and a loom-aware stand-in for the reply channel
//! (`reply.rs` has two backends).
//! Loom reports a deadlock if any caller could wait forever. A worker that
//! stops without waiting for in-flight slots, or a sender that misses a
//! sleeping worker, for example, is caught that way.

mod builder;
#[cfg(not(sidejob_loom))]
mod call_future;
mod envelope;
mod error;
mod mailbox;
mod metered;
mod pinning;
mod record;
mod reply;
mod restart;
mod run;
mod shared;
mod stats;
mod worker;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::admission::limit_for;
use crate::latency::LatencyHistogram;
use crate::rates::{RateStats, Rates, Sample};
use crate::sync::{lock, AtomicU64, JoinHandle, Mutex, Ordering};

pub use builder::{WorkerPoolBuilder, DEFAULT_CALL_TIMEOUT, DEFAULT_LATENCY_SAMPLE_EVERY};
#[cfg(not(sidejob_loom))]
pub use call_future::CallFuture;
use envelope::{Envelope, Failure};
pub use error::{CallError, CastError};
use record::ShardRecord;
use reply::NoReply;
pub use restart::{DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_WINDOW};
use shared::Shared;
pub use stats::{WorkerPoolStats, WorkerShardStats};
pub use worker::Worker;

/// A pool of worker threads, one per shard, each with a bounded mailbox.
///
/// Requests go to the caller's home shard, or the next shard with room; when
/// every mailbox is full, [`call`](Self::call) and [`cast`](Self::cast) fail
/// at once with [`CallError::Overload`] / [`CastError::Overload`] instead of
/// queueing without bound. The total of queued and in-progress messages never
/// exceeds the capacity.
///
/// A handler that panics costs its caller a
/// [`WorkerPanicked`](CallError::WorkerPanicked); the worker is rebuilt by the
/// factory and goes on with the rest of its mailbox, so nothing queued is
/// lost. Dropping the pool shuts it down.
///
/// # Examples
///
/// ```
/// use sidejob::{Worker, WorkerPool};
///
/// struct Upper;
/// impl Worker for Upper {
///     type Request = String;
///     type Reply = String;
///     fn handle_call(&mut self, request: String) -> String {
///         request.to_uppercase()
///     }
/// }
///
/// let pool = WorkerPool::builder().capacity(64).build(|_shard| Upper)?;
/// assert_eq!(pool.call("hello".to_string())?, "HELLO");
/// pool.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WorkerPool<W: Worker> {
    /// Fed once a second by the process's sampler (see `crate::rates`).
    /// Declared first, so dropped first: the face leaves the sampler
    /// before it lets go of its core.
    rates: Arc<Rates>,
    shared: Arc<Shared<W>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    name: String,
}

/// The worker type of the `impl` that holds [`WorkerPool::builder`], so that
/// `WorkerPool::builder()` needs no type: [`WorkerPoolBuilder::build`] fixes
/// the real one. It has no values.
///
/// # Examples
///
/// ```
/// let builder = sidejob::WorkerPool::builder(); // no worker type named yet
/// # let _ = builder;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoWorker {}

impl Worker for NoWorker {
    type Request = ();
    type Reply = ();

    fn handle_call(&mut self, _: ()) {
        match *self {}
    }
}

impl WorkerPool<NoWorker> {
    /// Starts configuring a pool; [`WorkerPoolBuilder::build`] fixes the
    /// worker type.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// struct Noop;
    /// impl sidejob::Worker for Noop {
    ///     type Request = ();
    ///     type Reply = ();
    ///     fn handle_call(&mut self, _: ()) {}
    /// }
    ///
    /// let pool = sidejob::WorkerPool::builder()
    ///     .capacity(100)
    ///     .shards(4)
    ///     .call_timeout(Duration::from_millis(250))
    ///     .name("noop")
    ///     .build(|_shard| Noop)?;
    /// assert_eq!(pool.capacity(), 100);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn builder() -> WorkerPoolBuilder {
        WorkerPoolBuilder::default()
    }
}

impl<W: Worker> WorkerPool<W> {
    /// Sends `request` to a worker and waits for the reply, up to the pool's
    /// [`call_timeout`](WorkerPoolBuilder::call_timeout).
    ///
    /// # Errors
    ///
    /// * [`CallError::Overload`] with the request, at once, when every mailbox
    ///   is full;
    /// * [`CallError::Closed`] with the request, at once, after shutdown, or
    ///   at shutdown if its worker panicked and could not be rebuilt;
    /// * [`CallError::Timeout`] when no reply came in time (the request is
    ///   skipped if its worker had not started it);
    /// * [`CallError::WorkerPanicked`] when the handler panicked on it;
    /// * [`CallError::ShardDown`] with the request when its shard went down
    ///   for good (its worker panicked past the restart limit) before it ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::{Worker, WorkerPool};
    ///
    /// struct Square;
    /// impl Worker for Square {
    ///     type Request = u64;
    ///     type Reply = u64;
    ///     fn handle_call(&mut self, n: u64) -> u64 {
    ///         n * n
    ///     }
    /// }
    ///
    /// let pool = WorkerPool::builder().capacity(4).build(|_| Square)?;
    /// assert_eq!(pool.call(12)?, 144);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call(&self, request: W::Request) -> Result<W::Reply, CallError<W::Request>> {
        self.call_timeout(request, self.shared.call_timeout)
    }

    /// Like [`call`](Self::call), with its own timeout.
    ///
    /// # Errors
    ///
    /// As for [`call`](Self::call).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use sidejob::{CallError, Worker, WorkerPool};
    ///
    /// struct Slow;
    /// impl Worker for Slow {
    ///     type Request = Duration;
    ///     type Reply = ();
    ///     fn handle_call(&mut self, nap: Duration) {
    ///         std::thread::sleep(nap);
    ///     }
    /// }
    ///
    /// let pool = WorkerPool::builder().capacity(2).shards(1).build(|_| Slow)?;
    /// let outcome = pool.call_timeout(Duration::from_millis(300), Duration::from_millis(10));
    /// assert!(matches!(outcome, Err(CallError::Timeout)));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn call_timeout(
        &self,
        request: W::Request,
        timeout: Duration,
    ) -> Result<W::Reply, CallError<W::Request>> {
        let receiver = self.shared.post_call(request)?;
        match receiver.recv_timeout(timeout) {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(Failure::Panicked)) | Err(NoReply::Dropped) => Err(CallError::WorkerPanicked),
            Ok(Err(Failure::Closed(request))) => Err(CallError::Closed(request)),
            Ok(Err(Failure::Down(request))) => Err(CallError::ShardDown(request)),
            Err(NoReply::Timeout) => Err(CallError::Timeout),
        }
    }

    /// Sends `request` to a worker and returns a future of the reply.
    ///
    /// The request is admitted (or refused) and posted right away; the future
    /// only waits for the reply. It needs no particular runtime, and it is
    /// `Send`. It has no timeout of its own: wrap it in your runtime's timeout,
    /// and drop it to give up. A dropped call whose worker has not started it
    /// is skipped; its slot is released exactly once either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake, Waker};
    /// use sidejob::{Worker, WorkerPool};
    ///
    /// struct Double;
    /// impl Worker for Double {
    ///     type Request = u32;
    ///     type Reply = u32;
    ///     fn handle_call(&mut self, n: u32) -> u32 {
    ///         2 * n
    ///     }
    /// }
    ///
    /// // A minimal executor: poll, and park the thread until woken.
    /// struct Unpark(std::thread::Thread);
    /// impl Wake for Unpark {
    ///     fn wake(self: Arc<Self>) {
    ///         self.0.unpark();
    ///     }
    /// }
    /// fn block_on<F: Future>(future: F) -> F::Output {
    ///     let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    ///     let mut context = Context::from_waker(&waker);
    ///     let mut future = pin!(future);
    ///     loop {
    ///         match future.as_mut().poll(&mut context) {
    ///             Poll::Ready(output) => return output,
    ///             Poll::Pending => std::thread::park(),
    ///         }
    ///     }
    /// }
    ///
    /// let pool = WorkerPool::builder().capacity(4).build(|_| Double)?;
    /// assert_eq!(block_on(pool.call_async(21))?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(sidejob_loom))]
    pub fn call_async(&self, request: W::Request) -> CallFuture<W> {
        CallFuture::new(self.shared.post_call(request))
    }

    /// Sends `request` to a worker without waiting for it to be handled.
    ///
    /// The worker runs [`Worker::handle_cast`] on it. Once accepted, a cast is
    /// handled even if the pool shuts down meanwhile.
    ///
    /// # Errors
    ///
    /// [`CastError::Overload`] with the request when every mailbox is full,
    /// [`CastError::Closed`] with the request after shutdown.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use sidejob::{Worker, WorkerPool};
    ///
    /// struct Log(mpsc::Sender<String>);
    /// impl Worker for Log {
    ///     type Request = String;
    ///     type Reply = ();
    ///     fn handle_call(&mut self, line: String) {
    ///         self.0.send(line).unwrap();
    ///     }
    /// }
    ///
    /// let (lines, written) = mpsc::channel();
    /// let pool = WorkerPool::builder().capacity(16).build(move |_| Log(lines.clone()))?;
    /// pool.cast("started".to_string())?;
    /// assert_eq!(written.recv()?, "started");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn cast(&self, request: W::Request) -> Result<(), CastError<W::Request>> {
        let admitted = match self.shared.admit() {
            Ok(admitted) => admitted,
            Err(refusal) => return Err(refusal.cast_error(request)),
        };
        let posted = admitted.posted;
        self.shared.post(
            admitted,
            Envelope {
                request,
                reply: None,
                posted,
            },
        );
        Ok(())
    }

    /// The total number of messages (queued and in progress) the pool admits:
    /// the configured capacity, also after shutdown (when nothing is admitted).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(10).build(|_| Noop)?;
    /// assert_eq!(pool.capacity(), 10);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }

    /// Messages queued or being handled right now, over all shards.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(10).build(|_| Noop)?;
    /// pool.call(())?;
    /// assert_eq!(pool.usage(), 0); // released before the reply came back
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn usage(&self) -> usize {
        self.shared
            .shards
            .iter()
            .map(|shard| shard.counts().usage as usize)
            .sum()
    }

    /// The number of shards, which is the number of worker threads.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(10).shards(3).build(|_| Noop)?;
    /// assert_eq!(pool.shard_count(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shared.shards.len()
    }

    /// Whether the pool is shut down: once this says `true`, every call and
    /// cast is refused with `Closed`. (Sends racing with the start of
    /// [`shutdown`](Self::shutdown) are either handled or refused with
    /// `Closed`.)
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(1).build(|_| Noop)?;
    /// pool.shutdown();
    /// assert!(pool.is_closed());
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// A snapshot of the pool's counters and latency histograms.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(4).shards(2).build(|_| Noop)?;
    /// pool.call(())?;
    /// let stats = pool.stats();
    /// assert_eq!((stats.accepted, stats.handled, stats.rejected), (1, 1, 0));
    /// assert_eq!(stats.shards.len(), 2);
    /// assert_eq!(stats.queue_wait.count, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> WorkerPoolStats {
        self.stats_now()
    }

    /// The in, out and rejected rates of the last whole second, and the
    /// last 60 seconds' and all-time counts with their average and peak
    /// rates and usage, as Erlang sidejob reports them: "in" is a message
    /// accepted, "out" one handled or skipped, "rejected" a refusal for
    /// overload (not for a closed pool). Costs no message anything.
    ///
    /// # Examples
    ///
    /// ```
    /// struct Echo;
    /// impl sidejob::Worker for Echo {
    ///     type Request = u32;
    ///     type Reply = u32;
    ///     fn handle_call(&mut self, request: u32) -> u32 { request }
    /// }
    /// let pool = sidejob::WorkerPool::builder().capacity(4).build(|_| Echo)?;
    /// assert_eq!(pool.call(1)?, 1);
    /// let total = pool.rates().total;
    /// assert_eq!((total.accepted, total.completed), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rates(&self) -> RateStats {
        self.rates.stats(sample(&self.shared))
    }

    /// The pool's name: its threads' prefix, and its metrics' `name` label
    /// (see [`WorkerPoolBuilder::name`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(1).name("api").build(|_| Noop)?;
    /// assert_eq!(pool.name(), "api");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    fn stats_now(&self) -> WorkerPoolStats {
        let capacity = self.shared.capacity;
        let count = self.shared.shards.len();
        let counts: Vec<_> = self
            .shared
            .shards
            .iter()
            .map(|shard| shard.counts())
            .collect();
        let rejected: u64 = self
            .shared
            .rejections
            .iter()
            .map(|rejected| rejected.load(Ordering::Relaxed))
            .sum();
        let mut queue_wait = LatencyHistogram::new();
        let mut handling = LatencyHistogram::new();
        let shards: Vec<WorkerShardStats> = counts
            .iter()
            .zip(self.shared.records.iter())
            .enumerate()
            .map(|(index, (shard, record))| {
                let latency = lock(&record.latency);
                queue_wait.add(&latency.queue_wait);
                handling.add(&latency.handling);
                WorkerShardStats {
                    limit: limit_for(capacity, count, index) as usize,
                    usage: shard.usage as usize,
                    handled: record.handled.load(Ordering::Relaxed),
                    restarts: record.restarts.load(Ordering::Relaxed),
                    up: record.up.load(Ordering::Acquire),
                }
            })
            .collect();
        let sum = |field: fn(&ShardRecord) -> &AtomicU64| {
            self.shared
                .records
                .iter()
                .map(|record| field(record).load(Ordering::Relaxed))
                .sum()
        };
        // Read after the refusal count, so never above it.
        let closed = self.shared.refused_closed.load(Ordering::Relaxed);
        WorkerPoolStats {
            capacity,
            usage: counts.iter().map(|shard| shard.usage as usize).sum(),
            accepted: counts.iter().map(|shard| shard.accepted).sum(),
            rejected: rejected.saturating_sub(closed),
            closed,
            handled: sum(|r| &r.handled),
            skipped: sum(|r| &r.skipped),
            panics: sum(|r| &r.panics),
            restarts: sum(|r| &r.restarts),
            shards_down: shards.iter().filter(|shard| !shard.up).count(),
            queue_wait: queue_wait.summary(),
            handling: handling.summary(),
            shards,
        }
    }

    /// Stops admitting, lets every worker finish its mailbox, and returns
    /// once every worker thread has exited.
    ///
    /// New calls and casts get `Closed` from the moment it begins. Messages
    /// already admitted are all handled, so every waiting caller gets its
    /// reply and no cast is lost; each worker then runs
    /// [`Worker::terminate`]. The one exception is a shard whose worker
    /// panicked and could not be rebuilt (its factory kept panicking, or it
    /// went down past the restart limit): it cannot handle what is left, so
    /// its callers get `Closed` or `ShardDown` with their request back, and
    /// its casts are dropped (counted in the stats as `skipped`).
    ///
    /// It may be called any number of times, from any thread, at once:
    /// each call from outside the pool returns once every worker has
    /// exited, and holds no lock while it waits. Called from one of the
    /// pool's own handlers, it starts the shutdown and returns at once (that
    /// handler's worker cannot finish while the handler runs, and two
    /// handlers waiting for each other would never return); a call from
    /// outside still waits for that worker too.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::{CastError, Worker, WorkerPool};
    ///
    /// struct Noop;
    /// impl Worker for Noop {
    ///     type Request = u8;
    ///     type Reply = ();
    ///     fn handle_call(&mut self, _: u8) {}
    /// }
    ///
    /// let pool = WorkerPool::builder().capacity(8).build(|_| Noop)?;
    /// pool.cast(1)?;
    /// pool.shutdown(); // the cast above is handled before this returns
    /// assert_eq!(pool.stats().handled, 1);
    /// assert!(matches!(pool.cast(2), Err(CastError::Closed(2))));
    /// pool.shutdown(); // idempotent
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self) {
        self.shared.close();
        if self.shared.on_a_worker() {
            // From a handler: its own worker cannot finish while it runs,
            // and waiting here for the others could wait on a handler
            // waiting for this one. The shutdown completes without it.
            return;
        }
        // No lock held while waiting: a handler calling `shutdown` meanwhile
        // returns at once, and every caller from outside waits for the
        // same end.
        self.shared.wait_for_workers();
        let threads = std::mem::take(&mut *lock(&self.threads));
        for thread in threads {
            // Ended already; a worker never panics outside the handlers it
            // guards.
            let _ = thread.join();
        }
    }
}

impl<W: Worker> Drop for WorkerPool<W> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl<W: Worker> fmt::Debug for WorkerPool<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .field("shards", &self.shard_count())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// What the rates sampler reads of a pool: messages accepted, refused for
/// overload, handled or skipped, and in the mailboxes now.
fn sample<W: Worker>(shared: &Shared<W>) -> Sample {
    let mut sample = Sample::default();
    for shard in shared.shards.iter() {
        let counts = shard.counts();
        sample.accepted += counts.accepted;
        sample.usage += counts.usage as usize;
    }
    let rejected: u64 = shared
        .rejections
        .iter()
        .map(|rejected| rejected.load(Ordering::Relaxed))
        .sum();
    sample.rejected = rejected.saturating_sub(shared.refused_closed.load(Ordering::Relaxed));
    sample.completed = shared
        .records
        .iter()
        .map(|record| {
            record.handled.load(Ordering::Relaxed) + record.skipped.load(Ordering::Relaxed)
        })
        .sum();
    sample
}
