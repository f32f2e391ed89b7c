//! [`GrpcCode`], [`GrpcCodes`] and [`GrpcRefusal`]: the gRPC status codes a
//! layer answers with and the ones it reads as drops.

use std::fmt;

use http::{HeaderMap, HeaderValue, StatusCode};

/// A gRPC status code, as the `grpc-status` header or trailer carries it
/// (`0` to `16`; see gRPC's status codes guide). A sibling of
/// `tonic::Code`, without the dependency: convert with
/// [`as_i32`](GrpcCode::as_i32) and `tonic::Code::from_i32`.
///
/// # Examples
///
/// ```
/// use sidejob::tower::GrpcCode;
///
/// assert_eq!(GrpcCode::RESOURCE_EXHAUSTED.as_i32(), 8);
/// assert_eq!(GrpcCode::from_i32(14), Some(GrpcCode::UNAVAILABLE));
/// assert_eq!(GrpcCode::from_i32(17), None);
/// assert_eq!(GrpcCode::UNAVAILABLE.to_string(), "unavailable");
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrpcCode(u8);

macro_rules! grpc_codes {
    ($($(#[$doc:meta])* $name:ident = $value:literal, $text:literal;)*) => {
        impl GrpcCode {
            $($(#[$doc])* pub const $name: GrpcCode = GrpcCode($value);)*

            /// The code's name in gRPC's guide, lowercase with spaces.
            fn text(self) -> &'static str {
                match self.0 {
                    $($value => $text,)*
                    _ => unreachable!("a GrpcCode is 0 to 16"),
                }
            }

            /// The code's constant name, as the guide writes it.
            fn name(self) -> &'static str {
                match self.0 {
                    $($value => stringify!($name),)*
                    _ => unreachable!("a GrpcCode is 0 to 16"),
                }
            }
        }
    };
}

grpc_codes! {
    /// `0`: not an error.
    OK = 0, "ok";
    /// `1`: the caller cancelled the call.
    CANCELLED = 1, "cancelled";
    /// `2`: an error of no other kind.
    UNKNOWN = 2, "unknown";
    /// `3`: the caller's argument is invalid whatever the state.
    INVALID_ARGUMENT = 3, "invalid argument";
    /// `4`: the deadline passed before the call completed.
    DEADLINE_EXCEEDED = 4, "deadline exceeded";
    /// `5`: an entity the call names was not found.
    NOT_FOUND = 5, "not found";
    /// `6`: the entity the call would create exists.
    ALREADY_EXISTS = 6, "already exists";
    /// `7`: the caller may not do this.
    PERMISSION_DENIED = 7, "permission denied";
    /// `8`: a resource is exhausted: a quota, or the server temporarily out
    /// of resources.
    RESOURCE_EXHAUSTED = 8, "resource exhausted";
    /// `9`: the system is not in the state the call needs.
    FAILED_PRECONDITION = 9, "failed precondition";
    /// `10`: the call was aborted (a concurrency conflict).
    ABORTED = 10, "aborted";
    /// `11`: past the valid range.
    OUT_OF_RANGE = 11, "out of range";
    /// `12`: the method is not implemented.
    UNIMPLEMENTED = 12, "unimplemented";
    /// `13`: an internal error.
    INTERNAL = 13, "internal";
    /// `14`: the service is unavailable for now: retry with backoff.
    UNAVAILABLE = 14, "unavailable";
    /// `15`: data was lost.
    DATA_LOSS = 15, "data loss";
    /// `16`: the caller is not authenticated.
    UNAUTHENTICATED = 16, "unauthenticated";
}

impl GrpcCode {
    /// The code of `value`, if it is one of gRPC's (`0` to `16`).
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::GrpcCode;
    /// assert_eq!(GrpcCode::from_i32(4), Some(GrpcCode::DEADLINE_EXCEEDED));
    /// assert_eq!(GrpcCode::from_i32(-1), None);
    /// ```
    pub const fn from_i32(value: i32) -> Option<GrpcCode> {
        if 0 <= value && value <= 16 {
            Some(GrpcCode(value as u8))
        } else {
            None
        }
    }

    /// The code's number, as `grpc-status` writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::tower::GrpcCode::UNAVAILABLE.as_i32(), 14);
    /// ```
    pub const fn as_i32(self) -> i32 {
        self.0 as i32
    }

    /// The code a `grpc-status` value holds: its decimal digits, and
    /// `None` for anything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::HeaderValue;
    /// use sidejob::tower::GrpcCode;
    ///
    /// assert_eq!(GrpcCode::from_header(&HeaderValue::from_static("8")), Some(GrpcCode::RESOURCE_EXHAUSTED));
    /// assert_eq!(GrpcCode::from_header(&HeaderValue::from_static("08x")), None);
    /// ```
    pub fn from_header(value: &HeaderValue) -> Option<GrpcCode> {
        match value.as_bytes() {
            [digit @ b'0'..=b'9'] => Some(GrpcCode(digit - b'0')),
            [b'1', digit @ b'0'..=b'6'] => Some(GrpcCode(10 + digit - b'0')),
            _ => None,
        }
    }

    /// The status a gRPC response's head or trailers tell: their
    /// `grpc-status`, if they carry one that is a code.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::GrpcCode;
    ///
    /// let mut trailers = http::HeaderMap::new();
    /// assert_eq!(GrpcCode::of_headers(&trailers), None);
    /// trailers.insert("grpc-status", http::HeaderValue::from_static("14"));
    /// assert_eq!(GrpcCode::of_headers(&trailers), Some(GrpcCode::UNAVAILABLE));
    /// ```
    pub fn of_headers(headers: &HeaderMap) -> Option<GrpcCode> {
        if headers.is_empty() {
            // Cheaper than the lookup, which hashes the name first.
            return None;
        }
        headers.get("grpc-status").and_then(GrpcCode::from_header)
    }

    /// The code gRPC's guide maps a non-`200` HTTP status to, for a
    /// response with no `grpc-status` (from a proxy, say): `429`, `502`,
    /// `503` and `504` are `UNAVAILABLE`; `None` for a `200`.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::StatusCode;
    /// use sidejob::tower::GrpcCode;
    ///
    /// assert_eq!(GrpcCode::from_http_status(StatusCode::SERVICE_UNAVAILABLE), Some(GrpcCode::UNAVAILABLE));
    /// assert_eq!(GrpcCode::from_http_status(StatusCode::NOT_FOUND), Some(GrpcCode::UNIMPLEMENTED));
    /// assert_eq!(GrpcCode::from_http_status(StatusCode::OK), None);
    /// ```
    pub fn from_http_status(status: StatusCode) -> Option<GrpcCode> {
        Some(match status.as_u16() {
            200 => return None,
            400 => GrpcCode::INTERNAL,
            401 => GrpcCode::UNAUTHENTICATED,
            403 => GrpcCode::PERMISSION_DENIED,
            404 => GrpcCode::UNIMPLEMENTED,
            429 | 502..=504 => GrpcCode::UNAVAILABLE,
            _ => GrpcCode::UNKNOWN,
        })
    }
}

impl fmt::Display for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl fmt::Debug for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GrpcCode::{}", self.name())
    }
}

/// A set of [`GrpcCode`]s: the statuses a shedding layer reads as drops.
///
/// # Examples
///
/// ```
/// use sidejob::tower::{GrpcCode, GrpcCodes};
///
/// let drops = GrpcCodes::overload();
/// assert!(drops.contains(GrpcCode::RESOURCE_EXHAUSTED));
/// assert!(drops.contains(GrpcCode::UNAVAILABLE));
/// assert!(drops.contains(GrpcCode::DEADLINE_EXCEEDED));
/// assert!(!drops.contains(GrpcCode::INTERNAL));
///
/// let only = GrpcCodes::from([GrpcCode::UNAVAILABLE]);
/// assert!(!only.contains(GrpcCode::RESOURCE_EXHAUSTED));
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct GrpcCodes(u32);

impl GrpcCodes {
    /// No code.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcCode, GrpcCodes};
    /// assert!(!GrpcCodes::none().contains(GrpcCode::UNAVAILABLE));
    /// ```
    pub const fn none() -> GrpcCodes {
        GrpcCodes(0)
    }

    /// The codes that tell of overload downstream: `RESOURCE_EXHAUSTED`,
    /// `UNAVAILABLE` and `DEADLINE_EXCEEDED`. The layers' default drops.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcCode, GrpcCodes};
    /// assert!(GrpcCodes::overload().contains(GrpcCode::DEADLINE_EXCEEDED));
    /// ```
    pub const fn overload() -> GrpcCodes {
        GrpcCodes::none()
            .with(GrpcCode::RESOURCE_EXHAUSTED)
            .with(GrpcCode::UNAVAILABLE)
            .with(GrpcCode::DEADLINE_EXCEEDED)
    }

    /// This set and `code`.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcCode, GrpcCodes};
    /// let drops = GrpcCodes::overload().with(GrpcCode::ABORTED);
    /// assert!(drops.contains(GrpcCode::ABORTED));
    /// ```
    pub const fn with(self, code: GrpcCode) -> GrpcCodes {
        GrpcCodes(self.0 | 1 << code.0)
    }

    /// Whether `code` is in the set.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcCode, GrpcCodes};
    /// assert!(!GrpcCodes::overload().contains(GrpcCode::OK));
    /// ```
    pub const fn contains(self, code: GrpcCode) -> bool {
        self.0 & 1 << code.0 != 0
    }
}

impl<const N: usize> From<[GrpcCode; N]> for GrpcCodes {
    fn from(codes: [GrpcCode; N]) -> GrpcCodes {
        codes.into_iter().collect()
    }
}

impl FromIterator<GrpcCode> for GrpcCodes {
    fn from_iter<I: IntoIterator<Item = GrpcCode>>(codes: I) -> GrpcCodes {
        codes.into_iter().fold(GrpcCodes::none(), GrpcCodes::with)
    }
}

impl fmt::Debug for GrpcCodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries((0..=16).map(GrpcCode).filter(|code| self.contains(*code)))
            .finish()
    }
}

/// The status a [`GrpcShedLayer`](super::GrpcShedLayer) refuses with.
///
/// The default is [`ResourceExhausted`](GrpcRefusal::ResourceExhausted):
/// gRPC's status codes guide names `RESOURCE_EXHAUSTED` for a server
/// "temporarily out of resources", which is what a shed call is, and a
/// client that retries it does so only by a policy that lists it, after
/// the `grpc-retry-pushback-ms` the refusal carries. `UNAVAILABLE` is the
/// guide's code for a transient condition a caller should retry with
/// backoff, the code retry policies list first: it suits a layer in front
/// of one of several replicas, where another may take the call, and it
/// multiplies the load when the whole service is overloaded.
///
/// # Examples
///
/// ```
/// use sidejob::tower::{GrpcCode, GrpcRefusal};
///
/// assert_eq!(GrpcRefusal::default(), GrpcRefusal::ResourceExhausted);
/// assert_eq!(GrpcRefusal::Unavailable.code(), GrpcCode::UNAVAILABLE);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrpcRefusal {
    /// `RESOURCE_EXHAUSTED` (8): the server is out of resources for now.
    #[default]
    ResourceExhausted,
    /// `UNAVAILABLE` (14): try again, here or elsewhere, with backoff.
    Unavailable,
}

impl GrpcRefusal {
    /// The status code the refusal carries.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcCode, GrpcRefusal};
    /// assert_eq!(GrpcRefusal::ResourceExhausted.code(), GrpcCode::RESOURCE_EXHAUSTED);
    /// ```
    pub const fn code(self) -> GrpcCode {
        match self {
            GrpcRefusal::ResourceExhausted => GrpcCode::RESOURCE_EXHAUSTED,
            GrpcRefusal::Unavailable => GrpcCode::UNAVAILABLE,
        }
    }

    /// The `grpc-status` value of the code.
    pub(super) fn header(self) -> HeaderValue {
        match self {
            GrpcRefusal::ResourceExhausted => HeaderValue::from_static("8"),
            GrpcRefusal::Unavailable => HeaderValue::from_static("14"),
        }
    }
}
