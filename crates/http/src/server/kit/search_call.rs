//! One search on behalf of a surface: the pipeline asked ([`run`]), the client charged for the
//! premium calls it led, the one log line each search gets, and the headers that say how it was
//! answered. Every surface searches through here, so every search is logged and charged the same
//! way; a search a surface refuses before asking is logged by [`log_refused`]. Each search is also
//! listed for the operator's page ([`recent_searches`]) when it is served.

use std::time::Duration;

use axum::http::StatusCode;
use tokio::time::Instant;
use tracing::Span;

use super::document::{Document, FailedUpstream, Found};
use crate::gateway::Gateway;
use crate::server::kit::explain::Explanation;
use crate::server::kit::gate;
use crate::server::kit::recent_searches::{self, Ended, Search};
use gateway_core::cache::CacheTier;
use gateway_core::request::{SearchRequest, Surface};
use gateway_core::trace::{self, SpanError};
use gateway_engine::{SearchError, Served};

/// Asks the pipeline for one search that came through `surface`, and logs the one line each
/// search gets. Every surface searches through here.
pub(crate) async fn run(
    gateway: &Gateway,
    surface: Surface,
    req: SearchRequest,
    admitted: &gate::Admitted,
) -> Result<Served, SearchError> {
    let started = Instant::now();
    let span = Span::current();
    // Copied only when the operator's page lists queries.
    let query = admitted
        .recent
        .as_ref()
        .filter(|recent| recent.keeps_queries())
        .map(|_| req.query.clone());
    let served = match gateway.search(req, surface, admitted.premium).await {
        Ok(served) => served,
        Err(err) => {
            let (error, status) = match err {
                SearchError::Overloaded(_) => {
                    (SpanError::Overloaded, StatusCode::SERVICE_UNAVAILABLE)
                }
                SearchError::Lost(_) => (SpanError::Internal, StatusCode::INTERNAL_SERVER_ERROR),
            };
            list(
                admitted,
                surface,
                query,
                started.elapsed(),
                None,
                Ended::Unanswered { status },
            );
            tracing::info!(
                surface = surface.as_str(),
                error = error.as_str(),
                "search shed"
            );
            trace::record_error(&span, error);
            return Err(err);
        }
    };
    admitted
        .clients
        .charge(
            &admitted.caller,
            served.premium_calls,
            served.premium_spend_usd,
        )
        .await;
    let cache = served.cache.as_str();
    span.record("outcome", served.outcome.as_str());
    span.record("cache", cache);
    let cache_tier = served.cache.tier().map_or("", CacheTier::as_str);
    if !served.answer.status.is_success() {
        trace::record_error(&span, SpanError::AllUpstreamsFailed);
    }
    list(
        admitted,
        surface,
        query,
        started.elapsed(),
        Some(&served),
        Ended::Answered {
            outcome: served.outcome,
            cache: served.cache,
            status: served.answer.status,
        },
    );
    tracing::info!(
        surface = surface.as_str(),
        client = admitted.caller.name.as_str(),
        status = served.answer.status.as_u16(),
        outcome = served.outcome.as_str(),
        cache,
        premium_calls = served.premium_calls,
        premium_spend_usd = served.premium_spend_usd,
        cache_tier,
        results = served.answer.result_count,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search"
    );
    Ok(served)
}

/// Lists the search on the operator's page (when it is served), with its `explain` record.
fn list(
    admitted: &gate::Admitted,
    surface: Surface,
    query: Option<String>,
    latency: Duration,
    served: Option<&Served>,
    ended: Ended,
) {
    let Some(recent) = &admitted.recent else {
        return;
    };
    let explanation = served.map(|served| {
        Box::new(Explanation::of(served, admitted)) as Box<dyn recent_searches::Record>
    });
    recent.push(Search {
        request_id: admitted.request_id.as_str().to_owned(),
        client: admitted.caller.name.as_str().to_owned(),
        surface,
        query,
        ended,
        latency,
        results: served.map_or(0, |s| s.answer.result_count),
        premium_calls: served.map_or(0, |s| s.premium_calls),
        premium_usd: served.map_or(0.0, |s| s.premium_spend_usd),
        explanation,
    });
}

/// Why a search gave a JSON surface nothing to render.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// Every fan-out slot stayed taken (load shedding).
    Overloaded,
    /// The shared computation was lost (a bug).
    Lost,
    /// Every upstream failed.
    AllFailed(Vec<FailedUpstream>),
}

/// [`run`], and the answer read as a JSON surface renders it ([`Document`]).
pub(crate) async fn found(
    gateway: &Gateway,
    surface: Surface,
    req: SearchRequest,
    admitted: &gate::Admitted,
) -> Result<(Served, Found), Unanswered> {
    let served = match run(gateway, surface, req, admitted).await {
        Ok(served) => served,
        Err(SearchError::Overloaded(_)) => return Err(Unanswered::Overloaded),
        Err(SearchError::Lost(_)) => return Err(Unanswered::Lost),
    };
    match Document::of(&served) {
        Document::Found(found) => Ok((served, found)),
        Document::AllFailed(upstreams) => Err(Unanswered::AllFailed(upstreams)),
    }
}

/// The headers that say how a search was answered: `X-Cache`, `X-Cache-Tier` (a hit from the
/// shared tier) and `X-Gateway-Outcome`. Every surface that answers over HTTP sets them.
/// (Names as constants: a `&str` name is parsed again on every insert.)
pub(crate) fn set_served_headers(headers: &mut axum::http::HeaderMap, served: &Served) {
    use axum::http::{HeaderName, HeaderValue};
    const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
    const X_CACHE_TIER: HeaderName = HeaderName::from_static("x-cache-tier");
    const X_GATEWAY_OUTCOME: HeaderName = HeaderName::from_static("x-gateway-outcome");
    headers.insert(X_CACHE, HeaderValue::from_static(served.cache.as_str()));
    if let Some(tier) = served.cache.tier() {
        headers.insert(X_CACHE_TIER, HeaderValue::from_static(tier.as_str()));
    }
    headers.insert(
        X_GATEWAY_OUTCOME,
        HeaderValue::from_static(served.outcome.as_str()),
    );
}

/// The log line of a search a surface refused before asking the pipeline.
pub(crate) fn log_refused(surface: Surface, code: &'static str) {
    tracing::info!(surface = surface.as_str(), error = code, "search refused");
    trace::record_error(&Span::current(), SpanError::Refused(code));
}
