//! The `metrics` feature (#20): a test recorder sees every face's figures
//! under `sidejob_<face>_<figure>` with its `name` label (and a resource's
//! refusals with a `priority` label, #28) and the values of its stats; each
//! name is described; a dropped face is no longer reported; the reporter's
//! own thread publishes on its interval.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use sidejob::metrics::Reporter;
use sidejob::{Metered, Resource, Supervisor, TaskSupervisor};

/// `(metric name, name label, priority label or "")` to value, as the
/// recorder saw them, and the described names.
type Seen = (HashMap<(String, String, String), DebugValue>, Vec<String>);

fn report_into(reporter: &Reporter) -> Seen {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || reporter.report());
    let mut values = HashMap::new();
    let mut described = Vec::new();
    for (key, _unit, description, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<_> = key
            .labels()
            .map(|label| (label.key().to_owned(), label.value().to_owned()))
            .collect();
        assert_eq!(labels[0].0, "name");
        let priority = match &labels[1..] {
            [] => String::new(),
            [(key, priority)] if key == "priority" => priority.clone(),
            other => panic!("{key:?}: labels {other:?}"),
        };
        if description.is_some() {
            described.push(key.name().to_owned());
        }
        values.insert(
            (key.name().to_owned(), labels[0].1.clone(), priority),
            value,
        );
    }
    (values, described)
}

fn counter(seen: &Seen, name: &str, label: &str) -> u64 {
    counter_of(seen, name, label, "")
}

fn counter_of(seen: &Seen, name: &str, label: &str, priority: &str) -> u64 {
    match seen
        .0
        .get(&(name.to_owned(), label.to_owned(), priority.to_owned()))
    {
        Some(DebugValue::Counter(value)) => *value,
        other => panic!("{name}{{name={label}}}: {other:?}"),
    }
}

fn gauge(seen: &Seen, name: &str, label: &str) -> f64 {
    match seen
        .0
        .get(&(name.to_owned(), label.to_owned(), String::new()))
    {
        Some(DebugValue::Gauge(value)) => value.0,
        other => panic!("{name}{{name={label}}}: {other:?}"),
    }
}

#[test]
fn every_figure_of_every_face_reaches_the_recorder_with_its_name() {
    let reporter = Reporter::new(Duration::from_secs(3600)).unwrap();
    let api = Arc::new(Resource::builder().capacity(2).name("api").build().unwrap());
    let jobs = Arc::new(
        TaskSupervisor::builder()
            .capacity(3)
            .name("jobs")
            .build()
            .unwrap(),
    );
    let children = Arc::new(
        Supervisor::builder()
            .capacity(1)
            .name("kids")
            .build()
            .unwrap(),
    );
    reporter.register(&api);
    reporter.register(&jobs);
    reporter.register(&children);

    let held = api.try_acquire().unwrap();
    drop(api.try_acquire().unwrap()); // granted and released
    let second = api.try_acquire().unwrap();
    assert!(api.try_acquire().is_err()); // full: refused
    drop(second);
    let task = jobs.try_track(|_| async {}).unwrap();

    let seen = report_into(&reporter);
    assert_eq!(counter(&seen, "sidejob_resource_accepted_total", "api"), 3);
    for (priority, refused) in [("critical", 0), ("normal", 1), ("sheddable", 0)] {
        assert_eq!(
            counter_of(&seen, "sidejob_resource_rejected_total", "api", priority),
            refused
        );
    }
    assert_eq!(gauge(&seen, "sidejob_resource_usage", "api"), 1.0);
    assert_eq!(gauge(&seen, "sidejob_resource_capacity", "api"), 2.0);
    assert_eq!(gauge(&seen, "sidejob_resource_in_rate", "api"), 0.0);
    assert_eq!(
        counter(&seen, "sidejob_task_supervisor_spawned_total", "jobs"),
        1
    );
    assert_eq!(gauge(&seen, "sidejob_task_supervisor_live", "jobs"), 1.0);
    assert_eq!(gauge(&seen, "sidejob_supervisor_capacity", "kids"), 1.0);

    // Every figure of every snapshot was published, under its metric name.
    for face in [&*api as &dyn Metered, &*jobs, &*children] {
        let snapshot = face.snapshot();
        for figure in &snapshot.figures {
            let priority = figure.label.map_or("", |(_, value)| value).to_owned();
            let key = (
                snapshot.metric_name(figure),
                snapshot.name.clone(),
                priority,
            );
            assert!(seen.0.contains_key(&key), "missing {key:?}");
            assert!(seen.1.contains(&key.0), "{} not described", key.0);
        }
    }
    drop((held, task));
}

#[test]
fn a_dropped_face_is_no_longer_reported() {
    let reporter = Reporter::new(Duration::from_secs(3600)).unwrap();
    let kept = Arc::new(
        Resource::builder()
            .capacity(1)
            .name("kept")
            .build()
            .unwrap(),
    );
    let gone = Arc::new(
        Resource::builder()
            .capacity(1)
            .name("gone")
            .build()
            .unwrap(),
    );
    reporter.register(&kept);
    reporter.register(&gone);
    drop(gone);
    let seen = report_into(&reporter);
    assert!(
        seen.0.keys().all(|(_, label, _)| label == "kept"),
        "{:?}",
        seen.0.keys()
    );
    assert_eq!(gauge(&seen, "sidejob_resource_capacity", "kept"), 1.0);
}

#[test]
fn the_reporter_thread_publishes_on_its_interval() {
    // The global recorder, which the reporter's own thread sees.
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only global recorder in this test binary");
    let reporter = Reporter::new(Duration::from_millis(20)).unwrap();
    let resource = Arc::new(
        Resource::builder()
            .capacity(5)
            .name("ticking")
            .build()
            .unwrap(),
    );
    reporter.register(&resource);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let published = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .any(|(key, _, _, value)| {
                key.key().name() == "sidejob_resource_capacity"
                    && value == DebugValue::Gauge(5.0.into())
            });
        if published {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reporter thread never published"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(reporter); // stops and joins its thread
}
