//! [`Demand`]: what a node wants from the budget, from the counts its
//! resource already keeps.

use crate::Resource;

/// A node's demand since its last renewal.
///
/// The renewal task samples the resource's usage eight times a refresh and
/// keeps the peak. At a renewal the node wants:
///
/// * if any acquire was refused since the last renewal: twice the larger of
///   its peak and its grant (at least one more than it has), since it could
///   have used more than it had;
/// * otherwise its peak: what it used;
///
/// never less than its floor, never more than the budget. An idle node
/// wants its floor.
#[derive(Debug)]
pub(super) struct Demand {
    peak: usize,
    rejected: u64,
}

impl Demand {
    /// Demand counted from now.
    pub(super) fn new(resource: &Resource) -> Demand {
        Demand {
            peak: resource.usage(),
            rejected: resource.stats().rejected,
        }
    }

    /// Samples the usage.
    pub(super) fn sample(&mut self, resource: &Resource) {
        self.peak = self.peak.max(resource.usage());
    }

    /// What the node wants now, holding `grant`; starts the next period.
    pub(super) fn want(
        &mut self,
        resource: &Resource,
        grant: usize,
        floor: usize,
        budget: usize,
    ) -> usize {
        let rejected = resource.stats().rejected;
        let refused = rejected > self.rejected;
        self.rejected = rejected;
        let used = self.peak.max(resource.usage());
        self.peak = resource.usage();
        let want = if refused {
            (used.max(grant) * 2).max(grant + 1)
        } else {
            used
        };
        want.max(floor).min(budget)
    }
}
