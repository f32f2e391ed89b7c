//! A node process stopped (`SIGSTOP`) past its lease admits nothing on its
//! stale grant when it resumes (#30): runs `examples/fleet --paused-node`,
//! where of two busy nodes one is stopped until the other holds the whole
//! budget, then resumed with its requests arriving at once; the downstream
//! process must never serve more than the capacity of the requests the
//! nodes admitted at most a second before they reached it (a request the
//! node admitted on its valid lease just before the stop and sent once
//! resumed is counted apart: no lease bounds a stall between an acquire and
//! the send; one such run served 18 in all). Without the resource's
//! own deadline check (`CapacityLease::set_until`) the resumed node's
//! threads admit on the old grant before its renewal task runs, and the
//! downstream serves 17 to 24 at once against a budget of 16.
#![cfg(feature = "redis")]

use crate::support;

use support::examples::run_example;

#[test]
fn a_node_stopped_past_its_lease_admits_nothing_on_it_when_resumed() {
    run_example(
        "fleet",
        &["--paused-node"],
        &[
            "n0 stopped (SIGSTOP)",
            "n1 holds the whole budget",
            "n0 resumed (SIGCONT)",
            "every check passed",
        ],
    );
}
