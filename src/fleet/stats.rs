//! [`FleetStats`]: what a node of a fleet reports.

use std::time::Duration;

/// A node's view of its fleet, from [`Fleet::stats`](super::Fleet::stats).
///
/// # Examples
///
/// ```no_run
/// # async fn demo(fleet: sidejob::fleet::Fleet) {
/// let stats = fleet.stats();
/// println!("grant {} of wants {} across {} nodes", stats.grant, stats.wants, stats.nodes);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct FleetStats {
    /// The slots this node may hold now: its resource's capacity.
    pub grant: usize,
    /// What it asked for at its last renewal: its demand, or, while no
    /// node's want is capped, the larger want it reported before (see
    /// [the fleet's docs](super#what-a-node-wants)).
    pub wants: usize,
    /// The nodes holding a lease at its last renewal, itself included.
    pub nodes: usize,
    /// Renewals that got an answer.
    pub renewals: u64,
    /// Renewals that failed (Redis unreachable, or an error).
    pub failed_renewals: u64,
    /// Time since the last renewal that got an answer.
    pub since_renewal: Duration,
    /// Whether its lease ran out and it fell to its floor.
    pub at_floor: bool,
    /// Whether the budget is learning after an empty start (grants only
    /// what nodes report holding).
    pub learning: bool,
}
