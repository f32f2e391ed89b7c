//! [`Snapshot`]: a face's figures at one moment, named for export.

use crate::latency::LatencyStats;
use crate::rates::RateStats;

/// A face's figures at one moment, from [`Metered::snapshot`](super::Metered::snapshot).
///
/// # Examples
///
/// ```
/// use sidejob::Metered;
/// let snapshot = sidejob::Resource::new(4).snapshot();
/// let names: Vec<String> = snapshot.figures.iter().map(|f| snapshot.metric_name(f)).collect();
/// assert!(names.contains(&"sidejob_resource_accepted_total".to_owned()));
/// assert!(names.contains(&"sidejob_resource_in_rate".to_owned()));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Which face: `resource`, `worker_pool`, `supervisor`, `object_pool`
    /// (both object pools), `task_supervisor`.
    pub face: &'static str,
    /// The face's name, exported as the `name` label.
    pub name: String,
    /// The figures.
    pub figures: Vec<Figure>,
}

/// One figure of a [`Snapshot`].
///
/// # Examples
///
/// ```
/// use sidejob::{FigureValue, Metered};
/// let snapshot = sidejob::Resource::new(4).snapshot();
/// let capacity = snapshot.figures.iter().find(|f| f.name == "capacity").unwrap();
/// assert_eq!(capacity.value, FigureValue::Gauge(4.0));
/// assert!(!capacity.help.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Figure {
    /// The figure's own name, e.g. `accepted`, `usage`, `in_rate`.
    pub name: &'static str,
    /// One line saying what it counts, for the exporters' descriptions.
    pub help: &'static str,
    /// Its value.
    pub value: FigureValue,
    /// A label beside `name` that tells this series from the figure's
    /// others, e.g. `("priority", "sheddable")` on a resource's `rejected`.
    pub label: Option<(&'static str, &'static str)>,
}

/// A figure's value: a count that only grows, or a level.
///
/// # Examples
///
/// ```
/// use sidejob::FigureValue;
/// assert_ne!(FigureValue::Counter(1), FigureValue::Gauge(1.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum FigureValue {
    /// A count since the face was made, exported as an absolute counter.
    Counter(u64),
    /// A level now (usage, capacity, a rate, a latency in seconds).
    Gauge(f64),
}

impl Snapshot {
    /// An empty snapshot of face `face` named `name`.
    pub(crate) fn new(face: &'static str, name: &str) -> Self {
        Snapshot {
            face,
            name: name.to_owned(),
            figures: Vec::new(),
        }
    }

    /// The exported name of `figure`: `sidejob_<face>_<figure>`, with
    /// `_total` after a counter's.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::Metered;
    /// let snapshot = sidejob::Resource::new(1).snapshot();
    /// let rejected = snapshot.figures.iter().find(|f| f.name == "rejected").unwrap();
    /// assert_eq!(snapshot.metric_name(rejected), "sidejob_resource_rejected_total");
    /// ```
    pub fn metric_name(&self, figure: &Figure) -> String {
        match figure.value {
            FigureValue::Counter(_) => format!("sidejob_{}_{}_total", self.face, figure.name),
            FigureValue::Gauge(_) => format!("sidejob_{}_{}", self.face, figure.name),
        }
    }

    /// The exported name of a figure without the `_total` a counter's
    /// carries: what a Prometheus client library, which appends it itself,
    /// registers.
    #[cfg(feature = "prometheus")]
    pub(crate) fn family_name(&self, figure: &Figure) -> String {
        format!("sidejob_{}_{}", self.face, figure.name)
    }

    pub(crate) fn counter(mut self, name: &'static str, help: &'static str, value: u64) -> Self {
        self.figures.push(Figure {
            name,
            help,
            value: FigureValue::Counter(value),
            label: None,
        });
        self
    }

    /// A counter series of `name` told apart by `label`.
    pub(crate) fn labelled_counter(
        mut self,
        name: &'static str,
        help: &'static str,
        label: (&'static str, &'static str),
        value: u64,
    ) -> Self {
        self.figures.push(Figure {
            name,
            help,
            value: FigureValue::Counter(value),
            label: Some(label),
        });
        self
    }

    pub(crate) fn gauge(mut self, name: &'static str, help: &'static str, value: f64) -> Self {
        self.figures.push(Figure {
            name,
            help,
            value: FigureValue::Gauge(value),
            label: None,
        });
        self
    }

    /// The rates every face reports.
    pub(crate) fn rates(self, rates: &RateStats) -> Self {
        let window = &rates.last_60s;
        self.gauge(
            "in_rate",
            "admissions per second, over the last whole second",
            rates.in_rate,
        )
        .gauge(
            "out_rate",
            "completions per second, over the last whole second",
            rates.out_rate,
        )
        .gauge(
            "rejected_rate",
            "refusals per second, over the last whole second",
            rates.rejected_rate,
        )
        .gauge(
            "in_rate_avg_60s",
            "admissions per second, averaged over the last 60 s",
            window.avg_in_rate,
        )
        .gauge(
            "in_rate_max_60s",
            "the most admissions in one second of the last 60 s",
            window.max_in_rate,
        )
        .gauge(
            "out_rate_avg_60s",
            "completions per second, averaged over the last 60 s",
            window.avg_out_rate,
        )
        .gauge(
            "out_rate_max_60s",
            "the most completions in one second of the last 60 s",
            window.max_out_rate,
        )
        .gauge(
            "rejected_60s",
            "refusals in the last 60 s",
            window.rejected as f64,
        )
        .gauge(
            "peak_usage_60s",
            "the highest usage sampled in the last 60 s",
            window.peak_usage as f64,
        )
    }

    /// A latency histogram's p50, p99 and max, in seconds, as gauges named
    /// `<prefix>_p50_seconds` and so on (the names are spelled out by the
    /// caller, since figure names are static).
    pub(crate) fn latency(
        self,
        names: [&'static str; 3],
        help: &'static str,
        latency: &LatencyStats,
    ) -> Self {
        let [p50, p99, max] = names;
        self.gauge(p50, help, latency.p50.as_secs_f64())
            .gauge(p99, help, latency.p99.as_secs_f64())
            .gauge(max, help, latency.max.as_secs_f64())
    }
}
