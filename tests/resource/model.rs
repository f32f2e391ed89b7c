//! Model-based property test of [`sidejob::Resource`] (issue #7).
//!
//! Random sequences of operations (acquire with a chosen start shard,
//! borrowed or owned; acquire from the thread's home shard; release a held
//! permit picked by index; `set_capacity`; a churn of up to 65,540
//! acquire-and-drop rounds that carries a shard's grant count across its
//! wraps) run against a real `Resource` and against [`Model`], a small
//! sequential reference written here by hand from docs/design.md ("How
//! capacity moves", "Resizing"). After every step the test checks that:
//!
//! * an acquire is granted by the shard the model predicts
//!   ([`Permit::shard`]): always its start shard, which either had a free
//!   slot, leased from the reserve, or took a free slot of the first shard
//!   with one in probe order; and refused with [`Overload`] if and only if
//!   no slot was free;
//! * independently of the model's internals, an acquire succeeds if and only
//!   if usage is below capacity ("acquires are refused until usage is back
//!   under it"), and usage is above capacity only as the documented
//!   leftover of a shrink: never above what was held when the capacity was
//!   last set;
//! * `usage()`, `capacity()` and every figure of `stats()` (totals, and per
//!   shard `limit` (its lease), `usage`, `accepted`, `rejected`, and the
//!   reserve) equal the model's.
//!
//! Failing cases shrink to a minimal operation sequence (a `Vec` of [`Op`]).
//! The default is 64 cases of up to 30 operations, a second or so in a debug
//! build; proptest's usual environment variables apply on top, so a longer
//! run is e.g. `PROPTEST_CASES=10000 cargo test --test model_resource`.

use std::sync::Arc;

use crate::support;
use proptest::collection::vec;
use proptest::prelude::*;
use sidejob::{Overload, OwnedPermit, Permit, Resource};
use support::admission_model::Slots;
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

/// The sequential reference: the admission core's slots, and the shard of
/// each permit the test holds.
#[derive(Debug)]
struct Model {
    slots: Slots,
    /// The shard of each held permit, and whether it was leased under
    /// scarcity, parallel to the test's `held` vector.
    held: Vec<(usize, bool)>,
}

impl Model {
    fn new(shards: usize, capacity: usize) -> Model {
        Model {
            slots: Slots::new(shards, capacity),
            held: Vec::new(),
        }
    }

    fn acquire(&mut self, start: usize) -> Result<usize, Overload> {
        let (shard, scarce) = self.slots.acquire_ticket(start)?;
        self.held.push((shard, scarce));
        Ok(shard)
    }

    fn release(&mut self, index: usize) {
        let (shard, scarce) = self.held.remove(index);
        self.slots.release_ticket(shard, scarce);
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
    let model = &model.slots;
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
    prop_assert_eq!(stats.reserve, model.reserve);
    for (i, shard) in stats.shards.iter().enumerate() {
        prop_assert_eq!(shard.limit as u64, model.limit[i], "limit of shard {}", i);
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
                model.slots.set_capacity(capacity);
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
        let model_shards: Vec<usize> = model.held.iter().map(|&(shard, _)| shard).collect();
        prop_assert_eq!(
            &shards_held,
            &model_shards,
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
        Op::Release { index: 0 }, // 2 held of 1: the closed shard 0 pays
        acquire(1),               // refused
        Op::Release { index: 0 }, // 1 held of 1
        acquire(1),               // refused
        Op::Release { index: 0 }, // 0 held: the reserve holds the 1
        acquire(1),               // leased home to shard 1
        acquire(0),               // refused
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
            ok(1),
            refused
        ]
    );
}

/// Capacity follows the acquires: 4 shards of 3, and every acquire starts
/// at shard 1, which takes its own 3 first, then one free slot at a time
/// from shards 2, 3 and 0, each moved home. The 13th is refused, and
/// capacity is scarce: released slots go to the reserve and lease back one
/// at a time.
#[test]
fn capacity_moves_to_the_shard_that_acquires() {
    let mut ops = vec![acquire(1); 13];
    ops.extend([Op::Release { index: 0 }, acquire(3), acquire(3)]);
    let got = run(4, 12, &ops).unwrap();
    let (refused, ok) = (Err(Overload), Ok);
    let mut expected = vec![ok(1); 12];
    expected.extend([refused, ok(3), refused]);
    assert_eq!(got, expected);
}
