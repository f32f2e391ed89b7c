//! [`WorkerPool`]: bounded mailboxes for request handlers, one worker thread
//! per shard, built on the sharded admission and the probe of
//! [`Resource`](crate::Resource).
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
//! Shutdown marks the pool closed, sets every shard's limit to 0 (so every
//! later send is refused, and a refusal on a closed pool is reported as
//! `Closed`), and posts a stop message to every mailbox. A worker that has
//! seen its stop message exits once its shard's usage is zero: every message
//! that got a slot, even one whose sender was still between taking the slot
//! and posting, is handled before the worker exits.
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
//! that sees its reply (through the reply slot's own synchronisation) also
//! sees the slot free. The statistics counters are `Relaxed`: each is written
//! by one worker (or counts refusals) and read as a figure.
//!
//! [`SplitShard`]: crate::split_shard::SplitShard

use std::fmt;
#[cfg(not(sidejob_loom))]
use std::future::Future;
use std::num::NonZeroU64;
use std::panic::{catch_unwind, AssertUnwindSafe};
#[cfg(not(sidejob_loom))]
use std::pin::Pin;
use std::sync::Arc;
#[cfg(not(sidejob_loom))]
use std::task::{Context, Poll};
use std::time::Duration;

// TSC-based where the CPU's counter is invariant: a raw read is one
// instruction instead of a system call's tens of nanoseconds, and the pool
// reads it for every timed message.
use quanta::Clock;

use crossbeam_utils::CachePadded;

use crate::error::{panic_message, BuildError, CallError, CastError};
use crate::home::home_shard;
use crate::latency::{LatencyBatch, LatencyHistogram, LatencyStats};
use crate::mailbox::{mailbox, MailReceiver, MailSender, Received};
use crate::probe;
use crate::reply::{reply_slot, NoReply, ReplyReceiver, ReplySender};
use crate::resource::ResourceBuilder;
use crate::shard::limit_for;
use crate::split_shard::SplitShard;
use crate::sync::{
    is_current, lock, spawn_named, AtomicBool, AtomicU64, JoinHandle, Mutex, Ordering,
};
use crate::worker::Worker;

/// The default time [`WorkerPool::call`] waits for its reply.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// One message in how many a [`WorkerPool`] times for its latency histograms
/// unless [`WorkerPoolBuilder::latency_sample_every`] says otherwise.
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(64).shards(1).build(|_| Noop)?;
/// for _ in 0..2 * sidejob::DEFAULT_LATENCY_SAMPLE_EVERY {
///     pool.call(())?;
/// }
/// // Messages 0 and 16 of the shard were timed.
/// assert_eq!((pool.stats().handled, pool.stats().handling.count), (32, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_LATENCY_SAMPLE_EVERY: u32 = 16;

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
    shared: Arc<Shared<W>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
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

/// A message in a shard's mailbox.
///
/// Kept small, since the mailbox copies it in and out: the request plus two
/// words. `Stop` takes the one value `posted` never has (zero), and a cast
/// is a message without a reply sender (a null pointer), so neither needs a
/// tag of its own.
enum Envelope<W: Worker> {
    /// A call, with the sender of its reply, or a cast, without.
    Message {
        request: W::Request,
        reply: Option<CallAnswer<W>>,
        /// When it was posted, if it is one of the timed messages.
        posted: Ticks,
    },
    /// The pool is shutting down: finish what holds a slot, then exit.
    Stop,
}

/// Where the worker sends a call's reply.
type CallAnswer<W> = ReplySender<Result<<W as Worker>::Reply, Failure<<W as Worker>::Request>>>;

/// A raw reading of the pool's clock (plus one), or [`UNTIMED`]. Raw
/// readings go in the envelopes and are turned into durations only when a
/// batch of samples is recorded.
type Ticks = NonZeroU64;

/// The reading of a message that is not timed; no real reading is one.
const UNTIMED: Ticks = NonZeroU64::MIN;

/// Where a call's reply arrives.
type CallReply<W> = ReplyReceiver<Result<<W as Worker>::Reply, Failure<<W as Worker>::Request>>>;

/// Why a call got no reply value.
#[derive(Debug)]
enum Failure<R> {
    /// The handler panicked.
    Panicked,
    /// The pool shut down while no worker could be built to run it (its
    /// factory kept panicking): the request comes back unhandled.
    Closed(R),
}

/// What the pool's threads share.
struct Shared<W: Worker> {
    /// Each shard's usage slot: taken by senders, given back by its worker.
    slots: Box<[CachePadded<SplitShard>]>,
    /// Refused sends, by the shard where their probe started; apart from the
    /// slots, so counting a refusal never disturbs a probe.
    rejections: Box<[CachePadded<AtomicU64>]>,
    /// Set when shutdown begins: from then on a refusal is `Closed`.
    closing: AtomicBool,
    /// The capacity the pool was built with (the resource's drops to zero
    /// at shutdown).
    capacity: usize,
    /// Calls and casts refused because the pool was shut down.
    refused_closed: AtomicU64,
    mailboxes: Box<[MailSender<Envelope<W>>]>,
    closed: AtomicBool,
    call_timeout: Duration,
    /// Times the sampled messages.
    clock: Clock,
    /// Time the messages whose grant number has these bits clear (the
    /// sampling interval, a power of two, minus one).
    sample_mask: u64,
    records: Box<[CachePadded<ShardRecord>]>,
}

/// What one shard's worker records, for [`WorkerPool::stats`].
struct ShardRecord {
    handled: AtomicU64,
    skipped: AtomicU64,
    panics: AtomicU64,
    restarts: AtomicU64,
    latency: Mutex<ShardLatency>,
}

struct ShardLatency {
    queue_wait: LatencyHistogram,
    handling: LatencyHistogram,
}

impl ShardRecord {
    fn new() -> Self {
        ShardRecord {
            handled: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            latency: Mutex::new(ShardLatency {
                queue_wait: LatencyHistogram::new(),
                handling: LatencyHistogram::new(),
            }),
        }
    }

    /// Adds one to a counter only this shard's worker writes: a load and a
    /// store, no locked instruction.
    #[inline]
    fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// Why a send was refused.
enum Refusal {
    Overload,
    Closed,
}

impl Refusal {
    /// The error a refused call returns, with its request handed back.
    fn call_error<R>(self, request: R) -> CallError<R> {
        match self {
            Refusal::Overload => CallError::Overload(request),
            Refusal::Closed => CallError::Closed(request),
        }
    }

    /// The error a refused cast returns, with its request handed back.
    fn cast_error<R>(self, request: R) -> CastError<R> {
        match self {
            Refusal::Overload => CastError::Overload(request),
            Refusal::Closed => CastError::Closed(request),
        }
    }
}

impl<W: Worker> Shared<W> {
    /// Takes a slot for one message; returns its shard, and its post time
    /// if it is one of the timed messages (decided by its grant number, so
    /// an untimed message costs no clock read on either side).
    #[inline]
    fn admit(&self) -> Result<(usize, Ticks), Refusal> {
        let start = home_shard(self.slots.len());
        match probe::admit(&self.slots, start) {
            Some(admission) => {
                let timed = admission.grant & self.sample_mask == 0;
                Ok((admission.shard, if timed { self.now() } else { UNTIMED }))
            }
            None => Err(self.refusal(start)),
        }
    }

    /// A raw reading of the clock, never [`UNTIMED`].
    #[inline]
    fn now(&self) -> Ticks {
        UNTIMED.saturating_add(self.clock.raw().max(1))
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
    fn post_call(&self, request: W::Request) -> Result<CallReply<W>, CallError<W::Request>> {
        let (shard, posted) = match self.admit() {
            Ok(admitted) => admitted,
            Err(refusal) => return Err(refusal.call_error(request)),
        };
        let (reply, receiver) = reply_slot();
        self.mailboxes[shard].post(Envelope::Message {
            request,
            reply: Some(reply),
            posted,
        });
        Ok(receiver)
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
    /// * [`CallError::WorkerPanicked`] when the handler panicked on it.
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
        CallFuture {
            state: match self.shared.post_call(request) {
                Ok(receiver) => CallState::Waiting(receiver.into_future()),
                Err(err) => CallState::Refused(Some(err)),
            },
        }
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
        let (shard, posted) = match self.shared.admit() {
            Ok(admitted) => admitted,
            Err(refusal) => return Err(refusal.cast_error(request)),
        };
        self.shared.mailboxes[shard].post(Envelope::Message {
            request,
            reply: None,
            posted,
        });
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
            .slots
            .iter()
            .map(|slot| slot.counts().usage as usize)
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
        self.shared.slots.len()
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
        let capacity = self.shared.capacity;
        let count = self.shared.slots.len();
        let counts: Vec<_> = self.shared.slots.iter().map(|slot| slot.counts()).collect();
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
    /// panicked and whose factory keeps panicking: it cannot handle what is
    /// left, so its callers get `Closed` with their request back, and its
    /// casts are dropped (counted in the stats as `skipped`). Calling it again, from any thread, waits for
    /// the same end. Called from inside a handler, it returns without waiting
    /// for that handler's own thread.
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
        let mut threads = lock(&self.threads);
        if !self.shared.closing.swap(true, Ordering::AcqRel) {
            for slot in self.shared.slots.iter() {
                slot.set_limit(0);
            }
            // Only now: once `is_closed` says so, every send is refused.
            self.shared.closed.store(true, Ordering::Release);
            // A worker whose thread never started (a build that failed part
            // way) has no mailbox left to stop.
            for mailbox in self.shared.mailboxes.iter() {
                mailbox.post_unless_gone(Envelope::Stop);
            }
        }
        for thread in threads.drain(..) {
            if !is_current(&thread) {
                // A worker never panics outside the handlers it guards.
                let _ = thread.join();
            }
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

/// The future of a reply, from [`WorkerPool::call_async`].
///
/// Resolves to the same `Result` as [`WorkerPool::call`], except that it has
/// no timeout of its own. Dropping it gives up on the reply.
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(1).build(|_| Noop)?;
/// let future: sidejob::CallFuture<Noop> = pool.call_async(());
/// fn assert_send<T: Send>(_: &T) {}
/// assert_send(&future);
/// drop(future); // gives up; the slot is still released exactly once
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[cfg(not(sidejob_loom))]
#[must_use = "a call's future does nothing with the reply unless awaited"]
pub struct CallFuture<W: Worker> {
    state: CallState<W>,
}

#[cfg(not(sidejob_loom))]
enum CallState<W: Worker> {
    Waiting(crate::reply::ReplyFuture<Result<W::Reply, Failure<W::Request>>>),
    Refused(Option<CallError<W::Request>>),
}

// The future never pins what it holds: the request and reply are moved, never
// polled, and the reply future is `Unpin`.
#[cfg(not(sidejob_loom))]
impl<W: Worker> Unpin for CallFuture<W> {}

#[cfg(not(sidejob_loom))]
impl<W: Worker> Future for CallFuture<W> {
    type Output = Result<W::Reply, CallError<W::Request>>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            CallState::Waiting(reply) => {
                Pin::new(reply).poll(context).map(|outcome| match outcome {
                    Ok(Ok(reply)) => Ok(reply),
                    Ok(Err(Failure::Closed(request))) => Err(CallError::Closed(request)),
                    Ok(Err(Failure::Panicked)) | Err(_) => Err(CallError::WorkerPanicked),
                })
            }
            CallState::Refused(err) => Poll::Ready(Err(err
                .take()
                .expect("a CallFuture polled after it completed"))),
        }
    }
}

#[cfg(not(sidejob_loom))]
impl<W: Worker> fmt::Debug for CallFuture<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            CallState::Waiting(_) => "waiting",
            CallState::Refused(_) => "refused",
        };
        f.debug_struct("CallFuture").field("state", &state).finish()
    }
}

/// A snapshot of a [`WorkerPool`]'s counters, from [`WorkerPool::stats`].
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(2).build(|_| Noop)?;
/// pool.cast(())?;
/// pool.shutdown();
/// let stats = pool.stats();
/// assert_eq!(stats.accepted, stats.handled + stats.skipped);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerPoolStats {
    /// The configured capacity: messages queued and in progress, at most.
    /// Still the configured figure after shutdown, when nothing is admitted.
    pub capacity: usize,
    /// Messages queued or being handled now.
    pub usage: usize,
    /// Calls and casts admitted, ever.
    pub accepted: u64,
    /// Calls and casts refused with `Overload` because every mailbox was
    /// full, ever.
    pub rejected: u64,
    /// Calls and casts refused with `Closed` because the pool was shut down,
    /// ever.
    pub closed: u64,
    /// Messages whose handler ran (returned or panicked), ever.
    pub handled: u64,
    /// Calls skipped because their caller had given up (timed out or dropped
    /// the future) before their worker reached them, and calls and casts
    /// left unhandled at shutdown by a worker that could not be rebuilt,
    /// ever. So `accepted == handled + skipped` once the pool is idle.
    pub skipped: u64,
    /// Handlers that panicked, ever.
    pub panics: u64,
    /// Workers rebuilt by the factory after a panic, ever.
    pub restarts: u64,
    /// Time from posting a message to its handler starting, of the timed
    /// messages: one in 16 by default, see
    /// [`latency_sample_every`](WorkerPoolBuilder::latency_sample_every).
    ///
    /// A worker records its samples in batches: a call's sample (and those
    /// of the casts before it on its shard) is in the histograms by the time
    /// its caller has the reply; a cast's, once its worker has run out of
    /// mail or handled a call after it, and at the latest after 64 more
    /// timed messages or at shutdown.
    pub queue_wait: LatencyStats,
    /// Time spent in the handler, of the timed messages.
    pub handling: LatencyStats,
    /// Each shard's figures, in shard order.
    pub shards: Vec<WorkerShardStats>,
}

/// One shard's figures within [`WorkerPoolStats`].
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(5).shards(2).build(|_| Noop)?;
/// let limits: Vec<usize> = pool.stats().shards.iter().map(|s| s.limit).collect();
/// assert_eq!(limits, [3, 2]);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerShardStats {
    /// The shard's share of the configured capacity: its mailbox bound.
    pub limit: usize,
    /// Messages queued or being handled on this shard now.
    pub usage: usize,
    /// Messages this shard's worker handled, ever.
    pub handled: u64,
    /// Times this shard's worker was rebuilt after a panic, ever.
    pub restarts: u64,
}

/// Configures a [`WorkerPool`]; made by [`WorkerPool::builder`].
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
///     .capacity(32) // required
///     .shards(2) // default: the number of CPUs
///     .call_timeout(Duration::from_secs(1)) // default: 5 s
///     .pin_workers(false) // default: off
///     .name("noop") // thread names: noop-0, noop-1
///     .build(|_shard| Noop)?;
/// # drop(pool);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct WorkerPoolBuilder {
    /// Capacity and shards, checked as for a [`Resource`](crate::Resource).
    resource: ResourceBuilder,
    call_timeout: Option<Duration>,
    tick_interval: Option<Duration>,
    pin_workers: bool,
    name: Option<String>,
    latency_sample_every: Option<u32>,
    stack_size: Option<usize>,
}

impl WorkerPoolBuilder {
    /// The most messages, queued and in progress, over all mailboxes.
    /// Required. Spread exactly over the shards, as for a [`Resource`](crate::Resource).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(3).build(|_| Noop)?;
    /// assert_eq!(pool.capacity(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.resource = self.resource.capacity(capacity);
        self
    }

    /// The number of shards: worker threads, each with its own mailbox.
    /// Default: the number of CPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(3).shards(1).build(|_| Noop)?;
    /// assert_eq!(pool.shard_count(), 1);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.resource = self.resource.shards(shards);
        self
    }

    /// How long [`WorkerPool::call`] waits for a reply. Default:
    /// [`DEFAULT_CALL_TIMEOUT`] (5 s). Must be above zero.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// use std::time::Duration;
    /// let err = sidejob::WorkerPool::builder()
    ///     .capacity(1)
    ///     .call_timeout(Duration::ZERO)
    ///     .build(|_| Noop)
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "call_timeout");
    /// ```
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Calls [`Worker::tick`] on a worker whenever its mailbox has been empty
    /// this long. Default: never. Must be above zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// struct Heartbeat(mpsc::Sender<()>);
    /// impl sidejob::Worker for Heartbeat {
    ///     type Request = ();
    ///     type Reply = ();
    ///     fn handle_call(&mut self, _: ()) {}
    ///     fn tick(&mut self) {
    ///         let _ = self.0.send(());
    ///     }
    /// }
    ///
    /// let (beats, heard) = mpsc::channel();
    /// let pool = sidejob::WorkerPool::builder()
    ///     .capacity(1)
    ///     .shards(1)
    ///     .tick_interval(Duration::from_millis(5))
    ///     .build(move |_| Heartbeat(beats.clone()))?;
    /// heard.recv()?; // ticked while idle
    /// # drop(pool);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tick_interval(mut self, interval: Duration) -> Self {
        self.tick_interval = Some(interval);
        self
    }

    /// Times one message in `every` for the latency histograms, `every`
    /// rounded up to a power of two: the messages whose number on their shard
    /// is a multiple of it. Default: 16 ([`DEFAULT_LATENCY_SAMPLE_EVERY`]).
    /// `1` times every message. Counts (`handled` and the others) stay exact
    /// whatever the setting; only the histograms are sampled, and their
    /// `count` is the number of timed messages.
    ///
    /// Timing a message costs a raw clock read on each side (about 11 ns
    /// apiece on the AMD EPYC VM of `docs/benchmarks.md`) plus two histogram
    /// records (done in batches, so the histograms' lock is taken once per 64
    /// samples). For a handler that takes a few nanoseconds that is a third
    /// of the cast's whole cost, which is why the default samples: one in 16
    /// brings it under 2 ns a message. The sample is systematic (every 16th
    /// grant on each shard), so its percentiles describe the whole stream
    /// unless the stream's latencies repeat with a period of 16 messages; a
    /// pool of slow handlers, or one that wants every outlier in `max`, can
    /// time every message with `1`.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder()
    ///     .capacity(64)
    ///     .shards(1)
    ///     .latency_sample_every(16)
    ///     .build(|_| Noop)?;
    /// for _ in 0..32 {
    ///     pool.call(())?;
    /// }
    /// let stats = pool.stats();
    /// assert_eq!((stats.handled, stats.handling.count), (32, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn latency_sample_every(mut self, every: u32) -> Self {
        self.latency_sample_every = Some(every);
        self
    }

    /// Pins worker `i` to CPU core `i` (modulo the cores), for cache locality
    /// on a dedicated machine. Default: off. Where the platform cannot pin,
    /// workers run unpinned.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder().capacity(2).pin_workers(true).build(|_| Noop)?;
    /// pool.call(())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pin_workers(mut self, pin: bool) -> Self {
        self.pin_workers = pin;
        self
    }

    /// The prefix of the worker threads' names: worker `i` is `{name}-{i}`.
    /// Default: `sidejob-worker`.
    ///
    /// # Examples
    ///
    /// ```
    /// struct Whoami;
    /// impl sidejob::Worker for Whoami {
    ///     type Request = ();
    ///     type Reply = String;
    ///     fn handle_call(&mut self, _: ()) -> String {
    ///         std::thread::current().name().unwrap().to_string()
    ///     }
    /// }
    ///
    /// let pool = sidejob::WorkerPool::builder().capacity(1).shards(1).name("api").build(|_| Whoami)?;
    /// assert_eq!(pool.call(())?, "api-0");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// The stack size of each worker thread, in bytes; by default the
    /// platform's (see [`std::thread::Builder::stack_size`]). Handlers
    /// that recurse deeply may need more.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let pool = sidejob::WorkerPool::builder()
    ///     .capacity(4)
    ///     .stack_size(256 * 1024)
    ///     .build(|_| Noop)?;
    /// pool.call(())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Builds the workers with `factory` (given the shard index), starts
    /// their threads, and returns the running pool.
    ///
    /// The factory is kept to rebuild a worker after its handler panics.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting: `capacity` not set or too large,
    /// `shards` 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS), `call_timeout`
    /// or `tick_interval` zero, `name` with a NUL byte; `factory` if it
    /// panicked; `stack_size` (when set, else `shards`) if the OS refused to
    /// start a worker thread. Workers already started are stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// let err = sidejob::WorkerPool::builder().shards(2).build(|_| Noop).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `capacity`: must be set");
    /// ```
    pub fn build<W, F>(self, factory: F) -> Result<WorkerPool<W>, BuildError>
    where
        W: Worker,
        F: Fn(usize) -> W + Send + Sync + 'static,
    {
        let (capacity, shards) = self.resource.checked()?;
        let call_timeout = self.call_timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        if call_timeout.is_zero() {
            return Err(BuildError::new("call_timeout", "must be above zero"));
        }
        if self
            .tick_interval
            .is_some_and(|interval| interval.is_zero())
        {
            return Err(BuildError::new("tick_interval", "must be above zero"));
        }
        let sample_every = self
            .latency_sample_every
            .unwrap_or(DEFAULT_LATENCY_SAMPLE_EVERY);
        if sample_every == 0 {
            return Err(BuildError::new(
                "latency_sample_every",
                "must be at least 1",
            ));
        }
        let name = self.name.unwrap_or_else(|| "sidejob-worker".to_owned());
        if name.contains('\0') {
            return Err(BuildError::new("name", "must not contain a NUL byte"));
        }

        // Build every worker before starting any thread, so a panicking
        // factory leaves nothing running.
        let mut workers = Vec::with_capacity(shards);
        for shard in 0..shards {
            match catch_unwind(AssertUnwindSafe(|| factory(shard))) {
                Ok(worker) => workers.push(worker),
                Err(panic) => {
                    return Err(BuildError::new(
                        "factory",
                        format!(
                            "panicked building the worker of shard {shard}: {}",
                            panic_message(&*panic)
                        ),
                    ))
                }
            }
        }
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..shards)
            .map(|shard| mailbox(limit_for(capacity, shards, shard) as usize + 1))
            .unzip();
        let shared = Arc::new(Shared {
            slots: (0..shards)
                .map(|shard| CachePadded::new(SplitShard::new(limit_for(capacity, shards, shard))))
                .collect(),
            rejections: (0..shards)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            mailboxes: senders.into_boxed_slice(),
            closing: AtomicBool::new(false),
            capacity,
            refused_closed: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            call_timeout,
            clock: Clock::new(),
            sample_mask: u64::from(sample_every.checked_next_power_of_two().unwrap_or(1 << 31)) - 1,
            records: (0..shards)
                .map(|_| CachePadded::new(ShardRecord::new()))
                .collect(),
        });
        let pool = WorkerPool {
            shared: Arc::clone(&shared),
            threads: Mutex::new(Vec::with_capacity(shards)),
        };
        let factory = Arc::new(factory);
        let cores = if self.pin_workers {
            core_ids()
        } else {
            Vec::new()
        };
        for (shard, (worker, receiver)) in workers.into_iter().zip(receivers).enumerate() {
            let run = WorkerRun {
                shared: Arc::clone(&shared),
                shard,
                mailbox: receiver,
                factory: Arc::clone(&factory),
                tick_interval: self.tick_interval,
                core: (!cores.is_empty()).then(|| cores[shard % cores.len()]),
            };
            let spawned = spawn_named(format!("{name}-{shard}"), self.stack_size, move || {
                run.run(worker)
            });
            match spawned {
                Ok(thread) => lock(&pool.threads).push(thread),
                Err(err) => {
                    // Dropping the pool stops the workers already started.
                    return Err(BuildError::new(
                        if self.stack_size.is_some() {
                            "stack_size"
                        } else {
                            "shards"
                        },
                        format!("could not start the worker thread of shard {shard}: {err}"),
                    ));
                }
            }
        }
        Ok(pool)
    }
}

#[cfg(not(sidejob_loom))]
type CoreId = core_affinity::CoreId;
#[cfg(sidejob_loom)]
type CoreId = ();

#[cfg(not(sidejob_loom))]
fn core_ids() -> Vec<CoreId> {
    core_affinity::get_core_ids().unwrap_or_default()
}

#[cfg(sidejob_loom)]
fn core_ids() -> Vec<CoreId> {
    Vec::new()
}

#[cfg(not(sidejob_loom))]
fn pin_to(core: CoreId) {
    // Best effort: an unpinned worker is still a correct one.
    let _ = core_affinity::set_for_current(core);
}

#[cfg(sidejob_loom)]
fn pin_to(_core: CoreId) {}

/// One worker thread's loop.
struct WorkerRun<W: Worker, F> {
    shared: Arc<Shared<W>>,
    shard: usize,
    mailbox: MailReceiver<Envelope<W>>,
    factory: Arc<F>,
    tick_interval: Option<Duration>,
    core: Option<CoreId>,
}

impl<W, F> WorkerRun<W, F>
where
    W: Worker,
    F: Fn(usize) -> W + Send + Sync + 'static,
{
    fn run(self, worker: W) {
        if let Some(core) = self.core {
            pin_to(core);
        }
        let record = &self.shared.records[self.shard];
        let mut batch = LatencyBatch::new();
        let mut worker = Some(worker);
        let mut stopping = false;
        // When the previous (timed) handler finished; the start of the next
        // one if its message was already waiting (saves a clock read).
        let mut last_finished = UNTIMED;
        // After the stop message, exit once nothing holds a slot here: every
        // admitted message has then been posted and handled.
        while !(stopping && self.shared.slots[self.shard].usage_from_releaser() == 0) {
            let (envelope, started) = match self.mailbox.try_recv() {
                Some(envelope) => (envelope, last_finished),
                None => {
                    // Going idle: what was timed shows in the stats first.
                    self.flush(record, &mut batch);
                    match self.tick_interval {
                        Some(interval) if !stopping => match self.mailbox.recv_timeout(interval) {
                            Received::Message(envelope) => (envelope, UNTIMED),
                            Received::Idle => {
                                if let Some(current) = worker.as_mut() {
                                    if catch_unwind(AssertUnwindSafe(|| current.tick())).is_err() {
                                        ShardRecord::bump(&record.panics);
                                        worker = None;
                                    }
                                }
                                worker = worker.or_else(|| self.rebuild(&mut stopping));
                                continue;
                            }
                        },
                        _ => (self.mailbox.recv(), UNTIMED),
                    }
                }
            };
            match envelope {
                Envelope::Stop => stopping = true,
                Envelope::Message {
                    request,
                    reply: Some(reply),
                    posted,
                } => {
                    if reply.is_abandoned() {
                        // The caller gave up before the worker got here.
                        self.shared.slots[self.shard].release();
                        ShardRecord::bump(&record.skipped);
                        continue;
                    }
                    let Some(current) = worker.as_mut() else {
                        // Only when shutting down with no worker to be had.
                        self.shared.slots[self.shard].release();
                        ShardRecord::bump(&record.skipped);
                        reply.send(Err(Failure::Closed(request)));
                        continue;
                    };
                    let started = self.start_time(posted, started);
                    let outcome = catch_unwind(AssertUnwindSafe(|| current.handle_call(request)));
                    last_finished = self.finish(record, &mut batch, posted, started);
                    // The caller who holds its reply sees its latencies.
                    self.flush(record, &mut batch);
                    match outcome {
                        Ok(value) => reply.send(Ok(value)),
                        Err(_) => {
                            reply.send(Err(Failure::Panicked));
                            ShardRecord::bump(&record.panics);
                            worker = None;
                        }
                    }
                }
                Envelope::Message {
                    request,
                    reply: None,
                    posted,
                } => {
                    let Some(current) = worker.as_mut() else {
                        self.shared.slots[self.shard].release();
                        ShardRecord::bump(&record.skipped);
                        continue;
                    };
                    let started = self.start_time(posted, started);
                    let outcome = catch_unwind(AssertUnwindSafe(|| current.handle_cast(request)));
                    last_finished = self.finish(record, &mut batch, posted, started);
                    if outcome.is_err() {
                        ShardRecord::bump(&record.panics);
                        worker = None;
                    }
                }
            }
            if worker.is_none() {
                worker = self.rebuild(&mut stopping);
            }
        }
        self.flush(record, &mut batch);
        if let Some(mut worker) = worker {
            let _ = catch_unwind(AssertUnwindSafe(|| worker.terminate()));
        }
    }

    /// A handler returned (or panicked): free its slot, then count it and,
    /// if it was timed (`started` is set), keep its latencies in `batch` and
    /// return when it finished. The slot goes back before the reply, so a
    /// caller holding its reply sees its slot free.
    #[inline]
    fn finish(
        &self,
        record: &ShardRecord,
        batch: &mut LatencyBatch,
        posted: Ticks,
        started: Ticks,
    ) -> Ticks {
        let finished = if started == UNTIMED {
            UNTIMED
        } else {
            self.shared.now()
        };
        self.shared.slots[self.shard].release();
        ShardRecord::bump(&record.handled);
        if started != UNTIMED && batch.push(posted.get(), started.get(), finished.get()) {
            self.flush(record, batch);
        }
        finished
    }

    /// When the handling of a message posted at `posted` starts: untimed for
    /// an untimed message, else `waiting_since` if the message was already
    /// waiting when the previous timed one finished, else now.
    #[inline]
    fn start_time(&self, posted: Ticks, waiting_since: Ticks) -> Ticks {
        if posted == UNTIMED {
            UNTIMED
        } else if waiting_since != UNTIMED {
            waiting_since
        } else {
            self.shared.now()
        }
    }

    /// Records the latencies kept in `batch` into the shard's histograms,
    /// where [`WorkerPool::stats`] reads them. Done when the batch is full,
    /// before a reply, and before the worker waits for mail, so a sample is
    /// late in the stats only while its worker is busy with more messages.
    #[inline]
    fn flush(&self, record: &ShardRecord, batch: &mut LatencyBatch) {
        if !batch.is_empty() {
            self.flush_batch(record, batch);
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_batch(&self, record: &ShardRecord, batch: &mut LatencyBatch) {
        let mut latency = lock(&record.latency);
        let ShardLatency {
            queue_wait,
            handling,
        } = &mut *latency;
        batch.record_into(&self.shared.clock, queue_wait, handling);
    }

    /// Builds a replacement worker after a panic. A factory that panics too
    /// is retried with a growing pause; once the pool is closing, the shard
    /// gives up and answers what is left in its mailbox without a worker.
    #[cold]
    fn rebuild(&self, stopping: &mut bool) -> Option<W> {
        let record = &self.shared.records[self.shard];
        let mut pause = Duration::from_millis(1);
        loop {
            if let Ok(worker) = catch_unwind(AssertUnwindSafe(|| (self.factory)(self.shard))) {
                ShardRecord::bump(&record.restarts);
                return Some(worker);
            }
            if self.shared.closed.load(Ordering::Acquire) {
                *stopping = true;
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}
