//! [`Collector`]: the registered faces' snapshots, encoded at each scrape.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector as PrometheusCollector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::metered::{Figure, FigureValue, Metered, Snapshot, Watched};

/// A [`prometheus_client::collector::Collector`] that reads the faces
/// registered with it at scrape time: each figure is a metric family named
/// `sidejob_<face>_<figure>` (counters end in `_total` in the text), one
/// sample per face, labelled with its `name`. The names are those the
/// `metrics` feature's reporter publishes.
///
/// Clones share the faces: register the collector with a `Registry` (which
/// takes it by value) and keep a clone to add faces later. Faces are held
/// weakly, as by the reporter.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use prometheus_client::{encoding::text::encode, registry::Registry};
///
/// let resource = Arc::new(sidejob::Resource::builder().capacity(8).name("api").build()?);
/// let collector = sidejob::prometheus::Collector::new();
/// collector.register(&resource);
/// let mut registry = Registry::default();
/// registry.register_collector(Box::new(collector.clone()));
///
/// let permit = resource.try_acquire()?;
/// let mut text = String::new();
/// encode(&mut text, &registry)?;
/// assert!(text.contains("sidejob_resource_usage{name=\"api\"} 1"), "{text}");
/// assert!(text.contains("sidejob_resource_accepted_total{name=\"api\"} 1"), "{text}");
/// # drop(permit);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
#[derive(Debug, Clone, Default)]
pub struct Collector {
    faces: Arc<Watched>,
}

impl Collector {
    /// A collector with no faces yet.
    ///
    /// # Examples
    ///
    /// ```
    /// let collector = sidejob::prometheus::Collector::new();
    /// # drop(collector);
    /// ```
    pub fn new() -> Self {
        Collector::default()
    }

    /// Collects `face` from now on, for as long as it lives (it is held
    /// weakly). A scrape holds it for the moment it reads it: should the
    /// last other `Arc` be dropped just then, the face is dropped when the
    /// scrape is done, on the scrape's thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let collector = sidejob::prometheus::Collector::new();
    /// collector.register(&Arc::new(sidejob::TaskSupervisor::new(10)));
    /// ```
    pub fn register<T: Metered>(&self, face: &Arc<T>) {
        self.faces.add(face);
    }
}

impl PrometheusCollector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let snapshots = self.faces.snapshots();
        // One family per metric name, holding every face's sample of it.
        let mut families: BTreeMap<String, Vec<(&Snapshot, &Figure)>> = BTreeMap::new();
        for snapshot in &snapshots {
            for figure in &snapshot.figures {
                families
                    .entry(snapshot.family_name(figure))
                    .or_default()
                    .push((snapshot, figure));
            }
        }
        for (name, samples) in &families {
            let (_, first) = samples[0];
            let metric_type = match first.value {
                FigureValue::Counter(_) => MetricType::Counter,
                FigureValue::Gauge(_) => MetricType::Gauge,
            };
            let mut family = encoder.encode_descriptor(name, first.help, None, metric_type)?;
            for (snapshot, figure) in samples {
                let mut labels = vec![("name", snapshot.name.as_str())];
                if let Some(label) = figure.label {
                    labels.push(label);
                }
                let metric = family.encode_family(&labels)?;
                match figure.value {
                    FigureValue::Counter(value) => ConstCounter::new(value).encode(metric)?,
                    FigureValue::Gauge(value) => ConstGauge::new(value).encode(metric)?,
                }
            }
        }
        Ok(())
    }
}
