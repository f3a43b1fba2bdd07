//! What can go wrong when calling an upstream (SearXNG or a premium API), as a closed set of
//! classes. Callers ask the error (`is_transient`, `trips_at_once`) instead of matching text, and
//! the class name is the only thing that reaches a metric label or a client.

use std::time::Duration;

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
    /// Every class, for tests and exhaustive metric initialisation.
    pub const ALL: [ErrorClass; 14] = [
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

    /// Worth another attempt: a 5xx, a timeout, a connection failure or a truncated body.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Self::Server | Self::Timeout | Self::Connect | Self::Truncated
        )
    }

    /// The upstream is telling us to stop: a breaker opens on the first one.
    pub fn trips_at_once(self) -> bool {
        matches!(
            self,
            Self::Auth | Self::Quota | Self::RateLimited | Self::Blocked
        )
    }
}

/// A classified upstream failure, with the server's hint on when to come back, if it gave one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class:?} upstream failure")]
pub struct UpstreamError {
    /// What went wrong.
    pub class: ErrorClass,
    /// `Retry-After`, or the reset of an exhausted rate-limit window.
    pub retry_after: Option<Duration>,
}

impl UpstreamError {
    /// A failure without a server hint.
    pub fn new(class: ErrorClass) -> Self {
        Self {
            class,
            retry_after: None,
        }
    }

    /// A failure with the server's hint on when to come back.
    pub fn with_retry_after(class: ErrorClass, retry_after: Option<Duration>) -> Self {
        Self { class, retry_after }
    }
}

/// Classifies a transport error from the HTTP client without looking at its text.
pub fn classify_transport(err: &reqwest::Error) -> ErrorClass {
    if err.is_timeout() {
        ErrorClass::Timeout
    } else if err.is_connect() {
        ErrorClass::Connect
    } else if err.is_body() || err.is_decode() {
        ErrorClass::Truncated
    } else {
        ErrorClass::Connect
    }
}

/// The largest upstream body the gateway reads (SearXNG and premium APIs alike).
pub const BODY_CAP: usize = 8 * 1024 * 1024;

/// Reads a response body up to `cap` bytes: a longer body is [`ErrorClass::TooLarge`] (read no
/// further), a connection that drops mid-body is [`ErrorClass::Truncated`].
pub async fn read_body_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<bytes::Bytes, ErrorClass> {
    if response
        .content_length()
        .is_some_and(|len| len > cap as u64)
    {
        return Err(ErrorClass::TooLarge);
    }
    let mut body = bytes::BytesMut::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return Err(ErrorClass::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body.freeze()),
            Err(err) if err.is_timeout() => return Err(ErrorClass::Timeout),
            Err(_) => return Err(ErrorClass::Truncated),
        }
    }
}

/// Parses `Retry-After` as delta-seconds or an HTTP-date (relative to `now`).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", SystemTime::now()), None);
    }

    #[test]
    fn classes_split_into_transient_and_stop_signals() {
        for class in ErrorClass::ALL {
            assert!(
                !(class.is_transient() && class.trips_at_once()),
                "{class:?}"
            );
        }
        assert!(ErrorClass::Timeout.is_transient());
        assert!(!ErrorClass::BadRequest.is_transient());
        assert!(!ErrorClass::BadRequest.trips_at_once());
        assert!(ErrorClass::RateLimited.trips_at_once());
    }
}
