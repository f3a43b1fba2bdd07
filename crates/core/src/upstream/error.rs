//! What can go wrong when calling an upstream (SearXNG or a premium API), as a closed set of
//! classes. Callers ask the error (`is_transient`) instead of matching text, and the class name is
//! the only thing of a failure that reaches a metric label. A log line or a client may also get
//! the HTTP status a failure came from (`http_status 404`): a typed fact, never a label.

use std::time::Duration;

use hyper::StatusCode;

/// The class of an upstream failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Bad, missing or revoked API key.
    Auth,
    /// Credits or monthly quota exhausted.
    Quota,
    /// Too many requests per window.
    RateLimited,
    /// The upstream refused us (403, a firewall, JSON not enabled on SearXNG).
    Blocked,
    /// The upstream says our request is malformed: our bug, never trips a breaker.
    BadRequest,
    /// HTTP 5xx.
    Server,
    /// No answer within the time allowed.
    Timeout,
    /// Connection refused, reset or failed before a response.
    Connect,
    /// The connection dropped mid-body.
    Truncated,
    /// The body exceeded the size cap.
    TooLarge,
    /// A 2xx whose body is not the expected shape.
    Malformed,
    /// SearXNG answered a redirect (an external `!!bang`): reported, never followed.
    Redirect,
    /// SearXNG answered 200 with zero results while engines were unresponsive.
    Degraded,
    /// Any other unexpected HTTP status.
    HttpStatus,
}

impl ErrorClass {
    /// Every class, in declaration order.
    pub const ALL: [Self; 14] = [
        Self::Auth,
        Self::Quota,
        Self::RateLimited,
        Self::Blocked,
        Self::BadRequest,
        Self::Server,
        Self::Timeout,
        Self::Connect,
        Self::Truncated,
        Self::TooLarge,
        Self::Malformed,
        Self::Redirect,
        Self::Degraded,
        Self::HttpStatus,
    ];

    /// The class a label value ([`Self::as_str`]) names, read back from a JSON body.
    pub fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|class| class.as_str() == label)
    }

    /// The label value used in metrics, logs and JSON bodies.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Quota => "quota",
            Self::RateLimited => "rate_limited",
            Self::Blocked => "blocked",
            Self::BadRequest => "bad_request",
            Self::Server => "server_error",
            Self::Timeout => "timeout",
            Self::Connect => "connect",
            Self::Truncated => "truncated",
            Self::TooLarge => "too_large",
            Self::Malformed => "malformed",
            Self::Redirect => "redirect",
            Self::Degraded => "degraded",
            Self::HttpStatus => "http_status",
        }
    }

    /// What the class means, as a sentence for a person (without the class name, which the
    /// caller adds where a program reads it too). "The upstream" is whatever was called: SearXNG,
    /// a premium API, a page's site or a premium reader.
    pub fn sentence(self) -> &'static str {
        match self {
            Self::Auth => "the upstream refused the gateway's API key",
            Self::Quota => "the upstream's quota or credits are spent",
            Self::RateLimited => "the upstream asked the gateway to slow down",
            Self::Blocked => "the upstream refused the gateway",
            Self::BadRequest => "the upstream refused the gateway's request as malformed",
            Self::Server => "the upstream answered with a server error",
            Self::Timeout => "the upstream did not answer in time",
            Self::Connect => "the gateway could not connect to the upstream",
            Self::Truncated => "the connection dropped before the answer was complete",
            Self::TooLarge => "the answer is larger than the gateway reads",
            Self::Malformed => "the answer is not in the shape the gateway expects",
            Self::Redirect => "the upstream answered a redirect, which the gateway does not follow",
            Self::Degraded => {
                "the upstream answered no results while its engines were unresponsive"
            }
            Self::HttpStatus => "the upstream answered an unexpected HTTP status",
        }
    }

    /// The answer was larger than the gateway reads: a property of what was asked for (the
    /// same request gets as large an answer again), not a fault of the gateway.
    pub fn is_too_large(self) -> bool {
        self == Self::TooLarge
    }

    /// Worth another attempt: a 5xx, a timeout, a connection failure or a truncated body.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Self::Server | Self::Timeout | Self::Connect | Self::Truncated
        )
    }
}

/// A classified upstream failure, with the server's hint on when to come back, if it gave one, and
/// the HTTP status it was classified from, if it came from one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} upstream failure", class.as_str())]
pub struct UpstreamError {
    /// What went wrong.
    pub class: ErrorClass,
    /// `Retry-After`, or the reset of an exhausted rate-limit window.
    pub retry_after: Option<Duration>,
    /// The status the upstream answered, when the class was read from it (always for
    /// [`ErrorClass::HttpStatus`]; `None` for a failure before or after the status line, such as
    /// a timeout or a malformed 200). For log lines and error bodies only: metrics label the
    /// class alone.
    pub status: Option<StatusCode>,
}

impl UpstreamError {
    /// A failure without a server hint.
    pub fn new(class: ErrorClass) -> Self {
        Self {
            class,
            retry_after: None,
            status: None,
        }
    }

    /// A failure with the server's hint on when to come back.
    pub fn with_retry_after(class: ErrorClass, retry_after: Option<Duration>) -> Self {
        Self {
            class,
            retry_after,
            status: None,
        }
    }

    /// This failure, read from an answer with `status`.
    pub fn at_status(self, status: StatusCode) -> Self {
        Self {
            status: Some(status),
            ..self
        }
    }
}

impl From<ErrorClass> for UpstreamError {
    fn from(class: ErrorClass) -> Self {
        Self::new(class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_that_may_pass_are_transient() {
        let transient = [
            ErrorClass::Server,
            ErrorClass::Timeout,
            ErrorClass::Connect,
            ErrorClass::Truncated,
        ];
        for class in transient {
            assert!(class.is_transient(), "{class:?}");
        }
        for class in [
            ErrorClass::Auth,
            ErrorClass::Quota,
            ErrorClass::RateLimited,
            ErrorClass::Blocked,
            ErrorClass::BadRequest,
            ErrorClass::Malformed,
            ErrorClass::TooLarge,
            ErrorClass::Redirect,
        ] {
            assert!(!class.is_transient(), "{class:?}");
        }
    }

    #[test]
    fn the_error_message_is_the_class_name_only() {
        let err = UpstreamError::with_retry_after(ErrorClass::RateLimited, None);
        assert_eq!(err.to_string(), "rate_limited upstream failure");
    }
}

// The class is a label value of every upstream's metrics.
crate::label_value_as_str!(ErrorClass);
