//! What a [`Supervisor`] shows a metrics system ([`Metered`]).

use crate::metered::{Metered, Snapshot};

use super::Supervisor;

impl Metered for Supervisor {
    fn snapshot(&self) -> Snapshot {
        let stats = self.stats();
        Snapshot::new("supervisor", self.name())
            .counter("spawned", "children started", stats.spawned)
            .counter("finished", "children ended, however", stats.finished)
            .counter("panicked", "children that panicked", stats.panicked)
            .counter("rejected", "spawns refused with Overload", stats.rejected)
            .counter("closed", "spawns refused after shutdown", stats.closed)
            .counter(
                "spawn_failed",
                "spawns whose thread the OS refused",
                stats.spawn_failed,
            )
            .gauge("live", "children alive now", stats.live as f64)
            .gauge(
                "capacity",
                "the most children alive at once",
                stats.capacity as f64,
            )
            .rates(&self.rates())
    }
}
