//! [`Metered`]: what a face shows a metrics system, as one [`Snapshot`] of
//! named figures, read from its `stats()` and `rates()`. The exporters (the
//! `metrics` feature's [`Reporter`](crate::metrics::Reporter), the
//! `prometheus` feature's [`Collector`](crate::prometheus::Collector)) name
//! each figure `sidejob_<face>_<figure>` (counters end in `_total`) and
//! label it with the face's `name`. See `docs/operations.md` for the list.

mod snapshot;
#[cfg(any(feature = "metrics", feature = "prometheus"))]
mod watched;

pub use snapshot::{Figure, FigureValue, Snapshot};
#[cfg(any(feature = "metrics", feature = "prometheus"))]
pub(crate) use watched::Watched;

/// A face whose figures a metrics system can read: every face implements
/// it (`Resource`, `WorkerPool`, `Supervisor`, `ObjectPool`,
/// `AsyncObjectPool`, `TaskSupervisor`; the tower layers through their
/// [`resource`](crate::tower::ShedLayer::resource)).
///
/// # Examples
///
/// ```
/// use sidejob::{FigureValue, Metered, Resource};
///
/// let resource = Resource::builder().capacity(2).name("search").build()?;
/// let held = resource.try_acquire()?;
/// let snapshot = resource.snapshot();
/// assert_eq!((snapshot.face, snapshot.name.as_str()), ("resource", "search"));
/// let usage = snapshot.figures.iter().find(|figure| figure.name == "usage").unwrap();
/// assert_eq!(usage.value, FigureValue::Gauge(1.0));
/// assert_eq!(snapshot.metric_name(usage), "sidejob_resource_usage");
/// # drop(held);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Metered: Send + Sync + 'static {
    /// Every figure now: the face's counts and gauges, its rates, and its
    /// latency quantiles. Reads `stats()` and `rates()`; never touches an
    /// admission's path.
    fn snapshot(&self) -> Snapshot;
}
