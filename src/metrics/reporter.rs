//! [`Reporter`]: a thread that publishes registered faces' snapshots
//! through the `metrics` facade.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::BuildError;
use crate::metered::{FigureValue, Metered, Snapshot, Watched};

/// Publishes the figures of the faces registered with it through the
/// [`metrics`](https://docs.rs/metrics) facade, every `interval`, from a
/// thread of its own: counters with `absolute`, gauges with `set`, each
/// named `sidejob_<face>_<figure>` (counters end in `_total`) with a `name`
/// label, each described once. No `metrics` call is made on any fast path:
/// the reporter reads `stats()` and `rates()`.
///
/// Faces are held weakly: a face is reported while the application keeps
/// its `Arc`, and forgotten once it is dropped. Dropping the reporter stops
/// its thread.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let resource = Arc::new(sidejob::Resource::builder().capacity(64).name("api").build()?);
/// let reporter = sidejob::metrics::Reporter::new(Duration::from_secs(10))?;
/// reporter.register(&resource);
/// reporter.report(); // also runs every 10 s on its thread
/// // With a recorder installed, this published e.g.
/// // sidejob_resource_usage{name="api"} and sidejob_resource_accepted_total{name="api"}.
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
#[derive(Debug)]
pub struct Reporter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    faces: Watched,
    /// Metric names described to the recorder so far.
    described: Mutex<HashSet<String>>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Reporter {
    /// A reporter publishing every `interval` on a thread named
    /// `sidejob-metrics`.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `interval` when it is zero, or the thread
    /// could not start.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::metrics::Reporter::new(std::time::Duration::ZERO).unwrap_err();
    /// assert_eq!(err.setting(), "interval");
    /// ```
    pub fn new(interval: Duration) -> Result<Reporter, BuildError> {
        if interval.is_zero() {
            return Err(BuildError::new("interval", "must be above zero"));
        }
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("sidejob-metrics".to_owned())
            .spawn({
                let shared = Arc::clone(&shared);
                move || shared.run(interval)
            })
            .map_err(|error| {
                BuildError::new(
                    "interval",
                    format!("could not start the reporter thread: {error}"),
                )
            })?;
        Ok(Reporter {
            shared,
            thread: Some(thread),
        })
    }

    /// Reports `face` from now on, for as long as it lives (it is held
    /// weakly). A publish holds it for the moment it reads it: should the
    /// last other `Arc` be dropped just then, the face is dropped when the
    /// publish is done, on the publish's thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let reporter = sidejob::metrics::Reporter::new(std::time::Duration::from_secs(5))?;
    /// let jobs = Arc::new(sidejob::TaskSupervisor::new(100));
    /// reporter.register(&jobs);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn register<T: Metered>(&self, face: &Arc<T>) {
        self.shared.faces.add(face);
    }

    /// Publishes every registered face's figures now, on the calling
    /// thread (to the recorder it sees: the global one, or a local one in
    /// `metrics::with_local_recorder`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let reporter = sidejob::metrics::Reporter::new(std::time::Duration::from_secs(5))?;
    /// reporter.register(&Arc::new(sidejob::Resource::new(1)));
    /// reporter.report(); // the resource was dropped: nothing to report
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn report(&self) {
        self.shared.report();
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        *self
            .shared
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Shared {
    /// The thread: reports every `interval` until stopped.
    fn run(&self, interval: Duration) {
        loop {
            let stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            let (stop, _) = self
                .wake
                .wait_timeout_while(stop, interval, |stop| !*stop)
                .unwrap_or_else(PoisonError::into_inner);
            if *stop {
                return;
            }
            drop(stop);
            self.report();
        }
    }

    fn report(&self) {
        for snapshot in self.faces.snapshots() {
            self.publish(&snapshot);
        }
    }

    fn publish(&self, snapshot: &Snapshot) {
        let mut described = self
            .described
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for figure in &snapshot.figures {
            let name = snapshot.metric_name(figure);
            let mut labels = vec![("name", snapshot.name.clone())];
            if let Some((key, value)) = figure.label {
                labels.push((key, value.to_owned()));
            }
            let first = described.insert(name.clone());
            match figure.value {
                FigureValue::Counter(value) => {
                    if first {
                        ::metrics::describe_counter!(name.clone(), figure.help);
                    }
                    ::metrics::counter!(name, &labels).absolute(value);
                }
                FigureValue::Gauge(value) => {
                    if first {
                        ::metrics::describe_gauge!(name.clone(), figure.help);
                    }
                    ::metrics::gauge!(name, &labels).set(value);
                }
            }
        }
    }
}
