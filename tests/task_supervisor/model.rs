//! Model-based property test of [`sidejob::TaskSupervisor`] (#18).
//!
//! Random sequences of operations run against a real one-shard supervisor
//! (so ids count up from 0 and the live set's order is the admission order)
//! and a small sequential model: track a task (its future reports whether
//! it was cancelled), complete a chosen live task (poll its future to the
//! end), drop one unfinished, `set_capacity`, `cancel_all`, and `close`.
//! After every step the test checks:
//!
//! * that a track is refused with `Overload` exactly when the model holds
//!   as many live tasks as the capacity (or more after a shrink), and with
//!   `Closed` after `close`, the closure handed back uncalled;
//! * that a completed task saw itself cancelled exactly when a `cancel_all`
//!   came between its admission and its completion;
//! * `which_children()`, `count()`, `capacity()`, and every total of
//!   `stats()` (spawned, finished, cancelled, panicked, rejected, closed,
//!   live);
//! * that `wait()` is ready exactly when the model is closed and empty.
//!
//! The default is 64 cases of up to 30 operations; `PROPTEST_CASES` runs
//! more.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::support;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use sidejob::{ChildId, SpawnError, TaskContext, TaskSupervisor, Tracked};
use support::model_config::config;

/// One step of a generated sequence.
#[derive(Debug, Clone)]
enum Op {
    Track,
    Complete(Index),
    Drop(Index),
    SetCapacity(usize),
    CancelAll,
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Track),
        3 => any::<Index>().prop_map(Op::Complete),
        2 => any::<Index>().prop_map(Op::Drop),
        1 => (0usize..=5).prop_map(Op::SetCapacity),
        1 => Just(Op::CancelAll),
        1 => Just(Op::Close),
    ]
}

/// A task's future: ready at its first poll, with whether it was cancelled.
type TaskFuture = Pin<Box<dyn Future<Output = bool> + Send>>;

fn task(context: TaskContext) -> TaskFuture {
    Box::pin(async move { context.is_cancelled() })
}

/// The sequential reference.
#[derive(Debug, Default)]
struct Model {
    capacity: usize,
    closed: bool,
    /// Live tasks: id, and the cancel generation it was admitted in.
    live: Vec<(u64, u64)>,
    next_id: u64,
    generation: u64,
    spawned: u64,
    finished: u64,
    cancelled: u64,
    rejected: u64,
    refused_closed: u64,
}

#[derive(Debug, PartialEq, Eq)]
enum Expected {
    Admitted(u64),
    Overload,
    Closed,
}

impl Model {
    fn track(&mut self) -> Expected {
        if self.closed {
            self.refused_closed += 1;
            return Expected::Closed;
        }
        if self.live.len() >= self.capacity {
            self.rejected += 1;
            return Expected::Overload;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.spawned += 1;
        self.live.push((id, self.generation));
        Expected::Admitted(id)
    }

    /// Ends the `index`th live task; whether it saw itself cancelled.
    fn end(&mut self, index: usize, completed: bool) -> bool {
        let (_, generation) = self.live.remove(index);
        self.finished += 1;
        if !completed {
            self.cancelled += 1;
        }
        generation < self.generation
    }
}

fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(future).poll(&mut cx)
}

fn run_case(capacity: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let supervisor = TaskSupervisor::builder()
        .capacity(capacity)
        .shards(1)
        .build()
        .unwrap();
    let mut model = Model {
        capacity,
        ..Model::default()
    };
    let mut live: Vec<Tracked<TaskFuture>> = Vec::new();
    let mut ids: Vec<ChildId> = Vec::new();
    for op in ops {
        match *op {
            Op::Track => {
                let expected = model.track();
                let called = std::cell::Cell::new(false);
                let got = supervisor.try_track(|context| {
                    called.set(true);
                    task(context)
                });
                match (got, expected) {
                    (Ok(tracked), Expected::Admitted(_)) => {
                        prop_assert!(!ids.contains(&tracked.id()), "id reused");
                        ids.push(tracked.id());
                        live.push(tracked);
                    }
                    (Err(SpawnError::Overload(_)), Expected::Overload)
                    | (Err(SpawnError::Closed(_)), Expected::Closed) => {
                        prop_assert!(!called.get(), "a refused closure was called");
                    }
                    (got, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "track: got {:?}, expected {expected:?}",
                            got.map(|t| t.id())
                        )))
                    }
                }
            }
            Op::Complete(ref index) => {
                if !live.is_empty() {
                    let index = index.index(live.len());
                    let saw_cancelled = model.end(index, true);
                    let mut tracked = live.remove(index);
                    ids.remove(index);
                    match poll_once(&mut tracked) {
                        Poll::Ready(cancelled) => prop_assert_eq!(cancelled, saw_cancelled),
                        Poll::Pending => prop_assert!(false, "a ready task was pending"),
                    }
                }
            }
            Op::Drop(ref index) => {
                if !live.is_empty() {
                    let index = index.index(live.len());
                    model.end(index, false);
                    drop(live.remove(index));
                    ids.remove(index);
                }
            }
            Op::SetCapacity(new) => {
                model.capacity = new;
                supervisor.set_capacity(new).unwrap();
            }
            Op::CancelAll => {
                model.generation += 1;
                supervisor.cancel_all();
            }
            Op::Close => {
                model.closed = true;
                supervisor.close();
            }
        }
        // The live set, in admission order (one shard: ids count up).
        let expected_ids: Vec<u64> = model.live.iter().map(|(id, _)| *id).collect();
        prop_assert_eq!(
            supervisor.which_children().len(),
            expected_ids.len(),
            "after {:?}",
            op
        );
        prop_assert_eq!(supervisor.which_children(), ids.clone(), "after {:?}", op);
        prop_assert_eq!(supervisor.count(), model.live.len());
        prop_assert_eq!(supervisor.capacity(), model.capacity);
        let stats = supervisor.stats();
        prop_assert_eq!(
            (
                stats.spawned,
                stats.finished,
                stats.cancelled,
                stats.panicked
            ),
            (model.spawned, model.finished, model.cancelled, 0),
            "after {:?}",
            op
        );
        prop_assert_eq!(
            (stats.rejected, stats.closed, stats.live),
            (model.rejected, model.refused_closed, model.live.len()),
            "after {:?}",
            op
        );
        let mut wait = Box::pin(supervisor.wait());
        prop_assert_eq!(
            poll_once(&mut wait).is_ready(),
            model.closed && model.live.is_empty(),
            "wait after {:?}",
            op
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn operations_match_the_model(capacity in 0usize..=4, ops in vec(op(), 1..=30)) {
        run_case(capacity, &ops)?;
    }
}
