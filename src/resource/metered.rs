//! What a [`Resource`] shows a metrics system ([`Metered`]).

use crate::metered::{Metered, Snapshot};

use super::Resource;

impl Metered for Resource {
    fn snapshot(&self) -> Snapshot {
        let stats = self.stats();
        Snapshot::new("resource", self.name())
            .counter("accepted", "permits granted", stats.accepted)
            .counter("rejected", "acquires refused with Overload", stats.rejected)
            .gauge("usage", "permits held now", stats.usage as f64)
            .gauge(
                "capacity",
                "the most permits held at once",
                stats.capacity as f64,
            )
            .rates(&self.rates())
    }
}
