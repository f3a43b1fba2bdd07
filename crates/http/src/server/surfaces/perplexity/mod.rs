//! The Perplexity-compatible search: `POST /perplexity/search`, Perplexity's Search API request and
//! answer, so `Perplexity(base_url="http://gateway:8080/perplexity")` (the perplexityai SDK), Open
//! WebUI's `perplexity_search` engine with `PERPLEXITY_SEARCH_API_URL`, and LiteLLM-style clients
//! of the same shape search through the gateway with only their URL changed.
//!
//! Request: `query` (a string, or a list of 1–5: each answered by its own search, at once, in
//! order); `max_results` (1–20, default 10); `search_domain_filter` (at most 20 domains, a leading
//! `-` excludes: the search's domain filter); `search_recency_filter` (`hour` and `day` → the last
//! day, `week`, `month`, `year`); `search_after_date_filter` / `search_before_date_filter`
//! (`M/D/YYYY`: the after date becomes the shortest time range reaching back to it, and both drop
//! results whose date is known to lie outside them); `search_language_filter` (one language →
//! SearXNG's language) with `country` (`en` and `US` → `en-US`); `max_tokens_per_page` (each
//! result returned is read as text and its snippet is the page's passages that best answer the
//! query, the best first, within that many tokens of `TOKENIZER_ENCODING`); `max_tokens` (the
//! snippets of one query together, the first results first, cut at a word). Harmless and taken: `display_server_time`, `search_context_size`, `search_mode: "web"`,
//! `search_type: "web"`. Refused by name: `search_mode` `academic` or `sec`, `search_type:
//! "people"`, the `last_updated_*` filters (the gateway does not know when a page last changed),
//! more than one language in `search_language_filter`, and any field Perplexity's API does not
//! have.
//!
//! Answer: `{"id", "results": [{"title", "url", "snippet", "date", "last_updated"}],
//! "server_time"}` — `results` is one list per query when `query` was a list, as Perplexity
//! answers; `date` is the result's publication day (`YYYY-MM-DD`) when its source gave one.
//!
//! Errors are Perplexity's `{"error": {"message", "type", "code"}}`: 400 for a body or field the
//! gateway cannot read, 401 without a key (Perplexity's API needs one; an open gateway takes any
//! non-blank key) or with a wrong one, 429 over the client's rate or when every upstream was
//! rate-limited, 502 when every upstream failed otherwise (naming each upstream and its error
//! class, never an upstream's body) — sent with `x-should-retry: false`, since the SDK would
//! otherwise ask again at once —, 503 with `Retry-After` when the gateway sheds load.
//!
//! Here: the route, the error shape and the handler; [`ask`] reads the request and shapes the
//! results, [`snippets`] holds the token budgets.

mod ask;
mod snippets;

use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::json_fields;
use crate::server::kit::refusal::{self, json_response, Door, OwnRefusal, Refusal};
use crate::server::kit::search_call;
use crate::server::kit::search_read;
use ask::Ask;
use gateway_core::request::{SearchRequest, Surface};

/// Where the search is served; clients use `…/perplexity` as their base URL.
pub(crate) const PATH: &str = "/perplexity/search";

/// Perplexity's limits.
const MAX_QUERIES: usize = 5;
const MAX_RESULTS: u32 = 20;
const DEFAULT_RESULTS: u32 = 10;
const MAX_DOMAINS: usize = 20;

/// The route, behind the gate with Perplexity's refusals.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(
            PATH,
            post(search).fallback(refusal::wrong_method::<Perplexity>),
        )
        .layer(crate::server::transport::search_span::TRACED)
        .layer(gate.layer(Perplexity))
}

/// Perplexity's error shape: `{"error": {"message", "type", "code"}}`; the gate's refusals are
/// `AuthenticationError` and `RateLimitError` in the SDK.
#[derive(Debug, Clone, Copy)]
struct Perplexity;

/// What a Perplexity client gets instead of results.
type PerplexityError = Refusal<Perplexity>;

/// What only this door refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PerplexityOwn {
    /// A field Perplexity has that this gateway cannot honour (or one it does not have).
    #[error("{0} is not supported by this gateway")]
    Unsupported(String),
}

impl OwnRefusal for PerplexityOwn {
    fn code(&self) -> &'static str {
        "unsupported_option"
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for Perplexity {
    type Own = PerplexityOwn;
    const KEY_IN_BODY: bool = false;

    fn body(_refusal: &PerplexityError, status: StatusCode, message: String) -> Value {
        json!({"error": {"message": message, "type": kind(status), "code": status.as_u16()}})
    }

    fn words(refusal: &PerplexityError) -> Option<String> {
        matches!(refusal, Refusal::MissingKey)
            .then(|| "an API key is required (Authorization: Bearer KEY)".to_owned())
    }

    /// `x-should-retry: false` where asking again at once cannot help (the SDK would).
    fn decorate(refusal: &PerplexityError, headers: &mut HeaderMap) {
        const SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");
        if matches!(
            refusal,
            Refusal::AllUpstreamsFailed(_) | Refusal::Internal | Refusal::Body(_)
        ) {
            headers.insert(SHOULD_RETRY, HeaderValue::from_static("false"));
        }
    }
}

/// Perplexity's `error.type` for a status.
fn kind(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
        s if s.is_client_error() => "invalid_request_error",
        _ => "api_error",
    }
}

/// `POST /perplexity/search`.
async fn search(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    let (ask, requests) = match read_request(&gateway, &admitted, &headers, body) {
        Ok(request) => request,
        Err(err) => {
            search_call::log_refused(Surface::Perplexity, err.code());
            return err.into_response();
        }
    };
    let searched =
        match search_read::search_all(&gateway, Surface::Perplexity, requests, &admitted).await {
            Ok(searched) => searched,
            Err(unanswered) => return PerplexityError::from(unanswered).into_response(),
        };
    let mut lists: Vec<_> = searched
        .found
        .into_iter()
        .map(|found| ask.results(found.hits))
        .collect();
    if let Some(tokens) = ask.tokens_per_page {
        let budget = search_read::budget_left(&gateway, started, None);
        for (list, query) in lists.iter_mut().zip(&ask.queries) {
            snippets::read_into(&gateway, &admitted, list, query, tokens, budget).await;
        }
    }
    if let Some(tokens) = ask.tokens {
        for list in &mut lists {
            snippets::share_tokens(gateway.passages(), list, tokens);
        }
    }
    let results = if ask.listed {
        Value::from(lists.into_iter().map(Value::from).collect::<Vec<_>>())
    } else {
        Value::from(lists.into_iter().next().unwrap_or_default())
    };
    let id = if admitted.request_id.as_str().is_empty() {
        uuid::Uuid::new_v4().to_string()
    } else {
        admitted.request_id.as_str().to_owned()
    };
    let body = json!({"id": id, "results": results, "server_time": Value::Null});
    let mut response = json_response(StatusCode::OK, body.to_string());
    if let Some(served) = &searched.first {
        search_call::set_served_headers(response.headers_mut(), served);
    }
    response
}

/// The body read into the ask and its searches; Perplexity's API needs a key, so an anonymous
/// caller of an open gateway must still carry one.
fn read_request(
    gateway: &Gateway,
    admitted: &Admitted,
    headers: &HeaderMap,
    body: Result<axum::body::Bytes, crate::server::kit::body::BodyError>,
) -> Result<(Ask, Vec<SearchRequest>), PerplexityError> {
    let fields = json_fields::object(&body?).ok_or(Refusal::NotJson)?;
    if !admitted.clients.requires_keys() && !refusal::bearer_key(headers) {
        return Err(Refusal::MissingKey);
    }
    let ask = Ask::read(&fields)?;
    let requests = ask.requests(gateway.server().max_query_bytes)?;
    Ok((ask, requests))
}

/// A body through the decoder and validation, and the reply over a hit at each of `urls`, for
/// the fuzz target: the results of the first query, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8], urls: &[&str]) -> Result<usize, StatusCode> {
    let refused = |err: PerplexityError| err.into_response().status();
    let fields = json_fields::object(body)
        .ok_or(Refusal::NotJson)
        .map_err(refused)?;
    let ask = Ask::read(&fields).map_err(refused)?;
    for req in ask.requests(2048).map_err(refused)? {
        let _ = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
    }
    let hits = urls
        .iter()
        .map(|url| crate::server::kit::document::Hit {
            url: (*url).to_owned(),
            title: "t".to_owned(),
            content: "a snippet of some words".to_owned(),
            engines: Vec::new(),
            published_date: Some("2026-11-30T08:00:00".to_owned()),
        })
        .collect();
    let mut results = ask.results(hits);
    if let Some(tokens) = ask.tokens {
        let selector = gateway_engine::read::passages::PassageSelector::new(
            gateway_engine::settings::TokenizerEncoding::O200kBase,
        );
        snippets::share_tokens(selector, &mut results, tokens);
    }
    assert!(results.len() <= ask.max_results);
    Ok(results.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::kit::document::FailedUpstream;
    use gateway_core::upstream::ErrorClass;

    #[test]
    fn errors_are_perplexitys_shape_and_do_not_invite_a_retry_storm() {
        let response = PerplexityError::AllUpstreamsFailed(vec![FailedUpstream {
            name: "searxng".into(),
            error_class: ErrorClass::Timeout.into(),
        }])
        .into_response();
        assert_eq!(response.status(), 502);
        assert_eq!(response.headers()["x-should-retry"], "false");
        for (error, status, kind) in [
            (PerplexityError::MissingKey, 401, "authentication_error"),
            (PerplexityError::NotJson, 400, "invalid_request_error"),
            (PerplexityError::RateLimited(1), 429, "rate_limit_error"),
            (PerplexityError::Overloaded, 503, "api_error"),
        ] {
            assert_eq!(self::kind(error.status()), kind);
            assert_eq!(error.into_response().status().as_u16(), status);
        }
    }
}
