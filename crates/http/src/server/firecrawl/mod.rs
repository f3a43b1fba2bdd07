//! The Firecrawl-compatible surface: search ([`search`]) and scrape ([`scrape`]) in Firecrawl's
//! request and response shapes, both versions, so `Firecrawl(api_url="http://gateway:8080/firecrawl")`
//! (firecrawl-py's v2 client), `V1FirecrawlApp(api_url=…)` and the agent tools built on them search
//! and read through the gateway with only their URL changed.
//!
//! Routes: `POST /firecrawl/v1/search`, `/firecrawl/v2/search`, `/firecrawl/v1/scrape`,
//! `/firecrawl/v2/scrape` — and the v2 pair at the root as well (`/v2/search`, `/v2/scrape`),
//! because firecrawl-py's synchronous v2 client joins its endpoints to the API URL as absolute
//! paths, dropping any path the URL has (its asynchronous client and the v1 client keep it).
//!
//! Errors are Firecrawl's `{"success": false, "error": "…"}` with the statuses its clients turn
//! into their own exceptions: 400 (`BadRequestError`) for a body that is not a JSON object, a
//! field of the wrong type or value, a format or source this gateway does not give; 401
//! (`UnauthorizedError`) for a wrong key when keys are required; 402 (`PaymentRequiredError`)
//! when the answer needed a premium call and the client's premium budget is spent; 403
//! (`WebsiteNotSupportedError`) for a page at an address the gateway does not read; 408
//! (`RequestTimeoutError`) for a page that did not arrive in time; 413 (in Firecrawl's error table,
//! `FirecrawlError` in firecrawl-py) for a page larger than the gateway reads
//! (`FETCH_MAX_BYTES`); 429 (`RateLimitError`) over the
//! client's rate or when every upstream was rate-limited; 500 (`InternalServerError`) when every
//! upstream failed otherwise or a page could not be read (naming the upstreams and their error
//! classes, or what was wrong with the page, never an upstream's body). Never 502: the clients
//! retry a 502 three times.
//!
//! Keys: Firecrawl's v2 API has a keyless tier, so an open gateway takes calls without a key; with
//! `API_KEYS_FILE` the key is the `Authorization: Bearer` one, checked by the gate.

mod scrape;
mod search;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::auth::{Admitted, Gate, Refusals, Refused};
use super::body::BodyError;
use super::document::FailedUpstream;
use super::error::RETRY_AFTER_SECONDS;
use super::json_fields::InvalidField;
use super::read_call;
use super::search_call::Unanswered;
use crate::gateway::Gateway;
use gateway_core::request::{ReadFormat, RequestError};
use gateway_engine::pipeline::read::PageRead;
use gateway_upstreams::reader::ReadFailure;

/// A body through a Firecrawl decoder (`which`: 0 the v1 search, 1 the v2 search, else the
/// scrape), for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(super) fn exercise(which: u8, body: &[u8]) -> Result<usize, StatusCode> {
    match which {
        0 => search::exercise(Version::V1, body),
        1 => search::exercise(Version::V2, body),
        _ => scrape::exercise(body),
    }
}

/// The v1 search path; clients use `/firecrawl` as their API URL.
pub(super) const V1_SEARCH_PATH: &str = "/firecrawl/v1/search";
/// The v2 search path.
pub(super) const V2_SEARCH_PATH: &str = "/firecrawl/v2/search";
/// The v1 scrape path.
pub(super) const V1_SCRAPE_PATH: &str = "/firecrawl/v1/scrape";
/// The v2 scrape path.
pub(super) const V2_SCRAPE_PATH: &str = "/firecrawl/v2/scrape";
/// The v2 search path at the root (firecrawl-py's synchronous client drops the URL's path).
pub(super) const ROOT_V2_SEARCH_PATH: &str = "/v2/search";
/// The v2 scrape path at the root.
pub(super) const ROOT_V2_SCRAPE_PATH: &str = "/v2/scrape";

/// Which version of Firecrawl's API a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    V1,
    V2,
}

/// The routes, behind the gate with Firecrawl's refusals.
pub(super) fn routes(gate: &Gate) -> Router<Gateway> {
    let search = |version: Version| {
        post(
            move |state: State<Gateway>,
                  admitted: Extension<Admitted>,
                  headers: HeaderMap,
                  body: Body| {
                search::search(version, state, admitted, headers, body)
            },
        )
        .fallback(wrong_method)
    };
    let scrape = || post(scrape::scrape).fallback(wrong_method);
    Router::new()
        .route(V1_SEARCH_PATH, search(Version::V1))
        .route(V2_SEARCH_PATH, search(Version::V2))
        .route(ROOT_V2_SEARCH_PATH, search(Version::V2))
        .layer(super::search_span::TracedLayer)
        .route(V1_SCRAPE_PATH, scrape())
        .route(V2_SCRAPE_PATH, scrape())
        .route(ROOT_V2_SCRAPE_PATH, scrape())
        .layer(gate.layer(FirecrawlRefusals))
}

/// What a Firecrawl client gets instead of data.
#[derive(Debug, thiserror::Error)]
pub(super) enum FirecrawlError {
    /// Too large or unreadable.
    #[error(transparent)]
    Body(#[from] BodyError),
    /// Not a JSON object.
    #[error("Bad Request: the body must be a JSON object")]
    NotJson,
    /// A field of the wrong type or out of range.
    #[error("Bad Request: {0}")]
    InvalidField(#[from] InvalidField),
    /// A format, source or option this gateway does not give.
    #[error("Bad Request: {0}")]
    Unsupported(String),
    /// The query or a mapped parameter failed the gateway's validation.
    #[error("Bad Request: {}", .0.message_naming_query("query"))]
    Request(#[from] RequestError),
    /// Every upstream failed.
    #[error("every upstream failed: {}", FailedUpstream::list(.0))]
    AllUpstreamsFailed(Vec<FailedUpstream>),
    /// The answer needed a premium call and the client's premium budget is spent.
    #[error("Payment Required: this client's premium budget is spent and the request needed a premium API")]
    BudgetSpent,
    /// A page could not be read: a sentence ending with the failure's code.
    #[error("{}", read_call::unread_reason(*.0))]
    Page(ReadFailure),
    /// Every fan-out slot stayed taken (load shedding): retry after `Retry-After`.
    #[error("the gateway is at capacity; retry after {RETRY_AFTER_SECONDS} s")]
    Overloaded,
    /// The shared computation was lost (a bug): never a hang.
    #[error("the gateway failed to compute an answer")]
    Internal,
    /// Anything but POST.
    #[error("Method Not Allowed: use POST")]
    WrongMethod,
    /// A key no client has (when the gateway requires keys).
    #[error("Unauthorized: {0}")]
    Unauthorized(&'static str),
    /// The client's request rate is spent.
    #[error("Rate limit exceeded: retry after {0} s")]
    RateLimited(u64),
}

impl FirecrawlError {
    /// A stable name for the log line.
    pub(super) fn code(&self) -> &'static str {
        match self {
            Self::Body(BodyError::TooLarge(_)) => "body_too_large",
            Self::Body(BodyError::Timeout(_)) => "request_timeout",
            Self::Body(BodyError::Unreadable) => "unreadable_body",
            Self::NotJson => "not_json",
            Self::InvalidField(_) => "invalid_field",
            Self::Unsupported(_) => "unsupported",
            Self::Request(err) => err.code(),
            Self::AllUpstreamsFailed(_) => "all_upstreams_failed",
            Self::BudgetSpent => "budget_spent",
            Self::Page(failure) => failure.code(),
            Self::Overloaded => "overloaded",
            Self::Internal => "internal_error",
            Self::WrongMethod => "method_not_allowed",
            Self::Unauthorized(_) => "unauthorized",
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
            | Self::Unsupported(_)
            | Self::Request(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::BudgetSpent => StatusCode::PAYMENT_REQUIRED,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::AllUpstreamsFailed(upstreams)
                if FailedUpstream::all_told_to_slow_down(upstreams) =>
            {
                StatusCode::TOO_MANY_REQUESTS
            }
            Self::Page(failure) => page_status(*failure),
            Self::AllUpstreamsFailed(_) | Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Self::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    /// A search that gave nothing, as Firecrawl says it: 402 when it needed a premium call the
    /// client's budget no longer allows (`spent`).
    pub(super) fn unanswered(unanswered: Unanswered, spent: bool) -> Self {
        match unanswered {
            Unanswered::Overloaded => Self::Overloaded,
            Unanswered::Lost => Self::Internal,
            Unanswered::AllFailed(_) if spent => Self::BudgetSpent,
            Unanswered::AllFailed(upstreams) => Self::AllUpstreamsFailed(upstreams),
        }
    }

    /// A page that was not read, as Firecrawl says it.
    pub(super) fn unread(read: &PageRead) -> Option<Self> {
        let failed = read.result.as_ref().err()?;
        Some(if failed.record.premium_refused_for_budget() {
            Self::BudgetSpent
        } else {
            Self::Page(failed.failure)
        })
    }
}

fn page_status(failure: ReadFailure) -> StatusCode {
    match failure {
        ReadFailure::InvalidUrl => StatusCode::BAD_REQUEST,
        ReadFailure::ForbiddenAddress => StatusCode::FORBIDDEN,
        failure if failure.timed_out() => StatusCode::REQUEST_TIMEOUT,
        // A page past `FETCH_MAX_BYTES` is not the gateway failing (500), and 502 is out (the
        // clients retry it, and the page stays as large): 413 is in Firecrawl's own error table
        // ("Payload Too Large"), firecrawl-py raises it once, and the message says it is the page.
        ReadFailure::Upstream(class) if class.is_too_large() => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for FirecrawlError {
    fn into_response(self) -> Response {
        let mut body = json!({ "success": false, "error": self.to_string() });
        if let Self::AllUpstreamsFailed(upstreams) = &self {
            body["details"] = upstreams
                .iter()
                .map(|u| json!({"name": u.name, "error_class": u.error_class}))
                .collect();
        }
        let mut response = json_response(self.status(), body.to_string());
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
            Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

/// The gate's refusals in Firecrawl's shape (`UnauthorizedError`, `RateLimitError`).
#[derive(Debug, Clone, Copy)]
struct FirecrawlRefusals;

impl Refusals for FirecrawlRefusals {
    const KEY_IN_BODY: bool = false;

    fn refused(&self, refused: Refused) -> Response {
        match refused {
            Refused::Unauthorized(why) => FirecrawlError::Unauthorized(why.message()),
            Refused::RateLimited(limited) => {
                FirecrawlError::RateLimited(limited.retry_after_seconds())
            }
        }
        .into_response()
    }

    fn unreadable(&self, err: BodyError) -> Response {
        FirecrawlError::Body(err).into_response()
    }
}

pub(super) fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn wrong_method() -> Response {
    FirecrawlError::WrongMethod.into_response()
}

/// One entry of Firecrawl's `formats` or `sources`: a name, or an object with a `type`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Named {
    Name(String),
    Typed {
        #[serde(rename = "type")]
        kind: String,
    },
}

impl Named {
    fn name(&self) -> &str {
        match self {
            Self::Name(name) | Self::Typed { kind: name } => name,
        }
    }
}

/// What a client asked a page to be given as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Formats {
    /// The content formats, each a read (in the order asked, each once).
    pub(super) content: Vec<ReadFormat>,
    /// `links`.
    pub(super) links: bool,
}

impl Formats {
    /// Markdown alone (Firecrawl's default).
    fn markdown() -> Self {
        Self {
            content: vec![ReadFormat::Markdown],
            links: false,
        }
    }

    /// `formats` as sent (`None`: Firecrawl's default, Markdown).
    fn read(raw: Option<Vec<Named>>) -> Result<Self, FirecrawlError> {
        let Some(raw) = raw else {
            return Ok(Self::markdown());
        };
        let mut formats = Self::default();
        for entry in &raw {
            let format = match entry.name() {
                "markdown" => ReadFormat::Markdown,
                "html" => ReadFormat::Html,
                "rawHtml" => ReadFormat::RawHtml,
                "links" => {
                    formats.links = true;
                    continue;
                }
                other => {
                    return Err(FirecrawlError::Unsupported(format!(
                    "format {:?} is not one this gateway gives (markdown, html, rawHtml, links)",
                    truncated(other)
                )))
                }
            };
            if !formats.content.contains(&format) {
                formats.content.push(format);
            }
        }
        Ok(formats)
    }

    /// The reads a page needs: each content format, or Markdown alone when only `links` was
    /// asked for (the links come from the read).
    pub(super) fn reads(&self) -> Vec<ReadFormat> {
        if self.content.is_empty() && self.links {
            vec![ReadFormat::Markdown]
        } else {
            self.content.clone()
        }
    }

    /// Whether nothing is to be read.
    pub(super) fn is_empty(&self) -> bool {
        self.content.is_empty() && !self.links
    }
}

/// At most 40 characters of a client's value, for an error message.
fn truncated(value: &str) -> &str {
    match value.char_indices().nth(40) {
        Some((at, _)) => &value[..at],
        None => value,
    }
}

/// A page read in several formats, as Firecrawl's document: `markdown`, `html`, `rawHtml`,
/// `links` as asked, and `metadata` (`title`, `sourceURL`, `url`, `statusCode`, `language`,
/// `publishedTime` when known). `reads` are in the order of `formats.reads()`; the first read
/// that succeeded gives the metadata.
pub(super) fn document(as_sent: &str, formats: &Formats, reads: &[PageRead]) -> Map<String, Value> {
    let mut doc = Map::new();
    let mut metadata = Map::new();
    metadata.insert("sourceURL".into(), Value::from(as_sent));
    let mut first = None;
    for (format, read) in formats.reads().into_iter().zip(reads) {
        let Ok(done) = &read.result else { continue };
        let page = &done.document;
        first.get_or_insert(page);
        let name = match format {
            ReadFormat::Markdown | ReadFormat::Text => "markdown",
            ReadFormat::Html => "html",
            ReadFormat::RawHtml => "rawHtml",
        };
        if formats.content.contains(&format) {
            doc.insert(name.into(), Value::from(page.content.as_str()));
        }
    }
    match first {
        Some(page) => {
            if formats.links {
                doc.insert("links".into(), Value::from(page.links.clone()));
            }
            if let Some(title) = &page.title {
                metadata.insert("title".into(), Value::from(title.as_str()));
            }
            metadata.insert("url".into(), Value::from(page.final_url.as_str()));
            metadata.insert("statusCode".into(), Value::from(200));
            metadata.insert(
                "contentType".into(),
                Value::from(page.content_type.as_str()),
            );
            if let Some(language) = &page.language {
                metadata.insert("language".into(), Value::from(language.as_str()));
            }
            if let Some(published) = &page.published {
                metadata.insert("publishedTime".into(), Value::from(published.as_str()));
            }
        }
        None => {
            if let Some(Err(failed)) = reads.first().map(|r| &r.result) {
                if let ReadFailure::HttpStatus(status) = failed.failure {
                    metadata.insert("statusCode".into(), Value::from(status));
                }
                metadata.insert(
                    "error".into(),
                    Value::from(read_call::unread_reason(failed.failure)),
                );
            }
        }
    }
    doc.insert("metadata".into(), Value::Object(metadata));
    doc
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn named(value: Value) -> Vec<Named> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn formats_are_names_or_typed_objects_and_others_are_refused_by_name() {
        let formats = Formats::read(Some(named(
            json!(["markdown", {"type": "rawHtml"}, "links", "markdown"]),
        )))
        .unwrap();
        assert_eq!(formats.content, [ReadFormat::Markdown, ReadFormat::RawHtml]);
        assert!(formats.links);
        assert_eq!(Formats::read(None).unwrap(), Formats::markdown());
        let links_only = Formats::read(Some(named(json!(["links"])))).unwrap();
        assert_eq!(links_only.reads(), [ReadFormat::Markdown]);
        assert!(links_only.content.is_empty());
        match Formats::read(Some(named(json!(["screenshot"])))) {
            Err(FirecrawlError::Unsupported(message)) => {
                assert!(message.contains("\"screenshot\""), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(Formats::read(Some(Vec::new())).unwrap().is_empty());
    }

    #[test]
    fn errors_have_firecrawls_shape_and_statuses() {
        for (error, status) in [
            (FirecrawlError::NotJson, 400),
            (FirecrawlError::Unauthorized("no"), 401),
            (FirecrawlError::BudgetSpent, 402),
            (FirecrawlError::Page(ReadFailure::ForbiddenAddress), 403),
            (
                FirecrawlError::Page(ReadFailure::Upstream(
                    gateway_core::upstream::ErrorClass::Timeout,
                )),
                408,
            ),
            (FirecrawlError::RateLimited(3), 429),
            (
                FirecrawlError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: "rate_limited".into(),
                }]),
                429,
            ),
            (
                FirecrawlError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: "timeout".into(),
                }]),
                500,
            ),
            (FirecrawlError::Page(ReadFailure::NoReadableText), 500),
            (
                FirecrawlError::Page(ReadFailure::Upstream(
                    gateway_core::upstream::ErrorClass::TooLarge,
                )),
                413,
            ),
            (FirecrawlError::Overloaded, 503),
        ] {
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status);
        }
        assert!(matches!(
            FirecrawlError::unanswered(
                Unanswered::AllFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: "timeout".into(),
                }]),
                true
            ),
            FirecrawlError::BudgetSpent
        ));
    }
}
