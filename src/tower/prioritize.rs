//! [`Prioritize`]: how a shedding service gives each request a
//! [`Priority`](crate::Priority).

use crate::Priority;

/// How a shedding service ([`Shed`](super::Shed),
/// [`HttpShed`](super::HttpShed)) gives a request its [`Priority`].
///
/// Two kinds implement it: [`Unprioritized`], the default, under which every
/// request is `Normal` and the permit is taken in `poll_ready`, as tower's
/// `load_shed` decides; and any `Fn(&Request) -> Priority`, set with the
/// layers' `priority` method, under which the permit is taken in `call`,
/// where the request is known, with that request's priority. Either way a
/// request is refused at once when its priority's share of the capacity is
/// in use, and the permit is held until the response (and, for HTTP, its
/// body) is done.
///
/// # Examples
///
/// ```
/// use sidejob::tower::Prioritize;
/// use sidejob::Priority;
///
/// let by_path = |path: &&str| if path.starts_with("/health") { Priority::Critical } else { Priority::Normal };
/// assert_eq!(by_path.priority(&"/health"), Priority::Critical);
/// assert_eq!(sidejob::tower::Unprioritized.priority(&"/health"), Priority::Normal);
/// ```
pub trait Prioritize<Request> {
    /// Whether the permit waits for `call`, where the request is known.
    const AT_CALL: bool;

    /// The priority of `request`.
    fn priority(&self, request: &Request) -> Priority;
}

/// Every request is [`Priority::Normal`], and its permit is taken in
/// `poll_ready`: the layers' default (see [`Prioritize`]).
///
/// # Examples
///
/// ```
/// let layer: sidejob::tower::ShedLayer<sidejob::tower::Unprioritized> =
///     sidejob::tower::ShedLayer::with_capacity(4)?;
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Unprioritized;

impl<Request> Prioritize<Request> for Unprioritized {
    const AT_CALL: bool = false;

    #[inline]
    fn priority(&self, _request: &Request) -> Priority {
        Priority::Normal
    }
}

impl<Request, F> Prioritize<Request> for F
where
    F: Fn(&Request) -> Priority,
{
    const AT_CALL: bool = true;

    #[inline]
    fn priority(&self, request: &Request) -> Priority {
        self(request)
    }
}
