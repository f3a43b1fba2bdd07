//! The Tavily-compatible surface: `POST /tavily/search` ([`search`]), `POST /tavily/extract`
//! ([`extract`]), `POST /tavily/crawl` and `POST /tavily/map` ([`crawl`]) take Tavily's requests and answer Tavily's response shapes, so
//! `TavilyClient(api_base_url="http://gateway:8080/tavily")` and the tools built on it
//! (LangChain's, Open WebUI's) search and read through the gateway unmodified.
//!
//! This file holds what both share: the routes behind the gate with Tavily's refusals, the error
//! shape, and the key a request must carry.
//!
//! Errors are Tavily's `{"detail": {"error": "…"}}`, with the statuses tavily-python turns into its
//! own exceptions: 400 (`BadRequestError`) for a missing or blank query or URL list, a field of the
//! wrong type or value, or a body that is not a JSON object; 401 (`InvalidAPIKeyError`) for a
//! request that carries no key at all; 429 (`UsageLimitExceededError`) when every upstream failed
//! because it was rate-limited or out of quota; 502 when every upstream failed otherwise (naming
//! each upstream and its error class, never an upstream's body); 413 for a body over the size
//! limit, 408 for one that did not arrive in time; 503 with `Retry-After` when the gateway sheds
//! load.
//!
//! Keys: Tavily's API needs one, and so does this surface — `Authorization: Bearer <key>` or
//! `api_key` in the body. With `API_KEYS_FILE` the key is checked in front of every surface
//! ([`crate::server::kit::gate`]: 401 for a wrong one, 429 with `Retry-After` over the client's rate); on an
//! open gateway any non-blank key is accepted, and tavily-python without a key (its keyless mode)
//! gets 401.

mod chunks;
mod crawl;
mod extract;
mod search;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::gateway::Gateway;
use crate::server::kit::gate::Gate;
use crate::server::kit::refusal::{self, Door, OwnRefusal, Refusal};
use crate::server::transport::search_span;

/// Where the Tavily search API is served; clients use its parent (`…/tavily`) as their base URL.
pub(crate) const PATH: &str = "/tavily/search";
/// A body through Tavily's crawl and map decoders, for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise_crawl(body: &[u8]) -> Result<usize, StatusCode> {
    crawl::exercise(body)
}

/// Where Tavily's crawl is served.
pub(crate) const CRAWL_PATH: &str = "/tavily/crawl";
/// Where Tavily's map is served.
pub(crate) const MAP_PATH: &str = "/tavily/map";
/// Where the Tavily extract API is served.
pub(crate) const EXTRACT_PATH: &str = "/tavily/extract";

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use search::exercise;

/// Tavily's limit of URLs per extract call.
const MAX_URLS: usize = 20;

/// `POST /tavily/search` (each search in its span) and `POST /tavily/extract`, behind the gate with
/// Tavily's refusals.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    let wrong_method = refusal::wrong_method::<Tavily>;
    let crawl = |answer: crawl::Answer| {
        post(
            move |state: axum::extract::State<Gateway>,
                  admitted: axum::extract::Extension<crate::server::kit::gate::Admitted>,
                  headers: HeaderMap,
                  body: crate::server::kit::body::LimitedBody| {
                crawl::crawl(answer, state, admitted, headers, body)
            },
        )
        .fallback(wrong_method)
    };
    Router::new()
        .route(PATH, post(search::search).fallback(wrong_method))
        .layer(search_span::TRACED)
        .route(EXTRACT_PATH, post(extract::extract).fallback(wrong_method))
        .route(CRAWL_PATH, crawl(crawl::Answer::Crawl))
        .route(MAP_PATH, crawl(crawl::Answer::Map))
        .layer(gate.layer(Tavily))
}

/// Tavily's error shape, `{"detail": {"error": "…"}}` (with the failed upstreams where every one
/// failed); the gate's refusals are `InvalidAPIKeyError` and `UsageLimitExceededError` in
/// tavily-python, and a key may ride in the JSON body as `api_key`, as Tavily's API accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tavily;

/// What a Tavily client gets instead of results.
pub(crate) type TavilyError = Refusal<Tavily>;

/// The refusals only Tavily's API has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TavilyOwn {
    /// `urls` is missing, empty or not strings.
    #[error("Invalid urls: give a URL or a list of 1 to {MAX_URLS} URLs")]
    NoUrls,
    /// More URLs than Tavily takes in one call.
    #[error("Too many urls: at most {MAX_URLS} per request")]
    TooManyUrls,
    /// `?explain=` other than 0 or 1.
    #[error("Invalid explain: must be 0 or 1")]
    InvalidExplain,
    /// `chunks_per_source` without a `query` to choose the chunks by.
    #[error("Invalid chunks_per_source: it is only available when query is provided")]
    ChunksWithoutQuery,
    /// A field Tavily has that this gateway cannot honour (or one Tavily does not have).
    #[error("{0} is not supported by this gateway")]
    Unsupported(String),
}

impl OwnRefusal for TavilyOwn {
    fn code(&self) -> &'static str {
        match self {
            Self::NoUrls | Self::TooManyUrls => "invalid_urls",
            Self::InvalidExplain | Self::ChunksWithoutQuery => "invalid_field",
            Self::Unsupported(_) => "unsupported_option",
        }
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for Tavily {
    type Own = TavilyOwn;
    const KEY_IN_BODY: bool = true;

    fn body(refusal: &TavilyError, _status: StatusCode, message: String) -> Value {
        let mut detail = Map::new();
        detail.insert("error".into(), Value::String(message));
        if let Some(listed) = refusal.failed_upstreams() {
            detail.insert("upstreams".into(), listed);
        }
        json!({ "detail": detail })
    }

    /// Tavily's own words where tavily-python's users match on them.
    fn words(refusal: &TavilyError) -> Option<String> {
        match refusal {
            Refusal::NotJson => Some("Invalid request body: expected a JSON object".to_owned()),
            Refusal::MissingKey => Some("Unauthorized: missing or invalid API key.".to_owned()),
            Refusal::Unauthorized(why) => Some(format!("Unauthorized: {why}")),
            Refusal::RateLimited(seconds) => {
                Some(format!("Too many requests: retry after {seconds} s"))
            }
            _ => None,
        }
    }
}

/// A non-blank `Authorization: Bearer` key or `api_key` in the body: Tavily's API needs a key, so
/// an anonymous caller of an open gateway must still carry one (the gate checks keys when they
/// are required).
pub(crate) fn carries_key(headers: &HeaderMap, fields: &Map<String, Value>) -> bool {
    let in_body = fields
        .get("api_key")
        .and_then(Value::as_str)
        .is_some_and(|key| !key.trim().is_empty());
    refusal::bearer_key(headers) || in_body
}
