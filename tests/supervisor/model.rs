//! Model-based property test of [`sidejob::Supervisor`] (issue #7).
//!
//! Random sequences of operations (spawn a child that blocks until the test
//! tells it what to do; finish a chosen live child normally; make a chosen
//! live child panic; `set_capacity`; `shutdown`) run against a real
//! `Supervisor` and against [`Model`], a small sequential reference written
//! here by hand. Each child waits on a channel of its own, so the test
//! decides when it ends, and every finish or panic is followed by joining the
//! child's handle: the docs promise the child has left the live set and freed
//! its slot before `join` returns, so no sleeps are needed. After every step
//! the test checks that:
//!
//! * `which_children()` is exactly the model's live set (in order), and
//!   `count()` its size; no live child `is_finished()`;
//! * a spawn is refused with [`SpawnError::Overload`], the closure handed
//!   back unrun, if and only if the model is at capacity (as many live as
//!   the capacity, or more after a shrink), and with [`SpawnError::Closed`]
//!   after `shutdown`; an admitted child lands on the shard the admission
//!   model predicts (the spawning thread's home shard, to which capacity
//!   moves, as for [`sidejob::Resource`]; spawns come from the test thread or
//!   from a thread picked for its home shard), and its id was never handed
//!   out before;
//! * a finished child's `join` returns what it returned, and a panicked
//!   child's `join` returns [`sidejob::ChildPanicked`] with its message;
//! * `shutdown` reports exactly the live children as cancelled and
//!   remaining (they are blocked, so none can end within a zero grace), and
//!   each of them sees itself cancelled;
//! * every figure of `stats()` (totals, and per shard `limit` (its lease),
//!   `usage`, `live`) equals the model's.
//!
//! Child threads are named `model-child-…`, and a panic hook installed here
//! keeps their deliberate panics quiet while other panics (a failing test)
//! still print.
//!
//! Failing cases shrink to a minimal operation sequence (a `Vec` of [`Op`]).
//! The default is 64 cases of up to 30 operations, a second or so in a debug
//! build; proptest's usual environment variables apply on top, so a longer
//! run is e.g. `PROPTEST_CASES=5000 cargo test --test model_supervisor`.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Once};
use std::time::Duration;

use crate::support;
use proptest::collection::vec;
use proptest::prelude::*;
use sidejob::{ChildContext, ChildHandle, ChildId, SpawnError, Supervisor};
use support::admission_model::Slots;
use support::model_config::config;

/// The most shards a generated supervisor has.
const MAX_SHARDS: usize = 4;
/// The largest capacity a supervisor is built with or resized to.
const MAX_CAPACITY: usize = 8;
/// The longest generated operation sequence.
const MAX_OPS: usize = 30;
/// The prefix of the child threads' names.
const CHILD_NAME: &str = "model-child";

/// One step of a generated scenario.
#[derive(Debug, Clone)]
enum Op {
    /// `spawn` a child that blocks until told to finish or panic: from the
    /// test thread (`None`), or from a thread whose home shard is
    /// `home % shards`.
    Spawn { home: Option<usize> },
    /// Tell the live child at `index % live` to return, and join it.
    Finish { index: usize },
    /// Tell the live child at `index % live` to panic, and join it.
    Panic { index: usize },
    /// `set_capacity(capacity)`.
    SetCapacity { capacity: usize },
    /// `shutdown(Duration::ZERO)`: refuse spawns, cancel the live children.
    Shutdown,
}

/// Generates operations: mostly spawns, so that supervisors fill up, then
/// endings and resizes, and a rare shutdown (about one case in three sees
/// one).
fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => proptest::option::of(0..2 * MAX_SHARDS).prop_map(|home| Op::Spawn { home }),
        8 => (0usize..16).prop_map(|index| Op::Finish { index }),
        4 => (0usize..16).prop_map(|index| Op::Panic { index }),
        8 => (0..=MAX_CAPACITY).prop_map(|capacity| Op::SetCapacity { capacity }),
        1 => Just(Op::Shutdown),
    ]
}

/// What the test tells a blocked child to do.
#[derive(Debug)]
enum Command {
    Finish,
    Panic,
}

/// What a child returns: its id as it saw it, and whether it saw itself
/// cancelled.
type Outcome = (ChildId, bool);

/// The test's side of a live child.
struct Running {
    handle: ChildHandle<Outcome>,
    tell: Sender<Command>,
}

/// A live child as the model knows it.
#[derive(Debug, Clone, Copy)]
struct LiveChild {
    id: ChildId,
    shard: usize,
    /// Whether a shutdown cancelled it.
    cancelled: bool,
}

/// The sequential reference: the live children and the slots they hold.
#[derive(Debug)]
struct Model {
    /// The admission core's slots (one held per live child), as for a
    /// `Resource`.
    slots: Slots,
    /// Live children, parallel to the test's `running` vector.
    live: Vec<LiveChild>,
    closed: bool,
    spawned: u64,
    finished: u64,
    panicked: u64,
    rejected: u64,
    refused_closed: u64,
}

/// What the model expects of a spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpawnOutcome {
    /// Admitted on this shard.
    Admitted(usize),
    Overload,
    Closed,
}

impl Model {
    /// A fresh supervisor of `capacity` over `shards` shards.
    fn new(shards: usize, capacity: usize) -> Model {
        Model {
            slots: Slots::new(shards, capacity),
            live: Vec::new(),
            closed: false,
            spawned: 0,
            finished: 0,
            panicked: 0,
            rejected: 0,
            refused_closed: 0,
        }
    }

    /// A spawn from a thread whose home shard is `home`: what happens, and
    /// the model's state updated for it (except the new child's id, which
    /// [`admit`](Self::admit) records).
    fn spawn(&mut self, home: usize) -> SpawnOutcome {
        // Closed: refused before any slot is taken (no capacity moves).
        if self.closed {
            self.refused_closed += 1;
            return SpawnOutcome::Closed;
        }
        match self.slots.acquire(home) {
            Ok(shard) => SpawnOutcome::Admitted(shard),
            Err(_) => {
                self.rejected += 1;
                SpawnOutcome::Overload
            }
        }
    }

    /// Records a child admitted on `shard` under `id`.
    fn admit(&mut self, shard: usize, id: ChildId) {
        self.spawned += 1;
        self.live.push(LiveChild {
            id,
            shard,
            cancelled: false,
        });
    }

    /// The live child at `index` ended (panicking or not): it leaves the
    /// live set and frees its slot.
    fn end(&mut self, index: usize, panicked: bool) -> LiveChild {
        let child = self.live.remove(index);
        self.slots.release(child.shard);
        self.finished += 1;
        self.panicked += u64::from(panicked);
        child
    }

    /// `set_capacity`, through the slots.
    fn set_capacity(&mut self, capacity: usize) {
        self.slots.set_capacity(capacity);
    }

    /// `shutdown`: closed from now on; every live child is cancelled.
    fn shutdown(&mut self) {
        self.closed = true;
        for child in &mut self.live {
            child.cancelled = true;
        }
    }

    /// The live ids, in order.
    fn live_ids(&self) -> Vec<ChildId> {
        let mut ids: Vec<ChildId> = self.live.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids
    }
}

/// Installs, once per process, a panic hook that keeps the deliberate
/// panics of child threads quiet and passes every other panic to the
/// default hook.
fn quiet_child_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            if !thread.name().is_some_and(|n| n.starts_with(CHILD_NAME)) {
                default(info);
            }
        }));
    });
}

/// The message a child told to panic panics with.
fn panic_message(id: ChildId) -> String {
    format!("{id} was told to panic")
}

/// A child body: wait for the test's command, then return its id and
/// whether it was cancelled, or panic. A dropped sender (the test gave up
/// on a failing case) counts as "finish". Keeps `token` alive, so that the
/// test can tell whether a refused spawn handed this very closure back.
fn child_body(
    commands: Receiver<Command>,
    token: Arc<()>,
) -> impl FnOnce(&ChildContext) -> Outcome + Send + 'static {
    move |context: &ChildContext| {
        let _token = token;
        match commands.recv() {
            Ok(Command::Panic) => panic!("{}", panic_message(context.id())),
            Ok(Command::Finish) | Err(_) => (context.id(), context.is_cancelled()),
        }
    }
}

/// The calling thread's home shard among `shards` shards, learned from a
/// scratch resource with one slot per shard: the first plain acquire on it
/// is granted by the home shard, where a spawn from this thread starts too.
fn home_shard(shards: usize) -> usize {
    let scratch = sidejob::Resource::builder()
        .capacity(shards)
        .shards(shards)
        .build()
        .expect("valid scratch resource");
    let home = scratch.try_acquire().expect("scratch has room").shard();
    home
}

/// Runs `job` on a thread whose home shard among `shards` shards is `home`,
/// and returns what it returned. Threads draw their homes round-robin from
/// a global counter, so this starts short-lived threads until one has the
/// wanted home (within `shards` tries unless other tests draw at the same
/// time); only that one runs `job`. Keeps a spawn's home independent of how
/// many threads ran before, so a failing case replays, and shrinks, the same.
fn on_home_shard<T: Send>(shards: usize, home: usize, job: impl FnOnce() -> T + Send) -> T {
    let job = std::sync::Mutex::new(Some(job));
    std::thread::scope(|scope| {
        for _ in 0..1000 {
            let attempt = scope.spawn(|| {
                if home_shard(shards) != home {
                    return None;
                }
                let job = job.lock().unwrap().take().expect("the job runs once");
                Some(job())
            });
            if let Some(result) = attempt.join().expect("the spawner thread returns") {
                return result;
            }
        }
        panic!("no thread with home shard {home} of {shards} in 1000 tries")
    })
}

/// Checks the live set, the counts and every figure of `stats()` against
/// `model`.
fn check_figures(
    supervisor: &Supervisor,
    running: &[Running],
    model: &Model,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(supervisor.which_children(), model.live_ids());
    prop_assert_eq!(supervisor.count(), model.live.len());
    model.slots.check_invariant()?;
    prop_assert_eq!(supervisor.capacity(), model.slots.capacity);
    prop_assert_eq!(supervisor.is_closed(), model.closed);
    for (child, known) in running.iter().zip(&model.live) {
        prop_assert_eq!(child.handle.id(), known.id);
        prop_assert!(!child.handle.is_finished(), "{} is blocked", known.id);
    }
    let stats = supervisor.stats();
    prop_assert_eq!(stats.capacity, model.slots.capacity);
    prop_assert_eq!(stats.live, model.live.len());
    prop_assert_eq!(stats.spawned, model.spawned);
    prop_assert_eq!(stats.finished, model.finished);
    prop_assert_eq!(stats.panicked, model.panicked);
    prop_assert_eq!(stats.rejected, model.rejected);
    prop_assert_eq!(stats.closed, model.refused_closed);
    prop_assert_eq!(stats.spawn_failed, 0);
    prop_assert_eq!(stats.shards.len(), model.slots.shards());
    for (i, shard) in stats.shards.iter().enumerate() {
        let live_here = model.live.iter().filter(|c| c.shard == i).count();
        prop_assert_eq!(
            shard.limit as u64,
            model.slots.limit[i],
            "limit of shard {}",
            i
        );
        prop_assert_eq!(
            shard.usage as u64,
            model.slots.usage[i],
            "usage of shard {}",
            i
        );
        prop_assert_eq!(shard.live, live_here, "live on shard {}", i);
    }
    Ok(())
}

/// Runs `ops` against a real supervisor and the model, checking after each.
fn run(shards: usize, capacity: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    quiet_child_panics();
    let supervisor = Supervisor::builder()
        .capacity(capacity)
        .shards(shards)
        .name(CHILD_NAME)
        .build()
        .expect("generated settings are valid");
    let home = home_shard(shards);
    let mut model = Model::new(shards, capacity);
    let mut running: Vec<Running> = Vec::new();
    let mut ids_ever = HashSet::new();
    check_figures(&supervisor, &running, &model)?;
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Spawn { home: from } => {
                let at_capacity = model.live.len() >= model.slots.capacity;
                let (tell, commands) = channel();
                let token = Arc::new(());
                let body = child_body(commands, Arc::clone(&token));
                let (home, result) = match from {
                    Some(from) => {
                        let home = from % shards;
                        (home, on_home_shard(shards, home, || supervisor.spawn(body)))
                    }
                    None => (home, supervisor.spawn(body)),
                };
                let expected = model.spawn(home);
                // The model's shards agree with the promise in plain terms:
                // refused iff as many children live as the capacity allows.
                prop_assert_eq!(
                    matches!(expected, SpawnOutcome::Overload),
                    !model.closed && at_capacity,
                    "model: step {}",
                    step
                );
                match result {
                    Ok(handle) => {
                        let SpawnOutcome::Admitted(shard) = expected else {
                            return Err(TestCaseError::fail(format!(
                                "step {step}: spawned, but the model expected {expected:?}"
                            )));
                        };
                        let id = handle.id();
                        prop_assert!(ids_ever.insert(id), "step {}: id {} reused", step, id);
                        model.admit(shard, id);
                        running.push(Running { handle, tell });
                    }
                    Err(err) => {
                        let refusal = match &err {
                            SpawnError::Overload(_) => SpawnOutcome::Overload,
                            SpawnError::Closed(_) => SpawnOutcome::Closed,
                            other => {
                                return Err(TestCaseError::fail(format!(
                                    "step {step}: refused: {other}"
                                )))
                            }
                        };
                        prop_assert_eq!(refusal, expected, "step {}", step);
                        prop_assert_eq!(err.is_overload(), refusal == SpawnOutcome::Overload);
                        // The very closure comes back, unrun: it still holds
                        // the token, and dropping it lets the token go.
                        let closure = err.into_closure();
                        prop_assert_eq!(Arc::strong_count(&token), 2, "closure handed back");
                        drop(closure);
                        prop_assert_eq!(Arc::strong_count(&token), 1);
                    }
                }
            }
            Op::Finish { index } | Op::Panic { index } => {
                if !running.is_empty() {
                    let index = index % running.len();
                    let panics = matches!(op, Op::Panic { .. });
                    let child = running.remove(index);
                    let known = model.end(index, panics);
                    let command = if panics {
                        Command::Panic
                    } else {
                        Command::Finish
                    };
                    child.tell.send(command).expect("a live child listens");
                    let id = child.handle.id();
                    match child.handle.join() {
                        Ok(outcome) => {
                            prop_assert!(!panics, "step {}: {} did not panic", step, id);
                            prop_assert_eq!(outcome, (id, known.cancelled), "step {}", step);
                        }
                        Err(panicked) => {
                            prop_assert!(panics, "step {}: {} panicked", step, id);
                            prop_assert_eq!(panicked.message(), panic_message(id));
                            prop_assert_eq!(
                                panicked.to_string(),
                                format!("child panicked: {}", panic_message(id))
                            );
                        }
                    }
                }
            }
            Op::SetCapacity { capacity } => {
                supervisor.set_capacity(capacity).unwrap();
                model.set_capacity(capacity);
            }
            Op::Shutdown => {
                let report = supervisor.shutdown(Duration::ZERO);
                prop_assert_eq!(report.cancelled, model.live.len(), "step {}", step);
                prop_assert_eq!(report.remaining, model.live_ids(), "step {}", step);
                model.shutdown();
            }
        }
        check_figures(&supervisor, &running, &model)?;
    }
    // Let the rest finish, and check the supervisor drains to nothing.
    while let Some(child) = running.pop() {
        let known = model.end(running.len(), false);
        child
            .tell
            .send(Command::Finish)
            .expect("a live child listens");
        let id = child.handle.id();
        prop_assert_eq!(child.handle.join(), Ok((id, known.cancelled)));
    }
    check_figures(&supervisor, &running, &model)?;
    prop_assert!(supervisor.stats().shards.iter().all(|s| s.usage == 0));
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Random sequences on supervisors of 1..=4 shards and capacity 0..=8.
    #[test]
    fn supervisor_follows_the_model(
        shards in prop_oneof![1 => Just(1), 5 => 2..=MAX_SHARDS],
        capacity in 0..=MAX_CAPACITY,
        ops in vec(op(), 0..=MAX_OPS),
    ) {
        run(shards, capacity, &ops)?;
    }
}

/// A hand-written scenario through the same checker: fill, shrink below the
/// live count, drain (one by a panic) until a spawn fits again, then shut
/// down with a child still live.
#[test]
fn shrink_panic_and_shutdown_scenario_follows_the_model() {
    const SPAWN: Op = Op::Spawn { home: None };
    let ops = [
        SPAWN,
        SPAWN,
        SPAWN,
        SPAWN, // refused: 3 live of 3
        Op::SetCapacity { capacity: 1 },
        SPAWN, // refused: 3 live of 1
        Op::Panic { index: 1 },
        SPAWN, // refused: 2 live of 1
        Op::Finish { index: 0 },
        SPAWN, // refused: 1 live of 1
        Op::SetCapacity { capacity: 2 },
        SPAWN,
        Op::Shutdown,
        SPAWN, // refused: closed
        Op::Finish { index: 0 },
    ];
    run(2, 3, &ops).unwrap();
}

/// `which_children` is documented to list the ids in order, whatever shard
/// each child landed on and whenever it was spawned: the proptest compares
/// it with a sorted list, so this pins that down on a spread of shards.
#[test]
fn which_children_is_sorted_across_shards() {
    quiet_child_panics();
    let supervisor = Supervisor::builder()
        .capacity(6)
        .shards(3)
        .name(CHILD_NAME)
        .build()
        .unwrap();
    let mut tells = BTreeMap::new();
    for _ in 0..6 {
        let (tell, commands) = channel();
        let handle = supervisor
            .spawn(child_body(commands, Arc::new(())))
            .unwrap();
        tells.insert(handle.id(), (tell, handle));
    }
    let ids = supervisor.which_children();
    assert_eq!(ids, tells.keys().copied().collect::<Vec<_>>());
    for (id, (tell, handle)) in tells {
        tell.send(Command::Finish).unwrap();
        assert_eq!(handle.join(), Ok((id, false)));
    }
    assert_eq!(supervisor.count(), 0);
}
