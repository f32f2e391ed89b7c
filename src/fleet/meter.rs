//! [`FleetMeter`]: a node's fleet figures for a metrics exporter.

use std::sync::Arc;

use super::renewal::Shared;
use crate::metered::{Metered, Snapshot};

/// A node's fleet figures, from [`Fleet::meter`](super::Fleet::meter), as
/// `sidejob_fleet_<figure>{name="<budget>"}`: the gauges `grant`, `wants`,
/// `nodes`, `lease_left_seconds` (how long the grant stays good without a
/// renewal), `at_floor` and `learning` (1 or 0), and the counters
/// `renewals_total` and `failed_renewals_total`.
///
/// # Examples
///
/// ```no_run
/// # fn demo(fleet: &sidejob::fleet::Fleet) {
/// use sidejob::Metered;
/// let snapshot = fleet.meter().snapshot();
/// let left = snapshot.figures.iter().find(|f| f.name == "lease_left_seconds").unwrap();
/// assert_eq!(snapshot.metric_name(left), "sidejob_fleet_lease_left_seconds");
/// # }
/// ```
pub struct FleetMeter {
    shared: Arc<Shared>,
}

impl FleetMeter {
    pub(super) fn new(shared: Arc<Shared>) -> FleetMeter {
        FleetMeter { shared }
    }
}

impl std::fmt::Debug for FleetMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetMeter")
            .field("budget", &self.shared.budget_name)
            .finish()
    }
}

impl Metered for FleetMeter {
    fn snapshot(&self) -> Snapshot {
        let stats = self.shared.stats();
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        Snapshot::new("fleet", &self.shared.budget_name)
            .gauge(
                "grant",
                "the slots this node may hold now",
                stats.grant as f64,
            )
            .gauge(
                "wants",
                "what this node asked for at its last renewal",
                stats.wants as f64,
            )
            .gauge(
                "nodes",
                "the nodes holding a lease at the last renewal",
                stats.nodes as f64,
            )
            .gauge(
                "lease_left_seconds",
                "how long the grant stays good without a renewal",
                self.shared.lease_left().as_secs_f64(),
            )
            .gauge(
                "at_floor",
                "1 once the lease ran out unrenewed",
                flag(stats.at_floor),
            )
            .gauge(
                "learning",
                "1 while the budget learns after an empty start",
                flag(stats.learning),
            )
            .counter("renewals", "renewals that got an answer", stats.renewals)
            .counter(
                "failed_renewals",
                "renewals that failed: Redis unreachable, or an error",
                stats.failed_renewals,
            )
    }
}
