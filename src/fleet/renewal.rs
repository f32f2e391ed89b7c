//! The renewal task: renews a node's lease every refresh, applies the
//! grants, falls to the floor when the lease runs out unrenewed, and, once
//! the node leaves or is dropped, drains: it keeps renewing what the node
//! still holds until its permits are back, then gives the grant back.
//!
//! # The node's lease clock
//!
//! A grant is good until `sent + lease − margin`, where `sent` is when the
//! renewal that brought it was *sent*: the ledger's expiry is the server's
//! clock at the script plus the lease, which comes later, so the node
//! stops using a grant before the ledger gives its slots to others, as
//! long as the two clocks run at rates within the margin (a tenth of the
//! lease).
//!
//! # Calls and answers
//!
//! A node makes one call of the script at a time (a renewal, a join's, a
//! resize: [`call`] holds the ledger's session from before it numbers the
//! call until its answer is applied), so its calls run in Redis, and are
//! applied, in the order they are numbered: a slow renewal never undoes a
//! resize answered after it, and the ledger's record of the node is the
//! one its last applied answer came from. An answer older than one already
//! applied would be dropped all the same. The node also
//! remembers the expiry its last applied answer carried and sends it back
//! with the next call: the script compares it with its record, and a
//! record that is not the one it wrote (writes lost) starts a learning
//! lease. After a call that got no answer, or a lease that ran out, the
//! node does not know what the ledger holds and sends nothing to compare.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::demand::Demand;
use super::ledger::{Answer, Ledger, Mode, Seen, Session};
use super::quiet::{self, Heard, Verdict, Water};
use super::{FleetError, FleetStats};
use crate::{CapacityLease, Resource};

/// A callback told every new grant.
pub(super) type OnGrant = Box<dyn Fn(usize) + Send + Sync>;

/// What the node's face and its renewal task share.
pub(super) struct Shared {
    /// The budget's name: the `name` label of the node's metrics.
    pub(super) budget_name: String,
    /// The node's resource.
    pub(super) resource: Arc<Resource>,
    /// The right to set its capacity, held until the node stops (leaves
    /// or is dropped): then given back, so the user owns the capacity
    /// again even while a meter of the fleet lives on.
    capacity: Mutex<Option<CapacityLease>>,
    pub(super) grant: AtomicUsize,
    pub(super) budget: AtomicUsize,
    /// The floor set with `FleetBuilder::floor`; `None`: the safe share,
    /// the budget over the nodes seen at the last renewal.
    pub(super) floor: Option<usize>,
    pub(super) lease: Duration,
    pub(super) refresh: Duration,
    pub(super) state: Mutex<State>,
    pub(super) on_grant: Mutex<Vec<OnGrant>>,
    /// Serialises every change of the grant (the capacity set and the
    /// callbacks told), so the last one told is the one in force; `true`
    /// once the node stopped renewing (left or dropped), after which an
    /// answer still in flight changes nothing.
    pub(super) changes: Mutex<bool>,
    /// Set when the node leaves or is dropped: the task drains and leaves.
    leaving: AtomicBool,
    /// The number the next call takes, in send order.
    calls: AtomicU64,
    /// Quiet renewals are off until the node has renewed this many times:
    /// Redis answered one with an error (a key of the wrong type,
    /// `READONLY`), so the node renews by script meanwhile.
    quiet_after: AtomicU64,
}

/// The figures behind [`FleetStats`], and what the node last heard.
#[derive(Debug)]
pub(super) struct State {
    pub(super) wants: usize,
    pub(super) nodes: usize,
    pub(super) renewals: u64,
    pub(super) failed_renewals: u64,
    /// Whether the last renewal failed (an event is told when this flips).
    pub(super) failing: bool,
    pub(super) renewed_at: Instant,
    /// When the grant stops being good.
    pub(super) deadline: Instant,
    pub(super) at_floor: bool,
    pub(super) learning: bool,
    /// The number of the last call whose answer (or failure) counted.
    applied: u64,
    /// The expiry the last applied answer carried, and when its call was
    /// sent; `None` when unknown.
    seen: Option<(i64, Instant)>,
    /// What the last script answer said, which a quiet renewal checks
    /// against; `None` when unknown (as `seen`).
    heard: Option<Heard>,
    /// The water level the last quiet renewal read.
    water: Option<Water>,
    /// What the node wanted at its last renewal, which its resource's
    /// capacity follows while it reports a larger want it kept
    /// ([`Water::reported`]): the slots stay its own in the ledger, but
    /// it admits no more than it wants, as if it had reported that.
    demand: usize,
    /// Quiet renewals since the last script call.
    quiet: u64,
}

/// What an applied answer came from.
enum Hearing {
    /// The script, which told this.
    Script(Option<Heard>),
    /// A quiet renewal (the grant unchanged), which read this water level;
    /// `settled` unless it found something moved that the script must see
    /// (the node calls it next): the grant it heard may then be stale (a
    /// budget resized down), so the node's capacity is not raised to it.
    Quiet { water: Option<Water>, settled: bool },
}

/// One call of the script as the node sent it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    number: u64,
    pub(super) sent: Instant,
    /// What the node tells the script it last heard.
    pub(super) seen: Option<Seen>,
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
    /// Sets the capacity through the lease, while the node holds it (a
    /// setting the lease checks: at most the budget, checked at join).
    fn set_capacity_with(&self, set: impl FnOnce(&CapacityLease) -> Result<(), crate::BuildError>) {
        if let Some(lease) = self
            .capacity
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            let _ = set(lease);
        }
    }

    /// A node of budget `budget_name` of `capacity` slots, admitting its
    /// idle floor until a grant comes, with its `floor` and its
    /// `(lease, refresh)`, wanting `wants`.
    pub(super) fn new(
        budget_name: String,
        owner: CapacityLease,
        capacity: usize,
        floor: Option<usize>,
        (lease, refresh): (Duration, Duration),
        wants: usize,
    ) -> Shared {
        Shared {
            budget_name,
            resource: Arc::clone(owner.resource()),
            capacity: Mutex::new(Some(owner)),
            grant: AtomicUsize::new(floor.unwrap_or(0)),
            budget: AtomicUsize::new(capacity),
            floor,
            lease,
            refresh,
            state: Mutex::new(State {
                wants,
                nodes: 0,
                renewals: 0,
                failed_renewals: 0,
                failing: false,
                renewed_at: Instant::now(),
                deadline: Instant::now(),
                // At its idle floor until a first grant.
                at_floor: true,
                learning: false,
                applied: 0,
                seen: None,
                heard: None,
                water: None,
                demand: usize::MAX,
                quiet: 0,
            }),
            on_grant: Mutex::new(Vec::new()),
            changes: Mutex::new(false),
            leaving: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            quiet_after: AtomicU64::new(0),
        }
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the node admits while it is not in the budget (joining, left,
    /// dropped) and the least it wants: the floor set, or 0.
    pub(super) fn idle_floor(&self) -> usize {
        self.floor.unwrap_or(0)
    }

    /// What the node falls to once its lease ran out unrenewed: the floor
    /// set, or its safe share of the budget (the capacity over the nodes),
    /// so a fleet that lost Redis all at once keeps serving within it.
    fn cut_off_floor(&self, capacity: usize, nodes: usize) -> usize {
        self.floor.unwrap_or(capacity / nodes.max(1))
    }

    /// Numbers a call about to be sent, with what the node last heard.
    pub(super) fn call(&self) -> Call {
        let number = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let sent = Instant::now();
        let seen = self.state().seen.map(|(expiry, at)| Seen {
            expiry,
            since: sent.saturating_duration_since(at),
        });
        Call { number, sent, seen }
    }

    /// Records what `call` got (`None`: no answer, or an error), and admits
    /// up to the answer's target until the lease runs out: past
    /// `sent + lease − margin`, the resource's own acquires lower it to the
    /// floor (see [`CapacityLease::set_until`]), even before this task
    /// runs again. An answer to a call older than one already applied
    /// changes nothing.
    pub(super) fn answered(&self, call: Call, answer: Option<Answer>, wants: usize) {
        self.answered_with(call, answer, wants, Hearing::Script(None));
    }

    /// [`answered`](Self::answered), with what the answer came from.
    fn answered_with(&self, call: Call, answer: Option<Answer>, wants: usize, hearing: Hearing) {
        // The events after the locks: a subscriber may read the fleet's
        // stats, which take them.
        match self.apply(call, answer, wants, hearing) {
            Renewed::Failed(_failed_renewals) => {
                crate::events::warn_event!(
                    target: "sidejob::fleet",
                    budget = %self.budget_name,
                    failed_renewals = _failed_renewals,
                    "a renewal failed; the grant holds until its lease ends",
                );
            }
            Renewed::Recovered => {
                crate::events::info_event!(
                    target: "sidejob::fleet",
                    budget = %self.budget_name,
                    "renewals recovered",
                );
            }
            Renewed::Quietly => {}
        }
    }

    /// What [`answered`](Self::answered) does under the locks; which event
    /// to tell.
    fn apply(&self, call: Call, answer: Option<Answer>, wants: usize, hearing: Hearing) -> Renewed {
        let deadline = lease_end(call.sent, self.lease);
        let stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut state = self.state();
        if call.number <= state.applied {
            return Renewed::Quietly;
        }
        state.applied = call.number;
        let Some(answer) = answer else {
            state.failed_renewals += 1;
            state.seen = None;
            state.heard = None;
            if state.failing {
                return Renewed::Quietly;
            }
            state.failing = true;
            return Renewed::Failed(state.failed_renewals);
        };
        let told = if std::mem::take(&mut state.failing) {
            Renewed::Recovered
        } else {
            Renewed::Quietly
        };
        state.seen = Some((answer.expiry, call.sent));
        let unsettled = matches!(hearing, Hearing::Quiet { settled: false, .. });
        match hearing {
            Hearing::Script(heard) => {
                state.heard = heard;
                state.quiet = 0;
            }
            Hearing::Quiet { water, .. } => {
                state.water = water;
                state.quiet += 1;
            }
        }
        state.renewals += 1;
        state.renewed_at = Instant::now();
        state.nodes = answer.nodes;
        state.learning = answer.learning;
        self.budget.store(answer.capacity, Ordering::Relaxed);
        if *stopped {
            return told; // left or dropped: the capacity stays at the floor
        }
        state.wants = wants;
        state.deadline = deadline;
        state.at_floor = false;
        // Its target, or what it wants if less: a target larger than its
        // demand is a want it kept (see `State::demand`). Never more than
        // it has before a script call that a quiet renewal found due.
        let mut grant = answer.target.min(state.demand);
        if unsettled {
            grant = grant.min(self.grant.load(Ordering::Relaxed));
        }
        drop(state);
        let floor = self.cut_off_floor(answer.capacity, answer.nodes);
        // Checked at join: the grant and the floor are at most the budget,
        // at most 2^24 - 1.
        self.set_capacity_with(|lease| lease.set_until(grant, deadline, floor));
        self.tell(grant);
        drop(stopped);
        told
    }

    /// Whether the lease ran out unrenewed (and the node is not yet at its
    /// floor).
    fn expired(&self) -> bool {
        let state = self.state();
        Instant::now() >= state.deadline && !state.at_floor
    }

    /// The lease ran out unrenewed: its grant is good no longer, so it
    /// falls to its cut-off floor at once, and no longer knows what the
    /// ledger holds for it.
    fn fall_to_floor(&self) {
        let stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        if *stopped {
            return;
        }
        let floor = {
            let mut state = self.state();
            state.at_floor = true;
            state.seen = None;
            state.heard = None;
            self.cut_off_floor(self.budget.load(Ordering::Relaxed), state.nodes)
        };
        self.set_capacity_with(|lease| lease.set(floor));
        self.tell(floor);
        drop(stopped);
        // After the locks, as in `answered`.
        crate::events::warn_event!(
            target: "sidejob::fleet",
            budget = %self.budget_name,
            floor,
            "the lease ran out unrenewed: at the floor",
        );
    }

    /// Records `call`, refused because another token holds a live lease on
    /// the node's name: the ledger grants this node nothing under it (it
    /// keeps what the node holds aside), so the node falls to its idle
    /// floor at once (not its cut-off floor: Redis is there, and grants the
    /// others their shares), its grant ends now, it no longer knows what
    /// the ledger holds for it, and it renews on until the name is free.
    pub(super) fn refused(&self, call: Call) {
        let stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let first = {
            let mut state = self.state();
            if call.number <= state.applied {
                return;
            }
            state.applied = call.number;
            state.failed_renewals += 1;
            state.seen = None;
            state.heard = None;
            if *stopped {
                return; // left or dropped: the capacity stays at the floor
            }
            state.deadline = Instant::now();
            state.at_floor = true;
            !std::mem::replace(&mut state.failing, true)
        };
        let floor = self.idle_floor();
        let lowered = self.grant.load(Ordering::Relaxed) != floor;
        self.set_capacity_with(|lease| lease.set(floor));
        self.tell(floor);
        drop(stopped);
        if first || lowered {
            // After the locks, as in `answered`.
            crate::events::warn_event!(
                target: "sidejob::fleet",
                budget = %self.budget_name,
                floor,
                "another process holds this node's name: at the idle floor until its lease ends",
            );
        }
    }

    /// The node leaves or is dropped: it falls to its idle floor at once,
    /// no answer still in flight raises it again, and the task drains.
    pub(super) fn stop(&self) {
        let mut stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
        let leaving = !*stopped;
        *stopped = true;
        self.leaving.store(true, Ordering::Relaxed);
        self.state().at_floor = true;
        self.set_capacity_with(|lease| lease.set(self.idle_floor()));
        // The capacity is the user's again: no renewal sets it from now on.
        drop(
            self.capacity
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        self.tell(self.idle_floor());
        drop(stopped);
        // After the locks, as in `answered`.
        if leaving {
            crate::events::info_event!(
                target: "sidejob::fleet",
                budget = %self.budget_name,
                "left the budget",
            );
        }
    }

    /// Registers `follow` and tells it the grant now, with no change in
    /// between.
    pub(super) fn follow(&self, follow: OnGrant) {
        let _changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let grant = self.grant.load(Ordering::Relaxed);
        let _ = catch_unwind(AssertUnwindSafe(|| follow(grant)));
        self.on_grant
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(follow);
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
        let floor = self.cut_off_floor(self.budget.load(Ordering::Relaxed), state.nodes);
        self.set_capacity_with(|lease| lease.set_until(wants, state.deadline, floor));
        drop(state);
        self.tell(wants);
        drop(stopped);
    }

    /// Records `grant` and tells the callbacks, if it changed. Called with
    /// `changes` held.
    fn tell(&self, grant: usize) {
        let was = self.grant.swap(grant, Ordering::Relaxed);
        if was == grant {
            return;
        }
        crate::events::debug_event!(
            target: "sidejob::fleet",
            budget = %self.budget_name,
            was,
            grant,
            "grant changed",
        );
        let callbacks = self.on_grant.lock().unwrap_or_else(PoisonError::into_inner);
        for callback in callbacks.iter() {
            // A panicking callback must not stop the renewals.
            let _ = catch_unwind(AssertUnwindSafe(|| callback(grant)));
        }
    }

    /// Whether a renewal of a node that wants `demand` may be quiet: the
    /// node knows what the ledger holds for it, and the want it would
    /// report ([`Water::reported`]) moves its share no more than the level
    /// last read lets it, or no level is known yet (the quiet renewal reads
    /// it); if so, the lease end to raise its place in `expiry` to, every
    /// `hint_every` quiet renewals.
    fn quiet_ready(&self, demand: usize, hint_every: u64) -> Option<Option<i64>> {
        let want = self.reported(demand);
        let state = self.state();
        if state.renewals < self.quiet_after.load(Ordering::Relaxed) {
            return None;
        }
        let heard = state.heard.as_ref()?;
        let (expiry, _) = state.seen?;
        let want = u64::try_from(want).unwrap_or(u64::MAX);
        if state.at_floor || (state.water.is_some() && Water::moves(state.water, heard.want, want))
        {
            return None;
        }
        Some((state.quiet % hint_every == hint_every - 1).then_some(expiry))
    }

    /// The want a renewal of a node that wants `demand` reports, by the
    /// water level it last read ([`Water::reported`]); a node that left
    /// or was dropped, draining, reports what it holds as it is, so the
    /// others get the slots it frees at once.
    ///
    /// While quiet renewals are off (Redis refused one), the node reads no
    /// level, so it keeps no want either.
    fn reported(&self, demand: usize) -> usize {
        let stopped = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let state = self.state();
        let quiet = state.renewals >= self.quiet_after.load(Ordering::Relaxed);
        match &state.heard {
            Some(heard) if quiet && !state.at_floor && !*stopped => {
                let demand = u64::try_from(demand).unwrap_or(u64::MAX);
                let want = Water::reported(state.water, heard.want, demand);
                usize::try_from(want).unwrap_or(usize::MAX)
            }
            _ => demand,
        }
    }

    /// Records `call` as one whose effects the node does not know: it
    /// sends nothing to compare with its next call (as after a lease that
    /// ran out), and counts no failure (the next call follows at once).
    fn unknown(&self, call: Call) {
        let mut state = self.state();
        if call.number > state.applied {
            state.applied = call.number;
            state.seen = None;
            state.heard = None;
        }
    }

    /// Applies a quiet renewal's `call`, which renewed the lease to
    /// `expiry` and left the grant `heard` tells: settled when it read the
    /// budget's `nodes` (nothing moved the script must see), otherwise the
    /// script follows and the node's capacity is not raised meanwhile.
    fn quietly(
        &self,
        call: Call,
        heard: &Heard,
        expiry: i64,
        nodes: Option<u64>,
        water: Option<Water>,
        want: usize,
    ) {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let answer = Answer {
            grant: size(heard.grant),
            target: size(heard.target),
            share: size(heard.share),
            nodes: nodes.map_or_else(|| self.state().nodes, size),
            learning: false,
            capacity: size(heard.capacity),
            expiry,
        };
        let settled = nodes.is_some();
        self.answered_with(call, Some(answer), want, Hearing::Quiet { water, settled });
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

/// One call of the script, the node's only one in flight: numbered and
/// sent while it holds the ledger's session, its answer applied before it
/// lets go, so the node's calls run and are applied in one order. It
/// reports `want` and what the node may hold until it applies the answer
/// (its capacity or its usage, whichever is more). A call refused because
/// a live lease of another token holds the node's name (another process
/// took it while this one was cut off, or a ledger restored from an older
/// snapshot or a replica promoted late brought back a lease of a process
/// long dead) drops the node to its idle floor at once; the ledger keeps
/// what it still holds aside, and the node renews on, taking its name back
/// once that lease has run out.
///
/// # Cancel safety
///
/// Dropped before its answer (a timeout), the call counts as failed: the
/// connection is dropped and the node no longer knows what the ledger
/// holds for it.
pub(super) async fn call(
    shared: &Shared,
    ledger: &Ledger,
    mode: Mode,
    capacity: usize,
    want: usize,
) -> Result<Answer, FleetError> {
    let session = ledger.session().await;
    // A grant past its deadline is good no longer, whatever the task got
    // to see (a process stopped past its lease runs this first): the node
    // falls to its floor, and no longer knows what the ledger holds for it,
    // before it says what it holds.
    if shared.expired() {
        shared.fall_to_floor();
    }
    let holding = shared.resource.capacity().max(shared.resource.usage());
    let mut in_flight = InFlight {
        shared,
        session,
        call: Some(shared.call()),
        want,
    };
    let seen = in_flight.call.and_then(|call| call.seen);
    let answer = in_flight
        .session
        .renew(mode, capacity, (want, holding), seen)
        .await;
    let Some(call) = in_flight.call.take() else {
        return answer.map(|(answer, _)| answer);
    };
    match answer {
        Err(error) => {
            match error {
                FleetError::Setting {
                    setting: "node", ..
                } => shared.refused(call),
                _ => shared.answered(call, None, want),
            }
            Err(error)
        }
        Ok((answer, record)) => {
            let heard = ledger.heard(&answer, record, want);
            shared.answered_with(call, Some(answer), want, Hearing::Script(heard));
            Ok(answer)
        }
    }
}

/// A quiet renewal (see [`quiet`]), when the node may make one; whether it
/// renewed the lease with nothing else to do. `false`: the node renews by
/// script now (what moved was applied, or, trouble, was not: the script
/// then sees what the node knew before).
///
/// # Cancel safety
///
/// As [`call`]'s.
async fn renew_quietly(
    shared: &Shared,
    ledger: &Ledger,
    demand: usize,
) -> Result<bool, FleetError> {
    let (token, settings) = ledger.quiet_settings();
    let Some(hint) = shared.quiet_ready(demand, quiet::hint_every(settings.0, settings.1)) else {
        return Ok(false);
    };
    // What it reports meanwhile (a quiet renewal reports nothing new).
    let want = shared.reported(demand);
    let session = ledger.session().await;
    if shared.expired() {
        shared.fall_to_floor();
        return Ok(false);
    }
    let call = shared.call();
    let (Some(seen), Some(heard)) = (call.seen, shared.state().heard.clone()) else {
        return Ok(false);
    };
    let mut in_flight = InFlight {
        shared,
        session,
        call: Some(call),
        want,
    };
    let reply = in_flight.session.quiet(hint).await;
    let Some(call) = in_flight.call.take() else {
        return Ok(false);
    };
    let reply = match reply {
        Ok(reply) => reply,
        // (A pipeline's error replies come back as one error whose `code`
        // is none when Redis's codes are not ones redis-rs names, such as
        // `WRONGTYPE` or `OOM`: its server errors tell.)
        Err(FleetError::Redis(error)) if error.clone().into_server_errors().is_some() => {
            // Redis answered, refusing a command: the node renews by script
            // now, and tries quietly again later. The commands before the
            // one refused ran (the lease key may have been extended), so
            // the node no longer knows the lease end to send back: the
            // script takes its call as a first one, rather than as writes
            // lost, which would start a learning lease.
            shared.unknown(call);
            let renewals = shared.state().renewals;
            shared
                .quiet_after
                .store(renewals + QUIET_PAUSE, Ordering::Relaxed);
            crate::events::warn_event!(
                target: "sidejob::fleet",
                budget = %shared.budget_name,
                error = %error,
                "redis refused a quiet renewal: renewing by script for a while",
            );
            return Ok(false);
        }
        Err(error) => {
            shared.answered(call, None, want);
            return Err(error);
        }
    };
    match quiet::decide(&reply, &heard, (seen.expiry, seen.since), token, settings) {
        Verdict::Renewed {
            expiry,
            nodes,
            water,
        } => {
            shared.quietly(call, &heard, expiry, Some(nodes), Some(water), want);
            // Nothing moved but, perhaps, the want, judged now at the level
            // just read (the one known before may have been none, or old).
            let want = u64::try_from(shared.reported(demand)).unwrap_or(u64::MAX);
            Ok(!Water::moves(Some(water), heard.want, want))
        }
        Verdict::Script { expiry, water, .. } => {
            shared.quietly(call, &heard, expiry, None, water, want);
            Ok(false)
        }
        Verdict::Trouble { .. } => Ok(false),
    }
}

/// A call sent and not yet answered: dropped so, it failed.
struct InFlight<'a> {
    shared: &'a Shared,
    session: Session<'a>,
    call: Option<Call>,
    want: usize,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.session.reset();
            self.shared.answered(call, None, self.want);
        }
    }
}

/// How many renewals a node makes by script after Redis refused a quiet
/// one, before it tries quietly again.
const QUIET_PAUSE: u64 = 64;

/// One renewal of a node that wants `demand`, given up after a refresh;
/// whether it got an answer. (A node refused its name renews on at its
/// idle floor: see [`call`].) Quiet if it may be; by script otherwise,
/// reporting the want [`Water::reported`] gives at the level last read,
/// after lowering its capacity to that want if it holds more.
async fn renew(shared: &Shared, ledger: &Ledger, demand: usize) -> bool {
    shared.state().demand = demand;
    let renewal = async {
        if renew_quietly(shared, ledger, demand).await? {
            return Ok(());
        }
        let want = shared.reported(demand);
        shared.give_back(want);
        let budget = shared.budget.load(Ordering::Relaxed);
        call(shared, ledger, Mode::Renew, budget, want)
            .await
            .map(|_| ())
    };
    matches!(
        tokio::time::timeout(shared.refresh, renewal).await,
        Ok(Ok(()))
    )
}

/// Renews every refresh until the node leaves or is dropped, then drains.
pub(super) async fn run(shared: Arc<Shared>, ledger: Ledger) {
    let mut demand = Demand::new(&shared.resource);
    let mut samples = tokio::time::interval(shared.refresh / 8);
    samples.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A renewal every eighth sample: every refresh, whether the last one
    // got through or not, a fixed pace without drift, so a Redis that is
    // down sees at most one try per refresh.
    let mut ticks: u32 = 0;
    loop {
        samples.tick().await;
        if shared.leaving.load(Ordering::Relaxed) {
            break;
        }
        demand.sample(&shared.resource);
        ticks = ticks.wrapping_add(1);
        if ticks % 8 != 1 || ticks == 1 {
            // (The interval's first tick is at once.)
            if shared.expired() {
                shared.fall_to_floor();
            }
            continue;
        }
        let budget = shared.budget.load(Ordering::Relaxed);
        let grant = shared.grant.load(Ordering::Relaxed);
        let wants = demand.want(&shared.resource, grant, shared.idle_floor(), budget);
        if !renew(&shared, &ledger, wants).await && shared.expired() {
            shared.fall_to_floor();
        }
    }
    drain(&shared, &ledger, &mut samples).await;
}

/// The node left or was dropped, its capacity at its idle floor: until the
/// permits above it are back, it keeps renewing what it still holds, so
/// the ledger never hands those slots to another node; then it gives its
/// grant back.
async fn drain(shared: &Shared, ledger: &Ledger, samples: &mut tokio::time::Interval) {
    let mut renewed = Instant::now();
    loop {
        let usage = shared.resource.usage();
        if usage <= shared.idle_floor() {
            break;
        }
        if renewed.elapsed() >= shared.refresh {
            renewed = Instant::now();
            renew(shared, ledger, usage).await;
        }
        samples.tick().await;
    }
    let leave = async { ledger.session().await.leave().await };
    let _ = tokio::time::timeout(shared.refresh, leave).await;
}

/// Which event an answer to a renewal tells, once the locks are let go.
enum Renewed {
    /// The first failure of a run, with the failures so far.
    Failed(u64),
    /// The first answer after a run of failures.
    Recovered,
    /// Nothing to tell.
    Quietly,
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use std::sync::atomic::Ordering;

    use super::{lease_end, Hearing, Shared};
    use crate::fleet::ledger::Answer;
    use crate::fleet::quiet::{Heard, Water};
    use crate::Resource;

    /// A node of budget `b` (capacity 16, lease 10 s, refresh 1 s) over
    /// `resource`, wanting 8.
    fn node(resource: &std::sync::Arc<Resource>, floor: Option<usize>) -> Shared {
        let lease = (Duration::from_secs(10), Duration::from_secs(1));
        Shared::new(
            "b".into(),
            resource.lease_capacity().unwrap(),
            16,
            floor,
            lease,
            8,
        )
    }

    fn answer(target: usize) -> Answer {
        Answer {
            grant: target,
            target,
            share: target,
            nodes: 1,
            learning: false,
            capacity: 16,
            expiry: 0,
        }
    }

    /// Answers applied out of order: the older call's answer, arriving
    /// after a newer one's, changes nothing (a slow renewal never undoes a
    /// resize answered before it).
    #[test]
    fn an_answer_older_than_one_applied_changes_nothing() {
        let resource = std::sync::Arc::new(Resource::new(1));
        let shared = node(&resource, None);
        let (renewal, resize) = (shared.call(), shared.call());
        shared.answered(resize, Some(answer(4)), 8);
        shared.answered(renewal, Some(answer(12)), 8);
        assert_eq!(resource.capacity(), 4);
        assert_eq!(shared.stats().renewals, 1);
        // A failed call newer than the last answer: the node no longer
        // knows what the ledger holds for it.
        assert!(shared.call().seen.is_some());
        shared.answered(shared.call(), None, 8);
        assert!(shared.call().seen.is_none());
    }

    /// `on_grant`'s callback is told the grant now and every change after,
    /// none lost in between.
    #[test]
    fn a_follower_is_told_the_grant_now_and_every_change_after() {
        let resource = std::sync::Arc::new(Resource::new(1));
        let shared = node(&resource, None);
        shared.answered(shared.call(), Some(answer(5)), 8);
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = told.clone();
        shared.follow(Box::new(move |grant| record.lock().unwrap().push(grant)));
        shared.answered(shared.call(), Some(answer(7)), 8);
        assert_eq!(*told.lock().unwrap(), vec![5, 7]);
    }

    /// A renewal answered while the node stops (the task is aborted only
    /// at its next await) changes nothing once the node has stopped: the
    /// resource stays at the floor, and the last grant told is the floor.
    #[test]
    fn a_renewal_applied_after_stop_changes_nothing() {
        let resource = std::sync::Arc::new(Resource::new(1));
        let shared = node(&resource, Some(1));
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = told.clone();
        shared.follow(Box::new(move |grant| record.lock().unwrap().push(grant)));
        shared.answered(shared.call(), Some(answer(8)), 8);
        assert_eq!(resource.capacity(), 8);
        let late = shared.call();
        shared.stop();
        shared.answered(late, Some(answer(12)), 12);
        shared.give_back(0);
        assert_eq!(resource.capacity(), 1);
        assert_eq!(*told.lock().unwrap(), vec![1, 8, 1]);
        assert!(shared.stats().at_floor);
    }

    /// A node that heard a grant of 8 for a want of 8, at a level that caps
    /// no want.
    fn kept_want(resource: &std::sync::Arc<Resource>) -> Shared {
        let shared = node(resource, None);
        let heard = Heard::new("8 8 10000 tok 1".into(), 8, (8, 8, 8), (10_000, 10_000), 16);
        assert!(heard.is_some());
        shared.answered_with(shared.call(), Some(answer(8)), 8, Hearing::Script(heard));
        shared.state().water = Water::parse("1 -1 0 0 0");
        shared
    }

    /// A want that fell is kept while no want is capped, but not by a node
    /// that stopped (it drains), nor while quiet renewals are paused (it
    /// reads no level then); the node's capacity follows its demand, and a
    /// quiet renewal that found the script due never raises it.
    #[test]
    fn a_kept_want_leaves_the_capacity_at_the_demand_and_is_dropped_when_it_must_be() {
        let resource = std::sync::Arc::new(Resource::new(1));
        let shared = kept_want(&resource);
        assert_eq!(resource.capacity(), 8);
        assert_eq!(shared.reported(2), 8, "kept: no want is capped");
        assert_eq!(shared.reported(12), 12, "a rise is reported");
        // Applied with a demand of 2, the kept target of 8 admits 2.
        shared.state().demand = 2;
        let settled = Hearing::Quiet {
            water: Water::parse("1 -1 0 0 0"),
            settled: true,
        };
        shared.answered_with(shared.call(), Some(answer(8)), 8, settled);
        assert_eq!(resource.capacity(), 2);
        // The demand back at 6: a settled quiet renewal raises it to 6, one
        // that found the script due does not.
        shared.state().demand = 6;
        let unsettled = Hearing::Quiet {
            water: None,
            settled: false,
        };
        shared.answered_with(shared.call(), Some(answer(8)), 8, unsettled);
        assert_eq!(resource.capacity(), 2);
        // Quiet renewals paused: nothing kept.
        shared.state().water = Water::parse("1 -1 0 0 0");
        let renewals = shared.state().renewals;
        shared.quiet_after.store(renewals + 1, Ordering::Relaxed);
        assert_eq!(shared.reported(2), 2);
        shared.quiet_after.store(0, Ordering::Relaxed);
        assert_eq!(shared.reported(2), 8);
        // Stopped, draining: nothing kept.
        shared.stop();
        assert_eq!(shared.reported(2), 2);
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
