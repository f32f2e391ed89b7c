//! `tracing` events (feature `tracing`): one per state change of a face,
//! each with the face's name, caught by a subscriber installed as the
//! process's default: a worker's panic, its rebuild and a shard down for
//! good; a supervisor child's panic; a pool's refills backing off and
//! recovering; an adaptive limit's move and a panicking rule; a fleet's
//! join, grant and leave against a real redis-server. Nothing per request:
//! a thousand admissions tell nothing.
#![cfg(feature = "tracing")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::adaptive::{Adaptive, Window};
use sidejob::{Manager, ObjectPool, Resource, Supervisor, Worker, WorkerPool};
use tracing::Level;

use crate::support;
use support::backend::{Backend, Connect};
use support::panics::quiet_deliberate_panics;
use support::tracing_capture::{events_where, install, Captured};

/// Waits up to 10 s for an event on `field = value` that says `message`.
fn wait_for(field: &str, value: &str, message: &str) -> Captured {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = events_where(field, value)
            .into_iter()
            .find(|event| event.message.contains(message));
        if let Some(event) = found {
            return event;
        }
        assert!(
            Instant::now() < deadline,
            "no `{message}` for {field}={value}: {:?}",
            events_where(field, value)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Answers its request, or panics on 0.
struct Fragile;

impl Worker for Fragile {
    type Request = u32;
    type Reply = u32;
    fn handle_call(&mut self, request: u32) -> u32 {
        if request == 0 {
            panic!("deliberate");
        }
        request
    }
}

#[test]
fn a_worker_panic_its_rebuild_and_a_shard_down_for_good_are_told() {
    install();
    quiet_deliberate_panics();
    let pool = WorkerPool::builder()
        .name("traced-workers")
        .shards(1)
        .capacity(4)
        .max_restarts(1)
        .build(|_shard| Fragile)
        .unwrap();
    assert!(pool.call(0).is_err());
    let panicked = wait_for("worker", "traced-workers-0", "a worker panicked");
    assert_eq!(panicked.level, Level::WARN);
    assert_eq!(panicked.target, "sidejob::worker_pool");
    assert_eq!(panicked.field("shard"), Some("0"));
    let rebuilt = wait_for("worker", "traced-workers-0", "was rebuilt");
    assert_eq!(rebuilt.level, Level::INFO);
    assert_eq!(pool.call(7).unwrap(), 7);
    assert!(pool.call(0).is_err()); // the second restart is past the intensity
    let down = wait_for("worker", "traced-workers-0", "down for good");
    assert_eq!(down.level, Level::ERROR);
    // Admissions and answers tell nothing.
    let told = events_where("worker", "traced-workers-0").len();
    assert_eq!(told, 4, "{:?}", events_where("worker", "traced-workers-0"));
}

#[test]
fn a_supervisor_childs_panic_is_told_with_its_message() {
    install();
    quiet_deliberate_panics();
    let supervisor = Supervisor::builder()
        .capacity(2)
        .name("traced-children")
        .build()
        .unwrap();
    let child = supervisor.spawn(|_| panic!("deliberate child")).unwrap();
    let id = child.id();
    assert!(child.join().is_err());
    let event = wait_for("supervisor", "traced-children", "a child panicked");
    assert_eq!(
        (event.level, event.target.as_str()),
        (Level::WARN, "sidejob::supervisor")
    );
    assert_eq!(event.field("child"), Some(id.to_string().as_str()));
    assert_eq!(event.field("panic"), Some("deliberate child"));
    for _ in 0..100 {
        supervisor.spawn(|_| ()).unwrap().join().unwrap();
    }
    assert_eq!(events_where("supervisor", "traced-children").len(), 1);
}

#[test]
fn a_pools_refills_backing_off_and_recovering_are_told_once_each() {
    install();
    let backend = Backend::down();
    let pool = ObjectPool::builder(Connect {
        backend: Arc::clone(&backend),
        delay: Duration::ZERO,
    })
    .name("traced-pool")
    .max_size(2)
    .min_idle(1)
    .build()
    .unwrap();
    let failed = wait_for("pool", "traced-pool", "a refill failed");
    assert_eq!(
        (failed.level, failed.target.as_str()),
        (Level::WARN, "sidejob::object_pool")
    );
    // Retried a few times meanwhile: still one event.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.stats().failed_refills < 3 {
        assert!(Instant::now() < deadline, "{:?}", pool.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
    backend.recover();
    let recovered = wait_for("pool", "traced-pool", "refills recovered");
    assert_eq!(recovered.level, Level::INFO);
    assert_eq!(events_where("pool", "traced-pool").len(), 2);
}

/// The backend goes down and stays down while the application takes and
/// gives back its one idle object: refills fail, and rounds between them
/// have nothing to make. One outage is one event, and no "recovered" is
/// told while no refill has made anything (the review found them
/// alternating at every take, and the backoff starting over each time).
#[test]
fn an_outage_is_told_once_however_takes_and_returns_come_and_go() {
    install();
    let backend = Backend::down();
    backend.recover();
    let pool = ObjectPool::builder(Connect {
        backend: Arc::clone(&backend),
        delay: Duration::ZERO,
    })
    .name("traced-outage")
    .max_size(4)
    .min_idle(1)
    .build()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.status().idle < 1 {
        assert!(Instant::now() < deadline, "min_idle never made");
        std::thread::sleep(Duration::from_millis(5));
    }
    backend.up.store(false, std::sync::atomic::Ordering::SeqCst);
    let before = backend.attempts();
    for _ in 0..20 {
        let held = pool.try_take().unwrap(); // below min_idle: a refill fails
        std::thread::sleep(Duration::from_millis(30));
        drop(held); // at min_idle again: the next round has nothing to make
        std::thread::sleep(Duration::from_millis(30));
    }
    let told = |message: &str| {
        events_where("pool", "traced-outage")
            .iter()
            .filter(|event| event.message.contains(message))
            .count()
    };
    assert_eq!(
        (told("a refill failed"), told("refills recovered")),
        (1, 0),
        "{:?}",
        events_where("pool", "traced-outage")
    );
    // The delay kept doubling (to a second), where starting over at every
    // quiet round retried the dead backend about twice per cycle.
    let attempts = backend.attempts() - before;
    assert!(attempts < 20, "{attempts} creations tried in 1.2 s");
}

/// A check slower than every take's deadline: one event for the spell,
/// not one per take.
#[test]
fn checks_past_their_deadline_are_told_once_a_spell() {
    install();
    let (release, hold) = std::sync::mpsc::channel();
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pool = ObjectPool::builder(SlowCheck {
        hang: Arc::clone(&hang),
        release: std::sync::Mutex::new(hold),
    })
    .name("traced-slow-checks")
    .max_size(8)
    .check_on_take(true)
    .build()
    .unwrap();
    let made: Vec<_> = (0..8).map(|_| pool.try_take().unwrap()).collect();
    drop(made); // eight idle objects
    hang.store(true, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..8 {
        assert!(pool.take(Duration::from_millis(5)).is_err());
    }
    let late = events_where("pool", "traced-slow-checks")
        .iter()
        .filter(|event| event.message.contains("past the take's deadline"))
        .count();
    assert_eq!(late, 1, "{:?}", events_where("pool", "traced-slow-checks"));
    drop(release);
}

/// Objects whose check, once `hang` is set, does not answer until the
/// test lets it.
struct SlowCheck {
    hang: Arc<std::sync::atomic::AtomicBool>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl Manager for SlowCheck {
    type Object = u8;
    type Error = std::io::Error;
    fn create(&self) -> std::io::Result<u8> {
        Ok(0)
    }
    fn check(&self, _object: &mut u8) -> bool {
        if self.hang.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = self.release.lock().unwrap().recv();
        }
        true
    }
}

#[test]
fn a_takes_check_past_its_deadline_is_told() {
    install();
    let (release, hold) = std::sync::mpsc::channel();
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pool = ObjectPool::builder(SlowCheck {
        hang: Arc::clone(&hang),
        release: std::sync::Mutex::new(hold),
    })
    .name("traced-check")
    .max_size(1)
    .check_on_take(true)
    .build()
    .unwrap();
    drop(pool.try_take().unwrap()); // made, and idle now
    hang.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(pool.take(Duration::from_millis(50)).is_err());
    let event = wait_for("pool", "traced-check", "past the take's deadline");
    assert_eq!(
        (event.level, event.target.as_str()),
        (Level::WARN, "sidejob::object_pool")
    );
    drop(release);
}

#[test]
fn an_adaptive_limits_move_and_a_panicking_rule_are_told() {
    install();
    const WINDOW: Duration = Duration::from_millis(20);
    let close_window = |resource: &Resource| {
        std::thread::sleep(WINDOW * 2);
        drop(resource.try_acquire().unwrap());
    };
    let resource = Resource::builder()
        .capacity(8)
        .shards(2)
        .name("traced-limit")
        .adaptive(
            Adaptive::custom(|limit: usize, _: &Window| limit - 1)
                .window(WINDOW)
                .min_samples(1),
        )
        .build()
        .unwrap();
    close_window(&resource);
    let moved = wait_for("resource", "traced-limit", "moved");
    assert_eq!(
        (moved.level, moved.target.as_str()),
        (Level::DEBUG, "sidejob::adaptive")
    );
    assert_eq!(
        (moved.field("was"), moved.field("limit")),
        (Some("8"), Some("7"))
    );

    let panicking = Resource::builder()
        .capacity(8)
        .name("traced-rule")
        .adaptive(
            Adaptive::custom(|_: usize, _: &Window| -> usize { panic!("deliberate rule") })
                .window(WINDOW)
                .min_samples(1),
        )
        .build()
        .unwrap();
    quiet_deliberate_panics();
    close_window(&panicking);
    let panicked = wait_for("resource", "traced-rule", "panicked");
    assert_eq!(panicked.level, Level::WARN);
    assert_eq!(panicking.capacity(), 8, "the window kept the limit");
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleets_join_grant_and_leave_are_told() {
    use sidejob::fleet::Fleet;
    use support::redis_server::{RedisServer, LEASE, REFRESH};
    install();
    let server = RedisServer::start();
    let resource = Arc::new(Resource::new(1));
    let fleet = Fleet::builder(&server.url(), "traced-budget")
        .capacity(6)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&resource)
        .await
        .unwrap();
    let joined = wait_for("budget", "traced-budget", "joined");
    assert_eq!(
        (joined.level, joined.target.as_str()),
        (Level::INFO, "sidejob::fleet")
    );
    let granted = wait_for("budget", "traced-budget", "grant changed");
    assert_eq!(granted.level, Level::DEBUG);
    for _ in 0..1000 {
        drop(resource.try_acquire());
    }
    let warned = events_where("budget", "traced-budget")
        .into_iter()
        .filter(|event| event.level == Level::WARN)
        .count();
    assert_eq!(warned, 0, "{:?}", events_where("budget", "traced-budget"));
    // Redis stopped past the lease: a failed renewal, then the floor, told
    // once each however many renewals fail; then the recovery.
    server.signal("-STOP");
    let failed = wait_for("budget", "traced-budget", "a renewal failed");
    assert_eq!(failed.level, Level::WARN);
    let floor = wait_for("budget", "traced-budget", "at the floor");
    assert_eq!(floor.level, Level::WARN);
    tokio::time::sleep(REFRESH * 3).await;
    server.signal("-CONT");
    let recovered = wait_for("budget", "traced-budget", "renewals recovered");
    assert_eq!(recovered.level, Level::INFO);
    let failures = events_where("budget", "traced-budget")
        .into_iter()
        .filter(|event| event.message.contains("a renewal failed"))
        .count();
    assert_eq!(failures, 1);
    fleet.leave().await;
    let left = wait_for("budget", "traced-budget", "left");
    assert_eq!(left.level, Level::INFO);
}
