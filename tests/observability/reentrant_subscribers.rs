//! A subscriber may read a face's figures when it is told of the face's
//! event (a metrics or alerting layer does): the events are told after the
//! locks the figures take, so reading them never deadlocks the thread that
//! told it (the adversarial review found both below hanging for good).
#![cfg(feature = "tracing")]

use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sidejob::adaptive::{Adaptive, Window};
use sidejob::Resource;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Calls `on_event` for every event at `level` whose target starts with
/// `prefix`.
struct Reentrant<F> {
    prefix: &'static str,
    level: Level,
    on_event: F,
}

impl<F: Fn() + Send + Sync + 'static> Subscriber for Reentrant<F> {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        if metadata.target().starts_with(self.prefix) && *metadata.level() == self.level {
            (self.on_event)();
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `body` on a thread of its own and fails if it has not ended in
/// `limit` (a deadlock), or panicked.
fn ends_within(limit: Duration, body: impl FnOnce() + Send + 'static) {
    let (done, ended) = mpsc::channel();
    std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match ended.recv_timeout(limit) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the test's thread panicked"),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("deadlocked: not done in {limit:?}"),
    }
}

#[test]
fn reading_adaptive_stats_when_the_limit_moves_does_not_deadlock() {
    const WINDOW: Duration = Duration::from_millis(20);
    ends_within(Duration::from_secs(20), || {
        let cell: Arc<OnceLock<Arc<Resource>>> = Arc::new(OnceLock::new());
        let seen = Arc::clone(&cell);
        let subscriber = Reentrant {
            prefix: "sidejob::adaptive",
            level: Level::DEBUG,
            on_event: move || {
                if let Some(resource) = seen.get() {
                    let _ = resource.adaptive_stats();
                }
            },
        };
        tracing::subscriber::with_default(subscriber, || {
            let resource = Arc::new(
                Resource::builder()
                    .capacity(8)
                    .shards(1)
                    .name("reentrant-limit")
                    .adaptive(
                        Adaptive::custom(|limit: usize, _: &Window| limit - 1)
                            .window(WINDOW)
                            .min_samples(1),
                    )
                    .build()
                    .unwrap(),
            );
            cell.set(Arc::clone(&resource)).ok().unwrap();
            for _ in 0..3 {
                std::thread::sleep(WINDOW * 2);
                drop(resource.try_acquire().unwrap());
            }
            assert!(resource.capacity() < 8, "the limit moved");
        });
    });
}

#[cfg(feature = "redis")]
#[test]
fn reading_fleet_stats_when_a_renewal_fails_does_not_deadlock() {
    use crate::support::redis_server::{RedisServer, LEASE, REFRESH};
    use sidejob::fleet::{Fleet, FleetMeter};
    use sidejob::Metered;

    let server = RedisServer::start();
    let url = server.url();
    let (told, heard) = mpsc::channel::<&'static str>();
    let (done, ended) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let meter: Arc<OnceLock<Arc<FleetMeter>>> = Arc::new(OnceLock::new());
        let seen = Arc::clone(&meter);
        let on_warn = told.clone();
        let _default = tracing::subscriber::set_default(Reentrant {
            prefix: "sidejob::fleet",
            level: Level::WARN,
            on_event: move || {
                let _ = on_warn.send("warned");
                if let Some(meter) = seen.get() {
                    let _ = meter.snapshot(); // the fleet's stats
                    let _ = on_warn.send("read");
                }
            },
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let resource = Arc::new(Resource::new(1));
            let fleet = Fleet::builder(&url, "reentrant-budget")
                .capacity(6)
                .lease(LEASE)
                .refresh(REFRESH)
                .join(&resource)
                .await
                .unwrap();
            meter.set(fleet.meter()).ok().unwrap();
            let _ = told.send("joined");
            // The test stops redis-server meanwhile.
            tokio::time::sleep(LEASE * 3).await;
            fleet.leave().await;
        });
        let _ = done.send(());
    });
    assert_eq!(heard.recv_timeout(Duration::from_secs(10)), Ok("joined"));
    server.signal("-STOP");
    assert_eq!(heard.recv_timeout(Duration::from_secs(10)), Ok("warned"));
    let read = heard.recv_timeout(Duration::from_secs(5));
    server.signal("-CONT");
    assert_eq!(read, Ok("read"), "the renewal task deadlocked");
    assert!(ended.recv_timeout(Duration::from_secs(20)).is_ok());
}
