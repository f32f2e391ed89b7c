//! [`Adaptive`]: how an adaptive limit is configured.

use std::fmt;
use std::time::Duration;

use super::{Aimd, Algorithm, Gradient, Vegas};
use crate::error::BuildError;

/// Configures an adaptive limit for a [`Resource`](crate::Resource): the
/// rule, the bounds and how often the limit may change. Given to
/// [`ResourceBuilder::adaptive`](crate::ResourceBuilder::adaptive), whose
/// capacity is the initial limit.
///
/// # Signals
///
/// A permit's hold time, from acquire to drop, is a latency sample.
/// [`Permit::dropped`](crate::Permit::dropped) reports a drop (the guarded
/// call failed from overload downstream); [`Permit::cancelled`](crate::Permit::cancelled)
/// a call that ended without its answer, whose hold is a censored sample
/// (or a drop, past [`drop_after`](Adaptive::drop_after));
/// [`Permit::ignore`](crate::Permit::ignore) releases without a sample. Every hold counts, however short: Netflix
/// ignores samples under 100 µs, but an in-process downstream's whole range
/// can lie there, and the drops that made Netflix's near-zero rejections
/// mislead (#176) are counted as drops here, not as samples.
///
/// While traffic is heavy, not every permit is timed: a permit is sampled
/// when its grant number on its shard is a multiple of a stride, which
/// each window sets so that a window gathers a few hundred samples (from
/// 1, every permit, to 64). Drops are always counted.
///
/// A window closes on the first sampled release, drop or refused acquire
/// past its time, so a limit under which nothing is released still moves
/// once the application asks for more.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::adaptive::Adaptive;
///
/// let resource = sidejob::Resource::builder()
///     .capacity(20) // the initial limit
///     .adaptive(
///         Adaptive::gradient()
///             .min_limit(4)
///             .max_limit(200)
///             .window(Duration::from_millis(250)),
///     )
///     .build()?;
/// assert_eq!(resource.capacity(), 20);
///
/// let err = sidejob::Resource::builder()
///     .capacity(20)
///     .adaptive(Adaptive::vegas().min_limit(10).max_limit(5))
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "max_limit");
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[must_use = "an adaptive configuration does nothing until given to a resource builder"]
pub struct Adaptive {
    pub(crate) algorithm: Box<dyn Algorithm>,
    pub(crate) name: &'static str,
    /// The built-in rule's own check of its parameters.
    pub(crate) checked: Result<(), BuildError>,
    pub(crate) min_limit: usize,
    pub(crate) max_limit: usize,
    pub(crate) window: Duration,
    pub(crate) min_samples: u64,
    pub(crate) drop_after: f64,
    pub(crate) probe_every: u64,
}

/// How often the limit may change unless [`Adaptive::window`] says.
pub const DEFAULT_WINDOW: Duration = Duration::from_millis(100);

/// Windows between probes of the baseline for the rules that read it
/// ([`Gradient`], [`Vegas`]) unless [`Adaptive::probe_every`] says.
const DEFAULT_PROBE_EVERY: u64 = 64;

impl Adaptive {
    /// Additive increase, multiplicative decrease ([`Aimd`] with its
    /// defaults).
    ///
    /// # Examples
    ///
    /// ```
    /// let adaptive = sidejob::adaptive::Adaptive::aimd();
    /// assert_eq!(adaptive.algorithm_name(), "aimd");
    /// ```
    pub fn aimd() -> Adaptive {
        Adaptive::from(Aimd::default())
    }

    /// Netflix Gradient2's rule, with its flaws fixed ([`Gradient`] with
    /// its defaults).
    ///
    /// # Examples
    ///
    /// ```
    /// let adaptive = sidejob::adaptive::Adaptive::gradient();
    /// assert_eq!(adaptive.algorithm_name(), "gradient");
    /// ```
    pub fn gradient() -> Adaptive {
        Adaptive::from(Gradient::default())
    }

    /// TCP Vegas's rule, as Netflix's default ([`Vegas`] with its
    /// defaults).
    ///
    /// # Examples
    ///
    /// ```
    /// let adaptive = sidejob::adaptive::Adaptive::vegas();
    /// assert_eq!(adaptive.algorithm_name(), "vegas");
    /// ```
    pub fn vegas() -> Adaptive {
        Adaptive::from(Vegas::default())
    }

    /// A rule of your own (see [`Algorithm`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::{Adaptive, Window};
    /// // Grows while the window saw no drop, else drops to half.
    /// let adaptive = Adaptive::custom(|limit: usize, window: &Window| {
    ///     if window.drops == 0 { limit + 1 } else { limit / 2 }
    /// });
    /// assert_eq!(adaptive.algorithm_name(), "custom");
    /// ```
    pub fn custom(algorithm: impl Algorithm) -> Adaptive {
        Adaptive::with("custom", Box::new(algorithm), Ok(()), 0)
    }

    fn with(
        name: &'static str,
        algorithm: Box<dyn Algorithm>,
        checked: Result<(), BuildError>,
        probe_every: u64,
    ) -> Adaptive {
        Adaptive {
            algorithm,
            name,
            checked,
            min_limit: 1,
            max_limit: 1000,
            window: DEFAULT_WINDOW,
            min_samples: 10,
            drop_after: 4.0,
            probe_every,
        }
    }

    /// The least the limit may fall to, at least 1. Default 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::Adaptive;
    /// let err = sidejob::Resource::builder()
    ///     .capacity(8)
    ///     .adaptive(Adaptive::aimd().min_limit(0))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "min_limit");
    /// ```
    pub fn min_limit(mut self, min_limit: usize) -> Adaptive {
        self.min_limit = min_limit;
        self
    }

    /// The most the limit may grow to, at least `min_limit`. Default 1000.
    ///
    /// # Examples
    ///
    /// ```
    /// let adaptive = sidejob::adaptive::Adaptive::aimd().max_limit(64);
    /// # let _ = adaptive;
    /// ```
    pub fn max_limit(mut self, max_limit: usize) -> Adaptive {
        self.max_limit = max_limit;
        self
    }

    /// How often the limit may change: a window closes once this long has
    /// passed since the last and it holds `min_samples` samples and drops.
    /// Above zero. Default 100 ms ([`DEFAULT_WINDOW`]): long enough to hold a
    /// few hundred samples of a busy service, short enough to settle within
    /// a second or two of a change downstream. Make it a few times the
    /// latency you guard.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use sidejob::adaptive::Adaptive;
    /// let err = sidejob::Resource::builder()
    ///     .capacity(8)
    ///     .adaptive(Adaptive::aimd().window(Duration::ZERO))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "window");
    /// ```
    pub fn window(mut self, window: Duration) -> Adaptive {
        self.window = window;
        self
    }

    /// How many samples and drops a window needs before the limit may
    /// change, at least 1; a thinner window is carried into the next.
    /// Default 10, Netflix's.
    ///
    /// # Examples
    ///
    /// ```
    /// let adaptive = sidejob::adaptive::Adaptive::vegas().min_samples(50);
    /// # let _ = adaptive;
    /// ```
    pub fn min_samples(mut self, min_samples: u64) -> Adaptive {
        self.min_samples = min_samples;
        self
    }

    /// A call cancelled after holding its permit longer than `multiple` ×
    /// the [baseline](super::AdaptiveStats::baseline) counts as a drop: its
    /// caller gave up on a downstream that did not answer (a timeout). A
    /// call cancelled sooner is a censored sample: its hold counts in the
    /// window's mean, as a lower bound of its latency. At least 1.
    /// Default 4.
    ///
    /// A call is cancelled when [`Permit::cancelled`](crate::Permit::cancelled)
    /// releases its permit, as the tower layers do for a dropped response
    /// future and for an error that is not a drop. Only sampled permits are
    /// timed (see [Signals](Adaptive#signals)).
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::Adaptive;
    /// let err = sidejob::Resource::builder()
    ///     .capacity(8)
    ///     .adaptive(Adaptive::gradient().drop_after(0.5))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "drop_after");
    /// ```
    pub fn drop_after(mut self, multiple: f64) -> Adaptive {
        self.drop_after = multiple;
        self
    }

    /// Every `windows` windows of a steady limit, two windows run at half
    /// the limit (the first drains what was admitted before) and the
    /// baseline moves toward the second's mean latency, down or up alike:
    /// half of what lies past that window's standard error, a quarter of
    /// the way at least, so the probes average out the chance in each (all
    /// the way for an early probe's mean more than an eighth below it past
    /// twice its error); then the
    /// limit goes back (after TCP BBR's `ProbeRTT`). The
    /// baseline rises only from windows the limit does not bound, so under
    /// lasting overload this is how it follows a downstream that got
    /// slower, and how it sheds the low bias noise leaves on it. The first
    /// three probes, and any after one that moved the baseline by more
    /// than a sixteenth, come every `windows / 4`: a limit started above
    /// the downstream's concurrency begins its baseline in a queue, and
    /// they find the real one within `windows` of the start. 0: never.
    /// Default 64 for [`gradient`](Adaptive::gradient) and
    /// [`vegas`](Adaptive::vegas) (two windows in 64 at half the limit:
    /// about 1.6% of the capacity, 8% in the first 48 windows; with thin,
    /// noisy windows, where probes move the baseline by more than a
    /// sixteenth more often, up to about 40% more probes: 2.2%),
    /// 0 for [`aimd`](Adaptive::aimd), which reads no baseline, and for
    /// [`custom`](Adaptive::custom) rules.
    ///
    /// # Examples
    ///
    /// ```
    /// let adaptive = sidejob::adaptive::Adaptive::gradient().probe_every(0); // never
    /// # let _ = adaptive;
    /// ```
    pub fn probe_every(mut self, windows: u64) -> Adaptive {
        self.probe_every = windows;
        self
    }

    /// The rule's name: `aimd`, `gradient`, `vegas` or `custom`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::adaptive::Adaptive::vegas().algorithm_name(), "vegas");
    /// ```
    pub fn algorithm_name(&self) -> &'static str {
        self.name
    }

    /// Checks the settings against each other and `initial`, the
    /// builder's capacity.
    pub(crate) fn check(&self, initial: usize) -> Result<(), BuildError> {
        self.checked.clone()?;
        if self.min_limit == 0 {
            return Err(BuildError::new("min_limit", "must be at least 1"));
        }
        if self.max_limit < self.min_limit {
            return Err(BuildError::new(
                "max_limit",
                format!(
                    "must be at least `min_limit` ({}), was {}",
                    self.min_limit, self.max_limit
                ),
            ));
        }
        crate::admission::check_capacity(self.max_limit)
            .map_err(|_| BuildError::new("max_limit", "must be at most 2^24 - 1"))?;
        if !(self.min_limit..=self.max_limit).contains(&initial) {
            return Err(BuildError::new(
                "capacity",
                format!(
                    "the initial limit must lie in [min_limit, max_limit] = [{}, {}], was {initial}",
                    self.min_limit, self.max_limit
                ),
            ));
        }
        if self.window.is_zero() {
            return Err(BuildError::new("window", "must be above zero"));
        }
        if self.min_samples == 0 {
            return Err(BuildError::new("min_samples", "must be at least 1"));
        }
        if !(self.drop_after >= 1.0 && self.drop_after.is_finite()) {
            return Err(BuildError::new("drop_after", "must be at least 1"));
        }
        Ok(())
    }
}

impl From<Aimd> for Adaptive {
    /// An [`Aimd`] rule with its own parameters.
    fn from(aimd: Aimd) -> Adaptive {
        // AIMD reads no baseline: nothing to re-learn.
        Adaptive::with("aimd", Box::new(aimd), aimd.check(), 0)
    }
}

impl From<Gradient> for Adaptive {
    /// A [`Gradient`] rule with its own parameters.
    fn from(gradient: Gradient) -> Adaptive {
        Adaptive::with(
            "gradient",
            Box::new(gradient),
            gradient.check(),
            DEFAULT_PROBE_EVERY,
        )
    }
}

impl From<Vegas> for Adaptive {
    /// A [`Vegas`] rule with its own parameters.
    fn from(vegas: Vegas) -> Adaptive {
        Adaptive::with("vegas", Box::new(vegas), vegas.check(), DEFAULT_PROBE_EVERY)
    }
}

impl fmt::Debug for Adaptive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Adaptive")
            .field("algorithm", &self.name)
            .field("min_limit", &self.min_limit)
            .field("max_limit", &self.max_limit)
            .field("window", &self.window)
            .field("min_samples", &self.min_samples)
            .field("drop_after", &self.drop_after)
            .field("probe_every", &self.probe_every)
            .finish()
    }
}
