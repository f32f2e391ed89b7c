//! The errors every face shares: [`Overload`] and [`BuildError`].

use std::borrow::Cow;
use std::fmt;

/// Every shard was full: the request was refused instead of queued.
///
/// This is the fail-fast answer of an overload guard. It carries no data, costs
/// nothing to create, and tells the caller to shed the work (answer "busy",
/// retry later, or degrade).
///
/// # Examples
///
/// ```
/// use sidejob::{Overload, Resource};
///
/// let gate = Resource::new(0); // a closed gate
/// assert_eq!(gate.try_acquire().unwrap_err(), Overload);
/// assert_eq!(Overload.to_string(), "overload: every shard is at its limit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Overload;

impl fmt::Display for Overload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overload: every shard is at its limit")
    }
}

impl std::error::Error for Overload {}

/// A builder was given a setting it cannot honour.
///
/// The error names the setting (as the builder method is called) and says why
/// the value was refused, so the message tells the user what to change.
///
/// # Examples
///
/// ```
/// use sidejob::Resource;
///
/// let err = Resource::builder().capacity(8).shards(0).build().unwrap_err();
/// assert_eq!(err.setting(), "shards");
/// assert_eq!(err.to_string(), "invalid setting `shards`: must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    setting: &'static str,
    reason: Cow<'static, str>,
}

impl BuildError {
    pub(crate) fn new(setting: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        BuildError {
            setting,
            reason: reason.into(),
        }
    }

    /// The name of the refused setting, as the builder method that sets it.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().shards(4).build().unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn setting(&self) -> &'static str {
        self.setting
    }

    /// Why the setting was refused.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().shards(4).build().unwrap_err();
    /// assert_eq!(err.reason(), "must be set");
    /// ```
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid setting `{}`: {}", self.setting, self.reason)
    }
}

impl std::error::Error for BuildError {}
