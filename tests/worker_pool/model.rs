//! Model-based property test of [`sidejob::WorkerPool`] (issue #7).
//!
//! Random sequences of operations (a quick cast, a quick call, a request
//! whose handler blocks until the test releases it, the release of such a
//! request, a request whose handler panics) run against a real pool of 2 or 3
//! shards with 1 to 9 slots in all, and against a small sequential model of
//! it written out below. After every operation the pool is let settle (every
//! shard idle or held by a blocking handler; every answer that is due
//! delivered) and then must equal the model exactly:
//!
//! * placement: a send goes to its thread's home shard, else to the next
//!   shards in probe order, and is refused with `Overload` (its request handed
//!   back) if and only if every shard's mailbox is full. Home shards are not
//!   ours to choose: each thread's is learnt from its first placement, a call
//!   made while the pool is empty, and every later placement is predicted;
//! * FIFO per shard: the order in which each shard's workers started their
//!   requests, recorded by the workers, and which worker (its generation)
//!   ran each;
//! * panics: the caller of a panicking call gets `WorkerPanicked`, the worker
//!   is rebuilt by the factory and goes on with the rest of its mailbox, and
//!   `stats()` counts the panic and the restart;
//! * the restart intensity (#16): with `max_restarts` drawn from 0 to 3 (or
//!   unlimited), a shard whose worker dies once too often is down for good:
//!   no send is placed on it, its queued calls get their requests back
//!   unrun (`ShardDown`, #39) and its casts are dropped, all counted as
//!   skipped, and its `up` flag is false;
//! * slots stay exact: per-shard usage (queued plus running), handled and
//!   restart counts, and the pool's accepted/rejected/handled/panics totals.
//!
//! Calls are made from helper threads, since a call may wait behind a blocked
//! handler. Synchronisation is by channels only: handlers report when they
//! start, helpers report when their call was posted and what it returned.
//!
//! The proptest runs 64 cases of up to 30 operations by default; set
//! `PROPTEST_CASES` to run more, e.g.
//! `PROPTEST_CASES=5000 cargo test --release --test model_worker_pool`.
//! Failing cases shrink to a minimal `Vec<Op>`. No regression file is
//! written; a failure prints the minimal sequence to paste into a test.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::support;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use sidejob::{CallError, CastError, Worker, WorkerPool, WorkerPoolStats, WorkerShardStats};
use support::block_on::block_on;
use support::model_config::config;
use support::panics::quiet_panics_where;

/// How long the pool may take to settle after an operation before the case
/// fails. Never waited in a passing run: it only bounds a hang.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// The timeout of the helpers' calls: long enough never to fire here.
const CALL_WAIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// Operations

/// One step of a generated sequence.
#[derive(Debug, Clone)]
enum Op {
    /// A quick request, cast from the test thread.
    Cast,
    /// A quick request, sent with a call by one of the helper threads not
    /// waiting for a call already (the `Index` picks it).
    Call(Index),
    /// A request whose handler waits until a later `Finish` releases it.
    Block(Via),
    /// Releases one of the blocking requests not released yet, running or
    /// still queued (a no-op when there is none).
    Finish(Index),
    /// A request whose handler panics.
    Panic(Via),
}

/// How a request is sent.
#[derive(Debug, Clone)]
enum Via {
    /// Cast from the test thread.
    Cast,
    /// Called by a helper thread, as for `Op::Call`.
    Call(Index),
}

fn via() -> impl Strategy<Value = Via> {
    prop_oneof![Just(Via::Cast), any::<Index>().prop_map(Via::Call)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Cast),
        3 => any::<Index>().prop_map(Op::Call),
        3 => via().prop_map(Op::Block),
        3 => any::<Index>().prop_map(Op::Finish),
        2 => via().prop_map(Op::Panic),
    ]
}

/// Shards, capacity (up to 3 per shard, so a shard's limit is 0 to 3: with
/// 3, a panicking request can have a message queued behind it while it
/// waits behind a blocked one) and the operations.
fn scenario() -> impl Strategy<Value = (usize, usize, u32, Vec<Op>)> {
    (2usize..=3).prop_flat_map(|shards| {
        (
            Just(shards),
            1..=3 * shards,
            // The restart intensity: a shard whose worker dies more than
            // this many times stays down (the window is an hour: no case
            // outlives it). Often unlimited, so that panics keep coming.
            prop_oneof![Just(u32::MAX), 0u32..=3],
            proptest::collection::vec(op(), 1..=30),
        )
    })
}

// ---------------------------------------------------------------------------
// The worker

/// What a request asks its handler to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Quick,
    Block,
    Panic,
}

/// A request: its id and what to do.
enum Request {
    Quick(u64),
    /// Waits until the test sends on (or drops) the other end.
    Block(u64, Receiver<()>),
    Panic(u64),
}

impl Request {
    fn id(&self) -> u64 {
        match self {
            Request::Quick(id) | Request::Block(id, _) | Request::Panic(id) => *id,
        }
    }
}

/// What a handler reports as it starts a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Started {
    shard: usize,
    id: u64,
    /// Which worker of the shard: 0 for the first, one more per rebuild.
    generation: u64,
}

/// The payload of the handlers' deliberate panics, which the quiet hook
/// keeps off the test output.
struct Deliberate;

/// The pool's worker: reports every request it starts, then does what the
/// request says. Replies with its shard and the request's id.
struct Probe {
    shard: usize,
    generation: u64,
    started: Sender<Started>,
}

impl Worker for Probe {
    type Request = Request;
    type Reply = (usize, u64);

    fn handle_call(&mut self, request: Request) -> (usize, u64) {
        let id = request.id();
        let _ = self.started.send(Started {
            shard: self.shard,
            id,
            generation: self.generation,
        });
        match request {
            Request::Quick(_) => {}
            Request::Block(_, release) => {
                // A dropped sender (the case is being torn down) also ends it.
                let _ = release.recv();
            }
            Request::Panic(_) => std::panic::panic_any(Deliberate),
        }
        (self.shard, id)
    }
}

/// Keeps the handlers' deliberate panics quiet; any other panic is printed
/// as usual.
fn quiet_panics() {
    quiet_panics_where(|payload| payload.is::<Deliberate>());
}

/// How a call ended, as the model predicts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Replied, from this shard.
    Replied(usize),
    /// Refused at once, with its own request handed back.
    Overload,
    /// `WorkerPanicked`.
    Panicked,
    /// `ShardDown`, with its own request handed back: queued on a shard
    /// that went down for good before it ran.
    ShardDown,
    /// Anything else: always a failure.
    Unexpected(&'static str),
}

fn outcome(id: u64, result: Result<(usize, u64), CallError<Request>>) -> Outcome {
    match result {
        Ok((shard, replied)) if replied == id => Outcome::Replied(shard),
        Ok(_) => Outcome::Unexpected("the reply to another request"),
        Err(CallError::Overload(request)) if request.id() == id => Outcome::Overload,
        Err(CallError::Overload(_)) => Outcome::Unexpected("Overload with another request"),
        Err(CallError::WorkerPanicked) => Outcome::Panicked,
        Err(CallError::ShardDown(request)) if request.id() == id => Outcome::ShardDown,
        Err(CallError::ShardDown(_)) => Outcome::Unexpected("ShardDown with another request"),
        Err(CallError::Timeout) => Outcome::Unexpected("Timeout"),
        Err(CallError::Closed(_)) => Outcome::Unexpected("Closed"),
        Err(_) => Outcome::Unexpected("another error"),
    }
}

// ---------------------------------------------------------------------------
// The model

/// A message in a model mailbox.
#[derive(Debug, Clone)]
struct Msg {
    id: u64,
    kind: Kind,
    /// The helper whose call sent it; `None` for a cast.
    helper: Option<usize>,
    /// Whether its handler has started (only a blocking one stays started).
    started: bool,
}

#[derive(Debug, Clone)]
struct ModelShard {
    limit: usize,
    /// Queued messages, the one being handled first.
    queue: VecDeque<Msg>,
    /// `(id, worker generation)` of each request started, in order.
    log: Vec<(u64, u64)>,
    handled: u64,
    restarts: u64,
    generation: u64,
    /// Workers that died here (each a restart unless it was one too many).
    deaths: u32,
    /// Down for good: its worker died more than `max_restarts` times.
    down: bool,
}

/// The sequential reference: what the pool must look like once it settles.
#[derive(Debug, Clone)]
struct Model {
    shards: Vec<ModelShard>,
    /// Blocking requests admitted and not released yet, oldest first.
    unreleased: Vec<u64>,
    released: HashSet<u64>,
    /// Each call's outcome, once due.
    results: BTreeMap<u64, Outcome>,
    /// Helpers whose call has not returned yet, with its request.
    pending: BTreeMap<usize, u64>,
    accepted: u64,
    rejected: u64,
    panics: u64,
    /// Messages answered or dropped unhandled by a shard down for good.
    skipped: u64,
    max_restarts: u32,
}

/// Where the model put a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Every mailbox was full.
    Refused,
    /// On this shard; `started` if its handler starts before the pool
    /// settles (so its message has surely been posted by then).
    Placed { shard: usize, started: bool },
}

impl Model {
    /// Shards down for good, past the restart intensity.
    fn shards_down(&self) -> usize {
        self.shards.iter().filter(|shard| shard.down).count()
    }

    fn new(capacity: usize, shards: usize, max_restarts: u32) -> Self {
        Model {
            shards: (0..shards)
                .map(|index| ModelShard {
                    // The exact spread: `capacity / shards`, one more for
                    // the first `capacity % shards` shards.
                    limit: capacity / shards + usize::from(index < capacity % shards),
                    queue: VecDeque::new(),
                    log: Vec::new(),
                    handled: 0,
                    restarts: 0,
                    generation: 0,
                    deaths: 0,
                    down: false,
                })
                .collect(),
            unreleased: Vec::new(),
            released: HashSet::new(),
            results: BTreeMap::new(),
            pending: BTreeMap::new(),
            accepted: 0,
            rejected: 0,
            panics: 0,
            skipped: 0,
            max_restarts,
        }
    }

    /// The helper that makes the next call: the `index`th of the `helpers`
    /// not waiting for a call.
    fn free_helper(&self, helpers: usize, index: &Index) -> usize {
        let free: Vec<usize> = (0..helpers)
            .filter(|helper| !self.pending.contains_key(helper))
            .collect();
        free[index.index(free.len())]
    }

    /// A quick call made on an empty pool, whose reply showed where it went:
    /// the caller's home shard.
    fn calibrated(&mut self, shard: usize, id: u64, helper: Option<usize>) {
        let target = &mut self.shards[shard];
        target.log.push((id, target.generation));
        target.handled += 1;
        self.accepted += 1;
        if helper.is_some() {
            self.results.insert(id, Outcome::Replied(shard));
        }
    }

    /// A send from a thread whose home shard is `home`.
    fn send(&mut self, home: usize, id: u64, kind: Kind, helper: Option<usize>) -> Placement {
        let count = self.shards.len();
        let Some(shard) = (0..count)
            .map(|offset| (home + offset) % count)
            .find(|&shard| {
                let target = &self.shards[shard];
                !target.down && target.queue.len() < target.limit
            })
        else {
            self.rejected += 1;
            if helper.is_some() {
                self.results.insert(id, Outcome::Overload);
            }
            return Placement::Refused;
        };
        self.accepted += 1;
        if let Some(helper) = helper {
            self.pending.insert(helper, id);
        }
        if kind == Kind::Block {
            self.unreleased.push(id);
        }
        self.shards[shard].queue.push_back(Msg {
            id,
            kind,
            helper,
            started: false,
        });
        self.run();
        let started = self.shards[shard]
            .log
            .iter()
            .any(|&(logged, _)| logged == id);
        Placement::Placed { shard, started }
    }

    /// Releases the `index`th unreleased blocking request; its id.
    fn finish(&mut self, index: &Index) -> Option<u64> {
        if self.unreleased.is_empty() {
            return None;
        }
        let id = self.unreleased.remove(index.index(self.unreleased.len()));
        self.released.insert(id);
        self.run();
        Some(id)
    }

    /// Releases every blocking request.
    fn finish_all(&mut self) -> Vec<u64> {
        let ids = std::mem::take(&mut self.unreleased);
        self.released.extend(ids.iter().copied());
        self.run();
        ids
    }

    /// Lets every worker handle its mailbox until it is empty or held by a
    /// blocking handler that has not been released.
    fn run(&mut self) {
        for (index, shard) in self.shards.iter_mut().enumerate() {
            loop {
                if shard.down {
                    // No worker: calls get their requests back unrun
                    // (`ShardDown`), casts dropped; both counted as skipped.
                    for msg in shard.queue.drain(..) {
                        self.skipped += 1;
                        if let Some(helper) = msg.helper {
                            self.results.insert(msg.id, Outcome::ShardDown);
                            self.pending.remove(&helper);
                        }
                    }
                    break;
                }
                let Some(front) = shard.queue.front_mut() else {
                    break;
                };
                if !front.started {
                    front.started = true;
                    shard.log.push((front.id, shard.generation));
                }
                if front.kind == Kind::Block && !self.released.contains(&front.id) {
                    break;
                }
                let msg = shard.queue.pop_front().unwrap();
                shard.handled += 1;
                let outcome = if msg.kind == Kind::Panic {
                    self.panics += 1;
                    shard.deaths += 1;
                    if shard.deaths > self.max_restarts {
                        shard.down = true;
                    } else {
                        shard.generation += 1;
                        shard.restarts += 1;
                    }
                    Outcome::Panicked
                } else {
                    Outcome::Replied(index)
                };
                if let Some(helper) = msg.helper {
                    self.results.insert(msg.id, outcome);
                    self.pending.remove(&helper);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The real pool and its helpers

/// What a helper thread is asked to do.
enum Call {
    /// `call_timeout`, reporting the result.
    Wait(Request),
    /// `call_async`, reporting once it returned (the message is posted),
    /// then waiting on the future and reporting the result.
    Async(Request),
}

/// A call for a helper thread to make, and where to report.
struct Command {
    pool: Arc<WorkerPool<Probe>>,
    call: Call,
    reports: Sender<Report>,
}

/// What a helper thread reports.
enum Report {
    Posted(u64),
    Done(usize, u64, Outcome),
}

/// The first `count` helper threads, started as needed. They live as long
/// as the test process and serve every case: a thread's home shard is fixed
/// when it first sends, so with the same threads a case that is run again
/// (as shrinking does) sees the same home shards.
fn helpers(count: usize) -> Vec<Sender<Command>> {
    static HELPERS: Mutex<Vec<Sender<Command>>> = Mutex::new(Vec::new());
    let mut helpers = HELPERS.lock().unwrap_or_else(|poison| poison.into_inner());
    while helpers.len() < count {
        let index = helpers.len();
        let (commands, inbox) = mpsc::channel::<Command>();
        thread::Builder::new()
            .name(format!("model-helper-{index}"))
            .spawn(move || {
                for Command {
                    pool,
                    call,
                    reports,
                } in inbox
                {
                    let (id, result) = match call {
                        Call::Wait(request) => {
                            let id = request.id();
                            (id, pool.call_timeout(request, CALL_WAIT))
                        }
                        Call::Async(request) => {
                            let id = request.id();
                            let future = pool.call_async(request);
                            let _ = reports.send(Report::Posted(id));
                            (id, block_on(future))
                        }
                    };
                    let _ = reports.send(Report::Done(index, id, outcome(id, result)));
                }
            })
            .expect("a helper thread");
        helpers.push(commands);
    }
    helpers[..count].to_vec()
}

/// The test's view of the real pool, built only from what it observed.
struct Real {
    pool: Arc<WorkerPool<Probe>>,
    started: Receiver<Started>,
    reports: Receiver<Report>,
    /// Where the reports go.
    report_to: Sender<Report>,
    helpers: Vec<Sender<Command>>,
    /// The release ends of blocking requests sent and not released.
    releases: HashMap<u64, Sender<()>>,
    released: HashSet<u64>,
    kinds: HashMap<u64, Kind>,
    calls: HashSet<u64>,
    /// Per shard, `(id, generation)` of each request started, in order.
    log: Vec<Vec<(u64, u64)>>,
    /// Where each started request ran.
    ran: HashMap<u64, usize>,
    results: BTreeMap<u64, Outcome>,
    posted: HashSet<u64>,
    /// Helpers whose call has not returned, with its request.
    busy: BTreeMap<usize, u64>,
    /// Calls and casts made.
    sends: u64,
    /// Casts refused.
    refused_casts: u64,
}

impl Real {
    fn new(capacity: usize, shards: usize, max_restarts: u32) -> Self {
        let (started_tx, started) = mpsc::channel();
        let generations: Arc<Vec<AtomicU64>> =
            Arc::new((0..shards).map(|_| AtomicU64::new(0)).collect());
        let pool = WorkerPool::builder()
            .capacity(capacity)
            .shards(shards)
            .max_restarts(max_restarts)
            // Longer than any case: only `max_restarts` decides.
            .restart_window(Duration::from_secs(3600))
            .name("model")
            .build(move |shard| Probe {
                shard,
                generation: generations[shard].fetch_add(1, Ordering::Relaxed),
                started: started_tx.clone(),
            })
            .expect("a valid configuration");
        let pool = Arc::new(pool);
        let (report_to, reports) = mpsc::channel();
        Real {
            pool,
            started,
            reports,
            report_to,
            // Every admitted call holds a slot, so `capacity` helpers can
            // wait at once, and one more can still be refused.
            helpers: helpers(capacity + 1),
            releases: HashMap::new(),
            released: HashSet::new(),
            kinds: HashMap::new(),
            calls: HashSet::new(),
            log: vec![Vec::new(); shards],
            ran: HashMap::new(),
            results: BTreeMap::new(),
            posted: HashSet::new(),
            busy: BTreeMap::new(),
            sends: 0,
            refused_casts: 0,
        }
    }

    /// A request of `kind`, keeping the release end of a blocking one.
    fn request(&mut self, id: u64, kind: Kind) -> Request {
        self.kinds.insert(id, kind);
        match kind {
            Kind::Quick => Request::Quick(id),
            Kind::Panic => Request::Panic(id),
            Kind::Block => {
                let (release, wait) = mpsc::channel();
                self.releases.insert(id, release);
                Request::Block(id, wait)
            }
        }
    }

    /// Casts from the test thread; `Ok(true)` if admitted.
    fn cast(&mut self, id: u64, kind: Kind) -> Result<bool, TestCaseError> {
        let request = self.request(id, kind);
        self.sends += 1;
        match self.pool.cast(request) {
            Ok(()) => Ok(true),
            Err(CastError::Overload(back)) => {
                prop_assert_eq!(back.id(), id, "Overload handed back another request");
                self.refused_casts += 1;
                self.releases.remove(&id);
                Ok(false)
            }
            Err(CastError::Closed(_)) => Err(TestCaseError::fail("cast refused as Closed")),
            Err(_) => Err(TestCaseError::fail("cast refused with another error")),
        }
    }

    /// Has `helper` call; `posted_now` makes it use `call_async` and waits
    /// until the message is posted.
    fn call(
        &mut self,
        helper: usize,
        id: u64,
        kind: Kind,
        posted_now: bool,
    ) -> Result<(), TestCaseError> {
        prop_assert!(
            !self.busy.contains_key(&helper),
            "helper {} is still waiting for its call",
            helper
        );
        let request = self.request(id, kind);
        self.calls.insert(id);
        self.busy.insert(helper, id);
        self.sends += 1;
        let call = if posted_now {
            Call::Async(request)
        } else {
            Call::Wait(request)
        };
        self.helpers[helper]
            .send(Command {
                pool: Arc::clone(&self.pool),
                call,
                reports: self.report_to.clone(),
            })
            .expect("helper threads live as long as the test");
        if posted_now {
            let deadline = Instant::now() + SETTLE_LIMIT;
            while !self.posted.contains(&id) {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.reports.recv_timeout(left) {
                    Ok(report) => self.note(report),
                    Err(RecvTimeoutError::Timeout) => {
                        return Err(TestCaseError::fail("call_async never returned"))
                    }
                    Err(RecvTimeoutError::Disconnected) => unreachable!("we hold a helper"),
                }
            }
        }
        Ok(())
    }

    /// Waits for `helper`'s call to return; its outcome.
    fn wait_done(&mut self, helper: usize) -> Result<Outcome, TestCaseError> {
        let Some(&id) = self.busy.get(&helper) else {
            return Err(TestCaseError::fail("no call to wait for"));
        };
        let deadline = Instant::now() + SETTLE_LIMIT;
        while self.busy.contains_key(&helper) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.reports.recv_timeout(left) {
                Ok(report) => self.note(report),
                Err(_) => return Err(TestCaseError::fail(format!("call {id} never returned"))),
            }
        }
        Ok(self.results[&id])
    }

    fn release(&mut self, id: u64) {
        self.released.insert(id);
        if let Some(release) = self.releases.remove(&id) {
            let _ = release.send(());
        }
    }

    fn note(&mut self, report: Report) {
        match report {
            Report::Posted(id) => {
                self.posted.insert(id);
            }
            Report::Done(helper, id, outcome) => {
                self.results.insert(id, outcome);
                if self.busy.get(&helper) == Some(&id) {
                    self.busy.remove(&helper);
                }
            }
        }
    }

    /// Takes in every report waiting; whether there was any.
    fn drain(&mut self) -> bool {
        let mut any = false;
        while let Ok(started) = self.started.try_recv() {
            self.log[started.shard].push((started.id, started.generation));
            self.ran.insert(started.id, started.shard);
            any = true;
        }
        while let Ok(report) = self.reports.try_recv() {
            self.note(report);
            any = true;
        }
        any
    }

    /// Whether `id` is a blocking request whose handler has started and not
    /// been released: its worker is held there.
    fn holds_worker(&self, id: u64) -> bool {
        self.kinds.get(&id) == Some(&Kind::Block) && !self.released.contains(&id)
    }

    /// Waits until the pool is at rest, judged from what the test observed
    /// and the pool's own figures: every send admitted or refused, each
    /// shard empty or held by a started blocking handler, every panicked
    /// worker rebuilt or its shard down for good, and `due` answers
    /// delivered, with exactly `down` shards down. Those two counts are
    /// taken from the model: which queued calls a shard down for good
    /// answered unrun is not observable otherwise, and a shard down only
    /// while its worker is rebuilt (after a backoff) is not at rest yet. A
    /// pool that delivers other counts never settles, and the case fails.
    fn settle(&mut self, due: usize, down: usize) -> Result<WorkerPoolStats, TestCaseError> {
        let deadline = Instant::now() + SETTLE_LIMIT;
        loop {
            // The reports, the figures, then the reports again, and the
            // figures count only if no report came in meanwhile. A handler
            // reports its start before it frees its slot, so every start
            // the figures reflect has been reported by the second drain;
            // and none is newer than the figures, which would make a
            // shard look held by a handler started after they were read.
            self.drain();
            let stats = self.pool.stats();
            let quiet = !self.drain();
            let held: HashSet<usize> = self
                .ran
                .iter()
                .filter(|&(&id, _)| self.holds_worker(id))
                .map(|(_, &shard)| shard)
                .collect();
            let panicked = self
                .ran
                .keys()
                .filter(|id| self.kinds.get(id) == Some(&Kind::Panic))
                .count() as u64;
            // Per-shard figures and totals are read at different moments:
            // judge both, so that the view taken from them is consistent.
            let shard_sum = |field: fn(&WorkerShardStats) -> u64| -> u64 {
                stats.shards.iter().map(field).sum()
            };
            let handled = shard_sum(|shard| shard.handled);
            let usage = shard_sum(|shard| shard.usage as u64);
            let at_rest = quiet
                && stats.accepted + stats.rejected == self.sends
                && handled + stats.skipped + usage == stats.accepted
                && stats.handled == handled
                && stats.usage as u64 == usage
                && stats.panics == panicked
                // Every death rebuilt, but the last of each shard down for
                // good (the factory never fails here).
                && stats.shards_down == down
                && stats.restarts + down as u64 == panicked
                && shard_sum(|shard| shard.restarts) == stats.restarts
                && stats
                    .shards
                    .iter()
                    .all(|shard| shard.up || shard.usage == 0)
                && stats
                    .shards
                    .iter()
                    .enumerate()
                    .all(|(index, shard)| shard.usage == 0 || held.contains(&index))
                && self.results.len() == due;
            if at_rest {
                return Ok(stats);
            }
            if Instant::now() > deadline {
                return Err(TestCaseError::fail(format!(
                    "the pool never came to rest: {stats:?}, {} results",
                    self.results.len()
                )));
            }
            thread::yield_now();
        }
    }

    /// What the settled pool shows: its figures, and what the workers and
    /// helpers reported.
    fn view(&self, stats: &WorkerPoolStats) -> View {
        View {
            shards: stats
                .shards
                .iter()
                .zip(&self.log)
                .map(|(shard, log)| ShardView {
                    limit: shard.limit,
                    usage: shard.usage,
                    started: log.clone(),
                    handled: shard.handled,
                    restarts: shard.restarts,
                    up: shard.up,
                })
                .collect(),
            outcomes: self.results.clone(),
            waiting: self.busy.clone(),
            accepted: stats.accepted,
            rejected: stats.rejected,
            handled: stats.handled,
            panics: stats.panics,
            restarts: stats.restarts,
            skipped: stats.skipped,
            closed: stats.closed,
        }
    }
}

/// The observable state of a settled pool, as seen or as predicted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct View {
    shards: Vec<ShardView>,
    /// Each call's outcome, by request id.
    outcomes: BTreeMap<u64, Outcome>,
    /// Helpers still waiting for their call, with its request id.
    waiting: BTreeMap<usize, u64>,
    accepted: u64,
    rejected: u64,
    handled: u64,
    panics: u64,
    restarts: u64,
    skipped: u64,
    closed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ShardView {
    limit: usize,
    /// Queued plus running.
    usage: usize,
    /// `(request id, worker generation)` of each request started, in order.
    started: Vec<(u64, u64)>,
    handled: u64,
    restarts: u64,
    /// Whether the shard has a worker (false: down for good).
    up: bool,
}

impl Model {
    /// What the settled pool must show.
    fn view(&self) -> View {
        View {
            shards: self
                .shards
                .iter()
                .map(|shard| ShardView {
                    limit: shard.limit,
                    usage: shard.queue.len(),
                    started: shard.log.clone(),
                    handled: shard.handled,
                    restarts: shard.restarts,
                    up: !shard.down,
                })
                .collect(),
            outcomes: self.results.clone(),
            waiting: self.pending.clone(),
            accepted: self.accepted,
            rejected: self.rejected,
            handled: self.shards.iter().map(|shard| shard.handled).sum(),
            panics: self.panics,
            restarts: self.shards.iter().map(|shard| shard.restarts).sum(),
            skipped: self.skipped,
            closed: 0,
        }
    }
}

impl Drop for Real {
    fn drop(&mut self) {
        // Let held handlers go, so that every call is answered; the pool
        // shuts down when its last `Arc` goes, ours or a helper's.
        self.releases.clear();
    }
}

// ---------------------------------------------------------------------------
// The property

/// What a sending operation's request does.
fn kind_of(op: &Op) -> Kind {
    match op {
        Op::Block(_) => Kind::Block,
        Op::Panic(_) => Kind::Panic,
        _ => Kind::Quick,
    }
}

/// Runs `ops` against a pool of `capacity` over `shards` and the model.
fn run_case(
    shards: usize,
    capacity: usize,
    max_restarts: u32,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    quiet_panics();
    let mut real = Real::new(capacity, shards, max_restarts);
    let mut model = Model::new(capacity, shards, max_restarts);
    let mut next_id = 0u64;
    let mut fresh = || {
        next_id += 1;
        next_id
    };

    // Home shards, each learnt from its thread's first placement: a call
    // made while the pool is empty, which the home shard takes. (A home
    // shard without room at all, limit 0, passes every send on to the next
    // shards in order: the first of them that has room is as good a home
    // for the predictions.)
    let id = fresh();
    real.kinds.insert(id, Kind::Quick);
    real.sends += 1;
    let home = match real.pool.call(Request::Quick(id)) {
        Ok((shard, replied)) if replied == id => shard,
        other => {
            let outcome = outcome(id, other);
            return Err(TestCaseError::fail(format!(
                "first call on an empty pool: {outcome:?}"
            )));
        }
    };
    model.calibrated(home, id, None);
    let mut helper_homes = Vec::with_capacity(real.helpers.len());
    for helper in 0..real.helpers.len() {
        let id = fresh();
        real.call(helper, id, Kind::Quick, false)?;
        match real.wait_done(helper)? {
            Outcome::Replied(shard) => {
                model.calibrated(shard, id, Some(helper));
                helper_homes.push(shard);
            }
            other => {
                return Err(TestCaseError::fail(format!(
                    "first call of helper {helper} on an empty pool: {other:?}"
                )))
            }
        }
    }
    let stats = real.settle(model.results.len(), model.shards_down())?;
    prop_assert_eq!(real.view(&stats), model.view(), "after calibration");

    for op in ops {
        match op {
            Op::Cast | Op::Block(Via::Cast) | Op::Panic(Via::Cast) => {
                let kind = kind_of(op);
                let id = fresh();
                let placed = model.send(home, id, kind, None);
                let admitted = real.cast(id, kind)?;
                prop_assert_eq!(
                    admitted,
                    placed != Placement::Refused,
                    "cast {} admitted",
                    id
                );
            }
            Op::Call(by) | Op::Block(Via::Call(by)) | Op::Panic(Via::Call(by)) => {
                let kind = kind_of(op);
                let id = fresh();
                let helper = model.free_helper(real.helpers.len(), by);
                let placed = model.send(helper_homes[helper], id, kind, Some(helper));
                // A call that waits in a mailbox must be posted before the
                // next send, or that one could overtake it: `call_async`
                // tells when it is. One refused or started at once needs
                // nothing more, and goes through `call_timeout`.
                let queued = matches!(placed, Placement::Placed { started: false, .. });
                real.call(helper, id, kind, queued)?;
            }
            Op::Finish(index) => {
                if let Some(id) = model.finish(index) {
                    real.release(id);
                }
            }
        }
        let stats = real.settle(model.results.len(), model.shards_down())?;
        prop_assert_eq!(real.view(&stats), model.view(), "after {:?}", op);
    }

    // Release what is still held: everything drains, every call returns.
    for id in model.finish_all() {
        real.release(id);
    }
    let stats = real.settle(model.results.len(), model.shards_down())?;
    prop_assert_eq!(real.view(&stats), model.view(), "after releasing all");
    prop_assert!(model.pending.is_empty());
    prop_assert_eq!(real.pool.usage(), 0);
    // Nothing was left behind: shutting down handles nothing more.
    real.pool.shutdown();
    let stats = real.pool.stats();
    prop_assert_eq!(
        (stats.accepted, stats.handled, stats.skipped, stats.usage),
        (
            model.accepted,
            model.accepted - model.skipped,
            model.skipped,
            0
        ),
        "after shutdown"
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Placement, per-shard FIFO, panics and slot counts match the model
    /// after every operation.
    #[test]
    fn worker_pool_matches_its_model((shards, capacity, max_restarts, ops) in scenario()) {
        run_case(shards, capacity, max_restarts, &ops)?;
    }
}
