//! What a [`Resource`] shows a metrics system ([`Metered`]).

use crate::metered::{Metered, Snapshot};
use crate::Priority;

use super::Resource;

impl Metered for Resource {
    fn snapshot(&self) -> Snapshot {
        let stats = self.stats();
        let rejected = |snapshot: Snapshot, priority: Priority| {
            snapshot.labelled_counter(
                "rejected",
                "acquires refused with Overload, by the priority they asked with",
                ("priority", priority.as_str()),
                stats.rejected_by_priority.get(priority),
            )
        };
        let snapshot = Snapshot::new("resource", self.name()).counter(
            "accepted",
            "permits granted",
            stats.accepted,
        );
        let snapshot = Priority::ALL
            .into_iter()
            .fold(snapshot, rejected)
            .gauge("usage", "permits held now", stats.usage as f64)
            .gauge(
                "capacity",
                "the most permits held at once",
                stats.capacity as f64,
            )
            .gauge(
                "reserve",
                "capacity no shard leases now; negative while a shrink's debt is unpaid",
                stats.reserve as f64,
            )
            .rates(&self.rates());
        match self.adaptive_stats() {
            Some(adaptive) => snapshot
                .gauge(
                    "limit",
                    "the adaptive limit now (the capacity)",
                    adaptive.limit as f64,
                )
                .gauge(
                    "baseline_latency_seconds",
                    "the adaptive limit's baseline: the latency with no queue downstream",
                    adaptive.baseline.as_secs_f64(),
                )
                .gauge(
                    "window_latency_seconds",
                    "the mean latency of the adaptive limit's last window",
                    adaptive.latency.as_secs_f64(),
                )
                .counter(
                    "drops",
                    "permits released as drops (overload downstream)",
                    adaptive.drops,
                )
                .counter(
                    "limit_increases",
                    "windows that raised the adaptive limit",
                    adaptive.increases,
                )
                .counter(
                    "limit_decreases",
                    "windows that lowered the adaptive limit",
                    adaptive.decreases,
                ),
            None => snapshot,
        }
    }
}
