//! Exa's search and contents APIs: `POST /exa/search` and `POST /exa/contents`, Exa's requests and
//! answers, so exa-py (`Exa(api_key, base_url="http://gateway:8080/exa")`) and the tools built on
//! it search and read through the gateway. The key rides as `x-api-key`, as Exa's does.
//!
//! Search: `query` (required); `numResults` (1–100, default 10); `type` `auto`, `fast`, `instant`
//! or `keyword` (SearXNG is a keyword metasearch; `neural` and the `deep` types are refused);
//! `includeDomains`/`excludeDomains`; `startPublishedDate`/`endPublishedDate` (ISO 8601: a hit
//! whose day is known and outside is dropped); `category` `news` (SearXNG's news category) — and
//! `contents`.
//!
//! Contents (in a search, or `POST /exa/contents` with `urls` or `ids` — an id is the URL, as the
//! search answers it — 1 to 20 of them): `text` (`true`, or `{"maxCharacters", "includeHtmlTags":
//! false}`): each page read as text within the request's budget and cut at `maxCharacters`;
//! `livecrawl` (`never`, `fallback` and `auto` read through the page cache, `always` and
//! `preferred` afresh); `livecrawlTimeout` (ms, the budget). Refused by name: `highlights`
//! (this door is not wired to the passage ranker yet, #41),
//! `summary` (a model writes it), `subpages`, `extras`, `context`, and every field Exa has that
//! this door does not take (`userLocation`, `moderation`, `includeText`, …).
//!
//! Answer: `{"requestId", "resolvedSearchType": "keyword", "results": [{"id", "url", "title",
//! "publishedDate", "author": null, "text"?}], "searchTime", "costDollars": {"total": 0}}`; the
//! contents API adds `statuses` (`{"id", "status": "success"}`, or `"error"` with Exa's
//! `{"tag", "httpStatusCode"}`: `CRAWL_NOT_FOUND`, `CRAWL_TIMEOUT`, `SOURCE_NOT_AVAILABLE`,
//! `CRAWL_UNKNOWN_ERROR`) and lists only the pages read in `results`. Errors are Exa's
//! `{"requestId", "error", "tag"}`: 400 `INVALID_REQUEST_BODY` or `UNSUPPORTED_OPTION`, 401/429
//! from the gate, 502 when every upstream failed, 503 with `Retry-After` when the gateway sheds
//! load.

use std::time::Duration;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::document::Hit;
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use crate::server::kit::read_call::{self, Asked};
use crate::server::kit::refusal::{self, json_response, Door, OwnRefusal, Refusal};
use crate::server::kit::{search_call, search_read};
use gateway_core::request::{DomainFilter, ReadFormat, SearchInput, SearchRequest, Surface};
use gateway_engine::read::{Depth, Freshness, PageRead};
use gateway_upstreams::reader::ReadFailure;

/// Where the search is served; exa-py's `base_url` is `…/exa`.
pub(crate) const SEARCH_PATH: &str = "/exa/search";
/// Where pages are read.
pub(crate) const CONTENTS_PATH: &str = "/exa/contents";

const DEFAULT_RESULTS: u32 = 10;
const MAX_RESULTS: u32 = 100;
/// The most pages one contents call reads.
const MAX_URLS: usize = 20;

/// The fields a search takes beside `contents`.
const SEARCH_FIELDS: [&str; 9] = [
    "query",
    "numResults",
    "type",
    "includeDomains",
    "excludeDomains",
    "startPublishedDate",
    "endPublishedDate",
    "category",
    "contents",
];
/// The fields of `contents` (and of a contents call beside `urls`/`ids`).
const CONTENTS_FIELDS: [&str; 3] = ["text", "livecrawl", "livecrawlTimeout"];

/// The routes, behind the gate.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    let wrong_method = refusal::wrong_method::<Exa>;
    Router::new()
        .route(SEARCH_PATH, post(search).fallback(wrong_method))
        .layer(crate::server::transport::search_span::TRACED)
        .route(CONTENTS_PATH, post(contents).fallback(wrong_method))
        .layer(gate.layer(Exa))
}

/// Exa's error shape.
#[derive(Debug, Clone, Copy)]
struct Exa;

/// What an Exa client gets instead of results.
type ExaError = Refusal<Exa>;

/// What only this door refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ExaOwn {
    /// A field Exa has that this gateway does not honour, or one Exa does not have.
    #[error("{0} is not honoured by this gateway")]
    Unsupported(String),
}

impl OwnRefusal for ExaOwn {
    fn code(&self) -> &'static str {
        "unsupported_option"
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for Exa {
    type Own = ExaOwn;
    const KEY_IN_BODY: bool = false;

    fn body(refusal: &ExaError, _status: StatusCode, message: String) -> Value {
        let tag = match refusal {
            Refusal::Own(_) => "UNSUPPORTED_OPTION".to_owned(),
            Refusal::Body(_)
            | Refusal::NotJson
            | Refusal::InvalidField(_)
            | Refusal::Request(_) => "INVALID_REQUEST_BODY".to_owned(),
            other => other.code().to_ascii_uppercase(),
        };
        let mut body = json!({"requestId": request_id(), "error": message, "tag": tag});
        if let Some(listed) = refusal.failed_upstreams() {
            body["upstreams"] = listed;
        }
        body
    }
}

/// A request id as Exa's answers carry one.
fn request_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn unsupported(what: impl Into<String>) -> ExaError {
    Refusal::Own(ExaOwn::Unsupported(what.into()))
}

/// What `contents` asks for: the text of each page, cut, read from the cache or afresh.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Contents {
    /// `None`: no text (a search without contents).
    text: Option<TextCut>,
    freshness: Freshness,
    timeout: Option<Duration>,
}

/// `text`: the whole text, or its first characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextCut {
    Whole,
    First(usize),
}

impl Contents {
    const NONE: Self = Self {
        text: None,
        freshness: Freshness::Cached,
        timeout: None,
    };

    /// The contents options in `fields` (a search's `contents`, or a contents call itself, whose
    /// `urls`/`ids` are `skip`ped).
    fn read(fields: &Map<String, Value>, skip: &[&str]) -> Result<Self, ExaError> {
        if let Some(name) = fields.keys().find(|name| {
            !CONTENTS_FIELDS.contains(&name.as_str()) && !skip.contains(&name.as_str())
        }) {
            let why = match name.as_str() {
                "highlights" => "highlights (query-relevant passages need the passage ranker)",
                "summary" => "summary (a model writes it; none is configured)",
                _ => name.as_str(),
            };
            return Err(unsupported(why));
        }
        let text = match fields.get("text") {
            None | Some(Value::Bool(false)) | Some(Value::Null) => None,
            Some(Value::Bool(true)) => Some(TextCut::Whole),
            Some(Value::Object(options)) => Some(text_options(options)?),
            Some(_) => {
                return Err(InvalidField {
                    name: "text",
                    expected: "true, or {\"maxCharacters\": N}",
                }
                .into())
            }
        };
        let livecrawl: Option<String> = field(
            fields,
            "livecrawl",
            "never, fallback, auto, preferred or always",
        )?;
        let freshness = match livecrawl.as_deref() {
            None | Some("never" | "fallback" | "auto") => Freshness::Cached,
            Some("always" | "preferred") => Freshness::Fresh,
            Some(_) => {
                return Err(InvalidField {
                    name: "livecrawl",
                    expected: "never, fallback, auto, preferred or always",
                }
                .into())
            }
        };
        let timeout = number_in(
            fields,
            "livecrawlTimeout",
            1..=300_000,
            "milliseconds from 1 to 300000",
        )?
        .map(|ms| Duration::from_millis(u64::from(ms)));
        Ok(Self {
            text,
            freshness,
            timeout,
        })
    }
}

/// `text: {"maxCharacters", "includeHtmlTags"}`.
fn text_options(options: &Map<String, Value>) -> Result<TextCut, ExaError> {
    if let Some(name) = options
        .keys()
        .find(|name| !matches!(name.as_str(), "maxCharacters" | "includeHtmlTags"))
    {
        return Err(unsupported(format!("text.{name}")));
    }
    if field::<bool>(options, "includeHtmlTags", "a boolean")? == Some(true) {
        return Err(unsupported("text.includeHtmlTags: true"));
    }
    let max = number_in(
        options,
        "maxCharacters",
        1..=1_000_000,
        "an integer from 1 to 1000000",
    )?;
    Ok(max.map_or(TextCut::Whole, |max| TextCut::First(max as usize)))
}

/// A search request, read and checked.
#[derive(Debug, Clone)]
struct SearchAsk {
    input: SearchInput,
    num: usize,
    after: Option<String>,
    before: Option<String>,
    contents: Contents,
}

impl SearchAsk {
    fn read(body: &[u8]) -> Result<Self, ExaError> {
        let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
        if let Some(name) = fields
            .keys()
            .find(|name| !SEARCH_FIELDS.contains(&name.as_str()))
        {
            return Err(unsupported(name.as_str()));
        }
        let query: String = field(&fields, "query", "a string")?.unwrap_or_default();
        let num = number_in(
            &fields,
            "numResults",
            1..=MAX_RESULTS,
            "an integer from 1 to 100",
        )?
        .unwrap_or(DEFAULT_RESULTS) as usize;
        let kind: Option<String> = field(&fields, "type", "a search type")?;
        match kind.as_deref() {
            None | Some("auto" | "fast" | "instant" | "keyword") => {}
            Some(other) => {
                return Err(unsupported(format!(
                    "type {other} (SearXNG is a keyword metasearch: auto, fast, instant, keyword)"
                )))
            }
        }
        let include: Vec<String> =
            field(&fields, "includeDomains", "a list of domains")?.unwrap_or_default();
        let exclude: Vec<String> =
            field(&fields, "excludeDomains", "a list of domains")?.unwrap_or_default();
        let domains = DomainFilter::new(&include, &exclude).map_err(|_| InvalidField {
            name: "includeDomains",
            expected: "lists of domains (a.example)",
        })?;
        let category: Option<String> = field(&fields, "category", "news")?;
        let categories = match category.as_deref() {
            None => Vec::new(),
            Some("news") => vec!["news".to_owned()],
            Some(other) => return Err(unsupported(format!("category {other}"))),
        };
        let after = day_field(&fields, "startPublishedDate")?;
        let before = day_field(&fields, "endPublishedDate")?;
        let contents = match fields.get("contents") {
            None | Some(Value::Null) => Contents::NONE,
            Some(Value::Object(contents)) => Contents::read(contents, &[])?,
            Some(_) => {
                return Err(InvalidField {
                    name: "contents",
                    expected: "an object",
                }
                .into())
            }
        };
        Ok(Self {
            input: SearchInput {
                query,
                categories,
                domains,
                ..SearchInput::default()
            },
            num,
            after,
            before,
            contents,
        })
    }

    /// The hits kept: the date window applied where a hit's day is known, `numResults` of them.
    fn kept(&self, hits: Vec<Hit>) -> Vec<Hit> {
        hits.into_iter()
            .filter(|hit| {
                hit.day().is_none_or(|day| {
                    self.after.as_ref().is_none_or(|after| &day >= after)
                        && self.before.as_ref().is_none_or(|before| &day <= before)
                })
            })
            .take(self.num)
            .collect()
    }
}

/// An ISO 8601 date or date-time field, as its day `YYYY-MM-DD`.
fn day_field(
    fields: &Map<String, Value>,
    name: &'static str,
) -> Result<Option<String>, InvalidField> {
    let invalid = InvalidField {
        name,
        expected: "an ISO 8601 date (2026-11-30 or 2026-11-30T00:00:00.000Z)",
    };
    let Some(raw) = field::<String>(fields, name, invalid.expected)? else {
        return Ok(None);
    };
    let day = raw.trim().get(..10).ok_or(invalid)?;
    humantime::parse_rfc3339(&format!("{day}T00:00:00Z")).map_err(|_| invalid)?;
    Ok(Some(day.to_owned()))
}

/// `POST /exa/search`.
async fn search(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    let max_query_bytes = gateway.server().max_query_bytes;
    let asked = body
        .map_err(ExaError::from)
        .and_then(|body| SearchAsk::read(&body))
        .and_then(|ask| Ok((SearchRequest::new(ask.input.clone(), max_query_bytes)?, ask)));
    let (req, ask) = match asked {
        Ok(asked) => asked,
        Err(err) => {
            search_call::log_refused(Surface::Exa, err.code());
            return err.into_response();
        }
    };
    let (served, found) = match search_call::found(&gateway, Surface::Exa, req, &admitted).await {
        Ok(answer) => answer,
        Err(unanswered) => return ExaError::from(unanswered).into_response(),
    };
    let hits = ask.kept(found.hits);
    let texts: Vec<Option<String>> = match ask.contents.text {
        None => vec![None; hits.len()],
        Some(cut) => {
            let budget = search_read::budget_left(&gateway, started, ask.contents.timeout);
            let asked: Vec<Asked> = hits.iter().map(|hit| Asked::new(&hit.url)).collect();
            read_all(&gateway, &admitted, &asked, ask.contents.freshness, budget)
                .await
                .into_iter()
                .map(|read| {
                    read.and_then(|read| read.result.ok())
                        .map(|done| cut_text(&done.document.content, cut))
                })
                .collect()
        }
    };
    let results: Vec<Value> = hits
        .into_iter()
        .zip(texts)
        .map(|(hit, text)| {
            let mut result = json!({
                "id": hit.url,
                "url": hit.url,
                "title": hit.title,
                "publishedDate": hit.published_date,
                "author": null,
            });
            if ask.contents.text.is_some() {
                result["text"] = text.map_or(Value::Null, Value::from);
            }
            result
        })
        .collect();
    let body = json!({
        "requestId": request_id(),
        "resolvedSearchType": "keyword",
        "results": results,
        "searchTime": started.elapsed().as_secs_f64() * 1000.0,
        "costDollars": {"total": 0},
    });
    let mut response = json_response(StatusCode::OK, body.to_string());
    search_call::set_served_headers(response.headers_mut(), &served);
    response
}

/// Every page of `asked` read as text at once.
async fn read_all(
    gateway: &Gateway,
    admitted: &Admitted,
    asked: &[Asked],
    freshness: Freshness,
    budget: Duration,
) -> Vec<Option<PageRead>> {
    futures::future::join_all(asked.iter().map(|asked| async move {
        let url = asked.url.clone()?;
        Some(
            read_call::run_fresh(
                gateway,
                admitted,
                url,
                ReadFormat::Text,
                Depth::Basic,
                freshness,
                budget,
            )
            .await,
        )
    }))
    .await
}

/// The first `cut` characters of `text`.
fn cut_text(text: &str, cut: TextCut) -> String {
    match cut {
        TextCut::Whole => text.to_owned(),
        TextCut::First(max) => text.chars().take(max).collect(),
    }
}

/// A contents request: the pages and what to read of them.
#[derive(Debug, Clone)]
struct ContentsAsk {
    urls: Vec<String>,
    contents: Contents,
}

impl ContentsAsk {
    fn read(body: &[u8]) -> Result<Self, ExaError> {
        let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
        const URLS: InvalidField = InvalidField {
            name: "urls",
            expected: "a list of 1 to 20 URLs (or ids)",
        };
        let urls: Option<Vec<String>> = field(&fields, "urls", URLS.expected)?;
        let ids: Option<Vec<String>> = field(&fields, "ids", URLS.expected)?;
        let urls = match (urls, ids) {
            (Some(urls), None) | (None, Some(urls)) => urls,
            _ => return Err(URLS.into()),
        };
        if urls.is_empty() || urls.len() > MAX_URLS {
            return Err(URLS.into());
        }
        let mut contents = Contents::read(&fields, &["urls", "ids"])?;
        // A contents call reads text unless it asked for nothing else (as exa-py's default).
        contents.text.get_or_insert(TextCut::Whole);
        Ok(Self { urls, contents })
    }
}

/// `POST /exa/contents`.
async fn contents(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    let ask = match body
        .map_err(ExaError::from)
        .and_then(|body| ContentsAsk::read(&body))
    {
        Ok(ask) => ask,
        Err(err) => {
            tracing::info!(error = err.code(), "exa contents refused");
            return err.into_response();
        }
    };
    let budget = search_read::budget_left(&gateway, started, ask.contents.timeout);
    let asked: Vec<Asked> = ask.urls.iter().map(|url| Asked::new(url)).collect();
    let reads = read_all(&gateway, &admitted, &asked, ask.contents.freshness, budget).await;
    let cut = ask.contents.text.unwrap_or(TextCut::Whole);
    let mut results = Vec::new();
    let mut statuses = Vec::new();
    for (asked, read) in asked.into_iter().zip(reads) {
        let id = asked.as_sent;
        match read.map(|read| read.result) {
            Some(Ok(done)) => {
                results.push(json!({
                    "id": id,
                    "url": done.document.final_url,
                    "title": done.document.title,
                    "publishedDate": done.document.published,
                    "author": null,
                    "text": cut_text(&done.document.content, cut),
                }));
                statuses.push(json!({"id": id, "status": "success"}));
            }
            Some(Err(failed)) => statuses.push(failed_status(&id, failed.failure)),
            None => statuses.push(failed_status(&id, ReadFailure::InvalidUrl)),
        }
    }
    let body = json!({
        "requestId": request_id(),
        "results": results,
        "statuses": statuses,
        "costDollars": {"total": 0},
    });
    json_response(StatusCode::OK, body.to_string())
}

/// Exa's status of a page not read: its tag and HTTP status, and the gateway's sentence.
fn failed_status(id: &str, failure: ReadFailure) -> Value {
    let (tag, status) = match failure {
        ReadFailure::HttpStatus(404 | 410) => ("CRAWL_NOT_FOUND", 404),
        ReadFailure::HttpStatus(status) => ("CRAWL_UNKNOWN_ERROR", status),
        ReadFailure::Upstream(gateway_core::upstream::ErrorClass::Timeout) => {
            ("CRAWL_TIMEOUT", 408)
        }
        ReadFailure::Blocked(_)
        | ReadFailure::RateLimitedFor(_)
        | ReadFailure::ForbiddenAddress
        | ReadFailure::InvalidUrl => ("SOURCE_NOT_AVAILABLE", 403),
        _ => ("CRAWL_UNKNOWN_ERROR", 500),
    };
    json!({
        "id": id,
        "status": "error",
        "error": {"tag": tag, "httpStatusCode": status},
        "message": read_call::unread_reason(failure),
    })
}

/// A body through the search's or the contents' decoder, for the fuzz target: the results or
/// pages it asks for, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8]) -> Result<usize, StatusCode> {
    let refused = |err: ExaError| err.into_response().status();
    match body.split_first() {
        Some((which, rest)) if which % 2 == 0 => {
            let ask = SearchAsk::read(rest).map_err(refused)?;
            SearchRequest::new(ask.input.clone(), 2048).map_err(|err| refused(err.into()))?;
            Ok(ask.num)
        }
        Some((_, rest)) => ContentsAsk::read(rest)
            .map(|ask| ask.urls.len())
            .map_err(refused),
        None => Err(StatusCode::BAD_REQUEST),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn search_ask(body: Value) -> Result<SearchAsk, ExaError> {
        SearchAsk::read(body.to_string().as_bytes())
    }

    #[test]
    fn reads_what_exa_py_sends() {
        let ask = search_ask(
            json!({"query": "rust async", "numResults": 3, "type": "auto",
            "includeDomains": ["docs.rs"], "startPublishedDate": "2026-01-01T00:00:00.000Z",
            "contents": {"text": {"maxCharacters": 10000}, "livecrawl": "always"}}),
        )
        .unwrap();
        assert_eq!(ask.num, 3);
        assert_eq!(ask.after.as_deref(), Some("2026-01-01"));
        assert_eq!(ask.contents.text, Some(TextCut::First(10_000)));
        assert_eq!(ask.contents.freshness, Freshness::Fresh);
        assert!(!ask.input.domains.is_empty());
        let plain = search_ask(json!({"query": "q"})).unwrap();
        assert_eq!((plain.num, plain.contents.text), (10, None));
        let contents =
            ContentsAsk::read(br#"{"urls": ["https://a.example/"], "text": true}"#).unwrap();
        assert_eq!(contents.contents.text, Some(TextCut::Whole));
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (body, named) in [
            (json!({"query": "q", "type": "neural"}), "neural"),
            (json!({"query": "q", "type": "deep"}), "deep"),
            (json!({"query": "q", "userLocation": "US"}), "userLocation"),
            (json!({"query": "q", "category": "company"}), "company"),
            (
                json!({"query": "q", "contents": {"highlights": true}}),
                "highlights",
            ),
            (
                json!({"query": "q", "contents": {"summary": true}}),
                "summary",
            ),
            (
                json!({"query": "q", "contents": {"text": {"includeHtmlTags": true}}}),
                "includeHtmlTags",
            ),
            (json!({"query": "q", "numResults": 101}), "numResults"),
            (
                json!({"query": "q", "startPublishedDate": "yesterday"}),
                "startPublishedDate",
            ),
        ] {
            let err = search_ask(body.clone()).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body}");
            assert!(err.message().contains(named), "{body}: {}", err.message());
        }
        for body in [
            r#"{"urls": []}"#,
            r#"{"text": true}"#,
            r#"{"urls": ["a"], "ids": ["b"]}"#,
        ] {
            assert_eq!(
                ContentsAsk::read(body.as_bytes()).unwrap_err().code(),
                "invalid_field"
            );
        }
    }

    #[test]
    fn the_date_window_drops_hits_whose_day_is_known_and_outside() {
        let ask = search_ask(json!({"query": "q", "startPublishedDate": "2026-03-01",
            "endPublishedDate": "2026-03-31", "numResults": 5}))
        .unwrap();
        let hit = |url: &str, date: Option<&str>| Hit {
            url: url.into(),
            title: String::new(),
            content: String::new(),
            engines: Vec::new(),
            published_date: date.map(str::to_owned),
        };
        let kept = ask.kept(vec![
            hit("https://a.example/in", Some("2026-03-15T08:00:00")),
            hit("https://a.example/before", Some("2026-02-28")),
            hit("https://a.example/unknown", None),
            hit("https://a.example/after", Some("2026-04-01 10:00")),
        ]);
        let urls: Vec<&str> = kept.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(urls, ["https://a.example/in", "https://a.example/unknown"]);
    }

    #[test]
    fn text_is_cut_at_characters_not_bytes() {
        assert_eq!(cut_text("ünïcödé", TextCut::First(3)), "ünï");
        assert_eq!(cut_text("abc", TextCut::Whole), "abc");
    }
}
