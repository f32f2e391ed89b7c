//! What a [`TaskSupervisor`] shows a metrics system ([`Metered`]).

use crate::metered::{Metered, Snapshot};

use super::TaskSupervisor;

impl Metered for TaskSupervisor {
    fn snapshot(&self) -> Snapshot {
        let stats = self.stats();
        Snapshot::new("task_supervisor", self.name())
            .counter("spawned", "tasks admitted", stats.spawned)
            .counter("finished", "tasks ended, however", stats.finished)
            .counter("panicked", "tasks whose poll panicked", stats.panicked)
            .counter(
                "cancelled",
                "tasks aborted or dropped unfinished",
                stats.cancelled,
            )
            .counter("rejected", "tasks refused with Overload", stats.rejected)
            .counter("closed", "tasks refused after close", stats.closed)
            .gauge("live", "tasks alive now", stats.live as f64)
            .gauge(
                "capacity",
                "the most tasks alive at once",
                stats.capacity as f64,
            )
            .rates(&self.rates())
    }
}
