//! The Firecrawl-compatible surface: search ([`search`]) and scrape ([`scrape`]) in Firecrawl's
//! request and response shapes, both versions, so `Firecrawl(api_url="http://gateway:8080/firecrawl")`
//! (firecrawl-py's v2 client), `V1FirecrawlApp(api_url=…)` and the agent tools built on them search
//! and read through the gateway with only their URL changed.
//!
//! Routes: `POST /firecrawl/v1/search`, `/firecrawl/v2/search`, `/firecrawl/v1/scrape`,
//! `/firecrawl/v2/scrape`, `/firecrawl/v1/map`, `/firecrawl/v2/map` ([`map`]: a site's URLs) —
//! and the v2 ones at the root as well (`/v2/search`, `/v2/scrape`, `/v2/map`),
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

mod crawl;
mod map;
mod page_options;
mod scrape;
mod search;
mod webhook;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::json_fields::{field, InvalidField};
use crate::server::kit::read_call;
use crate::server::kit::refusal::{self, Door, OwnRefusal, Refusal};
use crate::server::kit::search_call::Unanswered;
use gateway_core::request::ReadFormat;
use gateway_engine::read::PageRead;
use gateway_upstreams::reader::{Document, ReadFailure, Shot};

/// A body through a Firecrawl decoder (`which`: 0 the v1 search, 1 the v2 search, 2 the scrape;
/// the body's first byte then picks the scrape, the v1 map, the v2 map or (`c`) the crawl and
/// batch decoders), for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(which: u8, body: &[u8]) -> Result<usize, StatusCode> {
    match which {
        0 => search::exercise(Version::V1, body),
        1 => search::exercise(Version::V2, body),
        _ => match body.split_first() {
            Some((b'1', rest)) => map::exercise(Version::V1, rest),
            Some((b'2', rest)) => map::exercise(Version::V2, rest),
            Some((b'c', rest)) => crawl::exercise(rest),
            _ => scrape::exercise(body),
        },
    }
}

/// The v1 search path; clients use `/firecrawl` as their API URL.
pub(crate) const V1_SEARCH_PATH: &str = "/firecrawl/v1/search";
/// The v2 search path.
pub(crate) const V2_SEARCH_PATH: &str = "/firecrawl/v2/search";
/// The v1 scrape path.
pub(crate) const V1_SCRAPE_PATH: &str = "/firecrawl/v1/scrape";
/// The v2 scrape path.
pub(crate) const V2_SCRAPE_PATH: &str = "/firecrawl/v2/scrape";
/// The v1 map path.
pub(crate) const V1_MAP_PATH: &str = "/firecrawl/v1/map";
/// The v2 map path.
pub(crate) const V2_MAP_PATH: &str = "/firecrawl/v2/map";
/// The v2 map path at the root.
pub(crate) const ROOT_V2_MAP_PATH: &str = "/v2/map";
/// The v2 search path at the root (firecrawl-py's synchronous client drops the URL's path).
pub(crate) const ROOT_V2_SEARCH_PATH: &str = "/v2/search";
/// The v2 scrape path at the root.
pub(crate) const ROOT_V2_SCRAPE_PATH: &str = "/v2/scrape";

/// Which version of Firecrawl's API a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

/// The routes, behind the gate with Firecrawl's refusals.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    let wrong_method = refusal::wrong_method::<Firecrawl>;
    let search = |version: Version| {
        post(
            move |state: State<Gateway>, admitted: Extension<Admitted>, body: LimitedBody| {
                search::search(version, state, admitted, body)
            },
        )
        .fallback(wrong_method)
    };
    let scrape = || post(scrape::scrape).fallback(wrong_method);
    let map = |version: Version| {
        post(
            move |state: State<Gateway>, admitted: Extension<Admitted>, body: LimitedBody| {
                map::map(version, state, admitted, body)
            },
        )
        .fallback(wrong_method)
    };
    let jobs = |version: Version, jobs: crawl::Jobs, prefix: &'static str| {
        let route = crawl::Route {
            version,
            jobs,
            prefix,
        };
        let start = post(
            move |state: State<Gateway>,
                  admitted: Extension<Admitted>,
                  headers: axum::http::HeaderMap,
                  body: LimitedBody| {
                crawl::start(route, state, admitted, headers, body)
            },
        )
        .fallback(wrong_method);
        let status = get(
            move |state: State<Gateway>,
                  admitted: Extension<Admitted>,
                  headers: axum::http::HeaderMap,
                  id: axum::extract::Path<String>,
                  skip: axum::extract::Query<crawl::StatusQuery>| {
                crawl::status(route, state, admitted, headers, id, skip)
            },
        )
        .delete(crawl::cancel)
        .fallback(wrong_method);
        let errors = get(crawl::errors).fallback(wrong_method);
        let base = format!("{prefix}/{}", jobs.path());
        Router::new()
            .route(&base, start)
            .route(&format!("{base}/{{id}}"), status)
            .route(&format!("{base}/{{id}}/errors"), errors)
    };
    Router::new()
        .merge(jobs(Version::V1, crawl::Jobs::Crawl, "/firecrawl/v1"))
        .merge(jobs(Version::V2, crawl::Jobs::Crawl, "/firecrawl/v2"))
        .merge(jobs(Version::V2, crawl::Jobs::Crawl, "/v2"))
        .merge(jobs(Version::V1, crawl::Jobs::Batch, "/firecrawl/v1"))
        .merge(jobs(Version::V2, crawl::Jobs::Batch, "/firecrawl/v2"))
        .merge(jobs(Version::V2, crawl::Jobs::Batch, "/v2"))
        .route(V1_SEARCH_PATH, search(Version::V1))
        .route(V2_SEARCH_PATH, search(Version::V2))
        .route(ROOT_V2_SEARCH_PATH, search(Version::V2))
        .layer(crate::server::transport::search_span::TRACED)
        .route(V1_SCRAPE_PATH, scrape())
        .route(V2_SCRAPE_PATH, scrape())
        .route(ROOT_V2_SCRAPE_PATH, scrape())
        .route(V1_MAP_PATH, map(Version::V1))
        .route(V2_MAP_PATH, map(Version::V2))
        .route(ROOT_V2_MAP_PATH, map(Version::V2))
        .layer(gate.layer(Firecrawl))
}

/// Firecrawl's error shape, `{"success": false, "error": "…"}` (with `details` naming the failed
/// upstreams); the gate's refusals are `UnauthorizedError` and `RateLimitError` in firecrawl-py.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Firecrawl;

/// What a Firecrawl client gets instead of data.
pub(crate) type FirecrawlError = Refusal<Firecrawl>;

/// The refusals only Firecrawl's API has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FirecrawlOwn {
    /// A format, source or option this gateway does not give.
    #[error("Bad Request: {0}")]
    Unsupported(String),
    /// The answer needed a premium call and the client's premium budget is spent.
    #[error("Payment Required: this client's premium budget is spent and the request needed a premium API")]
    BudgetSpent,
    /// A page could not be read: a sentence ending with the failure's code.
    #[error("{}", read_call::unread_reason(*.0))]
    Page(ReadFailure),
}

impl OwnRefusal for FirecrawlOwn {
    fn code(&self) -> &'static str {
        match self {
            Self::Unsupported(_) => "unsupported",
            Self::BudgetSpent => "budget_spent",
            Self::Page(failure) => failure.code(),
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Unsupported(_) => StatusCode::BAD_REQUEST,
            Self::BudgetSpent => StatusCode::PAYMENT_REQUIRED,
            Self::Page(failure) => page_status(*failure),
        }
    }
}

impl Door for Firecrawl {
    type Own = FirecrawlOwn;
    const KEY_IN_BODY: bool = false;

    fn body(refusal: &FirecrawlError, _status: StatusCode, message: String) -> Value {
        let mut body = json!({ "success": false, "error": message });
        if let Some(listed) = refusal.failed_upstreams() {
            body["details"] = listed;
        }
        body
    }

    /// Firecrawl's words: the status's reason before the kit's sentence.
    fn words(refusal: &FirecrawlError) -> Option<String> {
        match refusal {
            Refusal::NotJson | Refusal::InvalidField(_) | Refusal::Request(_) => {
                Some(format!("Bad Request: {refusal}"))
            }
            Refusal::Unauthorized(why) => Some(format!("Unauthorized: {why}")),
            Refusal::RateLimited(seconds) => {
                Some(format!("Rate limit exceeded: retry after {seconds} s"))
            }
            _ => None,
        }
    }

    /// Never 502 when every upstream failed: the clients retry a 502 three times.
    fn status(refusal: &FirecrawlError) -> Option<StatusCode> {
        match refusal {
            Refusal::AllUpstreamsFailed(upstreams)
                if !crate::server::kit::document::FailedUpstream::all_told_to_slow_down(
                    upstreams,
                ) =>
            {
                Some(StatusCode::INTERNAL_SERVER_ERROR)
            }
            _ => None,
        }
    }
}

/// Firecrawl's most `timeout`, in milliseconds.
const MAX_TIMEOUT_MS: u64 = 300_000;

/// Firecrawl's `timeout` (milliseconds, 1–300,000): the budget of what a request reads.
pub(crate) fn timeout(
    fields: &Map<String, Value>,
) -> Result<Option<std::time::Duration>, FirecrawlError> {
    const TIMEOUT: InvalidField = InvalidField {
        name: "timeout",
        expected: "milliseconds from 1 to 300000",
    };
    match field::<u64>(fields, "timeout", TIMEOUT.expected)? {
        None => Ok(None),
        Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => {
            Ok(Some(std::time::Duration::from_millis(ms)))
        }
        Some(_) => Err(TIMEOUT.into()),
    }
}

/// A format, source or option this gateway does not give, refused naming it.
pub(crate) fn unsupported(message: String) -> FirecrawlError {
    Refusal::Own(FirecrawlOwn::Unsupported(message))
}

/// A search that gave nothing, as Firecrawl says it: 402 when it needed a premium call the
/// client's budget no longer allows (`spent`).
pub(crate) fn unanswered(unanswered: Unanswered, spent: bool) -> FirecrawlError {
    match unanswered {
        Unanswered::AllFailed(_) if spent => Refusal::Own(FirecrawlOwn::BudgetSpent),
        unanswered => unanswered.into(),
    }
}

/// A page that was not read, as Firecrawl says it.
pub(crate) fn unread(read: &PageRead) -> Option<FirecrawlError> {
    let failed = read.result.as_ref().err()?;
    Some(Refusal::Own(
        if failed.record.premium_refused_for_budget() {
            FirecrawlOwn::BudgetSpent
        } else {
            FirecrawlOwn::Page(failed.failure)
        },
    ))
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

/// One entry of Firecrawl's `formats` or `sources`: a name, or an object with a `type` (and
/// the type's options, such as a screenshot's `fullPage`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Named {
    Name(String),
    Typed {
        #[serde(rename = "type")]
        kind: String,
        #[serde(flatten)]
        options: Map<String, Value>,
    },
}

impl Named {
    fn name(&self) -> &str {
        match self {
            Self::Name(name) | Self::Typed { kind: name, .. } => name,
        }
    }
}

/// The name of a screenshot format as a client asks for it.
fn shot_name(shot: Shot) -> &'static str {
    match shot {
        Shot::Viewport => "screenshot",
        Shot::FullPage => "screenshot@fullPage",
    }
}

/// What a client asked a page to be given as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Formats {
    /// The content formats, each a read (in the order asked, each once).
    pub(crate) content: Vec<ReadFormat>,
    /// `links`.
    pub(crate) links: bool,
    /// `screenshot` (the viewport), `screenshot@fullPage` or `{"type": "screenshot",
    /// "fullPage": true}` (the whole page): a render of its own, beside the reads.
    pub(crate) screenshot: Option<Shot>,
}

impl Formats {
    /// Markdown alone (Firecrawl's default).
    fn markdown() -> Self {
        Self {
            content: vec![ReadFormat::Markdown],
            links: false,
            screenshot: None,
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
                "screenshot" | "screenshot@fullPage" => {
                    let shot = Self::shot(entry)?;
                    match formats.screenshot {
                        Some(asked) if asked != shot => {
                            return Err(unsupported(format!(
                                "formats {:?} and {:?} together are not supported (one screenshot a page)",
                                shot_name(asked),
                                shot_name(shot)
                            )))
                        }
                        _ => formats.screenshot = Some(shot),
                    }
                    continue;
                }
                other => {
                    return Err(unsupported(format!(
                    "format {:?} is not one this gateway gives (markdown, html, rawHtml, links, screenshot, screenshot@fullPage)",
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

    /// The screenshot a `screenshot` entry asks for: v1's names, or v2's object, whose
    /// `fullPage` is honoured and whose `quality` (a JPEG's) and `viewport` are refused by name.
    fn shot(entry: &Named) -> Result<Shot, FirecrawlError> {
        let (kind, options) = match entry {
            Named::Name(name) => (name.as_str(), None),
            Named::Typed { kind, options } => (kind.as_str(), Some(options)),
        };
        let mut shot = if kind == "screenshot@fullPage" {
            Shot::FullPage
        } else {
            Shot::Viewport
        };
        for (name, value) in options.into_iter().flatten() {
            match (name.as_str(), value) {
                (_, Value::Null) => {}
                ("fullPage", Value::Bool(full)) => {
                    if *full {
                        shot = Shot::FullPage;
                    }
                }
                ("fullPage", _) => {
                    return Err(InvalidField {
                        name: "fullPage",
                        expected: "true or false",
                    }
                    .into())
                }
                (name, _) => {
                    let why = match name {
                        "quality" => "screenshots are PNG",
                        "viewport" => "the viewport is 1280 x 800",
                        _ => "not an option of a screenshot here",
                    };
                    return Err(unsupported(format!(
                        "screenshot option {:?} is not supported by this gateway ({why})",
                        truncated(name)
                    )));
                }
            }
        }
        Ok(shot)
    }

    /// These formats where only a single scrape gives a screenshot (`door`: where they were
    /// asked for): a screenshot is refused by name.
    pub(crate) fn without_screenshot(self, door: &str) -> Result<Self, FirecrawlError> {
        match self.screenshot {
            None => Ok(self),
            Some(shot) => Err(unsupported(format!(
                "format {:?} is not supported in {door} (a single scrape gives screenshots)",
                shot_name(shot)
            ))),
        }
    }

    /// The reads a page needs: each content format, or Markdown alone when only `links` was
    /// asked for (the links come from the read); none for a screenshot alone.
    pub(crate) fn reads(&self) -> Vec<ReadFormat> {
        if self.content.is_empty() && self.links {
            vec![ReadFormat::Markdown]
        } else {
            self.content.clone()
        }
    }

    /// Whether nothing is to be read.
    pub(crate) fn is_empty(&self) -> bool {
        self.content.is_empty() && !self.links && self.screenshot.is_none()
    }
}

/// At most 40 characters of a client's value, for an error message.
fn truncated(value: &str) -> &str {
    match value.char_indices().nth(40) {
        Some((at, _)) => &value[..at],
        None => value,
    }
}

/// A read page's `metadata`: `title`, `sourceURL`, `url`, `statusCode`, `contentType`,
/// `language` and `publishedTime` when known.
pub(crate) fn page_metadata(as_sent: &str, page: &Document) -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert("sourceURL".into(), Value::from(as_sent));
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
    if let Some(author) = &page.author {
        metadata.insert("author".into(), Value::from(author.as_str()));
    }
    if let Some(site_name) = &page.site_name {
        metadata.insert("ogSiteName".into(), Value::from(site_name.as_str()));
    }
    metadata
}

/// A page read in several formats, as Firecrawl's document: `markdown`, `html`, `rawHtml`,
/// `links` as asked, and `metadata` (`title`, `sourceURL`, `url`, `statusCode`, `language`,
/// `publishedTime`, `author`, `ogSiteName` when known). `reads` are in the order of `formats.reads()`; the first read
/// that succeeded gives the metadata.
pub(crate) fn document(as_sent: &str, formats: &Formats, reads: &[PageRead]) -> Map<String, Value> {
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
            metadata = page_metadata(as_sent, page);
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
    use axum::response::IntoResponse;

    use super::*;
    use crate::server::kit::document::FailedUpstream;
    use gateway_core::upstream::ErrorClass;

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
        match Formats::read(Some(named(json!(["markdown", "pdf"])))) {
            Err(Refusal::Own(FirecrawlOwn::Unsupported(message))) => {
                assert!(message.contains("\"pdf\""), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(Formats::read(Some(Vec::new())).unwrap().is_empty());
    }

    fn refusal(raw: Value) -> String {
        match Formats::read(Some(named(raw.clone()))) {
            Err(Refusal::Own(FirecrawlOwn::Unsupported(message))) => message,
            Err(Refusal::InvalidField(field)) => field.name.to_owned(),
            other => panic!("{raw}: {other:?}"),
        }
    }

    #[test]
    fn screenshots_are_v1_names_or_v2_objects_with_full_page() {
        for (raw, shot) in [
            (json!(["screenshot"]), Shot::Viewport),
            (json!(["screenshot@fullPage"]), Shot::FullPage),
            (json!([{"type": "screenshot"}]), Shot::Viewport),
            (
                json!([{"type": "screenshot", "fullPage": false}]),
                Shot::Viewport,
            ),
            (
                json!([{"type": "screenshot", "fullPage": true}]),
                Shot::FullPage,
            ),
            (
                json!([{"type": "screenshot", "fullPage": true, "quality": null}]),
                Shot::FullPage,
            ),
            (json!(["screenshot", "screenshot"]), Shot::Viewport),
        ] {
            let formats = Formats::read(Some(named(raw.clone()))).unwrap();
            assert_eq!(formats.screenshot, Some(shot), "{raw}");
            assert!(
                formats.reads().is_empty(),
                "a screenshot alone reads nothing: {raw}"
            );
            assert!(!formats.is_empty());
        }
        let with_text =
            Formats::read(Some(named(json!(["markdown", "screenshot@fullPage"])))).unwrap();
        assert_eq!(with_text.reads(), [ReadFormat::Markdown]);
        assert_eq!(with_text.screenshot, Some(Shot::FullPage));
        assert!(refusal(json!([{"type": "screenshot", "quality": 80}])).contains("\"quality\""));
        assert!(
            refusal(json!([{"type": "screenshot", "viewport": {"width": 1}}]))
                .contains("\"viewport\"")
        );
        assert_eq!(
            refusal(json!([{"type": "screenshot", "fullPage": "yes"}])),
            "fullPage"
        );
        assert!(refusal(json!(["screenshot", "screenshot@fullPage"])).contains("together"));
        let elsewhere = Formats::read(Some(named(json!(["screenshot@fullPage"]))))
            .unwrap()
            .without_screenshot("a search's scrapeOptions");
        match elsewhere {
            Err(Refusal::Own(FirecrawlOwn::Unsupported(message))) => {
                assert!(message.contains("\"screenshot@fullPage\""), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_have_firecrawls_shape_and_statuses() {
        for (error, status) in [
            (FirecrawlError::NotJson, 400),
            (FirecrawlError::Unauthorized("no"), 401),
            (FirecrawlError::Own(FirecrawlOwn::BudgetSpent), 402),
            (
                FirecrawlError::Own(FirecrawlOwn::Page(ReadFailure::ForbiddenAddress)),
                403,
            ),
            (
                FirecrawlError::Own(FirecrawlOwn::Page(ReadFailure::Upstream(
                    gateway_core::upstream::ErrorClass::Timeout,
                ))),
                408,
            ),
            (FirecrawlError::RateLimited(3), 429),
            (
                FirecrawlError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: ErrorClass::RateLimited.into(),
                }]),
                429,
            ),
            (
                FirecrawlError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: ErrorClass::Timeout.into(),
                }]),
                500,
            ),
            (
                FirecrawlError::Own(FirecrawlOwn::Page(ReadFailure::NoReadableText)),
                500,
            ),
            (
                FirecrawlError::Own(FirecrawlOwn::Page(ReadFailure::Upstream(
                    gateway_core::upstream::ErrorClass::TooLarge,
                ))),
                413,
            ),
            (FirecrawlError::Overloaded, 503),
        ] {
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status);
        }
        assert!(matches!(
            unanswered(
                Unanswered::AllFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: ErrorClass::Timeout.into(),
                }]),
                true
            ),
            FirecrawlError::Own(FirecrawlOwn::BudgetSpent)
        ));
    }
}
