//! [`Demand`]: what a node wants from the budget, from the counts its
//! resource already keeps.

use crate::Resource;

/// How many of the latest samples the demand looks at: half a refresh of
/// the renewal task's eight samples a refresh, so a node whose demand
/// changed in the first half of a refresh reports the change at its next
/// renewal, and a short window's noise does not make a small demand seem
/// smaller than it is.
const RECENT: usize = 4;

/// A node's demand: its latest samples of its resource's counts.
///
/// The renewal task samples the resource's usage and its admitted and
/// refused counts eight times a refresh. At a renewal, over the last half
/// refresh (the last four samples and now), with `used` the peak
/// usage, the node wants:
///
/// * if no acquire was refused: `used`, what it uses;
/// * if some were: the load it was offered, by Little's law: what it held
///   (the larger of `used` and its grant) times the requests it was
///   offered over those it admitted, rounded up, and at least one more
///   than its grant. A request refused is one more request of the same
///   kind, so a node refusing as many as it admits wants twice what it
///   holds; one that admitted nothing wants the budget. A client that
///   retries a refusal at once counts each try, so such a node claims more
///   than it needs; the fair share caps what it gets, and its next
///   renewal, unrefused, claims what it used;
///
/// never less than its floor, never more than the budget. An idle node
/// wants its floor.
#[derive(Debug)]
pub(super) struct Demand {
    /// The latest samples, oldest at `next`.
    recent: [Counts; RECENT],
    next: usize,
}

/// One sample of a resource's counts.
#[derive(Clone, Copy, Debug)]
struct Counts {
    usage: usize,
    accepted: u64,
    rejected: u64,
}

impl Counts {
    fn of(resource: &Resource) -> Counts {
        let stats = resource.stats();
        Counts {
            usage: stats.usage,
            accepted: stats.accepted,
            rejected: stats.rejected,
        }
    }
}

impl Demand {
    /// Demand counted from now.
    pub(super) fn new(resource: &Resource) -> Demand {
        Demand {
            recent: [Counts::of(resource); RECENT],
            next: 0,
        }
    }

    /// Samples the counts.
    pub(super) fn sample(&mut self, resource: &Resource) {
        self.recent[self.next] = Counts::of(resource);
        self.next = (self.next + 1) % RECENT;
    }

    /// What the node wants now, holding `grant`.
    pub(super) fn want(
        &self,
        resource: &Resource,
        grant: usize,
        floor: usize,
        budget: usize,
    ) -> usize {
        let now = Counts::of(resource);
        let oldest = self.recent[self.next];
        let accepted = now.accepted.saturating_sub(oldest.accepted);
        let rejected = now.rejected.saturating_sub(oldest.rejected);
        let used = self
            .recent
            .iter()
            .map(|c| c.usage)
            .fold(now.usage, usize::max);
        let want = if rejected == 0 {
            used
        } else {
            offered(used.max(grant), accepted, rejected, budget).max(grant + 1)
        };
        want.max(floor).min(budget)
    }
}

/// The concurrency a node holding `held` was offered, having admitted
/// `accepted` requests and refused `rejected`: `held × (accepted +
/// rejected) / accepted`, rounded up; `budget` if it admitted none.
fn offered(held: usize, accepted: u64, rejected: u64, budget: usize) -> usize {
    if accepted == 0 {
        return budget;
    }
    let offered = u128::from(accepted) + u128::from(rejected);
    let wanted = (held as u128 * offered).div_ceil(u128::from(accepted));
    usize::try_from(wanted).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::offered;

    #[test]
    fn the_offered_load_scales_what_was_held_by_offered_over_admitted() {
        assert_eq!(offered(4, 100, 0, 64), 4);
        assert_eq!(offered(4, 100, 100, 64), 8, "refusing as many as admitted");
        assert_eq!(offered(4, 400, 2000, 64), 24);
        assert_eq!(offered(3, 3, 1, 64), 4, "rounded up");
        assert_eq!(offered(0, 0, 5, 64), 64, "nothing admitted: the budget");
        assert_eq!(
            offered(1 << 20, u64::MAX, u64::MAX, 64),
            1 << 21,
            "no overflow"
        );
    }
}
