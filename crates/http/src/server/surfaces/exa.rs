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
//! `preferred` afresh); `livecrawlTimeout` (ms, the budget); `highlights` (`true`, or
//! `{"query", "maxCharacters"}`, and Exa's older `numSentences`, `highlightsPerUrl`): each page's
//! passages that best answer the query (the search's, or `highlights.query`, which a contents call
//! must give), the best first, chosen by the engine's passage ranker from the page as read or
//! cached (#41) — `highlights` and `highlightScores` (BM25's `s / (s + 1)`) on each result. Refused
//! by name: `summary` (a model writes it), `subpages`, `extras`, `context`, and every field Exa has that
//! this door does not take (`userLocation`, `moderation`, `includeText`, …).
//!
//! Answer: `{"requestId", "resolvedSearchType": "keyword", "results": [{"id", "url", "title",
//! "publishedDate", "author", "text"?}], "searchTime", "costDollars": {"total": 0}}` (`author` the page's
//! own when it was read and names one, else `null`); the
//! contents API adds `statuses` (`{"id", "status": "success"}`, or `"error"` with Exa's
//! `{"tag", "httpStatusCode"}`: `CRAWL_NOT_FOUND`, `CRAWL_TIMEOUT`, `SOURCE_NOT_AVAILABLE`,
//! `CRAWL_UNKNOWN_ERROR`) and lists only the pages read in `results`. Errors are Exa's
//! `{"requestId", "error", "tag"}`: 400 `INVALID_REQUEST_BODY` or `UNSUPPORTED_OPTION`, 401/429
//! from the gate, 502 when every upstream failed, 503 with `Retry-After` when the gateway sheds
//! load.

use std::sync::Arc;
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
use gateway_engine::read::passages::{Merge, PassageOrder, Selection};
use gateway_engine::read::{Depth, Freshness, PageRead};
use gateway_upstreams::reader::{Document, ReadFailure};

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
const CONTENTS_FIELDS: [&str; 4] = ["text", "highlights", "livecrawl", "livecrawlTimeout"];
/// The fields of `highlights` (`numSentences` and `highlightsPerUrl` are Exa's older ones).
const HIGHLIGHTS_FIELDS: [&str; 4] = ["query", "maxCharacters", "numSentences", "highlightsPerUrl"];
/// Highlights per page when the request does not say (`highlights: true`).
const DEFAULT_HIGHLIGHTS: usize = 3;
/// The longest highlight, in characters, when the request does not say (a sentence or three).
const DEFAULT_HIGHLIGHT_CHARS: usize = 300;
/// Characters a sentence of `numSentences` is taken to be.
const SENTENCE_CHARS: usize = 150;

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
    /// `None`: no highlights.
    highlights: Option<Highlights>,
    freshness: Freshness,
    timeout: Option<Duration>,
}

/// `highlights`: each page's passages that best answer a query, the best first (#41), chosen by
/// the engine's passage ranker from the page as read or cached.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Highlights {
    /// `highlights.query`; `None`: the search's query (a contents call must name one).
    query: Option<String>,
    /// The longest passage a highlight is made of (`numSentences` × 150, else 300).
    passage_chars: usize,
    /// Highlights per page (`highlightsPerUrl`, else 3).
    per_url: usize,
    /// All of a page's highlights together, in characters (`maxCharacters`).
    max_chars: Option<usize>,
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
        highlights: None,
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
        let highlights = match fields.get("highlights") {
            None | Some(Value::Bool(false)) | Some(Value::Null) => None,
            Some(Value::Bool(true)) => Some(Highlights {
                query: None,
                passage_chars: DEFAULT_HIGHLIGHT_CHARS,
                per_url: DEFAULT_HIGHLIGHTS,
                max_chars: None,
            }),
            Some(Value::Object(options)) => Some(highlight_options(options)?),
            Some(_) => {
                return Err(InvalidField {
                    name: "highlights",
                    expected: "true, or {\"query\", \"maxCharacters\"}",
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
            highlights,
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

/// `highlights` as an object: Exa's `query` and `maxCharacters`, and its older `numSentences` and
/// `highlightsPerUrl`; any other field refused by name.
fn highlight_options(options: &Map<String, Value>) -> Result<Highlights, ExaError> {
    if let Some(name) = options
        .keys()
        .find(|name| !HIGHLIGHTS_FIELDS.contains(&name.as_str()))
    {
        return Err(unsupported(format!("highlights.{name}")));
    }
    let query = field::<String>(options, "query", "a string")?
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty());
    let sentences = number_in(options, "numSentences", 1..=20, "an integer from 1 to 20")?;
    let per_url = number_in(
        options,
        "highlightsPerUrl",
        1..=20,
        "an integer from 1 to 20",
    )?;
    let max_chars = number_in(
        options,
        "maxCharacters",
        1..=100_000,
        "an integer from 1 to 100000",
    )?;
    let passage_chars = sentences.map_or(DEFAULT_HIGHLIGHT_CHARS, |n| n as usize * SENTENCE_CHARS);
    Ok(Highlights {
        query,
        passage_chars: max_chars.map_or(passage_chars, |max| passage_chars.min(max as usize)),
        per_url: per_url.map_or(DEFAULT_HIGHLIGHTS, |n| n as usize),
        max_chars: max_chars.map(|n| n as usize),
    })
}

impl Highlights {
    /// The page's highlights for `query` and their scores, the best first; ranked on the
    /// blocking pool, then by the reranker when one is configured (a highlight's score is then
    /// its place in the reranker's order, still the best first).
    async fn of(
        &self,
        gateway: &Gateway,
        document: Arc<Document>,
        query: &str,
        limit: Duration,
    ) -> Value {
        let selection = Selection {
            max_chars: self.passage_chars,
            max_passages: Some(self.per_url),
            budget: None,
            order: PassageOrder::Score,
            relevant_only: false,
            merge: Merge::Adjacent,
        };
        let query = self.query.clone().unwrap_or_else(|| query.to_owned());
        let chosen = gateway
            .rank_passages(vec![document], query, self.passage_chars, limit)
            .await
            .choose(&selection);
        let mut left = self.max_chars.unwrap_or(usize::MAX);
        let mut texts = Vec::new();
        let mut scores = Vec::new();
        for passage in chosen {
            let chars = passage.text.chars().count();
            if chars > left {
                continue;
            }
            left -= chars;
            let score = f64::from(passage.score.max(0.0));
            scores.push(score / (score + 1.0));
            texts.push(passage.text);
        }
        json!({"highlights": texts, "highlightScores": scores})
    }
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
    let documents: Vec<Option<Arc<Document>>> =
        if ask.contents.text.is_none() && ask.contents.highlights.is_none() {
            vec![None; hits.len()]
        } else {
            let budget = search_read::budget_left(&gateway, started, ask.contents.timeout);
            let asked: Vec<Asked> = hits.iter().map(|hit| Asked::new(&hit.url)).collect();
            read_all(&gateway, &admitted, &asked, ask.contents.freshness, budget)
                .await
                .into_iter()
                .map(|read| {
                    read.and_then(|read| read.result.ok())
                        .map(|done| done.document)
                })
                .collect()
        };
    let mut results: Vec<Value> = hits
        .into_iter()
        .map(|hit| {
            json!({
                "id": hit.url,
                "url": hit.url,
                "title": hit.title,
                "publishedDate": hit.published_date,
                "author": null,
            })
        })
        .collect();
    // Each page's contents at once: a reranker's call per page, not one after another.
    let left = search_read::budget_left(&gateway, started, ask.contents.timeout);
    futures::future::join_all(results.iter_mut().zip(documents).map(|(result, document)| {
        ask.contents
            .add_to(result, &gateway, document, &ask.input.query, left)
    }))
    .await;
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

impl Contents {
    /// What was asked of a page into its `result`: `text` (null when the page could not be
    /// read), `highlights` and `highlightScores` (empty then) for `query`, reranked within
    /// `limit`.
    async fn add_to(
        &self,
        result: &mut Value,
        gateway: &Gateway,
        document: Option<Arc<Document>>,
        query: &str,
        limit: Duration,
    ) {
        if let Some(author) = document.as_ref().and_then(|d| d.author.as_deref()) {
            result["author"] = Value::from(author);
        }
        if let Some(cut) = self.text {
            result["text"] = document
                .as_ref()
                .map_or(Value::Null, |d| Value::from(cut_text(&d.content, cut)));
        }
        if let Some(highlights) = &self.highlights {
            let found = match document {
                Some(document) => highlights.of(gateway, document, query, limit).await,
                None => json!({"highlights": [], "highlightScores": []}),
            };
            result["highlights"] = found["highlights"].clone();
            result["highlightScores"] = found["highlightScores"].clone();
        }
    }
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
        // Highlights need a query: a contents call has none of its own.
        if contents
            .highlights
            .as_ref()
            .is_some_and(|h| h.query.is_none())
        {
            return Err(InvalidField {
                name: "highlights.query",
                expected: "the query the highlights answer (a contents call has no search)",
            }
            .into());
        }
        // A contents call reads text unless it asked for something else (as exa-py's default).
        if contents.highlights.is_none() {
            contents.text.get_or_insert(TextCut::Whole);
        }
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
    let mut results = Vec::new();
    let mut documents = Vec::new();
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
                    "author": done.document.author,
                }));
                documents.push(done.document);
                statuses.push(json!({"id": id, "status": "success"}));
            }
            Some(Err(failed)) => statuses.push(failed_status(&id, failed.failure)),
            None => statuses.push(failed_status(&id, ReadFailure::InvalidUrl)),
        }
    }
    // A contents call's highlights carry their own query (checked when read); each page's at
    // once, within what is left of the budget.
    let left = search_read::budget_left(&gateway, started, ask.contents.timeout);
    futures::future::join_all(results.iter_mut().zip(documents).map(|(result, document)| {
        ask.contents
            .add_to(result, &gateway, Some(document), "", left)
    }))
    .await;
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
    fn highlights_are_read_with_exas_options_old_and_new() {
        let plain = search_ask(json!({"query": "q", "contents": {"highlights": true}})).unwrap();
        assert_eq!(
            plain.contents.highlights,
            Some(Highlights {
                query: None,
                passage_chars: DEFAULT_HIGHLIGHT_CHARS,
                per_url: DEFAULT_HIGHLIGHTS,
                max_chars: None,
            })
        );
        assert_eq!(
            plain.contents.text, None,
            "highlights alone read no text back"
        );
        let old = search_ask(json!({"query": "q", "contents": {"highlights":
            {"numSentences": 2, "highlightsPerUrl": 4, "query": " mirror "}}}))
        .unwrap();
        let old = old.contents.highlights.unwrap();
        assert_eq!((old.passage_chars, old.per_url), (300, 4));
        assert_eq!(old.query.as_deref(), Some("mirror"));
        let capped =
            search_ask(json!({"query": "q", "contents": {"highlights": {"maxCharacters": 120}}}))
                .unwrap();
        let capped = capped.contents.highlights.unwrap();
        assert_eq!((capped.passage_chars, capped.max_chars), (120, Some(120)));
        // A contents call has no search query: its highlights must name one.
        let err = ContentsAsk::read(br#"{"urls": ["https://a.example/"], "highlights": true}"#)
            .unwrap_err();
        assert!(
            err.message().contains("highlights.query"),
            "{}",
            err.message()
        );
        let named = ContentsAsk::read(
            br#"{"urls": ["https://a.example/"], "highlights": {"query": "mirror"}}"#,
        )
        .unwrap();
        assert_eq!(
            named.contents.text, None,
            "no text unless asked beside highlights"
        );
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (body, named) in [
            (json!({"query": "q", "type": "neural"}), "neural"),
            (json!({"query": "q", "type": "deep"}), "deep"),
            (json!({"query": "q", "userLocation": "US"}), "userLocation"),
            (json!({"query": "q", "category": "company"}), "company"),
            (
                json!({"query": "q", "contents": {"highlights": {"model": "x"}}}),
                "highlights.model",
            ),
            (
                json!({"query": "q", "contents": {"highlights": {"highlightsPerUrl": 0}}}),
                "highlightsPerUrl",
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
