//! Feature `serde` (#20 item 4): every stats, status, configuration and
//! report type serializes, with the field names its docs give.
#![cfg(feature = "serde")]

use serde_json::{json, to_value};
use sidejob::{ObjectPool, Resource, Supervisor, TaskSupervisor, WorkerPool};

struct Noop;
impl sidejob::Worker for Noop {
    type Request = ();
    type Reply = ();
    fn handle_call(&mut self, _: ()) {}
}

struct Numbers;
impl sidejob::Manager for Numbers {
    type Object = u32;
    type Error = std::io::Error;
    fn create(&self) -> std::io::Result<u32> {
        Ok(7)
    }
}

#[test]
fn every_stats_type_serializes() {
    let resource = Resource::builder().capacity(2).shards(2).build().unwrap();
    let _permit = resource.try_acquire().unwrap();
    let value = to_value(resource.rates()).unwrap();
    assert_eq!(value["total"]["accepted"], json!(1));
    assert_eq!(value["last_60s"]["peak_usage"], json!(0));
    assert_eq!(value["in_rate"], json!(0.0));
    let value = to_value(resource.stats()).unwrap();
    assert_eq!(value["capacity"], json!(2));
    assert_eq!(value["usage"], json!(1));
    assert_eq!(value["shards"].as_array().unwrap().len(), 2);

    let adaptive = Resource::builder()
        .capacity(4)
        .adaptive(sidejob::adaptive::Adaptive::gradient())
        .build()
        .unwrap();
    let value = to_value(adaptive.adaptive_stats().unwrap()).unwrap();
    assert_eq!(value["limit"], json!(4));
    assert_eq!(value["algorithm"], json!("gradient"));
    assert_eq!(value["baseline"], json!({"secs": 0, "nanos": 0}));
    let window = sidejob::adaptive::Window::new(10, std::time::Duration::from_millis(2), 3);
    assert_eq!(to_value(window).unwrap()["max_in_flight"], json!(3));
    let rule = sidejob::adaptive::Vegas::default();
    assert_eq!(to_value(rule).unwrap()["beta"], json!(6));

    let pool = WorkerPool::builder()
        .capacity(2)
        .shards(1)
        .build(|_| Noop)
        .unwrap();
    pool.call(()).unwrap();
    let value = to_value(pool.stats()).unwrap();
    assert_eq!(value["handled"], json!(1));
    assert!(value["shards"][0]["up"].as_bool().unwrap());
    pool.shutdown();

    let supervisor = Supervisor::new(1);
    supervisor.spawn(|_| ()).unwrap().join().unwrap();
    assert_eq!(to_value(supervisor.stats()).unwrap()["finished"], json!(1));
    let report = supervisor.shutdown(std::time::Duration::ZERO);
    assert_eq!(to_value(report).unwrap()["remaining"], json!([]));

    let tasks = TaskSupervisor::new(1);
    let task = tasks.try_track(|_| async {}).unwrap();
    let value = to_value(tasks.stats()).unwrap();
    assert_eq!(value["live"], json!(1));
    assert!(to_value(task.id()).unwrap().is_u64(), "an id is its number");
    drop(task);

    let objects = ObjectPool::builder(Numbers).max_size(2).build().unwrap();
    drop(objects.try_take().unwrap());
    assert_eq!(to_value(objects.status()).unwrap()["idle"], json!(1));
    let value = to_value(objects.stats()).unwrap();
    assert_eq!(value["takes"], json!(1));
    assert!(value["wait"]["count"].is_number());
    let config = to_value(objects.config()).unwrap();
    assert_eq!(config["max_size"], json!(2));
    assert_eq!(config["create_timeout"], json!(null));
}
