//! A node's calls of the script one at a time (#37, found by the
//! adversarial review of the fix): concurrent `set_capacity` calls, or one
//! racing the node's renewal, run and are applied in the order they are
//! numbered, so a healthy budget never takes them for lost writes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::Resource;

use super::learning;
use crate::support::fleet_load::Load;
use crate::support::redis_server::{free_port, join, Options, RedisServer, LEASE, REFRESH};

/// A server that takes `DEBUG SLEEP`, to be slow for a moment.
fn debug_server() -> RedisServer {
    RedisServer::start_with(
        free_port(),
        Options {
            args: vec!["--enable-debug-command".into(), "yes".into()],
            ..Options::default()
        },
    )
}

fn expiry_of(server: &RedisServer, budget: &str, node: &str) -> Option<i64> {
    redis::cmd("ZSCORE")
        .arg(format!("{{sidejob:fleet:{budget}}}:expiry"))
        .arg(node)
        .query(&mut server.connection())
        .unwrap()
}

/// Two `set_capacity` calls of one healthy node at once: each is sent
/// once the other was answered and applied (one call at a time per node),
/// so neither finds a record it was not answered with, and the budget
/// does not learn (found by the adversarial review: it did, when both
/// carried the same last answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_resizes_at_once_do_not_start_a_learning_lease() {
    let server = RedisServer::start();
    let resource = Arc::new(Resource::new(10));
    let fleet = join(&server, "resize-race", 10, "a", &resource).await;
    // Past the budget's first (learning) lease.
    tokio::time::sleep(LEASE + REFRESH).await;
    assert!(!learning(&server, "resize-race"), "still learning at start");
    let (x, y) = tokio::join!(fleet.set_capacity(10), fleet.set_capacity(10));
    x.unwrap();
    y.unwrap();
    let learnt = learning(&server, "resize-race");
    println!(
        "after two concurrent set_capacity(10) on a healthy budget: learning = {learnt}, stats = {:?}",
        fleet.stats()
    );
    assert!(
        !learnt,
        "a healthy budget started a learning lease from two concurrent set_capacity calls"
    );
    fleet.leave().await;
}

/// A resize sent while the node's renewal waits in a slow Redis (`DEBUG
/// SLEEP`, well within a refresh): the resize waits for the renewal's
/// answer, then runs; the budget does not learn, and the node follows the
/// raised capacity at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_racing_a_renewal_is_followed_without_a_learning_lease() {
    let server = debug_server();
    let budget = "resize-renewal";
    let resource = Arc::new(Resource::new(20));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let fleet = join(&server, budget, 10, "a", &resource).await;
    let load = Load::start(&resource, 24, &in_flight, &most);
    tokio::time::sleep(LEASE + REFRESH * 2).await;
    assert!(!learning(&server, budget), "still learning at start");
    assert_eq!(fleet.grant(), 10);
    // Wait for a renewal of `a` (its expiry changes), then make Redis slow
    // (DEBUG SLEEP 0.15 s) just before the next one, and resize while it
    // is queued.
    let first = expiry_of(&server, budget, "a");
    while expiry_of(&server, budget, "a") == first {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let renewed = Instant::now();
    tokio::time::sleep(REFRESH - Duration::from_millis(60)).await;
    let port = server.port;
    let sleeper = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg("0.15")
            .query(&mut c)
            .unwrap();
    });
    // The renewal goes out at ~REFRESH after the last, queued behind the sleep.
    while renewed.elapsed() < REFRESH + Duration::from_millis(40) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let resized = Instant::now();
    fleet.set_capacity(20).await.unwrap();
    let took = resized.elapsed();
    sleeper.join().unwrap();
    let learnt = learning(&server, budget);
    // How long until the node follows the raise to 20?
    let raised = Instant::now();
    while fleet.grant() < 20 && raised.elapsed() < LEASE * 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let followed = raised.elapsed();
    println!(
        "set_capacity(20) took {took:?}; learning after it: {learnt}; the node reached grant {} after {:?} (refresh {REFRESH:?}, lease {LEASE:?})",
        fleet.grant(),
        raised.elapsed()
    );
    load.stop();
    fleet.leave().await;
    assert!(
        !learnt,
        "a resize racing a renewal started a learning lease"
    );
    assert!(most.load(Ordering::SeqCst) <= 20);
    // Within a couple of renewals, not a learning lease.
    assert!(
        followed < REFRESH * 4,
        "the raise was followed after {followed:?}"
    );
}
