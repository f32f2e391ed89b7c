//! Model-based property test of [`sidejob::Resource`] (issue #7).
//!
//! Random sequences of operations (acquire with a chosen start shard,
//! borrowed or owned; acquire from the thread's home shard; release a held
//! permit picked by index; `set_capacity`; a churn of up to 65,540
//! acquire-and-drop rounds that carries a shard's grant count across its
//! wraps) run against a real `Resource` and against [`Model`], a small
//! sequential reference written here by hand from docs/design.md ("The
//! mechanism", "Resizing") and the shrink rules in src/resource.rs. After
//! every step the test checks that:
//!
//! * an acquire is granted by exactly the shard the model predicts
//!   ([`Permit::shard`]): the first shard, probing `start, start+1, …`
//!   wrapping, whose usage is below its admission limit; and refused with
//!   [`Overload`] if and only if every shard is full in probe order;
//! * independently of the model's internals, an acquire succeeds if and only
//!   if usage is below capacity ("acquires are refused until usage is back
//!   under it"), and usage is above capacity only as the documented
//!   leftover of a shrink: never above what was held when the capacity was
//!   last set;
//! * `usage()`, `capacity()` and every figure of `stats()` (totals, and per
//!   shard `limit` = share, `usage`, `accepted`, `rejected`) equal the model's.
//!
//! Failing cases shrink to a minimal operation sequence (a `Vec` of [`Op`]).
//! The default is 64 cases of up to 30 operations, a second or so in a debug
//! build; proptest's usual environment variables apply on top, so a longer
//! run is e.g. `PROPTEST_CASES=10000 cargo test --test model_resource`.

use std::sync::Arc;

mod support;
use proptest::collection::vec;
use proptest::prelude::*;
use sidejob::{Overload, OwnedPermit, Permit, Resource};
use support::model_config::config;

/// The most shards a generated resource has.
const MAX_SHARDS: usize = 5;
/// The largest capacity a resource is built with or resized to.
const MAX_CAPACITY: usize = 14;
/// The longest generated operation sequence.
const MAX_OPS: usize = 30;

/// One step of a generated scenario.
#[derive(Debug, Clone)]
enum Op {
    /// `try_acquire_from(start)` (or `try_acquire_owned_from` when `owned`):
    /// an acquire on a thread whose home shard is `start % shards`.
    Acquire { start: usize, owned: bool },
    /// `try_acquire()`: the probe starts at the test thread's home shard.
    AcquireHome,
    /// Drop the held permit at `index % held`, if any is held.
    Release { index: usize },
    /// `set_capacity(capacity)`.
    SetCapacity { capacity: usize },
    /// `times` acquires from `start`, each dropped at once: drives a shard's
    /// grant count across its 2^15 wrap, where `accepted` must stay exact.
    Churn { start: usize, times: u32 },
}

/// Start shards for an acquire: half the time 0 or 1, so that usage piles
/// up on a few shards and a shrink leaves some shard above its share; else
/// any shard, including starts past the shard count (taken modulo).
fn start() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..2, 0..2 * MAX_SHARDS]
}

/// Generates operations, weighted towards acquires so that sequences reach
/// full shards, and shrinks below the usage, often.
fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (start(), any::<bool>()).prop_map(|(start, owned)| Op::Acquire { start, owned }),
        1 => Just(Op::AcquireHome),
        2 => (0usize..16).prop_map(|index| Op::Release { index }),
        2 => (0..=MAX_CAPACITY).prop_map(|capacity| Op::SetCapacity { capacity }),
        1 => (start(), churn_times()).prop_map(|(start, times)| Op::Churn { start, times }),
    ]
}

/// How many acquire-and-drop rounds a churn makes: a few, or about one or
/// two wraps of a shard's 15-bit grant count (32,768), so that counts cross
/// the wrap, and a pending carry is folded, at varying offsets.
fn churn_times() -> impl Strategy<Value = u32> {
    prop_oneof![1u32..=3, 32_760u32..=32_776, 65_530u32..=65_540]
}

/// The sequential reference: what each shard holds and admits up to.
#[derive(Debug)]
struct Model {
    capacity: usize,
    /// Permits held per shard.
    usage: Vec<u64>,
    /// Per-shard admission limits: the share, lowered after a shrink while
    /// some shard holds more than its share (or 0 everywhere while total
    /// usage is above capacity).
    limit: Vec<u64>,
    accepted: Vec<u64>,
    /// Refusals, by the shard where the probe started.
    rejected: Vec<u64>,
    /// The shard of each held permit, parallel to the test's `held` vector.
    held: Vec<usize>,
}

impl Model {
    /// A fresh resource of `capacity` over `shards` shards: limits = shares.
    fn new(shards: usize, capacity: usize) -> Model {
        let mut model = Model {
            capacity,
            usage: vec![0; shards],
            limit: vec![0; shards],
            accepted: vec![0; shards],
            rejected: vec![0; shards],
            held: Vec::new(),
        };
        model.replan();
        model
    }

    /// The number of shards.
    fn shards(&self) -> usize {
        self.usage.len()
    }

    /// Shard `index`'s share of the capacity: an exact spread, the remainder
    /// going one each to the lowest shards (10 over 4 = [3, 3, 2, 2]).
    fn share(&self, index: usize) -> u64 {
        let n = self.shards();
        (self.capacity / n + usize::from(index < self.capacity % n)) as u64
    }

    /// Permits held in all.
    fn total_usage(&self) -> usize {
        self.usage.iter().sum::<u64>() as usize
    }

    /// Sets the admission limits from the shares and the usage now
    /// (design.md, "Resizing"): closed (all 0) while usage exceeds capacity;
    /// otherwise each share, with the overshoot of the shards above their
    /// share cut from the shards with room, lowest index first.
    fn replan(&mut self) {
        let n = self.shards();
        if self.total_usage() > self.capacity {
            self.limit = vec![0; n];
            return;
        }
        let mut overshoot: u64 = (0..n)
            .map(|i| self.usage[i].saturating_sub(self.share(i)))
            .sum();
        for i in 0..n {
            let share = self.share(i);
            let cut = overshoot.min(share.saturating_sub(self.usage[i]));
            overshoot -= cut;
            self.limit[i] = share - cut;
        }
    }

    /// An acquire probing from `start`: the granting shard, or `Overload`.
    fn acquire(&mut self, start: usize) -> Result<usize, Overload> {
        let n = self.shards();
        let start = start % n;
        let granted = (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.usage[i] < self.limit[i]);
        match granted {
            Some(shard) => {
                self.usage[shard] += 1;
                self.accepted[shard] += 1;
                self.held.push(shard);
                Ok(shard)
            }
            None => {
                self.rejected[start] += 1;
                Err(Overload)
            }
        }
    }

    /// Releases the held permit at `index`; a shard that was over its limit
    /// sends the release to the rebalance.
    fn release(&mut self, index: usize) {
        let shard = self.held.remove(index);
        let over = self.usage[shard] > self.limit[shard];
        self.usage[shard] -= 1;
        if over {
            self.replan();
        }
    }

    /// `set_capacity`: store it, then rebalance.
    fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.replan();
    }

    /// The model's own invariant (design.md): the sum over shards of
    /// `max(usage, limit)` is at most the capacity unless every limit is 0,
    /// and no limit exceeds its share.
    fn check_invariant(&self) -> Result<(), TestCaseError> {
        let footprint: u64 = (0..self.shards())
            .map(|i| self.usage[i].max(self.limit[i]))
            .sum();
        let closed = self.limit.iter().all(|&l| l == 0);
        prop_assert!(
            closed || footprint <= self.capacity as u64,
            "model broke its own invariant: {self:?}"
        );
        for i in 0..self.shards() {
            prop_assert!(self.limit[i] <= self.share(i), "model limit above share");
        }
        Ok(())
    }
}

/// A permit held by the test: borrowed from the resource, or owning a handle.
#[derive(Debug)]
enum Held<'a> {
    Borrowed(Permit<'a>),
    Owned(OwnedPermit),
}

impl Held<'_> {
    /// The shard the permit was taken from.
    fn shard(&self) -> usize {
        match self {
            Held::Borrowed(permit) => permit.shard(),
            Held::Owned(permit) => permit.shard(),
        }
    }
}

/// The test thread's home shard among `shards` shards, learned from a
/// scratch resource with one slot per shard: the first plain acquire on it
/// is granted by the home shard.
fn home_shard(shards: usize) -> usize {
    let scratch = Resource::builder()
        .capacity(shards)
        .shards(shards)
        .build()
        .expect("valid scratch resource");
    let home = scratch.try_acquire().expect("scratch has room").shard();
    home
}

/// Checks every observable figure of `resource` against `model`.
fn check_figures(resource: &Resource, model: &Model) -> Result<(), TestCaseError> {
    model.check_invariant()?;
    prop_assert_eq!(resource.capacity(), model.capacity);
    prop_assert_eq!(resource.usage(), model.total_usage());
    prop_assert_eq!(resource.shard_count(), model.shards());
    let stats = resource.stats();
    prop_assert_eq!(stats.capacity, model.capacity);
    prop_assert_eq!(stats.usage, model.total_usage());
    prop_assert_eq!(stats.accepted, model.accepted.iter().sum::<u64>());
    prop_assert_eq!(stats.rejected, model.rejected.iter().sum::<u64>());
    prop_assert_eq!(stats.shards.len(), model.shards());
    for (i, shard) in stats.shards.iter().enumerate() {
        prop_assert_eq!(shard.limit as u64, model.share(i), "limit of shard {}", i);
        prop_assert_eq!(shard.usage as u64, model.usage[i], "usage of shard {}", i);
        prop_assert_eq!(shard.accepted, model.accepted[i], "accepted of shard {}", i);
        prop_assert_eq!(shard.rejected, model.rejected[i], "rejected of shard {}", i);
    }
    Ok(())
}

/// Runs `ops` against a real resource and the model, checking after each;
/// returns what each acquire got, in order, for the hand-written scenarios.
fn run(
    shards: usize,
    capacity: usize,
    ops: &[Op],
) -> Result<Vec<Result<usize, Overload>>, TestCaseError> {
    let resource = Arc::new(
        Resource::builder()
            .capacity(capacity)
            .shards(shards)
            .build()
            .expect("generated settings are valid"),
    );
    let home = home_shard(shards);
    let mut model = Model::new(shards, capacity);
    let mut held: Vec<Held<'_>> = Vec::new();
    // What was held when the capacity was last set: the most that a shrink
    // may leave above the capacity.
    let mut held_at_resize = 0;
    let mut acquired = Vec::new();
    check_figures(&resource, &model)?;
    for (step, op) in ops.iter().enumerate() {
        let usage_before = resource.usage();
        let capacity_before = resource.capacity();
        match *op {
            Op::Acquire { .. } | Op::AcquireHome => {
                let (start, real) = match *op {
                    Op::Acquire {
                        start,
                        owned: false,
                    } => (
                        start,
                        resource
                            .try_acquire_from(start)
                            .map(|p| (p.shard(), Held::Borrowed(p))),
                    ),
                    Op::Acquire { start, owned: true } => (
                        start,
                        resource
                            .try_acquire_owned_from(start)
                            .map(|p| (p.shard(), Held::Owned(p))),
                    ),
                    _ => (
                        home,
                        resource
                            .try_acquire()
                            .map(|p| (p.shard(), Held::Borrowed(p))),
                    ),
                };
                let expected = model.acquire(start);
                let got = real.as_ref().map(|(shard, _)| *shard).map_err(|e| *e);
                prop_assert_eq!(got, expected, "step {}: {:?}", step, op);
                // The promise in plain terms: granted iff usage < capacity.
                prop_assert_eq!(
                    got.is_ok(),
                    usage_before < capacity_before,
                    "step {}: {:?} with usage {} of capacity {}",
                    step,
                    op,
                    usage_before,
                    capacity_before
                );
                acquired.push(got);
                if let Ok((_, permit)) = real {
                    held.push(permit);
                }
            }
            Op::Release { index } => {
                if !held.is_empty() {
                    let index = index % held.len();
                    drop(held.remove(index));
                    model.release(index);
                }
            }
            Op::SetCapacity { capacity } => {
                resource.set_capacity(capacity).unwrap();
                model.set_capacity(capacity);
                held_at_resize = held.len();
            }
            Op::Churn { start, times } => {
                for round in 0..times {
                    let got = resource.try_acquire_from(start).map(|p| p.shard());
                    let expected = model.acquire(start);
                    if expected.is_ok() {
                        model.release(model.held.len() - 1);
                    }
                    prop_assert_eq!(got, expected, "step {}: churn round {}", step, round);
                }
            }
        }
        let usage = resource.usage();
        prop_assert_eq!(
            usage,
            held.len(),
            "step {}: usage is the permits held",
            step
        );
        let shards_held: Vec<usize> = held.iter().map(Held::shard).collect();
        prop_assert_eq!(
            &shards_held,
            &model.held,
            "step {}: shards of the held permits",
            step
        );
        prop_assert!(
            usage <= resource.capacity().max(held_at_resize),
            "step {}: usage {} above capacity {} and above the {} held at the last resize",
            step,
            usage,
            resource.capacity(),
            held_at_resize
        );
        check_figures(&resource, &model)?;
    }
    drop(held);
    prop_assert_eq!(resource.usage(), 0);
    Ok(acquired)
}

proptest! {
    #![proptest_config(config())]

    /// Random sequences on resources of 1..=5 shards (mostly 2 or more)
    /// and capacity 0..=14.
    #[test]
    fn resource_follows_the_model(
        shards in prop_oneof![1 => Just(1), 5 => 2..=MAX_SHARDS],
        capacity in 0..=MAX_CAPACITY,
        ops in vec(op(), 0..=MAX_OPS),
    ) {
        run(shards, capacity, &ops)?;
    }
}

/// A borrowed acquire starting at `start`, for the hand-written scenarios.
fn acquire(start: usize) -> Op {
    Op::Acquire {
        start,
        owned: false,
    }
}

/// The promise of the `set_capacity` docs, hand-written and run through the
/// same checker: a shrink below the usage revokes nothing, and acquires are
/// refused until usage is back under the new capacity.
#[test]
fn shrink_below_usage_scenario_follows_the_model() {
    let ops = [
        acquire(0), // shard 0
        Op::Acquire {
            start: 0,
            owned: true,
        }, // shard 0
        acquire(1), // shard 1
        Op::SetCapacity { capacity: 1 },
        acquire(1),               // 3 held of 1: refused
        Op::Release { index: 0 }, // 2 held of 1
        acquire(1),               // refused
        Op::Release { index: 0 }, // 1 held of 1, on shard 1 (share 0)
        acquire(1),               // refused
        Op::Release { index: 0 }, // 0 held
        acquire(1),               // shard 1 has share 0: shard 0
        acquire(1),               // refused
    ];
    let got = run(2, 4, &ops).unwrap();
    let (refused, ok) = (Err(Overload), Ok);
    assert_eq!(
        got,
        [
            ok(0),
            ok(0),
            ok(1),
            refused,
            refused,
            refused,
            ok(0),
            refused
        ]
    );
}

/// After a shrink that leaves one shard above its share, the overshoot is
/// charged to the shards with room, lowest index first: 4 shards of 3, all
/// on shard 0, shrunk to 8 (shares 2 each) leave limits [2, 1, 2, 2].
#[test]
fn overshoot_is_charged_to_the_lowest_shards_with_room() {
    let fill = acquire(0);
    let from_one = acquire(1);
    let ops = [
        fill.clone(),
        fill.clone(),
        fill,
        Op::SetCapacity { capacity: 8 },
        from_one.clone(), // shard 1 (limit 1)
        from_one.clone(), // shard 1 is full: shard 2
        from_one.clone(), // shard 2
        from_one.clone(), // shard 3
        from_one.clone(), // shard 3
        from_one,         // 8 held: refused
    ];
    let got = run(4, 12, &ops).unwrap();
    let (refused, ok) = (Err(Overload), Ok);
    assert_eq!(
        got,
        [
            ok(0),
            ok(0),
            ok(0),
            ok(1),
            ok(2),
            ok(2),
            ok(3),
            ok(3),
            refused
        ]
    );
}
