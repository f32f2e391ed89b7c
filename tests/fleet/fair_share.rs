//! The fleet's allocator, the Lua script itself run by a real
//! `redis-server` (#30): for random capacities and wants, with every node
//! applying each answer as a busy node would (its next `holding` is what it
//! was told to admit), the ledger never grants more than the capacity;
//! once settled, a node wanting at most an equal share gets its want, no
//! node that wants starves, the shares stand still under steady wants and
//! are exactly Doorman's water-filling, before and after a resize past the
//! levels tree's width (#41).
#![cfg(feature = "redis")]

use proptest::prelude::*;

use crate::support;
use support::redis_server::RedisServer;

const SCRIPT: &str = include_str!("../../src/fleet/renew.lua");

/// A lease of eleven days: the turns of the slots left over rotate every
/// lease, so within a test they stand still.
const LEASE_MS: u64 = 1_000_000_000;

struct Answer {
    grant: u64,
    target: u64,
}

fn renew(
    connection: &mut redis::Connection,
    budget: &str,
    node: usize,
    capacity: u64,
    want: u64,
    holding: u64,
) -> Answer {
    call(connection, budget, node, (capacity, "renew"), want, holding)
}

/// One call of the script by `node`, `mode` "renew" or "resize".
fn call(
    connection: &mut redis::Connection,
    budget: &str,
    node: usize,
    (capacity, mode): (u64, &str),
    want: u64,
    holding: u64,
) -> Answer {
    let tag = format!("{{sidejob:fleet:{budget}}}");
    type Reply = (String, u64, u64, u64, u64, u64, i64, u64, String);
    let (status, grant, target, _, _, _, _, _, _): Reply = redis::Script::new(SCRIPT)
        .key(format!("{tag}:meta"))
        .key(format!("{tag}:nodes"))
        .key(format!("{tag}:expiry"))
        .key(format!("{tag}:held"))
        .key(format!("{tag}:levels"))
        .key(format!("{tag}:order"))
        .arg(format!("node-{node}"))
        .arg(format!("token-{node}"))
        .arg(capacity)
        .arg(LEASE_MS)
        .arg(LEASE_MS) // refresh: no gap between calls is long here
        .arg(want)
        .arg(holding)
        .arg(mode)
        .arg(-1)
        .arg(-1)
        .invoke(connection)
        .expect("the script runs");
    assert_eq!(status, "ok");
    Answer { grant, target }
}

/// Doorman's water-filling, exactly: the highest level `L` with
/// `sum(min(want, L)) <= capacity`; a node wanting at most `L` gets its
/// want, the others `L` or `L + 1`, the `+ 1`s taking what is left.
fn check_water_filling(wants: &[u64], capacity: u64, shares: &[u64]) -> Result<(), String> {
    let wanted: u64 = wants.iter().sum();
    if wanted <= capacity {
        return (shares == wants)
            .then_some(())
            .ok_or(format!("every want fits: {shares:?} for {wants:?}"));
    }
    let filled = |level: u64| wants.iter().map(|&w| w.min(level)).sum::<u64>();
    let level = (0..=capacity)
        .rev()
        .find(|&l| filled(l) <= capacity)
        .unwrap();
    for (&want, &share) in wants.iter().zip(shares) {
        let right = if want <= level {
            share == want
        } else {
            share == level || share == level + 1
        };
        if !right {
            return Err(format!(
                "level {level}: {shares:?} for {wants:?} of {capacity}"
            ));
        }
    }
    let total: u64 = shares.iter().sum();
    (total == capacity)
        .then_some(())
        .ok_or(format!("{total} of {capacity}: {shares:?} for {wants:?}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn fair_share_holds_the_capacity_meets_small_wants_and_settles(
        capacity in 1u64..200,
        wants in proptest::collection::vec(0u64..300, 1..24),
        grown in 1u64..4,
    ) {
        let server = RedisServer::start();
        let mut connection = server.connection();
        let budget = "prop";
        // Past the learning lease: a budget already running.
        let _: () = redis::cmd("HSET")
            .arg(format!("{{sidejob:fleet:{budget}}}:meta"))
            .arg("capacity").arg(capacity)
            .arg("lease").arg(LEASE_MS)
            .arg("refresh").arg(LEASE_MS)
            .arg("learn_until").arg(0)
            .arg("last").arg(0)
            .query(&mut connection)
            .unwrap();
        let nodes = wants.len();
        let mut holding = vec![0u64; nodes];
        let mut grants = vec![0u64; nodes];
        let mut rounds = Vec::new();
        for _ in 0..6 {
            let mut targets = vec![0u64; nodes];
            for node in 0..nodes {
                let answer = renew(&mut connection, budget, node, capacity, wants[node], holding[node]);
                prop_assert!(answer.target <= answer.grant);
                grants[node] = answer.grant;
                prop_assert!(grants.iter().sum::<u64>() <= capacity, "grants {grants:?} past {capacity}");
                targets[node] = answer.target;
                holding[node] = answer.target; // a busy node admits up to its target
            }
            rounds.push(targets);
        }
        let last = rounds.last().unwrap();
        prop_assert_eq!(&rounds[rounds.len() - 2], last, "shares still moving: {:?}", rounds);
        let equal = capacity / nodes as u64;
        for node in 0..nodes {
            if wants[node] <= equal {
                prop_assert_eq!(last[node], wants[node], "a small want unmet: {:?} of {}", last, capacity);
            }
            if wants[node] > 0 && equal > 0 {
                prop_assert!(last[node] > 0, "node {} starves: {:?}", node, last);
            }
        }
        // No slot idles: the shares take the whole budget, or every want.
        let wanted: u64 = wants.iter().sum();
        prop_assert_eq!(last.iter().sum::<u64>(), wanted.min(capacity), "{:?} of {}", last, capacity);
        check_water_filling(&wants, capacity, last).map_err(TestCaseError::fail)?;

        // Resized up, past the tree's width when `grown` is 2 or more: the
        // shares fill the new capacity the same way.
        let resized = capacity * (1 + grown);
        call(&mut connection, budget, 0, (resized, "resize"), wants[0], holding[0]);
        let mut targets = vec![0u64; nodes];
        for _ in 0..4 {
            for node in 0..nodes {
                let answer = renew(&mut connection, budget, node, resized, wants[node], holding[node]);
                grants[node] = answer.grant;
                prop_assert!(grants.iter().sum::<u64>() <= resized, "grants {grants:?} past {resized}");
                targets[node] = answer.target;
                holding[node] = answer.target;
            }
        }
        check_water_filling(&wants, resized, &targets).map_err(TestCaseError::fail)?;
    }
}
