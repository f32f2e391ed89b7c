//! Why a take failed ([`TakeError`]), shared by both pool faces (a pool
//! refused by a group, `DuplicatePool`, is the blocking face's:
//! `blocking/group.rs`).

use std::fmt;

/// Why an [`ObjectPool`](crate::ObjectPool) take failed.
///
/// `E` is the manager's [`Error`](crate::Manager::Error).
///
/// # Examples
///
/// ```
/// use sidejob::TakeError;
///
/// let err: TakeError<std::io::Error> = TakeError::QueueFull;
/// assert_eq!(err.to_string(), "too many takers are already waiting");
/// assert!(TakeError::<std::io::Error>::Overload.is_overload());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TakeError<E> {
    /// No object was idle and the pool was at `max_size`
    /// ([`try_take`](crate::ObjectPool::try_take) never waits).
    Overload,
    /// No object came free before the timeout.
    Timeout,
    /// `queue_max` takers were already waiting; this one did not join them.
    QueueFull,
    /// The pool made a new object for this taker, and the manager's
    /// [`create`](crate::Manager::create) failed. The slot was given back.
    Create(E),
    /// The pool made a new object for this taker, and the manager's
    /// [`create`](crate::Manager::create) was still running when the pool's
    /// [`create_timeout`](crate::ObjectPoolBuilder::create_timeout) ran
    /// out. The hung call keeps its slot until it returns; the object it
    /// then makes is destroyed.
    CreateTimeout,
    /// A tagged take ([`take_tagged`](crate::ObjectPool::take_tagged)) had to
    /// teach an object the tag, and the manager's
    /// [`tag`](crate::TaggedManager::tag) failed. The object was destroyed
    /// and its slot given back.
    Tag(E),
    /// The pool is closed.
    Closed,
}

impl<E> TakeError<E> {
    /// Whether the take was refused at once because the pool was full
    /// ([`Overload`](TakeError::Overload) or
    /// [`QueueFull`](TakeError::QueueFull)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(sidejob::TakeError::<std::fmt::Error>::QueueFull.is_overload());
    /// assert!(!sidejob::TakeError::<std::fmt::Error>::Timeout.is_overload());
    /// ```
    pub fn is_overload(&self) -> bool {
        matches!(self, TakeError::Overload | TakeError::QueueFull)
    }
}

impl<E: fmt::Display> fmt::Display for TakeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TakeError::Overload => {
                f.write_str("overload: no idle object and the pool is at its maximum size")
            }
            TakeError::Timeout => f.write_str("timed out waiting for an object"),
            TakeError::QueueFull => f.write_str("too many takers are already waiting"),
            TakeError::Create(error) => write!(f, "could not create an object: {error}"),
            TakeError::CreateTimeout => f.write_str("timed out creating an object"),
            TakeError::Tag(error) => write!(f, "could not tag an object: {error}"),
            TakeError::Closed => f.write_str("object pool is closed"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for TakeError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TakeError::Create(error) | TakeError::Tag(error) => Some(error),
            _ => None,
        }
    }
}
