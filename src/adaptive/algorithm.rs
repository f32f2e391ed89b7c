//! [`Algorithm`]: the rule that turns a window into the next limit.

use super::Window;

/// A rule for an adaptive limit: given the limit and what the last window
/// measured, the next limit.
///
/// The controller around it enforces what every rule must: it calls
/// `update` only for a window with enough samples, clamps the answer into
/// `[min_limit, max_limit]`, refuses growth after a window with drops or
/// while the application held less than half the limit (and was refused
/// nothing), and keeps the limit if `update` panics. The built-in rules
/// are [`Aimd`](super::Aimd), [`Gradient`](super::Gradient) and
/// [`Vegas`](super::Vegas); a closure `FnMut(usize, &Window) -> usize` is
/// one too.
///
/// # Examples
///
/// ```
/// use sidejob::adaptive::{Adaptive, Algorithm, Window};
///
/// /// Halves on a drop, else adds one.
/// struct Halving;
/// impl Algorithm for Halving {
///     fn update(&mut self, limit: usize, window: &Window) -> usize {
///         if window.drops > 0 { limit / 2 } else { limit + 1 }
///     }
/// }
///
/// let resource = sidejob::Resource::builder()
///     .capacity(10)
///     .adaptive(Adaptive::custom(Halving))
///     .build()?;
/// assert_eq!(resource.adaptive_stats().unwrap().limit, 10);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
pub trait Algorithm: Send + 'static {
    /// The next limit, from the current `limit` and the `window` that just
    /// closed.
    fn update(&mut self, limit: usize, window: &Window) -> usize;
}

impl<F> Algorithm for F
where
    F: FnMut(usize, &Window) -> usize + Send + 'static,
{
    fn update(&mut self, limit: usize, window: &Window) -> usize {
        self(limit, window)
    }
}
