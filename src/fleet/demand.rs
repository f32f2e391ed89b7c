//! [`Demand`]: what a node wants from the budget, from the counts its
//! resource already keeps.

use crate::Resource;

/// How many of the latest usage samples the demand looks at: half a
/// refresh of the renewal task's eight samples a refresh, so a node whose
/// demand fell just before a renewal reports the fall at that renewal.
const RECENT: usize = 4;

/// A node's demand since its last renewal.
///
/// The renewal task samples the resource's usage eight times a refresh. At
/// a renewal the node wants:
///
/// * if any acquire was refused since the last renewal: the whole budget,
///   since it could have used more than it had and cannot tell how much
///   (the fair share then gives it at most an equal share of what the
///   nodes wanting less leave);
/// * otherwise the peak of its usage over the last half refresh (the last
///   four samples and the usage now): what it uses;
///
/// never less than its floor, never more than the budget. An idle node
/// wants its floor.
#[derive(Debug)]
pub(super) struct Demand {
    recent: [usize; RECENT],
    next: usize,
    rejected: u64,
}

impl Demand {
    /// Demand counted from now.
    pub(super) fn new(resource: &Resource) -> Demand {
        Demand {
            recent: [resource.usage(); RECENT],
            next: 0,
            rejected: resource.stats().rejected,
        }
    }

    /// Samples the usage.
    pub(super) fn sample(&mut self, resource: &Resource) {
        self.recent[self.next] = resource.usage();
        self.next = (self.next + 1) % RECENT;
    }

    /// What the node wants now; starts the next period.
    pub(super) fn want(&mut self, resource: &Resource, floor: usize, budget: usize) -> usize {
        let rejected = resource.stats().rejected;
        let refused = rejected > self.rejected;
        self.rejected = rejected;
        let usage = resource.usage();
        let used = self.recent.iter().copied().fold(usage, usize::max);
        let want = if refused { budget } else { used };
        want.max(floor).min(budget)
    }
}
