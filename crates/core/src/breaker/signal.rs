//! The breaker's vocabulary: what a call tells a breaker ([`Signal`]) and why a breaker trips
//! ([`TripReason`]). Which upstream fact becomes which signal is the pipeline's decision
//! (the engine's `breaker_signals`); the breaker only reacts.

use std::time::Duration;

/// Why a breaker tripped: the `reason` label of `circuit_breaker_trips_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TripReason {
    /// HTTP 429 or SearXNG's "too many requests".
    RateLimited,
    /// HTTP 403, a firewall, or SearXNG's "access denied" / "blocked".
    AccessDenied,
    /// SearXNG reported the engine hit a CAPTCHA.
    Captcha,
    /// Bad, missing or revoked API key.
    Auth,
    /// Credits or monthly quota exhausted.
    Quota,
    /// `failure_threshold` transient failures in a row (or a failed half-open probe), the last a
    /// connection that could not be made (refused, DNS, TLS).
    ConnectionError,
    /// The same, the last a timeout.
    Timeout,
    /// The same, the last of another kind (5xx, a truncated or garbled answer, an engine's error).
    Transient,
    /// Opened by an operator (`POST /admin/breakers/…/open`); never counted as a trip.
    Operator,
}

impl TripReason {
    /// Every reason.
    pub(crate) const ALL: [TripReason; 8] = [
        Self::RateLimited,
        Self::AccessDenied,
        Self::Captcha,
        Self::Auth,
        Self::Quota,
        Self::ConnectionError,
        Self::Timeout,
        Self::Transient,
    ];

    /// The reason whose label value is `text` (as another replica shared it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    /// The metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::AccessDenied => "access_denied",
            Self::Captcha => "captcha",
            Self::Auth => "auth",
            Self::Quota => "quota",
            Self::ConnectionError => "connection_error",
            Self::Timeout => "timeout",
            Self::Transient => "transient",
            Self::Operator => "operator",
        }
    }
}

/// What one call tells the breaker about its upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// The upstream answered properly.
    Success,
    /// The upstream told us to stop: trip at once, for at least `retry_after` if it said so.
    Stop {
        /// The closed-set reason, used as the trip metric label.
        reason: TripReason,
        /// The server's hint on when to come back (`Retry-After`, a rate-limit window reset).
        retry_after: Option<Duration>,
    },
    /// A failure that may pass (5xx, timeout, connection error, schema drift): trips only when
    /// `failure_threshold` arrive in a row, naming the last one's kind.
    Transient(TransientCause),
    /// Says nothing about the upstream's health (our own malformed request, a cancelled call).
    Neutral,
}

/// What kind of failure a [`Signal::Transient`] was: the reason a breaker names when it trips, so
/// an operator reads `connection_error` (the upstream cannot be reached: look at the network)
/// rather than a bare `transient`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransientCause {
    /// A connection that could not be made: refused, DNS, TLS.
    ConnectionError,
    /// No answer in time.
    Timeout,
    /// Anything else that may pass: a 5xx, a truncated or garbled answer, an engine's error.
    Other,
}

impl From<TransientCause> for TripReason {
    fn from(cause: TransientCause) -> Self {
        match cause {
            TransientCause::ConnectionError => Self::ConnectionError,
            TransientCause::Timeout => Self::Timeout,
            TransientCause::Other => Self::Transient,
        }
    }
}

impl Signal {
    /// A transient failure of no particular kind (a 5xx, a garbled answer).
    pub const TRANSIENT: Signal = Signal::Transient(TransientCause::Other);

    /// A stop signal without a server hint.
    pub fn stop(reason: TripReason) -> Self {
        Self::Stop {
            reason,
            retry_after: None,
        }
    }
}
