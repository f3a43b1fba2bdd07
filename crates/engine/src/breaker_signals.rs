//! What upstream facts mean for circuit breakers: the engine's policy, kept in one place. The
//! upstream modules report facts (an error class, SearXNG's reason for an engine); the breakers
//! only react to signals. Which upstream a breaker is for is typed too: a provider's breaker is
//! keyed by its [`ProviderKind`], an engine's by its checked [`EngineName`]. A page read's wall is
//! the one fact that is not a signal yet ([`HostSignal::Wall`]): it is evidence the read pipeline
//! weighs before it opens a host.

use std::time::Duration;

use gateway_core::breaker::{Signal, TransientCause, TripReason};
use gateway_core::upstream::UpstreamError;
use gateway_upstreams::reader::{Document, ReadFailure, Wall};
use gateway_upstreams::searxng::EngineReason;

/// Which breaker a premium call's failure concerns: the key's (a bad key, its rate or quota
/// spent — another key may still answer) or the provider's (down, slow, garbage — no key will).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Concerns {
    Key,
    Provider,
}

/// Whose failure `err` is.
pub(crate) fn concerns(err: &UpstreamError) -> Concerns {
    use gateway_core::upstream::ErrorClass::*;
    match err.class {
        Auth | Quota | RateLimited => Concerns::Key,
        Blocked | Server | Timeout | Connect | Truncated | Malformed | BadRequest | TooLarge
        | Redirect | Degraded | HttpStatus => Concerns::Provider,
    }
}

/// A classified failure of a premium call or a SearXNG call.
pub(crate) fn for_error(err: &UpstreamError) -> Signal {
    use gateway_core::upstream::ErrorClass::*;
    let stop = |reason| Signal::Stop {
        reason,
        retry_after: err.retry_after,
    };
    // Exhaustive on purpose: a new error class must decide how it affects breakers.
    match err.class {
        Auth => stop(TripReason::Auth),
        Quota => stop(TripReason::Quota),
        RateLimited => stop(TripReason::RateLimited),
        Blocked => stop(TripReason::AccessDenied),
        Connect => Signal::Transient(TransientCause::ConnectionError),
        Timeout => Signal::Transient(TransientCause::Timeout),
        // A 2xx in an unexpected shape is schema drift on their side: an outage for us.
        Server | Truncated | Malformed => Signal::TRANSIENT,
        BadRequest | TooLarge | Redirect | Degraded | HttpStatus => Signal::Neutral,
    }
}

/// A failed reranker call (`RERANK_URL`): as a premium call's — a refused key or a rate limit
/// trips at once, an outage or garbage (a 2xx that is not a sound ranking) counts towards the
/// threshold, a request it refused as malformed (our bug, or passages it finds too long) says
/// nothing about the reranker.
pub(crate) fn for_reranker(err: &UpstreamError) -> Signal {
    for_error(err)
}

/// What a direct page read tells its host's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostSignal {
    /// For the breaker as it is: a page read, a transient failure (which counts towards the
    /// threshold), or nothing.
    Breaker(Signal),
    /// A wall in front of this one page: evidence about the host, not yet a verdict on it. The
    /// host's breaker opens on walls over several distinct paths (`read::walls`), at
    /// once only when a 429 said how long to stay away (`retry_after`); a probe's wall reopens it.
    Wall {
        /// Why the host's breaker opens, when it does.
        reason: TripReason,
        /// A 429's `Retry-After`.
        retry_after: Option<Duration>,
    },
}

impl HostSignal {
    /// The signal for the breaker when this read decides it — the half-open probe, or the wall
    /// that completes the evidence: a wall then is the host walling readers off.
    pub(crate) fn signal(self) -> Signal {
        match self {
            Self::Breaker(signal) => signal,
            Self::Wall {
                reason,
                retry_after,
            } => Signal::Stop {
                reason,
                retry_after,
            },
        }
    }
}

/// A direct page read, for its host's breaker: a wall is evidence against the host (one page
/// walled off says little about the others), a transient failure counts towards the threshold,
/// a page that is simply not there (404), not text, too large or too complex says nothing about
/// the host.
pub(crate) fn for_read(result: &Result<Document, ReadFailure>) -> HostSignal {
    use gateway_core::upstream::ErrorClass::*;
    match result {
        Ok(_) => HostSignal::Breaker(Signal::Success),
        Err(ReadFailure::Blocked(wall)) => HostSignal::Wall {
            reason: match wall {
                Wall::RateLimited => TripReason::RateLimited,
                Wall::Cloudflare | Wall::Datadome | Wall::Perimeterx | Wall::Captcha => {
                    TripReason::Captcha
                }
                Wall::Forbidden | Wall::JavascriptShell => TripReason::AccessDenied,
            },
            retry_after: None,
        },
        Err(ReadFailure::RateLimitedFor(period)) => HostSignal::Wall {
            reason: TripReason::RateLimited,
            retry_after: Some(*period),
        },
        Err(ReadFailure::Upstream(Server | Timeout | Connect | Truncated)) => {
            HostSignal::Breaker(Signal::TRANSIENT)
        }
        Err(
            ReadFailure::Upstream(_)
            | ReadFailure::InvalidUrl
            | ReadFailure::ForbiddenAddress
            | ReadFailure::UnsupportedContentType
            | ReadFailure::NoReadableText
            | ReadFailure::TooManyRedirects
            | ReadFailure::UnreadablePdf
            | ReadFailure::HttpStatus(_)
            | ReadFailure::TooComplex(_)
            | ReadFailure::Internal,
        ) => HostSignal::Breaker(Signal::Neutral),
    }
}

/// SearXNG's reason for an unresponsive engine: blocks trip at once, the rest are transient — a
/// connection error or a timeout named as such, so the breaker's reason says what SearXNG said.
pub(crate) fn for_engine(reason: EngineReason) -> Signal {
    match reason {
        EngineReason::AccessDenied => Signal::stop(TripReason::AccessDenied),
        EngineReason::TooManyRequests => Signal::stop(TripReason::RateLimited),
        EngineReason::Captcha => Signal::stop(TripReason::Captcha),
        EngineReason::ConnectionError => Signal::Transient(TransientCause::ConnectionError),
        EngineReason::Timeout => Signal::Transient(TransientCause::Timeout),
        EngineReason::HttpError
        | EngineReason::ProtocolError
        | EngineReason::NetworkError
        | EngineReason::ProxyError
        | EngineReason::ParsingError
        | EngineReason::ServerApiError
        | EngineReason::UnexpectedCrash
        | EngineReason::Unknown => Signal::TRANSIENT,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use gateway_core::upstream::ErrorClass;

    #[test]
    fn every_error_class_maps_to_the_intended_signal() {
        let cases = [
            (ErrorClass::Auth, Signal::stop(TripReason::Auth)),
            (ErrorClass::Quota, Signal::stop(TripReason::Quota)),
            (ErrorClass::Blocked, Signal::stop(TripReason::AccessDenied)),
            (ErrorClass::Server, Signal::TRANSIENT),
            (
                ErrorClass::Timeout,
                Signal::Transient(TransientCause::Timeout),
            ),
            (
                ErrorClass::Connect,
                Signal::Transient(TransientCause::ConnectionError),
            ),
            (ErrorClass::Truncated, Signal::TRANSIENT),
            (ErrorClass::Malformed, Signal::TRANSIENT),
            (ErrorClass::BadRequest, Signal::Neutral),
            (ErrorClass::TooLarge, Signal::Neutral),
            (ErrorClass::Redirect, Signal::Neutral),
            (ErrorClass::Degraded, Signal::Neutral),
            (ErrorClass::HttpStatus, Signal::Neutral),
        ];
        for (class, expected) in cases {
            assert_eq!(for_error(&UpstreamError::new(class)), expected, "{class:?}");
        }
    }

    #[test]
    fn a_rate_limit_carries_the_servers_hint() {
        let err =
            UpstreamError::with_retry_after(ErrorClass::RateLimited, Some(Duration::from_secs(7)));
        assert_eq!(
            for_error(&err),
            Signal::Stop {
                reason: TripReason::RateLimited,
                retry_after: Some(Duration::from_secs(7)),
            }
        );
    }

    #[test]
    fn a_pages_wall_is_evidence_about_its_host_and_a_429_brings_its_retry_after() {
        let wall = |failure| for_read(&Err(failure));
        assert_eq!(
            wall(ReadFailure::Blocked(Wall::Forbidden)),
            HostSignal::Wall {
                reason: TripReason::AccessDenied,
                retry_after: None,
            }
        );
        assert_eq!(
            wall(ReadFailure::Blocked(Wall::Cloudflare)).signal(),
            Signal::stop(TripReason::Captcha),
            "when it decides, a wall trips"
        );
        assert_eq!(
            wall(ReadFailure::RateLimitedFor(Duration::from_secs(30))),
            HostSignal::Wall {
                reason: TripReason::RateLimited,
                retry_after: Some(Duration::from_secs(30)),
            }
        );
        assert_eq!(
            wall(ReadFailure::Upstream(ErrorClass::Timeout)),
            HostSignal::Breaker(Signal::TRANSIENT)
        );
        assert_eq!(
            wall(ReadFailure::HttpStatus(404)),
            HostSignal::Breaker(Signal::Neutral)
        );
    }

    #[test]
    fn blocked_engines_trip_at_once_and_the_rest_are_transient() {
        assert_eq!(
            for_engine(EngineReason::Captcha),
            Signal::stop(TripReason::Captcha)
        );
        assert_eq!(
            for_engine(EngineReason::TooManyRequests),
            Signal::stop(TripReason::RateLimited)
        );
        assert_eq!(
            for_engine(EngineReason::AccessDenied),
            Signal::stop(TripReason::AccessDenied)
        );
        assert_eq!(
            for_engine(EngineReason::Timeout),
            Signal::Transient(TransientCause::Timeout)
        );
        assert_eq!(
            for_engine(EngineReason::ConnectionError),
            Signal::Transient(TransientCause::ConnectionError),
            "the breaker names what SearXNG said, not a bare `transient`"
        );
        assert_eq!(for_engine(EngineReason::Unknown), Signal::TRANSIENT);
    }
}
