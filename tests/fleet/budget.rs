//! A fleet's budget leased from a real `redis-server` (#30): nodes get
//! shares by demand, the ledger never grants more than the capacity and
//! the nodes never hold more at once, a node that leaves or dies gives its
//! share back, an empty restart regrants only what nodes hold, and bad
//! settings are errors naming them. Each node is a `Resource` in this
//! process with its own `Fleet`; the sleeps are leases and refreshes
//! passing.
#![cfg(feature = "redis")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support;
use support::fleet_load::Load;
use support::redis_server::{free_port, join, RedisServer, LEASE, REFRESH};

use sidejob::fleet::{Fleet, FleetError};
use sidejob::{FigureValue, Metered, Resource};

fn ledger_total(server: &RedisServer, budget: &str) -> u64 {
    server.grants(budget).iter().map(|(_, grant)| grant).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_nodes_split_the_budget_and_never_hold_more_than_it() {
    let server = RedisServer::start();
    let (a, b) = (Arc::new(Resource::new(10)), Arc::new(Resource::new(10)));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let fleet_a = join(&server, "split", 10, "a", &a).await;
    assert_eq!(
        fleet_a.grant(),
        10,
        "a lone node gets the budget: {:?}",
        fleet_a.stats()
    );
    let snapshot = fleet_a.meter().snapshot();
    let figure = |name: &str| {
        snapshot
            .figures
            .iter()
            .find(|figure| figure.name == name)
            .unwrap_or_else(|| panic!("no figure {name}"))
            .value
    };
    assert_eq!(figure("grant"), FigureValue::Gauge(10.0));
    assert!(matches!(figure("lease_left_seconds"), FigureValue::Gauge(left) if left > 0.0));
    assert!(matches!(figure("renewals"), FigureValue::Counter(n) if n >= 1));
    let grant = snapshot.figures.iter().find(|f| f.name == "grant").unwrap();
    assert_eq!(snapshot.metric_name(grant), "sidejob_fleet_grant");
    let load_a = Load::start(&a, 12, &in_flight, &most);
    let fleet_b = join(&server, "split", 10, "b", &b).await;
    let load_b = Load::start(&b, 12, &in_flight, &most);
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(3) {
        assert!(ledger_total(&server, "split") <= 10);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (grant_a, grant_b) = (fleet_a.grant(), fleet_b.grant());
    assert!(
        (3..=7).contains(&grant_a) && (3..=7).contains(&grant_b),
        "a {grant_a}, b {grant_b}"
    );
    assert_eq!(fleet_b.stats().nodes, 2);

    // B leaves: A gets the whole budget within a few refreshes.
    fleet_b.leave().await;
    load_b.stop();
    tokio::time::sleep(REFRESH * 4).await;
    assert_eq!(fleet_a.grant(), 10, "{:?}", fleet_a.stats());
    load_a.stop();
    assert!(
        most.load(Ordering::SeqCst) <= 10,
        "{} held at once",
        most.load(Ordering::SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_stops_renewing_gives_its_share_back_within_lease_and_refresh() {
    let server = RedisServer::start();
    let (a, b) = (Arc::new(Resource::new(10)), Arc::new(Resource::new(10)));
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let fleet_a = join(&server, "dies", 10, "a", &a).await;
    let load_a = Load::start(&a, 12, &in_flight, &most);
    let fleet_b = join(&server, "dies", 10, "b", &b).await;
    let load_b = Load::start(&b, 12, &in_flight, &most);
    tokio::time::sleep(REFRESH * 6).await;
    assert!(fleet_a.grant() < 10);
    drop(fleet_b); // stops renewing: its lease runs out in Redis
    let dropped = Instant::now();
    while fleet_a.grant() < 10 {
        assert!(
            dropped.elapsed() < LEASE + REFRESH * 4,
            "{:?}",
            fleet_a.stats()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    load_a.stop();
    load_b.stop();
    assert!(most.load(Ordering::SeqCst) <= 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_restart_regrants_only_what_nodes_hold_for_a_lease() {
    let mut server = RedisServer::start();
    let (a, b) = (Arc::new(Resource::new(10)), Arc::new(Resource::new(10)));
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let fleet_a = join(&server, "restart", 10, "a", &a).await;
    let load_a = Load::start(&a, 12, &in_flight, &most);
    let fleet_b = join(&server, "restart", 10, "b", &b).await;
    let load_b = Load::start(&b, 12, &in_flight, &most);
    tokio::time::sleep(REFRESH * 6).await;
    server.restart_empty();
    let restarted = Instant::now();
    while restarted.elapsed() < LEASE + REFRESH * 4 {
        assert!(ledger_total(&server, "restart") <= 10);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (grant_a, grant_b) = (fleet_a.grant(), fleet_b.grant());
    assert!(
        grant_a + grant_b <= 10 && grant_a > 0 && grant_b > 0,
        "a {grant_a}, b {grant_b}"
    );
    load_a.stop();
    load_b.stop();
    assert!(most.load(Ordering::SeqCst) <= 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_and_unreachable_redis_are_errors() {
    let server = RedisServer::start();
    let resource = Arc::new(Resource::new(4));
    let _first = join(&server, "mismatch", 10, "a", &resource).await;
    let other = Arc::new(Resource::new(4));
    let err = Fleet::builder(&server.url(), "mismatch")
        .capacity(20)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&other)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("capacity"), "{err}");
    assert!(err.to_string().contains("has 10"), "{err}");

    let err = Fleet::builder("not a url", "x")
        .capacity(4)
        .join(&other)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("redis_url"), "{err}");
    let refresh = Fleet::builder(&server.url(), "x")
        .capacity(4)
        .lease(Duration::from_secs(3))
        .refresh(Duration::from_secs(1))
        .join(&other)
        .await
        .unwrap_err();
    assert_eq!(refresh.setting(), Some("refresh"));
    assert_eq!(
        Fleet::builder(&server.url(), "x")
            .join(&other)
            .await
            .unwrap_err()
            .setting(),
        Some("capacity")
    );

    let adaptive = Arc::new(
        Resource::builder()
            .capacity(4)
            .adaptive(sidejob::adaptive::Adaptive::vegas())
            .build()
            .unwrap(),
    );
    let err = Fleet::builder(&server.url(), "x")
        .capacity(4)
        .join(&adaptive)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("resource"), "{err}");

    // One owner of a capacity: a resource a fleet holds joins no other,
    // and its user's resizes are refused until the node leaves.
    let joined = Arc::new(Resource::new(4));
    let first = Fleet::builder(&server.url(), "owned")
        .capacity(4)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&joined)
        .await
        .unwrap();
    let err = Fleet::builder(&server.url(), "another")
        .capacity(4)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&joined)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("resource"), "{err}");
    assert!(server.grants("another").is_empty());
    assert_eq!(joined.set_capacity(1).unwrap_err().setting(), "capacity");
    assert_eq!(joined.capacity(), first.grant());
    // A meter (kept by an exporter for the process's life) must not keep
    // the capacity from its user (found by the adversarial review).
    let meter = first.meter();
    first.leave().await;
    joined
        .set_capacity(1)
        .expect("the user's again once the node left");
    assert_eq!(joined.capacity(), 1);
    let again = Fleet::builder(&server.url(), "again")
        .capacity(4)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&joined)
        .await
        .expect("a resource that left joins again");
    drop(meter);
    again.leave().await;

    let nobody = format!("redis://127.0.0.1:{}/", free_port());
    let err = Fleet::builder(&nobody, "x")
        .capacity(4)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&other)
        .await;
    assert!(
        matches!(err, Err(FleetError::Redis(_) | FleetError::NoGrant)),
        "{err:?}"
    );
}
