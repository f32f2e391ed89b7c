//! [`WorkerPoolBuilder`]: a worker pool's settings, and starting its
//! workers.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::admission::{limit_for, Sizing, SplitShard};
use crate::error::BuildError;
use crate::panics::{drop_quietly, panic_message};
use crate::rates::Rates;
use crate::sync::{check_thread_name, lock, spawn_named, AtomicBool, AtomicU64, Condvar, Mutex};

use super::envelope::Envelope;
use super::mailbox::{mailbox, MailReceiver};
use super::pinning::core_ids;
use super::record::ShardRecord;
use super::restart::{DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_WINDOW};
use super::run::WorkerRun;
use super::shared::Shared;
use super::{Worker, WorkerPool};

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
    sizing: Sizing,
    call_timeout: Option<Duration>,
    tick_interval: Option<Duration>,
    max_restarts: Option<u32>,
    restart_window: Option<Duration>,
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
        self.sizing.capacity = Some(capacity);
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
        self.sizing.shards = Some(shards);
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
    /// apiece on the AMD EPYC VM of `docs/benchmarks/history.md`) plus two histogram
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

    /// How many restarts a shard's worker may need within
    /// [`restart_window`](Self::restart_window) before the shard stays down
    /// for the pool's life, as OTP's restart intensity. A worker's death (a
    /// handler or `tick` that panicked) counts as a restart, and so does
    /// each factory call that panics while rebuilding it. `0`: never
    /// restart; the first death puts the shard down. Default:
    /// [`DEFAULT_MAX_RESTARTS`](crate::DEFAULT_MAX_RESTARTS) (10, as OTP's).
    ///
    /// From a death until a new worker is built, the shard admits nothing:
    /// its limit is 0, so work goes to the other shards, and when every
    /// shard is down callers get `Overload` at once. A shard down for good
    /// answers the calls already queued on it with
    /// [`CallError::WorkerPanicked`](crate::CallError::WorkerPanicked) and
    /// counts its queued casts as skipped.
    /// [`WorkerShardStats::up`](crate::WorkerShardStats::up) tells which
    /// shards have a worker.
    ///
    /// # Examples
    ///
    /// ```
    /// # use sidejob::Worker;
    /// struct Fragile;
    /// impl Worker for Fragile {
    ///     type Request = ();
    ///     type Reply = ();
    ///     fn handle_call(&mut self, _: ()) {
    ///         panic!("always")
    ///     }
    /// }
    /// # std::panic::set_hook(Box::new(|_| {}));
    /// let pool = sidejob::WorkerPool::builder()
    ///     .capacity(4)
    ///     .shards(1)
    ///     .max_restarts(0) // never restart
    ///     .build(|_| Fragile)?;
    /// assert!(pool.call(()).is_err()); // the worker dies
    /// assert!(pool.call(()).unwrap_err().is_overload()); // and its shard stays down
    /// assert_eq!(pool.stats().shards_down, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_restarts(mut self, restarts: u32) -> Self {
        self.max_restarts = Some(restarts);
        self
    }

    /// The window [`max_restarts`](Self::max_restarts) counts restarts
    /// within. Default:
    /// [`DEFAULT_RESTART_WINDOW`](crate::DEFAULT_RESTART_WINDOW) (10 s, as
    /// OTP's).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Noop;
    /// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
    /// use std::time::Duration;
    ///
    /// let err = sidejob::WorkerPool::builder()
    ///     .capacity(4)
    ///     .restart_window(Duration::ZERO)
    ///     .build(|_| Noop)
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "restart_window");
    /// ```
    pub fn restart_window(mut self, window: Duration) -> Self {
        self.restart_window = Some(window);
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
    /// or `tick_interval` or `restart_window` zero, `name` with a NUL byte; `factory` if it
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
        let checked = self.checked()?;
        let workers = first_workers(&factory, checked.shards)?;
        let (shared, receivers) = checked.shared();
        let pool = WorkerPool {
            rates: Rates::start(&shared, super::sample),
            name: checked.name.clone(),
            shared: Arc::clone(&shared),
            threads: Mutex::new(Vec::with_capacity(checked.shards)),
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
                max_restarts: checked.max_restarts,
                restart_window: checked.restart_window,
                core: (!cores.is_empty()).then(|| cores[shard % cores.len()]),
            };
            let name = format!("{}-{shard}", checked.name);
            shared.worker_starting();
            match spawn_named(name, self.stack_size, move || run.run(worker)) {
                Ok(thread) => lock(&pool.threads).push(thread),
                Err(err) => {
                    shared.worker_ended();
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

    /// Every setting checked, with its default filled in.
    fn checked(&self) -> Result<Checked, BuildError> {
        let (capacity, shards) = self.sizing.checked()?;
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
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| "sidejob-worker".to_owned());
        check_thread_name(&name)?;
        let restart_window = self.restart_window.unwrap_or(DEFAULT_RESTART_WINDOW);
        if restart_window.is_zero() {
            return Err(BuildError::new("restart_window", "must be above zero"));
        }
        Ok(Checked {
            max_restarts: self.max_restarts.unwrap_or(DEFAULT_MAX_RESTARTS),
            restart_window,
            capacity,
            shards,
            call_timeout,
            sample_every,
            name,
        })
    }
}

/// A builder's settings, checked.
struct Checked {
    max_restarts: u32,
    restart_window: Duration,
    capacity: usize,
    shards: usize,
    call_timeout: Duration,
    sample_every: u32,
    name: String,
}

impl Checked {
    /// What the pool's threads share, and each shard's mailbox receiver.
    fn shared<W: Worker>(&self) -> (Arc<Shared<W>>, Vec<MailReceiver<Envelope<W>>>) {
        let Checked {
            capacity, shards, ..
        } = *self;
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..shards)
            .map(|shard| mailbox(limit_for(capacity, shards, shard)))
            .unzip();
        let sample_every = self.sample_every.checked_next_power_of_two();
        let shared = Arc::new(Shared {
            shards: (0..shards)
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
            call_timeout: self.call_timeout,
            sample_mask: u64::from(sample_every.unwrap_or(1 << 31)) - 1,
            records: (0..shards)
                .map(|_| CachePadded::new(ShardRecord::new()))
                .collect(),
            limits: Mutex::new(()),
            running: Mutex::new(0),
            exited: Condvar::new(),
        });
        (shared, receivers)
    }
}

/// Builds every shard's first worker before any thread starts, so a
/// panicking factory leaves nothing running.
fn first_workers<W, F>(factory: &F, shards: usize) -> Result<Vec<W>, BuildError>
where
    F: Fn(usize) -> W,
{
    let mut workers = Vec::with_capacity(shards);
    for shard in 0..shards {
        match catch_unwind(AssertUnwindSafe(|| factory(shard))) {
            Ok(worker) => workers.push(worker),
            Err(panic) => {
                let error = BuildError::new(
                    "factory",
                    format!(
                        "panicked building the worker of shard {shard}: {}",
                        panic_message(&*panic)
                    ),
                );
                // User values whose `Drop` may panic: `build` returns its
                // error all the same.
                drop_quietly(panic);
                drop_quietly(workers);
                return Err(error);
            }
        }
    }
    Ok(workers)
}
