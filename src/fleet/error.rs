//! [`FleetError`]: why a node could not join, resize or leave a fleet.

use std::fmt;

/// Why [`FleetBuilder::join`](super::FleetBuilder::join) or a fleet's
/// operation failed.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let resource = Arc::new(sidejob::Resource::new(1));
/// let err = sidejob::fleet::Fleet::builder("redis://127.0.0.1:6379", "api")
///     .capacity(100)
///     .refresh(Duration::from_secs(5)) // not under a third of the 10 s lease
///     .join(&resource)
///     .await
///     .unwrap_err();
/// assert_eq!(err.setting(), Some("refresh"));
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum FleetError {
    /// A setting is out of range; the budget exists with another
    /// `capacity` or `lease`; or another process holds the `node`'s name
    /// in the budget.
    Setting {
        /// The setting's name.
        setting: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// Redis could not be reached (refused, a wrong password, no answer
    /// in time), or refused the script.
    Redis(redis::RedisError),
    /// No grant came within the lease.
    NoGrant,
}

impl FleetError {
    pub(super) fn invalid(setting: &'static str, reason: impl Into<String>) -> FleetError {
        FleetError::Setting {
            setting,
            reason: reason.into(),
        }
    }

    /// Redis did not answer within the call's bound, as a
    /// [`Redis`](FleetError::Redis) error of kind `TimedOut`.
    pub(super) fn timed_out(what: &str) -> FleetError {
        let error = std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("redis did not answer in time ({what})"),
        );
        FleetError::Redis(redis::RedisError::from(error))
    }

    /// The setting a [`Setting`](FleetError::Setting) error names, if it is one.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::fleet::FleetError::NoGrant;
    /// assert_eq!(err.setting(), None);
    /// ```
    pub fn setting(&self) -> Option<&'static str> {
        match self {
            FleetError::Setting { setting, .. } => Some(setting),
            _ => None,
        }
    }
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Setting { setting, reason } => {
                write!(f, "invalid setting `{setting}`: {reason}")
            }
            FleetError::Redis(error) => write!(f, "redis: {error}"),
            FleetError::NoGrant => f.write_str("no grant came within the lease"),
        }
    }
}

impl std::error::Error for FleetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FleetError::Redis(error) => Some(error),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for FleetError {
    fn from(error: redis::RedisError) -> Self {
        FleetError::Redis(error)
    }
}
