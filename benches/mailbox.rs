//! Mailbox cost: a `sidejob::WorkerPool` against the raw channels it could be
//! replaced with, for fire-and-forget casts and for request/reply calls.
//!
//! Every contender is set up once per benchmark (pool or channels, and the
//! consumer threads), outside the timed loop, and shut down after it: the
//! senders are dropped (or the pool is shut down) and the consumer threads
//! joined, so no thread outlives its benchmark.
//!
//! # Groups
//!
//! ## `mailbox/cast` (1 producer, 1 consumer)
//!
//! The bench thread sends `iters` `u64` messages to one consumer thread, which
//! adds each into an accumulator (`wrapping_add` through `black_box`). One
//! element is **one message**, and criterion's `time` is nanoseconds per
//! message: the time from the first send until the consumer has handled all
//! `iters` messages, divided by `iters`.
//!
//! | name         | producer side                               | consumer side        |
//! |--------------|---------------------------------------------|----------------------|
//! | `sidejob`    | `WorkerPool::cast` (capacity 1024, 1 shard) | the pool's worker    |
//! | `sidejob-every-message` | the same, `latency_sample_every(1)` | the pool's worker |
//! | `crossbeam`  | `crossbeam_channel::bounded(1024)`, `try_send` | `recv` on a thread |
//! | `tokio-mpsc` | `tokio::sync::mpsc::channel(1024)`, `try_send` | `blocking_recv`   |
//! | `flume`      | `flume::bounded(1024)`, `try_send`          | `recv` on a thread   |
//!
//! The producer is faster than the consumer, so the mailbox fills up and a
//! send is refused (`Full`, or `Overload` for sidejob). Every contender then
//! retries the same way (`crossbeam_utils::Backoff::snooze`: a few rounds of
//! `spin_loop`, then `yield_now`) until the message goes through, so every
//! message is delivered. The share of refused attempts is printed to stderr
//! after each contender.
//!
//! Completion: before each batch the bench thread publishes the consumer's
//! cumulative target count; the consumer compares its own count with it after
//! every message (a load of a line nobody writes meanwhile) and stores its
//! count to a flag line once it gets there, which the bench thread spins on.
//! The consumer logic is the same code for every contender: for sidejob it
//! runs inside the `Worker`.
//!
//! `sidejob` is the pool as built by default, timing one message in 16 for
//! its latency histograms; `sidejob-every-message` times every message (a
//! clock read on each side and two histogram records), the price of exact
//! latency stats.
//!
//! ## `mailbox/call` (round trip)
//!
//! The bench thread sends one request and waits for its reply before sending
//! the next; the consumer thread echoes the request. One element is **one
//! round trip**; criterion's `time` is nanoseconds per round trip.
//!
//! | name                     | one call                                                          |
//! |--------------------------|-------------------------------------------------------------------|
//! | `sidejob`                | `WorkerPool::call` (capacity 1024, 1 shard)                        |
//! | `crossbeam`              | request + a fresh `crossbeam_channel::bounded(1)` reply sender     |
//! | `crossbeam-reused-reply` | request on one channel, reply on one `bounded(1)` made at setup    |
//! | `tokio`                  | `mpsc::channel(1024)` request + a fresh `oneshot`; `blocking_recv` both ends |
//! | `flume`                  | request + a fresh `flume::bounded(1)` reply sender                 |
//!
//! Requests go with `try_send`, which never finds the request channel full
//! since only one request is ever in flight.
//!
//! One more row is a diagnostic, not a contender: `sidejob-spin-wait` sends
//! with `WorkerPool::call_async` and polls the future in a busy loop (a no-op
//! waker, `spin_loop` between polls) instead of parking the caller as `call`
//! does, so the gap between it and `sidejob` is the cost of the caller's
//! park and wake-up.
//!
//! ## `mailbox/cast-2-producers`
//!
//! Two producer threads each send `iters` messages to two consumers:
//!
//! * `sidejob`: a pool with 2 shards and capacity 1024 (512 per shard); each
//!   producer casts to its home shard and spills to the other shard when that
//!   one is full, as the pool does.
//! * `crossbeam`: two `bounded(512)` channels, each with its own consumer
//!   thread; producer `p` sends to channel `p` only.
//!
//! Refused sends are retried as in `mailbox/cast`. Each consumer publishes its
//! count with a plain store after every message (the same in both
//! contenders); the bench thread joins the producers, then waits until the
//! counts add up. Time is from the producers leaving a barrier to the last
//! message handled, so criterion's `time` is **nanoseconds per message per
//! producer**; the group declares `Throughput::Elements(2)`, so `thrpt` is
//! the total message rate. On a 2-core machine the four busy threads share two
//! cores: read this group as a rough comparison only.
//!
//! # Paired mode (`SIDEJOB_BENCH_PAIRED`)
//!
//! The cast contenders' speeds drift between levels on a shared VM, by more
//! than the gaps between them, and criterion measures one contender after
//! the other. With `SIDEJOB_BENCH_PAIRED=<rounds>` set, the bench skips
//! criterion and runs the `mailbox/cast` contenders (each set up once) in
//! rounds: in each round every contender in turn (the first one rotating)
//! sends 50 000 messages, timed as above. It prints per contender the median
//! and 10th percentile of ns per message over the rounds, the median over
//! rounds of its ratio to crossbeam in the same round, and the share of
//! refused attempts.
//!
//! # Running
//!
//! ```text
//! cargo bench --bench mailbox
//! cargo bench --bench mailbox -- 'mailbox/call'
//! SIDEJOB_BENCH_PAIRED=400 cargo bench --bench mailbox
//! ```
//!
//! Criterion settings (1 s warm-up, 3 s measurement, 30 samples) can be
//! overridden on the command line as usual, e.g. `-- --measurement-time 10`.
//! Benchmark ids are `mailbox/<group>/<contender>`; the figures are in
//! `target/criterion/mailbox_<group>/<contender>/new/estimates.json`.

use std::future::Future;
mod common;

use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, BenchmarkGroup, Criterion, Throughput};
use crossbeam_utils::{Backoff, CachePadded};
use sidejob::{CallError, CastError, Worker, WorkerPool};

use common::{quantile, round_ratios};

/// Mailbox room (queued messages) in the single-consumer groups.
const CAPACITY: usize = 1024;

/// Producers (and consumers) in `mailbox/cast-2-producers`.
const PRODUCERS: usize = 2;

// ---------------------------------------------------------------------------
// Sending with retries, and counting the refusals.
// ---------------------------------------------------------------------------

/// Send attempts and refused attempts across the current benchmark's runs.
static ATTEMPTS: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Sends `message` with `try_send`, retrying with a backoff while the mailbox
/// is full; returns how many attempts were refused.
#[inline]
fn send_retrying<F>(mut message: u64, try_send: &F) -> u64
where
    F: Fn(u64) -> Result<(), u64>,
{
    let mut refused = 0;
    let backoff = Backoff::new();
    loop {
        match try_send(message) {
            Ok(()) => return refused,
            Err(back) => {
                message = back;
                refused += 1;
                backoff.snooze();
            }
        }
    }
}

/// Sends `0..iters` (offset by `base`) in order; returns the refused attempts.
#[inline(never)]
fn send_batch<F>(base: u64, iters: u64, try_send: &F) -> u64
where
    F: Fn(u64) -> Result<(), u64>,
{
    let mut refused = 0;
    for i in 0..iters {
        refused += send_retrying(base.wrapping_add(i), try_send);
    }
    refused
}

fn record_attempts(sent: u64, refused: u64) {
    ATTEMPTS.fetch_add(sent + refused, Ordering::Relaxed);
    REFUSED.fetch_add(refused, Ordering::Relaxed);
}

fn reset_attempts() {
    ATTEMPTS.store(0, Ordering::Relaxed);
    REFUSED.store(0, Ordering::Relaxed);
}

fn report_attempts(group: &str, name: &str) {
    let attempts = ATTEMPTS.load(Ordering::Relaxed);
    if attempts > 0 {
        let refused = REFUSED.load(Ordering::Relaxed);
        eprintln!(
            "{group}/{name}: {:.1}% of {attempts} send attempts refused (mailbox full)",
            100.0 * refused as f64 / attempts as f64
        );
    }
}

// ---------------------------------------------------------------------------
// The consumer side of `mailbox/cast`: same code for every contender.
// ---------------------------------------------------------------------------

/// How the bench thread learns that a batch has been handled.
struct Finish {
    /// The consumer's cumulative count at the end of the current batch; set
    /// by the bench thread before the batch's first send (the channel's own
    /// synchronisation makes it visible to the consumer with that message).
    target: CachePadded<AtomicU64>,
    /// The consumer's count, stored once it equals `target`.
    reached: CachePadded<AtomicU64>,
}

impl Finish {
    fn new() -> Arc<Self> {
        Arc::new(Finish {
            target: CachePadded::new(AtomicU64::new(u64::MAX)),
            reached: CachePadded::new(AtomicU64::new(0)),
        })
    }

    /// Spins until the consumer reports `target`.
    fn wait_for(&self, target: u64) {
        let backoff = Backoff::new();
        while self.reached.load(Ordering::Acquire) != target {
            backoff.snooze();
        }
    }
}

/// The consumer's trivial work, and its completion check.
struct Sink {
    sum: u64,
    count: u64,
    finish: Arc<Finish>,
}

impl Sink {
    fn new(finish: Arc<Finish>) -> Self {
        Sink {
            sum: 0,
            count: 0,
            finish,
        }
    }

    #[inline]
    fn take(&mut self, message: u64) {
        self.sum = black_box(self.sum.wrapping_add(message));
        self.count += 1;
        if self.count == self.finish.target.load(Ordering::Relaxed) {
            self.finish.reached.store(self.count, Ordering::Release);
        }
    }
}

/// The sidejob worker of `mailbox/cast`: a [`Sink`].
struct SinkWorker(Sink);

impl Worker for SinkWorker {
    type Request = u64;
    type Reply = ();

    fn handle_call(&mut self, message: u64) {
        self.0.take(message);
    }

    fn handle_cast(&mut self, message: u64) {
        self.0.take(message);
    }
}

/// One contender of `mailbox/cast`: a sender and the consumer behind it.
trait CastChannel {
    /// One send attempt; hands the message back when the mailbox is full.
    fn try_cast(&self, message: u64) -> Result<(), u64>;
    /// Stops the consumer and waits for its thread to exit.
    fn close(self);
}

impl CastChannel for WorkerPool<SinkWorker> {
    #[inline]
    fn try_cast(&self, message: u64) -> Result<(), u64> {
        match self.cast(message) {
            Ok(()) => Ok(()),
            Err(CastError::Overload(message)) => Err(message),
            Err(err) => panic!("cast failed: {err}"),
        }
    }

    fn close(self) {
        self.shutdown();
    }
}

/// A raw channel's sender and its consumer thread.
struct Raw<S> {
    sender: S,
    consumer: JoinHandle<()>,
}

impl<S> Raw<S> {
    /// Drops the sender, which ends the consumer's receive loop, and joins it.
    fn close(self) {
        drop(self.sender);
        self.consumer.join().expect("consumer thread panicked");
    }
}

fn crossbeam_cast(finish: Arc<Finish>) -> Raw<crossbeam_channel::Sender<u64>> {
    let (sender, receiver) = crossbeam_channel::bounded(CAPACITY);
    let consumer = std::thread::spawn(move || {
        let mut sink = Sink::new(finish);
        while let Ok(message) = receiver.recv() {
            sink.take(message);
        }
    });
    Raw { sender, consumer }
}

impl CastChannel for Raw<crossbeam_channel::Sender<u64>> {
    #[inline]
    fn try_cast(&self, message: u64) -> Result<(), u64> {
        match self.sender.try_send(message) {
            Ok(()) => Ok(()),
            Err(crossbeam_channel::TrySendError::Full(message)) => Err(message),
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => panic!("consumer gone"),
        }
    }

    fn close(self) {
        Raw::close(self);
    }
}

fn tokio_cast(finish: Arc<Finish>) -> Raw<tokio::sync::mpsc::Sender<u64>> {
    let (sender, mut receiver) = tokio::sync::mpsc::channel(CAPACITY);
    let consumer = std::thread::spawn(move || {
        let mut sink = Sink::new(finish);
        while let Some(message) = receiver.blocking_recv() {
            sink.take(message);
        }
    });
    Raw { sender, consumer }
}

impl CastChannel for Raw<tokio::sync::mpsc::Sender<u64>> {
    #[inline]
    fn try_cast(&self, message: u64) -> Result<(), u64> {
        use tokio::sync::mpsc::error::TrySendError;
        match self.sender.try_send(message) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(message)) => Err(message),
            Err(TrySendError::Closed(_)) => panic!("consumer gone"),
        }
    }

    fn close(self) {
        Raw::close(self);
    }
}

fn flume_cast(finish: Arc<Finish>) -> Raw<flume::Sender<u64>> {
    let (sender, receiver) = flume::bounded(CAPACITY);
    let consumer = std::thread::spawn(move || {
        let mut sink = Sink::new(finish);
        while let Ok(message) = receiver.recv() {
            sink.take(message);
        }
    });
    Raw { sender, consumer }
}

impl CastChannel for Raw<flume::Sender<u64>> {
    #[inline]
    fn try_cast(&self, message: u64) -> Result<(), u64> {
        match self.sender.try_send(message) {
            Ok(()) => Ok(()),
            Err(flume::TrySendError::Full(message)) => Err(message),
            Err(flume::TrySendError::Disconnected(_)) => panic!("consumer gone"),
        }
    }

    fn close(self) {
        Raw::close(self);
    }
}

/// One `mailbox/cast` contender, set up: its sender, its consumer, and the
/// consumer's count so far.
struct CastSetup<C> {
    channel: C,
    finish: Arc<Finish>,
    /// The consumer's cumulative count at the end of the last batch.
    total: u64,
}

impl<C: CastChannel> CastSetup<C> {
    fn new(make: impl FnOnce(Arc<Finish>) -> C) -> Self {
        let finish = Finish::new();
        CastSetup {
            channel: make(Arc::clone(&finish)),
            finish,
            total: 0,
        }
    }

    /// Sends `iters` messages and waits until the consumer has handled them;
    /// returns the time that took, and the refused attempts.
    fn run(&mut self, iters: u64) -> (Duration, u64) {
        let target = self.total + iters;
        self.finish.target.store(target, Ordering::Relaxed);
        let try_send = |message| self.channel.try_cast(message);
        let start = Instant::now();
        let refused = send_batch(self.total, iters, &try_send);
        self.finish.wait_for(target);
        let elapsed = start.elapsed();
        self.total = target;
        (elapsed, refused)
    }
}

/// Benchmarks one `mailbox/cast` contender built by `make`, then closes it.
fn cast_contender<C: CastChannel>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    make: impl FnOnce(Arc<Finish>) -> C,
) {
    let mut setup = CastSetup::new(make);
    reset_attempts();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let (elapsed, refused) = setup.run(iters);
            record_attempts(iters, refused);
            elapsed
        });
    });
    report_attempts("mailbox/cast", name);
    setup.channel.close();
}

/// The sidejob contender of `mailbox/cast`, timing one message in
/// `sample_every`, or as many as the pool does by default.
fn sidejob_cast(finish: Arc<Finish>, sample_every: Option<u32>) -> WorkerPool<SinkWorker> {
    let builder = WorkerPool::builder()
        .capacity(CAPACITY)
        .shards(1)
        .name("mailbox-cast");
    match sample_every {
        Some(every) => builder.latency_sample_every(every),
        None => builder,
    }
    .build(move |_shard| SinkWorker(Sink::new(Arc::clone(&finish))))
    .expect("pool builds")
}

fn cast(c: &mut Criterion) {
    let mut group = c.benchmark_group("mailbox/cast");
    group.throughput(Throughput::Elements(1));
    cast_contender(&mut group, "sidejob", |finish| sidejob_cast(finish, None));
    cast_contender(&mut group, "sidejob-every-message", |finish| {
        sidejob_cast(finish, Some(1))
    });
    cast_contender(&mut group, "crossbeam", crossbeam_cast);
    cast_contender(&mut group, "tokio-mpsc", tokio_cast);
    cast_contender(&mut group, "flume", flume_cast);
    group.finish();
}

/// Messages per contender per round in the paired mode.
const PAIRED_MESSAGES: u64 = 50_000;

/// Contender names of the paired mode, in the order it indexes them.
const PAIRED_NAMES: [&str; 5] = [
    "sidejob",
    "sidejob-every-message",
    "crossbeam",
    "tokio-mpsc",
    "flume",
];

/// Index of `crossbeam` in [`PAIRED_NAMES`]: the baseline of the ratios.
const PAIRED_BASELINE: usize = 2;

/// The paired mode of `mailbox/cast`: see the module docs.
fn paired_cast(rounds: usize) {
    let mut sidejob = CastSetup::new(|finish| sidejob_cast(finish, None));
    let mut every = CastSetup::new(|finish| sidejob_cast(finish, Some(1)));
    let mut crossbeam = CastSetup::new(crossbeam_cast);
    let mut tokio = CastSetup::new(tokio_cast);
    let mut flume = CastSetup::new(flume_cast);
    let count = PAIRED_NAMES.len();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); count];
    let mut refused = [0u64; PAIRED_NAMES.len()];
    // One round of warm-up, not recorded.
    for round in 0..=rounds {
        for k in 0..count {
            let which = (round + k) % count;
            let (elapsed, refusals) = match which {
                0 => sidejob.run(PAIRED_MESSAGES),
                1 => every.run(PAIRED_MESSAGES),
                2 => crossbeam.run(PAIRED_MESSAGES),
                3 => tokio.run(PAIRED_MESSAGES),
                _ => flume.run(PAIRED_MESSAGES),
            };
            if round > 0 {
                times[which].push(elapsed.as_nanos() as f64 / PAIRED_MESSAGES as f64);
                refused[which] += refusals;
            }
        }
    }
    sidejob.channel.close();
    every.channel.close();
    crossbeam.channel.close();
    tokio.channel.close();
    flume.channel.close();
    println!("mailbox/cast (paired, {rounds} rounds of {PAIRED_MESSAGES} messages)");
    println!(
        "  {:20} {:>9} {:>9} {:>13} {:>9}",
        "contender", "median ns", "p10 ns", "vs crossbeam", "refused"
    );
    for (which, name) in PAIRED_NAMES.iter().enumerate() {
        let ratios = round_ratios(&times[which], &times[PAIRED_BASELINE]);
        let sent = rounds as u64 * PAIRED_MESSAGES;
        println!(
            "  {:20} {:9.1} {:9.1} {:12.2}x {:8.1}%",
            name,
            quantile(&times[which], 0.5),
            quantile(&times[which], 0.1),
            quantile(&ratios, 0.5),
            100.0 * refused[which] as f64 / (sent + refused[which]) as f64,
        );
    }
}

// ---------------------------------------------------------------------------
// `mailbox/call`: one request, one reply, one at a time.
// ---------------------------------------------------------------------------

/// The sidejob worker of `mailbox/call`: echoes the request.
struct Echo;

impl Worker for Echo {
    type Request = u64;
    type Reply = u64;

    fn handle_call(&mut self, request: u64) -> u64 {
        black_box(request)
    }
}

/// One contender of `mailbox/call`.
trait CallChannel {
    /// Sends `request` and waits for the reply.
    fn round_trip(&self, request: u64) -> u64;
    /// Stops the consumer and waits for its thread to exit.
    fn close(self);
}

impl CallChannel for WorkerPool<Echo> {
    #[inline]
    fn round_trip(&self, request: u64) -> u64 {
        match self.call(request) {
            Ok(reply) => reply,
            Err(CallError::Overload(_)) => panic!("one call at a time never overloads"),
            Err(err) => panic!("call failed: {err}"),
        }
    }

    fn close(self) {
        self.shutdown();
    }
}

/// `mailbox/call/sidejob-spin-wait` (diagnostic): the same pool, but the
/// caller spins on [`WorkerPool::call_async`]'s future instead of parking in
/// `call`, to show what the round trip costs without the caller's wake-up.
struct SpinWait(WorkerPool<Echo>);

impl CallChannel for SpinWait {
    #[inline]
    fn round_trip(&self, request: u64) -> u64 {
        let mut future = self.0.call_async(request);
        let mut context = Context::from_waker(Waker::noop());
        loop {
            match Pin::new(&mut future).poll(&mut context) {
                Poll::Ready(Ok(reply)) => return reply,
                Poll::Ready(Err(err)) => panic!("call failed: {err}"),
                Poll::Pending => std::hint::spin_loop(),
            }
        }
    }

    fn close(self) {
        self.0.shutdown();
    }
}

/// A request carrying a fresh crossbeam reply sender.
type CrossbeamRequest = (u64, crossbeam_channel::Sender<u64>);

fn crossbeam_call() -> Raw<crossbeam_channel::Sender<CrossbeamRequest>> {
    let (sender, receiver) = crossbeam_channel::bounded::<CrossbeamRequest>(CAPACITY);
    let consumer = std::thread::spawn(move || {
        while let Ok((request, reply)) = receiver.recv() {
            let _ = reply.send(black_box(request));
        }
    });
    Raw { sender, consumer }
}

impl CallChannel for Raw<crossbeam_channel::Sender<CrossbeamRequest>> {
    #[inline]
    fn round_trip(&self, request: u64) -> u64 {
        let (reply, replies) = crossbeam_channel::bounded(1);
        self.sender
            .try_send((request, reply))
            .expect("one request at a time always fits");
        replies.recv().expect("consumer replies")
    }

    fn close(self) {
        Raw::close(self);
    }
}

/// Crossbeam request channel and one reply channel, both made at setup.
struct CrossbeamReused {
    raw: Raw<crossbeam_channel::Sender<u64>>,
    replies: crossbeam_channel::Receiver<u64>,
}

fn crossbeam_reused_call() -> CrossbeamReused {
    let (sender, receiver) = crossbeam_channel::bounded::<u64>(CAPACITY);
    let (reply, replies) = crossbeam_channel::bounded::<u64>(1);
    let consumer = std::thread::spawn(move || {
        while let Ok(request) = receiver.recv() {
            let _ = reply.send(black_box(request));
        }
    });
    CrossbeamReused {
        raw: Raw { sender, consumer },
        replies,
    }
}

impl CallChannel for CrossbeamReused {
    #[inline]
    fn round_trip(&self, request: u64) -> u64 {
        self.raw
            .sender
            .try_send(request)
            .expect("one request at a time always fits");
        self.replies.recv().expect("consumer replies")
    }

    fn close(self) {
        self.raw.close();
    }
}

/// A request carrying a fresh tokio oneshot sender.
type TokioRequest = (u64, tokio::sync::oneshot::Sender<u64>);

fn tokio_call() -> Raw<tokio::sync::mpsc::Sender<TokioRequest>> {
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<TokioRequest>(CAPACITY);
    let consumer = std::thread::spawn(move || {
        while let Some((request, reply)) = receiver.blocking_recv() {
            let _ = reply.send(black_box(request));
        }
    });
    Raw { sender, consumer }
}

impl CallChannel for Raw<tokio::sync::mpsc::Sender<TokioRequest>> {
    #[inline]
    fn round_trip(&self, request: u64) -> u64 {
        let (reply, replies) = tokio::sync::oneshot::channel();
        self.sender
            .try_send((request, reply))
            .unwrap_or_else(|_| panic!("one request at a time always fits"));
        replies.blocking_recv().expect("consumer replies")
    }

    fn close(self) {
        Raw::close(self);
    }
}

/// A request carrying a fresh flume reply sender.
type FlumeRequest = (u64, flume::Sender<u64>);

fn flume_call() -> Raw<flume::Sender<FlumeRequest>> {
    let (sender, receiver) = flume::bounded::<FlumeRequest>(CAPACITY);
    let consumer = std::thread::spawn(move || {
        while let Ok((request, reply)) = receiver.recv() {
            let _ = reply.send(black_box(request));
        }
    });
    Raw { sender, consumer }
}

impl CallChannel for Raw<flume::Sender<FlumeRequest>> {
    #[inline]
    fn round_trip(&self, request: u64) -> u64 {
        let (reply, replies) = flume::bounded(1);
        self.sender
            .try_send((request, reply))
            .unwrap_or_else(|_| panic!("one request at a time always fits"));
        replies.recv().expect("consumer replies")
    }

    fn close(self) {
        Raw::close(self);
    }
}

/// Benchmarks one `mailbox/call` contender, then closes it.
fn call_contender<C: CallChannel>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    channel: C,
) {
    let mut next = 0u64;
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let reply = channel.round_trip(next);
                debug_assert_eq!(reply, next);
                black_box(reply);
                next = next.wrapping_add(1);
            }
            start.elapsed()
        });
    });
    channel.close();
}

fn call(c: &mut Criterion) {
    let mut group = c.benchmark_group("mailbox/call");
    group.throughput(Throughput::Elements(1));
    let pool = WorkerPool::builder()
        .capacity(CAPACITY)
        .shards(1)
        .name("mailbox-call")
        .build(|_shard| Echo)
        .expect("pool builds");
    call_contender(&mut group, "sidejob", pool);
    let pool = WorkerPool::builder()
        .capacity(CAPACITY)
        .shards(1)
        .name("mailbox-call-spin")
        .build(|_shard| Echo)
        .expect("pool builds");
    call_contender(&mut group, "sidejob-spin-wait", SpinWait(pool));
    call_contender(&mut group, "crossbeam", crossbeam_call());
    call_contender(
        &mut group,
        "crossbeam-reused-reply",
        crossbeam_reused_call(),
    );
    call_contender(&mut group, "tokio", tokio_call());
    call_contender(&mut group, "flume", flume_call());
    group.finish();
}

// ---------------------------------------------------------------------------
// `mailbox/cast-2-producers`.
// ---------------------------------------------------------------------------

/// Each consumer's count, published after every message.
type Counts = Arc<[CachePadded<AtomicU64>]>;

fn new_counts() -> Counts {
    (0..PRODUCERS)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect()
}

/// A consumer of `mailbox/cast-2-producers`: adds, and publishes its count.
struct Counter {
    sum: u64,
    count: u64,
    counts: Counts,
    index: usize,
}

impl Counter {
    fn new(counts: Counts, index: usize) -> Self {
        Counter {
            sum: 0,
            count: 0,
            counts,
            index,
        }
    }

    #[inline]
    fn take(&mut self, message: u64) {
        self.sum = black_box(self.sum.wrapping_add(message));
        self.count += 1;
        self.counts[self.index].store(self.count, Ordering::Release);
    }
}

impl Worker for Counter {
    type Request = u64;
    type Reply = ();

    fn handle_call(&mut self, message: u64) {
        self.take(message);
    }

    fn handle_cast(&mut self, message: u64) {
        self.take(message);
    }
}

/// One contender of `mailbox/cast-2-producers`.
trait MultiCast: Sync {
    /// One send attempt from producer `producer`.
    fn try_cast(&self, producer: usize, message: u64) -> Result<(), u64>;
    /// Stops the consumers and waits for their threads to exit.
    fn close(self);
}

impl MultiCast for WorkerPool<Counter> {
    #[inline]
    fn try_cast(&self, _producer: usize, message: u64) -> Result<(), u64> {
        match self.cast(message) {
            Ok(()) => Ok(()),
            Err(CastError::Overload(message)) => Err(message),
            Err(err) => panic!("cast failed: {err}"),
        }
    }

    fn close(self) {
        self.shutdown();
    }
}

/// One crossbeam channel and consumer thread per producer.
struct CrossbeamPair {
    senders: Vec<crossbeam_channel::Sender<u64>>,
    consumers: Vec<JoinHandle<()>>,
}

fn crossbeam_pair(counts: Counts) -> CrossbeamPair {
    let (senders, consumers) = (0..PRODUCERS)
        .map(|index| {
            let (sender, receiver) = crossbeam_channel::bounded(CAPACITY / PRODUCERS);
            let counts = Arc::clone(&counts);
            let consumer = std::thread::spawn(move || {
                let mut counter = Counter::new(counts, index);
                while let Ok(message) = receiver.recv() {
                    counter.take(message);
                }
            });
            (sender, consumer)
        })
        .unzip();
    CrossbeamPair { senders, consumers }
}

impl MultiCast for CrossbeamPair {
    #[inline]
    fn try_cast(&self, producer: usize, message: u64) -> Result<(), u64> {
        match self.senders[producer].try_send(message) {
            Ok(()) => Ok(()),
            Err(crossbeam_channel::TrySendError::Full(message)) => Err(message),
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => panic!("consumer gone"),
        }
    }

    fn close(self) {
        drop(self.senders);
        for consumer in self.consumers {
            consumer.join().expect("consumer thread panicked");
        }
    }
}

/// Benchmarks one `mailbox/cast-2-producers` contender, then closes it.
fn multi_contender<C: MultiCast>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    make: impl FnOnce(Counts) -> C,
) {
    let counts = new_counts();
    let channel = make(Arc::clone(&counts));
    let mut total = 0u64;
    reset_attempts();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let target = total + PRODUCERS as u64 * iters;
            let barrier = Barrier::new(PRODUCERS + 1);
            let (start, refused) = std::thread::scope(|scope| {
                let producers: Vec<_> = (0..PRODUCERS)
                    .map(|producer| {
                        let (barrier, channel) = (&barrier, &channel);
                        scope.spawn(move || {
                            let try_send = |message| channel.try_cast(producer, message);
                            barrier.wait();
                            send_batch(0, iters, &try_send)
                        })
                    })
                    .collect();
                barrier.wait();
                let start = Instant::now();
                let refused: u64 = producers
                    .into_iter()
                    .map(|producer| producer.join().expect("producer panicked"))
                    .sum();
                (start, refused)
            });
            let backoff = Backoff::new();
            while counts
                .iter()
                .map(|count| count.load(Ordering::Acquire))
                .sum::<u64>()
                != target
            {
                backoff.snooze();
            }
            let elapsed = start.elapsed();
            total = target;
            record_attempts(PRODUCERS as u64 * iters, refused);
            elapsed
        });
    });
    report_attempts("mailbox/cast-2-producers", name);
    channel.close();
}

fn cast_two_producers(c: &mut Criterion) {
    let mut group = c.benchmark_group("mailbox/cast-2-producers");
    group.throughput(Throughput::Elements(PRODUCERS as u64));
    multi_contender(&mut group, "sidejob", |counts| {
        WorkerPool::builder()
            .capacity(CAPACITY)
            .shards(PRODUCERS)
            .name("mailbox-cast2")
            .build(move |shard| Counter::new(Arc::clone(&counts), shard))
            .expect("pool builds")
    });
    multi_contender(&mut group, "crossbeam", crossbeam_pair);
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = cast, call, cast_two_producers
}

fn main() {
    common::paired_or_criterion(paired_cast, benches);
}
