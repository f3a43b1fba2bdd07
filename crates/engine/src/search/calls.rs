//! The calls one fan-out makes and what they report to it ([`Event`]), each bounded by the
//! request's deadline and each reporting what it learned to its breakers: one premium provider call
//! here; one SearXNG call (its attempts across the pool) in [`crate::search::searxng_call`].

use std::time::Duration;

use tokio::time::Instant;
use tracing::field::Empty;
use tracing::Instrument;

use super::provider_rotation::Admitted;
use crate::breaker_signals;
use gateway_core::breaker::{Signal, TripReason};
use gateway_core::request::SearchRequest;
use gateway_core::trace::{self, SpanError, TARGET};
use gateway_core::upstream::{ErrorClass, UpstreamError};
use gateway_upstreams::providers::{Park, ProviderAnswer, ProviderKind};
use gateway_upstreams::searxng::SearxngAnswer;

/// Upstream calls end this much before the request deadline, so their own timeouts are recorded
/// as timeouts rather than vanishing in the cancellation.
pub(super) const DEADLINE_MARGIN: Duration = Duration::from_millis(5);

/// Which pass of the fan-out started a provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// Started together with SearXNG (`T1_PREMIUM_COUNT`).
    Speculative,
    /// Started by the fallback, one at a time.
    Fallback,
}

impl Pass {
    /// The span attribute value.
    fn as_str(self) -> &'static str {
        match self {
            Self::Speculative => "t1",
            Self::Fallback => "fallback",
        }
    }
}

/// What a finished call reports to the fan-out.
#[derive(Debug)]
pub(super) enum Event {
    /// SearXNG answered or failed.
    Searxng(Result<SearxngAnswer, UpstreamError>),
    /// A provider answered or failed.
    Provider {
        kind: ProviderKind,
        pass: Pass,
        result: Result<ProviderAnswer, UpstreamError>,
    },
}

/// One premium call, cut at the request's deadline; its answer goes to the breaker it concerns —
/// the key's for a bad key, a spent rate or quota (or a park request on a successful answer), the
/// provider's for everything else ([`breaker_signals::concerns`]) — and says nothing to the other.
pub(super) async fn provider(
    admitted: Admitted,
    req: SearchRequest,
    deadline: Instant,
    pass: Pass,
) -> Event {
    let Admitted {
        client,
        permit,
        key,
        key_breaker,
        key_permit,
    } = admitted;
    let kind = client.kind();
    let key_name = client.key(key).as_str();
    let call_deadline = deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline);
    let span = tracing::info_span!(
        target: TARGET,
        "provider_call",
        otel.kind = "client",
        provider = kind.as_str(),
        key = key_name,
        pass = pass.as_str(),
        outcome = Empty,
        error_class = Empty,
        otel.status_code = Empty,
    );
    let call =
        tokio::time::timeout_at(call_deadline, client.search(&req, key)).instrument(span.clone());
    let Ok(result) = call.await else {
        // Cut by our budget, not by the provider's own timeout: not the provider's failure.
        trace::record_error(&span, SpanError::Deadline);
        drop(permit);
        drop(key_permit);
        return Event::Provider {
            kind,
            pass,
            result: Err(UpstreamError::new(ErrorClass::Timeout)),
        };
    };
    match &result {
        Ok(answer) if answer.hits.is_empty() => span.record("outcome", "empty"),
        Ok(_) => span.record("outcome", "ok"),
        Err(err) => {
            trace::record_error(&span, SpanError::Upstream(err.class));
            span.record("outcome", err.class.as_str())
        }
    };
    match &result {
        Ok(answer) => {
            permit.record(Signal::Success);
            key_permit.record(Signal::Success);
            match answer.park {
                // A spent quota sets the key aside until its reset; a spent short window only
                // pauses it until it resets.
                Some(Park::Quota(hint)) => key_breaker.record(Signal::Stop {
                    reason: TripReason::Quota,
                    retry_after: hint,
                }),
                Some(Park::Window(wait)) => key_breaker.pause(TripReason::RateLimited, wait),
                None => {}
            }
        }
        Err(err) => {
            let signal = breaker_signals::for_error(err);
            let (concerned, other) = match breaker_signals::concerns(err) {
                breaker_signals::Concerns::Key => (key_permit, permit),
                breaker_signals::Concerns::Provider => (permit, key_permit),
            };
            concerned.record(signal);
            other.record(Signal::Neutral);
        }
    }
    Event::Provider { kind, pass, result }
}
