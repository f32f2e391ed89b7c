//! One budget for a fleet of nodes: each node's [`Resource`] capacity is a
//! grant leased from Redis, renewed every refresh, and admission stays
//! in-process (feature `redis`).
//!
//! Every node of a budget joins with [`Fleet::builder`]. Each refresh a
//! node's renewal task renews its lease. When its want moved its share, or
//! anything else moved, it runs one Lua script on Redis (`renew.lua`): it
//! reports what the node wants (see below) and what it may still hold, and
//! gets a grant by a fair-share rule in the manner of Google Doorman's
//! `FairShare`: a node wanting less than an equal share gets what it wants,
//! and the rest is split among the others. While its share stands, it
//! renews quietly instead, with one transaction of plain commands that
//! extends its lease and checks nothing moved (a tenth of the script's
//! cost to Redis). The node sets its resource's capacity to the grant, so
//! requests are admitted by the local [`Resource`] at its usual nanosecond
//! cost: Redis sees one renewal per node per refresh, whatever the request
//! rate.
//!
//! # What a node wants
//!
//! Sampled from the resource eight times a refresh, over the last half
//! refresh: the peak of its usage; if it refused requests, the load it was
//! offered by Little's law (what it held times the requests offered over
//! those admitted); the floor set with [`FleetBuilder::floor`] when idle;
//! never more than the budget. While no node's want is capped (every want
//! fits the budget), a want that fell is not reported: the node keeps its
//! slots in the ledger (its own capacity follows what it wants), and
//! renews without the script, since no node waits for those slots and a
//! peak usage moves at nearly every renewal under real traffic. Once
//! some want no longer fits, the node reports its want as it
//! is (at its next renewal): just before it, a node that wants less than
//! its grant lowers its capacity to what it wants, so the slots it no
//! longer uses go back to the ledger with that very renewal.
//!
//! # What it promises
//!
//! * The grants recorded in Redis sum to at most the capacity: a grant
//!   grows only into what the others' grants leave free, and never falls
//!   below what its node may still hold (a node that must shrink admits up
//!   to its new share at once and gives back the slots one renewal later,
//!   once they are free). The one exception is a resize down, while the
//!   nodes still hold more than the new capacity: the ledger then records
//!   what they hold, and no node grows until they fit.
//! * With more busy nodes than slots, the slots an equal share leaves over
//!   go one each to nodes in turns that move every lease, so every node
//!   gets one; a slot changing hands idles for about two renewals (one to
//!   give it back, one to take it).
//! * A node never admits more than its grant: that is its resource's
//!   bound. While it joins, and after a join that failed, it admits only
//!   its floor (0 unless set).
//! * A node stops using a grant `lease − lease / 10` after it *sent* the
//!   renewal that brought it, before the ledger frees it (the server's
//!   clock at the script plus the lease), and falls to its floor: by
//!   default its safe share, the capacity over the nodes it last saw, so a
//!   fleet that loses Redis all at once keeps serving within the budget
//!   (see [`FleetBuilder::floor`] for what that costs, and `floor(0)` for
//!   a hard limit). The deadline is checked by the resource's own acquires
//!   ([`CapacityLease::set_until`](crate::CapacityLease::set_until)), not only by the renewal task: a
//!   node stopped (`SIGSTOP`, a VM pause) past its lease admits no more
//!   than its floor when it resumes.
//! * A node that leaves, or is dropped, admits only its floor at once and
//!   keeps renewing what it still holds until those permits are back;
//!   then it gives its grant back. A node that dies frees its grant within
//!   lease + refresh.
//! * A ledger that may be stale learns for a lease (Doorman's learning
//!   mode): it grants each node only what it reports holding, so grants
//!   the ledger lost are never handed out twice. It knows it may be stale
//!   when it is missing (Redis restarted empty, a flush, an eviction, a
//!   budget never seen: a budget's very first lease is a learning one), when
//!   no call came for three refreshes while it holds leases (a restore from
//!   a snapshot, a replica promoted late, Redis stopped), when its clock
//!   went back or jumped (or Redis answered a node's call later than a
//!   refresh, 500 ms and a tenth of the lease: it cannot tell the two
//!   apart), and when a node's record is not the one the node was last
//!   answered with (writes lost). A call that reaches Redis after the lease
//!   it renews ran out (it waited out a partition) changes nothing.
//! * One process per name: a second process joining under a name whose
//!   lease is live is refused (a process restarted under its name waits,
//!   within its join, for the old lease to run out, and for a learning
//!   lease to end if the ledger learns meanwhile). A budget's settings
//!   (capacity, lease, refresh) are checked at every join; every key
//!   expires two leases after the last call, so a budget nobody renews
//!   disappears and a join with new settings starts afresh.
//!
//! These hold while no node stalls past its lease *between* an acquire
//! and the request reaching the guarded service, clocks run at rates
//! within a tenth of each other, no process but the nodes writes the
//! budget's keys, and Redis keeps what it acknowledged or loses it in a
//! way the ledger can see (the design notes in `ledger.rs` say which failovers
//! break that).
//!
//! # Examples
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use sidejob::{fleet::Fleet, Resource};
//!
//! // 500 queries at once across every node in front of one database.
//! let database = Arc::new(Resource::new(1));
//! let fleet = Fleet::builder("redis://127.0.0.1:6379", "orders-db")
//!     .capacity(500)
//!     .join(&database)
//!     .await?;
//! let _permit = database.try_acquire()?; // local, as ever
//! println!("this node may hold {} of 500", fleet.grant());
//! fleet.leave().await; // the grant goes back at once
//! # Ok(()) }
//! ```

mod builder;
mod demand;
mod error;
mod ledger;
mod meter;
mod quiet;
mod renewal;
mod stats;

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub use builder::FleetBuilder;
pub use error::FleetError;
pub use meter::FleetMeter;
pub use stats::FleetStats;

use ledger::{Ledger, Mode};
use renewal::Shared;

use crate::Resource;

/// A node's membership of a fleet's budget: its grant, renewed in the
/// background. Made by [`FleetBuilder::join`].
///
/// Dropping it, or [`leave`](Fleet::leave), lowers the resource's capacity
/// to the floor set (0 by default) at once; the renewal task keeps
/// renewing what the node still holds until the permits above it are
/// released, then gives the grant back. A `Fleet` dropped as its runtime
/// shuts down (at the end of `main`) loses its task with the runtime: its
/// grant then runs out with its lease; `leave().await` before the runtime
/// ends gives it back at once.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), sidejob::fleet::FleetError> {
/// let resource = std::sync::Arc::new(sidejob::Resource::new(1));
/// let fleet = sidejob::fleet::Fleet::builder("redis://127.0.0.1:6379", "api")
///     .capacity(64)
///     .join(&resource)
///     .await?;
/// assert_eq!(fleet.grant(), resource.capacity());
/// # Ok(()) }
/// ```
#[must_use = "dropping a Fleet stops renewing its grant"]
#[derive(Debug)]
pub struct Fleet {
    shared: Arc<Shared>,
    ledger: Ledger,
    /// The renewal task; taken by `leave`, which waits for it to drain.
    renewals: Option<tokio::task::JoinHandle<()>>,
}

impl Fleet {
    /// Starts configuring a node of the budget `budget` kept in the Redis
    /// at `redis_url`.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = sidejob::fleet::Fleet::builder("redis://127.0.0.1:6379", "api");
    /// # let _ = builder;
    /// ```
    pub fn builder(redis_url: &str, budget: &str) -> FleetBuilder {
        FleetBuilder::new(redis_url, budget)
    }

    async fn join(
        settings: FleetBuilder,
        capacity: usize,
        resource: Arc<Resource>,
    ) -> Result<Fleet, FleetError> {
        // The capacity's one owner from now on: refused on an adaptive
        // resource (its limit sets it) or one another fleet holds.
        let owner = resource
            .lease_capacity()
            .map_err(|error| FleetError::invalid("resource", error.reason().to_owned()))?;
        let node = settings.node.clone().unwrap_or_else(default_node);
        let (lease, refresh) = (settings.lease, settings.refresh);
        // Everything a join does, reconnects included, within this.
        let deadline = tokio::time::Instant::now() + lease + refresh * 2;
        let idle_floor = settings.floor.unwrap_or(0);
        // Until a grant comes, the node wants what its resource was built
        // with, and admits only its idle floor: a join that fails leaves
        // it there, closed rather than open.
        let wants = resource.capacity().max(idle_floor).min(capacity);
        let _ = owner.set(idle_floor); // checked: at most the capacity
        let shared = Arc::new(Shared::new(
            settings.budget.clone(),
            owner,
            capacity,
            settings.floor,
            (lease, refresh),
            wants,
        ));
        let connecting = Ledger::connect(
            (&settings.url, settings.tls_root.as_deref()),
            &settings.budget,
            &node,
            (lease, refresh),
        );
        let ledger = match tokio::time::timeout_at(deadline, connecting).await {
            Ok(connected) => connected?,
            Err(_) => return Err(FleetError::timed_out("connecting")),
        };
        let mut failed = None;
        // Whether a call of this join may have registered the node: one
        // answered (the ledger records a node it answers, granted or not),
        // one that failed on the way or one the deadline cut off (either
        // may have run in Redis all the same). A call refused naming a
        // setting registered nothing.
        let mut registered = false;
        let granted = tokio::time::timeout_at(deadline, async {
            loop {
                let before = registered;
                registered = true;
                match renewal::call(&shared, &ledger, Mode::Join, capacity, wants).await {
                    // Past a budget's first lease (or a learning one), a
                    // node gets its share; a full budget gives way within
                    // two refreshes; with more nodes than slots, a node
                    // whose turn has not come joins with none.
                    Ok(answer) if answer.target > 0 || (!answer.learning && answer.share == 0) => {
                        return Ok(());
                    }
                    Ok(_) => {}
                    // A name another process holds may be a process that
                    // stopped: it is free once its lease has run out.
                    Err(
                        error @ FleetError::Setting {
                            setting: "node", ..
                        },
                    ) => {
                        registered = before;
                        failed = Some(error);
                    }
                    Err(error @ FleetError::Setting { .. }) => {
                        registered = before;
                        return Err(error);
                    }
                    Err(error) => {
                        failed.get_or_insert(error);
                    }
                }
                tokio::time::sleep(refresh).await;
            }
        })
        .await;
        let error = match granted {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error),
            Err(_) => Some(failed.take().unwrap_or(FleetError::NoGrant)),
        };
        if let Some(error) = error {
            shared.stop();
            // A call of this join may have registered the name (one whose
            // answer came too late, or one in a learning lease): given
            // back before the error is, within a refresh, so a process
            // that exits on it does not leave its name held for a lease,
            // for the process made again in its place to wait out. (A
            // name another process holds is not this node's to free: the
            // script refuses that leave.)
            if registered {
                let leave = async { ledger.session().await.leave().await };
                let _ = tokio::time::timeout(refresh, leave).await;
            }
            return Err(error);
        }
        let renewals = tokio::spawn(renewal::run(Arc::clone(&shared), ledger.clone()));
        crate::events::info_event!(
            target: "sidejob::fleet",
            budget = %settings.budget,
            node = %node,
            grant = shared.grant.load(std::sync::atomic::Ordering::Relaxed),
            "joined the budget",
        );
        Ok(Fleet {
            shared,
            ledger,
            renewals: Some(renewals),
        })
    }

    /// The slots this node may hold now (its resource's capacity).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(fleet: &sidejob::fleet::Fleet) {
    /// println!("grant: {}", fleet.grant());
    /// # }
    /// ```
    pub fn grant(&self) -> usize {
        self.shared.grant.load(Ordering::Relaxed)
    }

    /// The node's figures (see [`FleetStats`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(fleet: &sidejob::fleet::Fleet) {
    /// let stats = fleet.stats();
    /// assert!(stats.renewals >= 1);
    /// # }
    /// ```
    pub fn stats(&self) -> FleetStats {
        self.shared.stats()
    }

    /// The node's figures for a metrics exporter: register the returned
    /// handle with a [`metrics::Reporter`](crate::metrics::Reporter) or a
    /// [`prometheus::Collector`](crate::prometheus::Collector) (features
    /// `metrics`, `prometheus`). See [`FleetMeter`] for the names.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(fleet: &sidejob::fleet::Fleet) {
    /// use sidejob::Metered;
    /// let meter = fleet.meter();
    /// let names: Vec<_> = meter.snapshot().figures.iter().map(|f| f.name).collect();
    /// assert!(names.contains(&"grant"));
    /// # }
    /// ```
    pub fn meter(&self) -> Arc<FleetMeter> {
        Arc::new(FleetMeter::new(Arc::clone(&self.shared)))
    }

    /// Calls `follow` with every new grant, on the renewal task, after the
    /// resource's capacity changed: for another face to follow the grant
    /// through its own resize (an `ObjectPool`'s `max_size`, a
    /// `Supervisor`'s capacity). It is called once at once with the grant
    /// now, and no change in between is missed: the grant cannot change
    /// while it is registered. It runs while the grant is held still, so
    /// it must not call `on_grant` itself. A panic in it is caught.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(fleet: &sidejob::fleet::Fleet, supervisor: std::sync::Arc<sidejob::Supervisor>) {
    /// fleet.on_grant(move |grant| {
    ///     let _ = supervisor.set_capacity(grant);
    /// });
    /// # }
    /// ```
    pub fn on_grant(&self, follow: impl Fn(usize) + Send + Sync + 'static) {
        self.shared.follow(Box::new(follow));
    }

    /// Changes the budget's capacity for the whole fleet: each node follows
    /// at its next renewal, within one refresh.
    ///
    /// # Errors
    ///
    /// A [`FleetError::Setting`] naming `capacity` above 2²⁴ − 1;
    /// [`FleetError::Redis`] if Redis cannot be reached, or does not answer
    /// within 500 ms, a reconnect included (a stopped, killed or
    /// partitioned Redis): the capacity may or may not have changed then,
    /// and calling again is safe.
    ///
    /// # Cancel safety
    ///
    /// The script runs whole or not at all; dropped before its answer, the
    /// capacity may or may not have changed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(fleet: &sidejob::fleet::Fleet) -> Result<(), sidejob::fleet::FleetError> {
    /// fleet.set_capacity(400).await?; // the database was resized
    /// # Ok(()) }
    /// ```
    pub async fn set_capacity(&self, capacity: usize) -> Result<(), FleetError> {
        crate::admission::check_capacity(capacity)
            .map_err(|_| FleetError::invalid("capacity", "must be at most 2^24 - 1"))?;
        let wants = self.shared.state().wants;
        let resize = renewal::call(&self.shared, &self.ledger, Mode::Resize, capacity, wants);
        // One bound over the whole call, a reconnect and the wait for a
        // renewal in flight included.
        match tokio::time::timeout(ledger::RESPONSE_TIMEOUT, resize).await {
            Ok(answer) => answer.map(|_| ()),
            Err(_) => Err(FleetError::timed_out("resizing")),
        }
    }

    /// Leaves the budget: lowers the resource's capacity to the floor set
    /// with [`FleetBuilder::floor`] (0 by default) at once, keeps renewing
    /// what the node still holds until the permits above that floor are
    /// released (however long that takes: the ledger never hands out a
    /// slot still in use), then gives the grant back, so the others' grants
    /// can grow at their next renewal.
    ///
    /// # Cancel safety
    ///
    /// The capacity falls at once; dropped before it completes, the drain
    /// goes on in the background, as after dropping the `Fleet`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(fleet: sidejob::fleet::Fleet) {
    /// fleet.leave().await;
    /// # }
    /// ```
    pub async fn leave(mut self) {
        self.shared.stop();
        if let Some(renewals) = self.renewals.take() {
            let _ = renewals.await;
        }
    }
}

impl Drop for Fleet {
    /// Lowers the resource's capacity to the floor set (0 by default) at
    /// once; the renewal task drains in the background as in
    /// [`leave`](Fleet::leave), then gives the grant back.
    fn drop(&mut self) {
        self.shared.stop();
    }
}

/// A node's default name: the host name, the process id and a random
/// suffix.
fn default_node() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "node".to_owned());
    let suffix = RandomState::new().hash_one(Instant::now()) & 0xffff_ffff;
    format!("{host}-{}-{suffix:08x}", std::process::id())
}
