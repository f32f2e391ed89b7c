//! The renewal task: renews a node's lease every refresh, applies the
//! grants, and falls to the floor when the lease runs out unrenewed.
//!
//! # The node's lease clock
//!
//! A grant is good until `sent + lease − margin`, where `sent` is when the
//! renewal that brought it was *sent*: the ledger's expiry is the server's
//! clock at the script plus the lease, which comes later, so the node
//! stops using a grant before the ledger gives its slots to others, as
//! long as the two clocks run at rates within the margin (a tenth of the
//! lease).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::demand::Demand;
use super::ledger::{Answer, Ledger, Mode};
use super::FleetStats;
use crate::Resource;

/// A callback told every new grant.
pub(super) type OnGrant = Box<dyn Fn(usize) + Send + Sync>;

/// What the node's face and its renewal task share.
pub(super) struct Shared {
    /// The budget's name: the `name` label of the node's metrics.
    pub(super) budget_name: String,
    pub(super) resource: Arc<Resource>,
    pub(super) grant: AtomicUsize,
    pub(super) budget: AtomicUsize,
    pub(super) floor: usize,
    pub(super) lease: Duration,
    pub(super) refresh: Duration,
    pub(super) state: Mutex<State>,
    pub(super) on_grant: Mutex<Vec<OnGrant>>,
    /// Serialises every change of the grant (the capacity set and the
    /// callbacks told), so the last one told is the one in force; `true`
    /// once the node stopped renewing (left or dropped), after which a
    /// renewal still in flight on the task changes nothing.
    pub(super) changes: Mutex<bool>,
}

/// The figures behind [`FleetStats`].
#[derive(Debug)]
pub(super) struct State {
    pub(super) wants: usize,
    pub(super) nodes: usize,
    pub(super) renewals: u64,
    pub(super) failed_renewals: u64,
    pub(super) renewed_at: Instant,
    /// When the grant stops being good.
    pub(super) deadline: Instant,
    pub(super) at_floor: bool,
    pub(super) learning: bool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("grant", &self.grant)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// A node of budget `budget_name` of `capacity` slots, not yet granted
    /// any, with its `floor` and its `(lease, refresh)`, wanting `wants`.
    pub(super) fn new(
        budget_name: String,
        resource: Arc<Resource>,
        capacity: usize,
        floor: usize,
        (lease, refresh): (Duration, Duration),
        wants: usize,
    ) -> Shared {
        Shared {
            budget_name,
            resource,
            grant: AtomicUsize::new(usize::MAX),
            budget: AtomicUsize::new(capacity),
            floor,
            lease,
            refresh,
            state: Mutex::new(State {
                wants,
                nodes: 0,
                renewals: 0,
                failed_renewals: 0,
                renewed_at: Instant::now(),
                deadline: Instant::now(),
                at_floor: false,
                learning: false,
            }),
            on_grant: Mutex::new(Vec::new()),
            changes: Mutex::new(false),
        }
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an answer to a renewal sent at `sent`, and admits up to its
    /// target until the lease runs out: past `sent + lease − margin`, the
    /// resource's own acquires lower it to the floor (see
    /// [`Resource::set_capacity_until`]), even before this task runs again.
    pub(super) fn apply(&self, answer: Answer, sent: Instant, wants: usize) {
        let deadline = lease_end(sent, self.lease);
        let stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        if *stopped {
            return; // `abort` takes effect at the task's next await, not here
        }
        {
            let mut state = self.state();
            state.wants = wants;
            state.nodes = answer.nodes;
            state.renewals += 1;
            state.renewed_at = Instant::now();
            state.deadline = deadline;
            state.at_floor = false;
            state.learning = answer.learning;
        }
        self.budget.store(answer.capacity, Ordering::Relaxed);
        // Checked at join: the grant and the floor are at most the budget,
        // at most 2^24 - 1.
        let _ = self
            .resource
            .set_capacity_until(answer.target, deadline, self.floor);
        self.tell(answer.target);
        drop(stopped);
    }

    /// The lease ran out unrenewed, or the node stopped renewing (the
    /// fleet left or dropped): its grant is good no longer, so it falls to
    /// the floor at once.
    pub(super) fn fall_to_floor(&self) {
        let _changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        self.state().at_floor = true;
        let _ = self.resource.set_capacity(self.floor);
        self.tell(self.floor);
    }

    /// The node stopped renewing (left or dropped): it falls to the floor,
    /// and no renewal still in flight on the task raises it again.
    pub(super) fn stop(&self) {
        *self.changes.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.state().at_floor = true;
        let _ = self.resource.set_capacity(self.floor);
        self.tell(self.floor);
    }

    /// Before a renewal: a node wanting less than its grant lowers its
    /// capacity to what it wants (its lease unchanged), so the renewal
    /// reports it holds no more and the ledger frees the rest at once,
    /// rather than one renewal later.
    fn give_back(&self, wants: usize) {
        let stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let grant = self.grant.load(Ordering::Relaxed);
        let state = self.state();
        if *stopped || wants >= grant || state.at_floor {
            return;
        }
        let _ = self
            .resource
            .set_capacity_until(wants, state.deadline, self.floor);
        drop(state);
        self.tell(wants);
        drop(stopped);
    }

    /// Records `grant` and tells the callbacks, if it changed. Called with
    /// `changes` held.
    fn tell(&self, grant: usize) {
        if self.grant.swap(grant, Ordering::Relaxed) == grant {
            return;
        }
        let callbacks = self.on_grant.lock().unwrap_or_else(PoisonError::into_inner);
        for callback in callbacks.iter() {
            // A panicking callback must not stop the renewals.
            let _ = catch_unwind(AssertUnwindSafe(|| callback(grant)));
        }
    }

    /// How long the grant stays good without a renewal.
    pub(super) fn lease_left(&self) -> Duration {
        self.state()
            .deadline
            .saturating_duration_since(Instant::now())
    }

    pub(super) fn stats(&self) -> FleetStats {
        let state = self.state();
        FleetStats {
            grant: self.grant.load(Ordering::Relaxed),
            wants: state.wants,
            nodes: state.nodes,
            renewals: state.renewals,
            failed_renewals: state.failed_renewals,
            since_renewal: state.renewed_at.elapsed(),
            at_floor: state.at_floor,
            learning: state.learning,
        }
    }
}

/// When a grant brought by a renewal sent at `sent` stops being good, on
/// the node's clock: `sent + lease − lease / 10`. The ledger frees it at
/// the script's time + lease on the server's clock, later; the margin
/// covers a node's clock running up to a tenth slower than the server's.
pub(super) fn lease_end(sent: Instant, lease: Duration) -> Instant {
    sent + lease - lease / 10
}

/// Renews every refresh until aborted (the `Fleet` dropped or left).
pub(super) async fn run(shared: Arc<Shared>, mut ledger: Ledger) {
    let mut demand = Demand::new(&shared.resource);
    let mut samples = tokio::time::interval(shared.refresh / 8);
    samples.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A renewal every eighth sample: every refresh, whether the last one
    // got through or not, a fixed pace without drift, so a Redis that is
    // down sees at most one try per refresh.
    let mut ticks: u32 = 0;
    loop {
        samples.tick().await;
        demand.sample(&shared.resource);
        ticks = ticks.wrapping_add(1);
        if ticks % 8 != 1 {
            let expired = {
                let state = shared.state();
                Instant::now() >= state.deadline && !state.at_floor
            };
            if expired {
                shared.fall_to_floor();
            }
            continue;
        }
        if ticks == 1 {
            continue; // the interval's first tick is at once
        }
        let budget = shared.budget.load(Ordering::Relaxed);
        let grant = shared.grant.load(Ordering::Relaxed);
        let wants = demand.want(&shared.resource, grant, shared.floor, budget);
        shared.give_back(wants);
        let holding = shared.resource.capacity().max(shared.resource.usage());
        let sent = Instant::now();
        let renewal = ledger.renew(Mode::Renew, budget, wants, holding);
        match tokio::time::timeout(shared.refresh, renewal).await {
            Ok(Ok(answer)) => shared.apply(answer, sent, wants),
            Ok(Err(_)) | Err(_) => {
                let expired = {
                    let mut state = shared.state();
                    state.failed_renewals += 1;
                    Instant::now() >= state.deadline && !state.at_floor
                };
                if expired {
                    shared.fall_to_floor();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::{lease_end, Shared};
    use crate::fleet::ledger::Answer;
    use crate::Resource;

    fn answer(target: usize) -> Answer {
        Answer {
            grant: target,
            target,
            nodes: 1,
            learning: false,
            capacity: 16,
        }
    }

    /// A renewal answered while the node stops (the task is aborted only
    /// at its next await) changes nothing once the node has stopped: the
    /// resource stays at the floor, and the last grant told is the floor.
    #[test]
    fn a_renewal_applied_after_stop_changes_nothing() {
        let resource = std::sync::Arc::new(Resource::new(1));
        let lease = (Duration::from_secs(10), Duration::from_secs(1));
        let shared = Shared::new("b".into(), resource.clone(), 16, 1, lease, 8);
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = told.clone();
        shared
            .on_grant
            .lock()
            .unwrap()
            .push(Box::new(move |grant| record.lock().unwrap().push(grant)));
        shared.apply(answer(8), Instant::now(), 8);
        assert_eq!(resource.capacity(), 8);
        shared.stop();
        shared.apply(answer(12), Instant::now(), 12);
        shared.give_back(0);
        assert_eq!(resource.capacity(), 1);
        assert_eq!(*told.lock().unwrap(), vec![8, 1]);
        assert!(shared.stats().at_floor);
    }

    /// One renewal in real time (seconds): sent by the node at `sent`, run
    /// by the script `delay` later; `answered` if its answer came back.
    #[derive(Clone, Debug)]
    struct Renewal {
        sent: f64,
        delay: f64,
        answered: bool,
    }

    /// Whether the node stops using every grant before the ledger frees
    /// it, with the node's clock running at `node_rate` and the server's at
    /// `server_rate` (clock seconds per real second), for a lease of
    /// `lease` seconds. The node's clock is read through [`lease_end`], on
    /// `Instant`s placed at its readings.
    fn safe(renewals: &[Renewal], lease: f64, node_rate: f64, server_rate: f64) -> bool {
        let origin = Instant::now();
        let node_clock = |real: f64| origin + Duration::from_secs_f64(real * node_rate);
        let lease_d = Duration::from_secs_f64(lease);
        let mut ledger_end = f64::NEG_INFINITY;
        for renewal in renewals {
            // The script ran (answered or not): the ledger holds the grant
            // until the server's clock has advanced a lease past it.
            let ran = renewal.sent + renewal.delay;
            ledger_end = ledger_end.max(ran + lease / server_rate);
            if renewal.answered {
                let end = lease_end(node_clock(renewal.sent), lease_d);
                let end_real = end.duration_since(origin).as_secs_f64() / node_rate;
                if end_real > ledger_end + 1e-6 {
                    return false;
                }
            }
        }
        true
    }

    fn renewals(lease: f64) -> impl Strategy<Value = Vec<Renewal>> {
        prop::collection::vec((0.0..lease, 0.0..lease, any::<bool>()), 1..20).prop_map(|steps| {
            let mut sent = 0.0;
            steps
                .into_iter()
                .map(|(gap, delay, answered)| {
                    sent += gap;
                    Renewal {
                        sent,
                        delay,
                        answered,
                    }
                })
                .collect()
        })
    }

    proptest! {
        /// A node whose clock runs at most a tenth slower than the
        /// server's, or any faster, never uses a grant past the ledger's
        /// expiry, whatever the delays and lost answers.
        #[test]
        fn a_node_clock_within_the_margin_stops_before_the_ledger_frees(
            lease in 0.5f64..30.0,
            renewals in renewals(30.0),
            node_rate in 0.901f64..3.0,
            server_rate in 0.5f64..2.0,
        ) {
            prop_assert!(safe(&renewals, lease, node_rate * server_rate, server_rate));
        }
    }

    #[test]
    fn a_node_clock_slower_than_the_margin_can_outlive_the_ledger() {
        let now = [Renewal {
            sent: 0.0,
            delay: 0.0,
            answered: true,
        }];
        assert!(safe(&now, 10.0, 0.91, 1.0));
        assert!(!safe(&now, 10.0, 0.89, 1.0), "the margin is the bound");
    }
}
