//! The `prometheus` feature (#20): the collector's text, encoded by
//! prometheus-client at scrape time, parses line by line into families
//! with HELP and TYPE, and holds each face's figures with its `name` label,
//! under the same names the `metrics` reporter uses.
#![cfg(feature = "prometheus")]

use std::collections::HashMap;
use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use sidejob::prometheus::Collector;
use sidejob::{Manager, Metered, ObjectPool, Resource};

struct Conns;

impl Manager for Conns {
    type Object = u8;
    type Error = std::io::Error;

    fn create(&self) -> std::io::Result<u8> {
        Ok(0)
    }
}

/// Parses exposition text: sample name and labels to value; and the
/// declared type of each family.
fn parse(text: &str) -> (HashMap<String, f64>, HashMap<String, String>) {
    let mut samples = HashMap::new();
    let mut types = HashMap::new();
    for line in text.lines() {
        if let Some(declaration) = line.strip_prefix("# TYPE ") {
            let (family, kind) = declaration.split_once(' ').expect("# TYPE name kind");
            types.insert(family.to_owned(), kind.to_owned());
        } else if line.starts_with('#') || line.is_empty() {
            continue;
        } else {
            let (series, value) = line.rsplit_once(' ').expect("name{labels} value");
            let value: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("a number in {line:?}"));
            samples.insert(series.to_owned(), value);
        }
    }
    (samples, types)
}

#[test]
fn a_scrape_holds_every_faces_figures_under_the_reporters_names() {
    let api = Arc::new(Resource::builder().capacity(3).name("api").build().unwrap());
    let search = Arc::new(
        Resource::builder()
            .capacity(1)
            .name("search")
            .build()
            .unwrap(),
    );
    let pool = Arc::new(
        ObjectPool::builder(Conns)
            .max_size(1)
            .name("db")
            .build()
            .unwrap(),
    );
    let collector = Collector::new();
    let mut registry = Registry::default();
    registry.register_collector(Box::new(collector.clone()));
    collector.register(&api);
    collector.register(&search);
    collector.register(&pool);

    let permits = [api.try_acquire().unwrap(), api.try_acquire().unwrap()];
    let _ = search.try_acquire().unwrap();
    assert!(pool.try_take().is_ok());
    let held = pool.try_take().unwrap();
    assert!(pool.try_take().is_err());

    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    let (samples, types) = parse(&text);
    assert_eq!(
        samples[r#"sidejob_resource_usage{name="api"}"#], 2.0,
        "{text}"
    );
    assert_eq!(
        samples[r#"sidejob_resource_accepted_total{name="api"}"#],
        2.0
    );
    assert_eq!(
        samples[r#"sidejob_resource_accepted_total{name="search"}"#],
        1.0
    );
    assert_eq!(samples[r#"sidejob_resource_usage{name="search"}"#], 0.0);
    assert_eq!(samples[r#"sidejob_object_pool_in_use{name="db"}"#], 1.0);
    assert_eq!(
        samples[r#"sidejob_object_pool_takes_total{name="db"}"#],
        2.0
    );
    assert_eq!(
        samples[r#"sidejob_object_pool_rejected_total{name="db"}"#],
        1.0
    );
    assert_eq!(
        samples[r#"sidejob_resource_rejected_total{name="api",priority="normal"}"#],
        0.0
    );
    assert_eq!(types["sidejob_resource_accepted"], "counter");
    assert_eq!(types["sidejob_resource_usage"], "gauge");
    assert!(
        text.contains("# HELP sidejob_resource_usage permits held now"),
        "{text}"
    );

    // Every figure of every face is in the scrape, once per face, under
    // the name the `metrics` reporter publishes.
    for face in [&*api as &dyn Metered, &*search, &*pool] {
        let snapshot = face.snapshot();
        for figure in &snapshot.figures {
            let label = figure
                .label
                .map_or(String::new(), |(key, value)| format!(",{key}=\"{value}\""));
            let series = format!(
                "{}{{name=\"{}\"{label}}}",
                snapshot.metric_name(figure),
                snapshot.name
            );
            assert!(samples.contains_key(&series), "missing {series} in\n{text}");
        }
    }
    drop((permits, held));
}

#[test]
fn an_adaptive_resource_exports_its_limit_and_latencies() {
    let resource = Arc::new(
        Resource::builder()
            .capacity(12)
            .name("adaptive")
            .adaptive(sidejob::adaptive::Adaptive::gradient())
            .build()
            .unwrap(),
    );
    let collector = Collector::new();
    collector.register(&resource);
    let mut registry = Registry::default();
    registry.register_collector(Box::new(collector));
    resource.try_acquire().unwrap().dropped();
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    let (samples, types) = parse(&text);
    assert_eq!(samples[r#"sidejob_resource_limit{name="adaptive"}"#], 12.0);
    assert_eq!(types["sidejob_resource_limit"], "gauge");
    assert_eq!(types["sidejob_resource_baseline_latency_seconds"], "gauge");
    assert_eq!(types["sidejob_resource_window_latency_seconds"], "gauge");
    assert_eq!(types["sidejob_resource_drops"], "counter");
    // Drops count once their window closes (100 ms here, not yet).
    assert_eq!(
        samples[r#"sidejob_resource_drops_total{name="adaptive"}"#],
        0.0
    );
}
