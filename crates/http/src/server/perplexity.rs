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
//! result returned is read as text and its snippet is the page's text cut to about that many
//! tokens, four characters a token); `max_tokens` (the snippets of one query together, the same
//! way). `search_mode`, `search_context_size`, `last_updated_*` and every other field are accepted
//! and ignored.
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

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::auth::{Admitted, Gate, Refusals, Refused};
use super::body::{self, BodyError};
use super::document::{FailedUpstream, Hit};
use super::error::RETRY_AFTER_SECONDS;
use super::json_fields::{self, field, number_in, InvalidField};
use super::read_call::{self, Asked};
use super::search_call::{self, Unanswered};
use crate::gateway::Gateway;
use gateway_core::request::{
    DomainFilter, ReadFormat, RequestError, SearchInput, SearchRequest, Surface, TimeRange,
};
use gateway_engine::pipeline::read::Depth;
use gateway_engine::pipeline::Served;

/// Where the search is served; clients use `…/perplexity` as their base URL.
pub(super) const PATH: &str = "/perplexity/search";

/// Perplexity's limits.
const MAX_QUERIES: usize = 5;
const MAX_RESULTS: u32 = 20;
const DEFAULT_RESULTS: u32 = 10;
const MAX_DOMAINS: usize = 20;
/// Characters a token is taken to be (the usual rule of thumb for English text).
const CHARS_PER_TOKEN: usize = 4;

/// The route, behind the gate with Perplexity's refusals.
pub(super) fn routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(PATH, post(search).fallback(wrong_method))
        .layer(super::search_span::TracedLayer)
        .layer(gate.layer(PerplexityRefusals))
}

/// What a Perplexity client gets instead of results.
#[derive(Debug, thiserror::Error)]
enum PerplexityError {
    #[error(transparent)]
    Body(#[from] BodyError),
    #[error("the body must be a JSON object")]
    NotJson,
    #[error("an API key is required (Authorization: Bearer KEY)")]
    MissingKey,
    #[error(transparent)]
    InvalidField(#[from] InvalidField),
    #[error("{}", .0.message_naming_query("query"))]
    Request(#[from] RequestError),
    #[error("every upstream failed: {}", FailedUpstream::list(.0))]
    AllUpstreamsFailed(Vec<FailedUpstream>),
    #[error("the gateway is at capacity; retry after {RETRY_AFTER_SECONDS} s")]
    Overloaded,
    #[error("the gateway failed to compute an answer")]
    Internal,
    #[error("method not allowed: use POST")]
    WrongMethod,
    #[error("{0}")]
    Unauthorized(&'static str),
    #[error("too many requests; retry after {0} s")]
    RateLimited(u64),
}

impl PerplexityError {
    fn code(&self) -> &'static str {
        match self {
            Self::Body(_) => "unreadable_body",
            Self::NotJson => "not_json",
            Self::MissingKey | Self::Unauthorized(_) => "unauthorized",
            Self::InvalidField(_) => "invalid_field",
            Self::Request(err) => err.code(),
            Self::AllUpstreamsFailed(_) => "all_upstreams_failed",
            Self::Overloaded => "overloaded",
            Self::Internal => "internal_error",
            Self::WrongMethod => "method_not_allowed",
            Self::RateLimited(_) => "rate_limited",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Body(BodyError::TooLarge(_)) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Body(BodyError::Timeout(_)) => StatusCode::REQUEST_TIMEOUT,
            Self::Body(BodyError::Unreadable)
            | Self::NotJson
            | Self::InvalidField(_)
            | Self::Request(_) => StatusCode::BAD_REQUEST,
            Self::MissingKey | Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::AllUpstreamsFailed(upstreams)
                if FailedUpstream::all_told_to_slow_down(upstreams) =>
            {
                StatusCode::TOO_MANY_REQUESTS
            }
            Self::AllUpstreamsFailed(_) => StatusCode::BAD_GATEWAY,
            Self::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    /// Perplexity's `error.type`.
    fn kind(&self) -> &'static str {
        match self.status() {
            StatusCode::UNAUTHORIZED => "authentication_error",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            s if s.is_client_error() => "invalid_request_error",
            _ => "api_error",
        }
    }
}

impl From<Unanswered> for PerplexityError {
    fn from(unanswered: Unanswered) -> Self {
        match unanswered {
            Unanswered::Overloaded => Self::Overloaded,
            Unanswered::Lost => Self::Internal,
            Unanswered::AllFailed(upstreams) => Self::AllUpstreamsFailed(upstreams),
        }
    }
}

impl IntoResponse for PerplexityError {
    fn into_response(self) -> Response {
        const SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");
        let status = self.status();
        let body = json!({"error": {
            "message": self.to_string(),
            "type": self.kind(),
            "code": status.as_u16(),
        }});
        let mut response = json_response(status, body.to_string());
        if let Self::Body(err) = &self {
            err.mark(&mut response);
        }
        let headers = response.headers_mut();
        match self {
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            Self::RateLimited(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            Self::MissingKey | Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::AllUpstreamsFailed(_) | Self::Internal | Self::Body(_) => {
                headers.insert(SHOULD_RETRY, HeaderValue::from_static("false"));
            }
            _ => {}
        }
        response
    }
}

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn wrong_method() -> Response {
    PerplexityError::WrongMethod.into_response()
}

/// The gate's refusals in Perplexity's shape (`AuthenticationError`, `RateLimitError`).
#[derive(Debug, Clone, Copy)]
struct PerplexityRefusals;

impl Refusals for PerplexityRefusals {
    const KEY_IN_BODY: bool = false;

    fn refused(&self, refused: Refused) -> Response {
        match refused {
            Refused::Unauthorized(why) => PerplexityError::Unauthorized(why.message()),
            Refused::RateLimited(limited) => {
                PerplexityError::RateLimited(limited.retry_after_seconds())
            }
        }
        .into_response()
    }

    fn unreadable(&self, err: BodyError) -> Response {
        PerplexityError::Body(err).into_response()
    }
}

/// `query`: one or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Queries {
    One(String),
    Many(Vec<String>),
}

/// `search_recency_filter`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Recency {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// A search request, read and checked (the queries not yet validated).
#[derive(Debug, Clone)]
struct Ask {
    queries: Vec<String>,
    /// Whether `query` was a list (the answer is then one list per query).
    listed: bool,
    input: SearchInput,
    max_results: usize,
    after: Option<String>,
    before: Option<String>,
    tokens_per_page: Option<usize>,
    tokens: Option<usize>,
}

/// `POST /perplexity/search`.
async fn search(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let (ask, requests) = match read_request(&gateway, &admitted, &headers, body).await {
        Ok(request) => request,
        Err(err) => {
            search_call::log_refused(Surface::Perplexity, err.code());
            return err.into_response();
        }
    };
    let answers = futures::future::join_all(
        requests
            .into_iter()
            .map(|req| search_call::found(&gateway, Surface::Perplexity, req, &admitted)),
    )
    .await;
    let mut lists = Vec::new();
    let mut first: Option<Served> = None;
    for answer in answers {
        match answer {
            Ok((served, found)) => {
                first.get_or_insert(served);
                lists.push(ask.results(found.hits));
            }
            Err(unanswered) => return PerplexityError::from(unanswered).into_response(),
        }
    }
    if let Some(tokens) = ask.tokens_per_page {
        let budget = gateway
            .settings()
            .request_budget
            .saturating_sub(started.elapsed());
        for list in &mut lists {
            read_snippets(&gateway, &admitted, list, tokens, budget).await;
        }
    }
    if let Some(tokens) = ask.tokens {
        for list in &mut lists {
            share_tokens(list, tokens);
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
    if let Some(served) = &first {
        search_call::set_served_headers(response.headers_mut(), served);
    }
    response
}

/// Each result read as text, its snippet the page's text cut to about `tokens` tokens (the
/// search's snippet stays when the page could not be read).
async fn read_snippets(
    gateway: &Gateway,
    admitted: &Admitted,
    list: &mut [Map<String, Value>],
    tokens: usize,
    budget: Duration,
) {
    let asked: Vec<Asked> = list
        .iter()
        .map(|r| Asked::new(r.get("url").and_then(Value::as_str).unwrap_or("")))
        .collect();
    let reads = read_call::many(
        gateway,
        admitted,
        &asked,
        ReadFormat::Text,
        Depth::Basic,
        budget,
    )
    .await;
    for (result, read) in list.iter_mut().zip(reads) {
        if let Some(Ok(done)) = read.map(|r| r.result) {
            let text = cut(&done.document.content, tokens * CHARS_PER_TOKEN);
            result.insert("snippet".into(), Value::from(text));
        }
    }
}

/// The snippets of one list cut so that together they hold about `tokens` tokens, the first
/// results first.
fn share_tokens(list: &mut [Map<String, Value>], tokens: usize) {
    let mut left = tokens * CHARS_PER_TOKEN;
    for result in list {
        let snippet = result
            .get("snippet")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let kept = cut(&snippet, left);
        left = left.saturating_sub(kept.len());
        result.insert("snippet".into(), Value::from(kept));
    }
}

/// `text` cut to at most `max` bytes, at the last whitespace before the cut when there is one.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    head.rfind(char::is_whitespace)
        .filter(|&at| at > 0)
        .map_or(head, |at| &head[..at])
        .trim_end()
        .to_owned()
}

async fn read_request(
    gateway: &Gateway,
    admitted: &Admitted,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Ask, Vec<SearchRequest>), PerplexityError> {
    let body = body::read(&gateway.server().server_limits, headers, body).await?;
    let fields = json_fields::object(&body).ok_or(PerplexityError::NotJson)?;
    if !admitted.clients.requires_keys() && !carries_key(headers) {
        return Err(PerplexityError::MissingKey);
    }
    let ask = Ask::read(&fields)?;
    let max_query_bytes = gateway.server().max_query_bytes;
    let requests = ask
        .queries
        .iter()
        .map(|query| {
            SearchRequest::new(
                SearchInput {
                    query: query.clone(),
                    ..ask.input.clone()
                },
                max_query_bytes,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ask, requests))
}

/// A body through the decoder and validation, and the reply over a hit at each of `urls`, for
/// the fuzz target: the results of the first query, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(super) fn exercise(body: &[u8], urls: &[&str]) -> Result<usize, StatusCode> {
    let refused = |err: PerplexityError| err.into_response().status();
    let fields = json_fields::object(body)
        .ok_or(PerplexityError::NotJson)
        .map_err(refused)?;
    let ask = Ask::read(&fields).map_err(refused)?;
    for query in &ask.queries {
        let input = SearchInput {
            query: query.clone(),
            ..ask.input.clone()
        };
        let req = SearchRequest::new(input, 2048).map_err(|err| refused(err.into()))?;
        let _ = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
    }
    let hits = urls
        .iter()
        .map(|url| Hit {
            url: (*url).to_owned(),
            title: "t".to_owned(),
            content: "a snippet of some words".to_owned(),
            engines: Vec::new(),
            published_date: Some("2026-11-30T08:00:00".to_owned()),
        })
        .collect();
    let mut results = ask.results(hits);
    if let Some(tokens) = ask.tokens {
        share_tokens(&mut results, tokens);
    }
    assert!(results.len() <= ask.max_results);
    Ok(results.len())
}

/// A non-blank `Authorization: Bearer` key.
fn carries_key(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer"))
        .is_some_and(|key| !key.trim().is_empty())
}

impl Ask {
    fn read(fields: &Map<String, Value>) -> Result<Self, PerplexityError> {
        const QUERY: InvalidField = InvalidField {
            name: "query",
            expected: "a string or a list of 1 to 5 strings",
        };
        let (queries, listed) = match field::<Queries>(fields, "query", QUERY.expected)? {
            None => (vec![String::new()], false),
            Some(Queries::One(query)) => (vec![query], false),
            Some(Queries::Many(queries)) if (1..=MAX_QUERIES).contains(&queries.len()) => {
                (queries, true)
            }
            Some(Queries::Many(_)) => return Err(QUERY.into()),
        };
        let max_results = number_in(
            fields,
            "max_results",
            1..=MAX_RESULTS,
            "an integer from 1 to 20",
        )?
        .unwrap_or(DEFAULT_RESULTS) as usize;
        let domains = match field::<Vec<String>>(
            fields,
            "search_domain_filter",
            "a list of at most 20 domains",
        )? {
            None => DomainFilter::default(),
            Some(list) if list.len() > MAX_DOMAINS => {
                return Err(InvalidField {
                    name: "search_domain_filter",
                    expected: "a list of at most 20 domains",
                }
                .into())
            }
            Some(list) => DomainFilter::signed(&list).map_err(|_| InvalidField {
                name: "search_domain_filter",
                expected: "a list of at most 20 domains",
            })?,
        };
        let recency = field::<Recency>(
            fields,
            "search_recency_filter",
            "hour, day, week, month or year",
        )?
        .map(|r| match r {
            Recency::Hour | Recency::Day => TimeRange::Day,
            Recency::Week => TimeRange::Week,
            Recency::Month => TimeRange::Month,
            Recency::Year => TimeRange::Year,
        });
        let after = date_field(fields, "search_after_date_filter")?;
        let before = date_field(fields, "search_before_date_filter")?;
        let since_after = after.as_deref().and_then(days_since).map(|days| {
            (days <= TimeRange::Year.days()).then(|| TimeRange::covering_days(days.max(1)))
        });
        let time_range = recency.or(since_after.flatten());
        let languages: Vec<String> = field(
            fields,
            "search_language_filter",
            "a list of language codes such as en",
        )?
        .unwrap_or_default();
        let country: Option<String> = field(fields, "country", "a country code such as US")?;
        let language = match (languages.as_slice(), country) {
            ([one], Some(country)) if country.trim().len() == 2 => Some(format!(
                "{}-{}",
                one.trim().to_ascii_lowercase(),
                country.trim().to_ascii_uppercase()
            )),
            ([one], _) => Some(one.trim().to_ascii_lowercase()),
            _ => None,
        };
        let tokens = |name: &'static str| {
            number_in(fields, name, 1..=1_000_000, "a positive integer")
                .map(|n| n.map(|n| n as usize))
        };
        Ok(Self {
            queries,
            listed,
            input: SearchInput {
                time_range,
                language,
                domains,
                ..SearchInput::default()
            },
            max_results,
            after,
            before,
            tokens_per_page: tokens("max_tokens_per_page")?,
            tokens: tokens("max_tokens")?,
        })
    }

    /// A query's results in Perplexity's shape, the date filters applied where dates are known.
    fn results(&self, hits: Vec<Hit>) -> Vec<Map<String, Value>> {
        hits.into_iter()
            .filter_map(|hit| {
                let day = hit.published_date.as_deref().and_then(day_of);
                if let Some(day) = &day {
                    let outside = self.after.as_ref().is_some_and(|after| day < after)
                        || self.before.as_ref().is_some_and(|before| day > before);
                    if outside {
                        return None;
                    }
                }
                let mut result = Map::new();
                result.insert("title".into(), Value::from(hit.title));
                result.insert("url".into(), Value::from(hit.url));
                result.insert("snippet".into(), Value::from(hit.content));
                result.insert("date".into(), day.map_or(Value::Null, Value::from));
                result.insert("last_updated".into(), Value::Null);
                Some(result)
            })
            .take(self.max_results)
            .collect()
    }
}

/// A `M/D/YYYY` date field, as `YYYY-MM-DD` (which orders as text).
fn date_field(
    fields: &Map<String, Value>,
    name: &'static str,
) -> Result<Option<String>, InvalidField> {
    let invalid = InvalidField {
        name,
        expected: "a date as M/D/YYYY",
    };
    let Some(raw) = field::<String>(fields, name, invalid.expected)? else {
        return Ok(None);
    };
    let mut parts = raw.trim().split('/').map(|p| p.trim().parse::<u32>().ok());
    let (Some(Some(month)), Some(Some(day)), Some(Some(year)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid);
    };
    let iso = format!("{year:04}-{month:02}-{day:02}");
    humantime::parse_rfc3339(&format!("{iso}T00:00:00Z")).map_err(|_| invalid)?;
    Ok(Some(iso))
}

/// Days from `YYYY-MM-DD` to today.
fn days_since(iso: &str) -> Option<u32> {
    let start = humantime::parse_rfc3339(&format!("{iso}T00:00:00Z")).ok()?;
    let elapsed = std::time::SystemTime::now()
        .duration_since(start)
        .unwrap_or_default();
    u32::try_from(elapsed.as_secs() / 86_400).ok()
}

/// The day of a source's publication date (`2026-11-30T08:00:00`, `2026-11-30 08:00`, …).
fn day_of(date: &str) -> Option<String> {
    let day = date.trim().get(..10)?;
    let b = day.as_bytes();
    let shaped =
        b[4] == b'-' && b[7] == b'-' && day.chars().filter(char::is_ascii_digit).count() == 8;
    shaped.then(|| day.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn hit(url: &str, date: Option<&str>) -> Hit {
        Hit {
            url: url.into(),
            title: "t".into(),
            content: "c".into(),
            engines: vec![],
            published_date: date.map(str::to_owned),
        }
    }

    #[test]
    fn reads_what_the_sdk_and_open_webui_send() {
        let ask = Ask::read(&fields(json!({"query": "rust", "max_results": 3}))).unwrap();
        assert_eq!(ask.queries, ["rust"]);
        assert!(!ask.listed);
        assert_eq!(ask.max_results, 3);
        let many = Ask::read(&fields(json!({"query": ["a", "b"],
            "search_domain_filter": ["docs.rs", "-pinterest.com"],
            "search_recency_filter": "hour", "search_language_filter": ["de"], "country": "ch",
            "max_tokens_per_page": 512, "search_mode": "web"})))
        .unwrap();
        assert!(many.listed);
        assert_eq!(many.queries, ["a", "b"]);
        assert_eq!(many.input.time_range, Some(TimeRange::Day));
        assert_eq!(many.input.language.as_deref(), Some("de-CH"));
        assert_eq!(
            many.input.domains,
            DomainFilter::new(&["docs.rs"], &["pinterest.com"]).unwrap()
        );
        assert_eq!(many.tokens_per_page, Some(512));
        assert_eq!(
            Ask::read(&fields(json!({"query": "q"})))
                .unwrap()
                .max_results,
            10
        );
    }

    #[test]
    fn a_bad_field_is_named() {
        for (body, name) in [
            (json!({"query": ["a", "b", "c", "d", "e", "f"]}), "query"),
            (json!({"query": []}), "query"),
            (json!({"query": 3}), "query"),
            (json!({"query": "q", "max_results": 21}), "max_results"),
            (
                json!({"query": "q", "search_recency_filter": "decade"}),
                "search_recency_filter",
            ),
            (
                json!({"query": "q", "search_after_date_filter": "2026-01-01"}),
                "search_after_date_filter",
            ),
            (
                json!({"query": "q", "search_before_date_filter": "13/45/2026"}),
                "search_before_date_filter",
            ),
            (
                json!({"query": "q", "search_domain_filter": ["a b"]}),
                "search_domain_filter",
            ),
            (
                json!({"query": "q", "max_tokens_per_page": 0}),
                "max_tokens_per_page",
            ),
        ] {
            match Ask::read(&fields(body.clone())) {
                Err(PerplexityError::InvalidField(InvalidField { name: got, .. })) => {
                    assert_eq!(got, name, "{body}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn dates_filter_results_whose_day_is_known_and_map_to_a_range() {
        let ask = Ask::read(&fields(json!({"query": "q",
            "search_after_date_filter": "3/1/2026", "search_before_date_filter": "3/31/2026"})))
        .unwrap();
        assert_eq!(ask.after.as_deref(), Some("2026-03-01"));
        let results = ask.results(vec![
            hit("https://a.example/", Some("2026-02-27T10:00:00")),
            hit("https://b.example/", Some("2026-03-15 08:00")),
            hit("https://c.example/", None),
            hit("https://d.example/", Some("2026-04-02")),
        ]);
        let urls: Vec<&str> = results.iter().map(|r| r["url"].as_str().unwrap()).collect();
        assert_eq!(urls, ["https://b.example/", "https://c.example/"]);
        assert_eq!(results[0]["date"], "2026-03-15");
        assert_eq!(results[1]["date"], Value::Null);
        let recent = std::time::SystemTime::now() - Duration::from_secs(3 * 86_400);
        let iso = humantime::format_rfc3339(recent).to_string();
        let date = format!("{}/{}/{}", &iso[5..7], &iso[8..10], &iso[0..4]);
        let ask = Ask::read(&fields(
            json!({"query": "q", "search_after_date_filter": date}),
        ))
        .unwrap();
        assert_eq!(ask.input.time_range, Some(TimeRange::Week));
    }

    #[test]
    fn text_is_cut_at_a_word_within_the_tokens() {
        assert_eq!(cut("one two three four", 9), "one two");
        assert_eq!(cut("short", 100), "short");
        assert_eq!(cut("ééééé", 3), "é");
        let mut list = vec![
            fields(json!({"snippet": "aaaa bbbb cccc"})),
            fields(json!({"snippet": "dddd eeee"})),
        ];
        share_tokens(&mut list, 3);
        assert_eq!(list[0]["snippet"], "aaaa bbbb");
        assert_eq!(
            list[1]["snippet"], "ddd",
            "a word longer than what is left is cut"
        );
    }

    #[test]
    fn errors_are_perplexitys_shape_and_do_not_invite_a_retry_storm() {
        let response = PerplexityError::AllUpstreamsFailed(vec![FailedUpstream {
            name: "searxng".into(),
            error_class: "timeout".into(),
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
            assert_eq!(error.kind(), kind);
            assert_eq!(error.into_response().status().as_u16(), status);
        }
    }
}
