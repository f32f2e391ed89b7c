//! [`DropOnResponse`]: which answers a shedding service counts as *drops*
//! (overload downstream) for an adaptive limit, for a client's outbound
//! calls whose dependency answers overload as a response, not an error.

/// Which responses a [`Shed`](super::Shed) counts as drops for an adaptive
/// resource: the dependency answered, but its answer says overload (a
/// `503`, a `429`, a gRPC `RESOURCE_EXHAUSTED`), so the limit backs off as
/// for a dropped request.
///
/// Two kinds implement it: [`NoResponseDrops`], the default, under which
/// every response is a latency sample (only errors can be drops, by
/// [`drop_if`](super::ShedLayer::drop_if)); and any `Fn(&Response) ->
/// bool`, set with [`ShedLayer::drop_on_response`](super::ShedLayer::drop_on_response).
///
/// # Examples
///
/// ```
/// use sidejob::tower::{DropOnResponse, NoResponseDrops};
///
/// let busy = |status: &u16| *status == 503;
/// assert!(busy.is_drop(&503));
/// assert!(!NoResponseDrops.is_drop(&503));
/// ```
pub trait DropOnResponse<Response> {
    /// Whether any response can be a drop: `false` skips the check.
    const CHECKS: bool;
    /// Whether `response` tells of overload downstream.
    fn is_drop(&self, response: &Response) -> bool;
}

/// No response is a drop: every answer is a latency sample. The default of
/// [`ShedLayer`](super::ShedLayer) (see [`DropOnResponse`]).
///
/// # Examples
///
/// ```
/// use sidejob::tower::{DropOnResponse, NoResponseDrops};
/// assert!(!NoResponseDrops.is_drop(&"a 503, even"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoResponseDrops;

impl<Response> DropOnResponse<Response> for NoResponseDrops {
    const CHECKS: bool = false;

    #[inline]
    fn is_drop(&self, _response: &Response) -> bool {
        false
    }
}

impl<Response, F> DropOnResponse<Response> for F
where
    F: Fn(&Response) -> bool,
{
    const CHECKS: bool = true;

    #[inline]
    fn is_drop(&self, response: &Response) -> bool {
        self(response)
    }
}

/// Whether an HTTP response tells of overload downstream: a status of `429
/// Too Many Requests`, `503 Service Unavailable` or `504 Gateway Timeout`,
/// or a `grpc-status` in its head (a gRPC trailers-only answer) of
/// `RESOURCE_EXHAUSTED` (8), `UNAVAILABLE` (14) or `DEADLINE_EXCEEDED` (4).
/// For [`ShedLayer::drop_on_response`](super::ShedLayer::drop_on_response)
/// around an HTTP or gRPC client.
///
/// # Examples
///
/// ```
/// use http::{Response, StatusCode};
/// use sidejob::tower::is_overload_response;
///
/// let busy = Response::builder().status(StatusCode::SERVICE_UNAVAILABLE).body(()).unwrap();
/// assert!(is_overload_response(&busy));
/// let exhausted = Response::builder().header("grpc-status", "8").body(()).unwrap();
/// assert!(is_overload_response(&exhausted));
/// assert!(!is_overload_response(&Response::new(())));
/// ```
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub fn is_overload_response<B>(response: &http::Response<B>) -> bool {
    use http::StatusCode;
    if matches!(
        response.status(),
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    ) {
        return true;
    }
    let headers = response.headers();
    // An empty map skips the lookup, which hashes the name first.
    !headers.is_empty()
        && headers
            .get("grpc-status")
            .is_some_and(|status| matches!(status.as_bytes(), b"4" | b"8" | b"14"))
}
