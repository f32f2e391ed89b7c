//! More busy nodes than slots (#37, defect 1): the fair share's equal
//! part is 0 for every node, and the slots left over must not idle. They
//! go one each to nodes in turns that move every lease, so every node gets
//! a turn, the ledger never grants more than the budget, and a node
//! joining a full, oversubscribed budget joins (with no slot until its
//! turn) instead of taking every other node's slot away.

use std::time::{Duration, Instant};

use super::{hold_the_budget, ledger_total, Busy};
use crate::support::redis_server::{RedisServer, LEASE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_busy_nodes_on_three_slots_take_turns_and_leave_no_slot_idle() {
    let server = RedisServer::start();
    let mut busy = Busy::new();
    for name in ["a", "b", "c", "d"] {
        // The fourth join finds every slot taken and no equal share: it
        // joins all the same.
        busy.join(&server, "turns", 3, name, 3).await;
    }
    let mut had_a_turn = [false; 4];
    let mut full = 0;
    let mut samples = 0;
    let began = Instant::now();
    while began.elapsed() < LEASE * 3 {
        hold_the_budget(&server, &busy, "turns", 3, Duration::from_millis(50)).await;
        let grants = busy.grants();
        for (turn, grant) in had_a_turn.iter_mut().zip(&grants) {
            *turn |= *grant > 0;
        }
        samples += 1;
        if ledger_total(&server, "turns") == 3 {
            full += 1;
        }
    }
    assert_eq!(had_a_turn, [true; 4], "a node never had a turn");
    // Between turns a slot is free for a renewal or two; most of the time
    // every slot is granted.
    assert!(
        full * 2 > samples,
        "the ledger granted every slot at {full} of {samples} samples"
    );
    busy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_node_on_two_slots_does_not_take_both() {
    let server = RedisServer::start();
    let mut busy = Busy::new();
    busy.join(&server, "two", 2, "a", 2).await;
    busy.join(&server, "two", 2, "b", 2).await;
    busy.join(&server, "two", 2, "c", 2).await;
    let began = Instant::now();
    let mut both_idle = 0;
    while began.elapsed() < LEASE * 2 {
        hold_the_budget(&server, &busy, "two", 2, Duration::from_millis(50)).await;
        if busy.grants().iter().sum::<usize>() == 0 {
            both_idle += 1;
        }
    }
    assert!(
        both_idle <= 2,
        "every node had no slot at {both_idle} samples"
    );
    busy.stop();
}
