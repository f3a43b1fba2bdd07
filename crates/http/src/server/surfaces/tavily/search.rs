//! `POST /tavily/search`: Tavily's search request and response shape.
//!
//! Request: `query`; `max_results` (0–20, default 5); `topic` (`general` → SearXNG category
//! `general`, `news` → `news`, `finance` searched as `general`); `time_range` (`day`…`year` or
//! `d`…`y`) or else `days` (the shortest SearXNG range covering it); `include_domains` /
//! `exclude_domains`, the search's domain filter (`request::DomainFilter`: applied to every
//! upstream's results and mapped onto the upstreams that take one);
//! `include_answer` (the first of SearXNG's `answers`, when it gave one); `include_raw_content`
//! (`true` or `"markdown"`: each result returned is read as Markdown; `"text"`: as plain text),
//! the results read at once within what is left of the request's budget; `language` (SearXNG's
//! language); `search_depth: "advanced"` with `chunks_per_source` (1–3, Tavily's range, only with
//! `advanced`) or with `include_raw_content`: each result returned is read and its `content` is
//! the page's chunks that best answer the query ([`super::chunks`]: `chunks_per_source`, default 3,
//! each at most 500 characters, in page order, joined by ` [...] `) — SearXNG's snippet where the
//! page could not be read (#41). Harmless and taken: `search_depth` otherwise,
//! `timeout`, `fetch_timeout`, `cache_fallback`, `include_usage`, `include_domains_mode:
//! "restrict"`, and `false` for `include_images`, `include_image_descriptions`, `include_favicon`,
//! `auto_parameters`, `exact_match`, `filter_by_language`. Refused by name: those set
//! to `true`, `country`, `start_date`,
//! `end_date`, `max_age_hours`, `include_domains_mode: "prefer"`, and any field Tavily's API does
//! not have.
//!
//! Response: `query`, `answer`, `images` (empty), `follow_up_questions` (null), `results[]` with
//! `title`, `url`, `content`, `score` (the reciprocal of the result's rank: 1, 0.5, 0.33, …),
//! `raw_content` (the page's text when it was asked for and read, else null) and
//! `published_date` when the source gave one, and `response_time` in seconds — plus the gateway's
//! `X-Cache` and `X-Gateway-Outcome` headers. With chunks and `?explain=1`, the `gateway` object's
//! `passages` lists, per page read, which ranking chose them (`{"url", "ranked_by", "fallback"}`:
//! the reranker's order when `RERANK_URL` is set, the lexical order otherwise or as its fallback).

use std::sync::Arc;

use axum::extract::{Extension, RawQuery, State};
#[cfg(any(test, feature = "fuzzing"))]
use axum::http::{header, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::chunks::{Chunks, DEFAULT_CHUNKS};
use super::{carries_key, TavilyError, TavilyOwn};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::document::Found;
#[cfg(any(test, feature = "fuzzing"))]
use crate::server::kit::document::Hit;
use crate::server::kit::explain;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use crate::server::kit::refusal::{json_response, Refusal};
use crate::server::kit::{search_call, search_read};
use gateway_core::request::{
    DomainFilter, ReadFormat, SearchInput, SearchRequest, Side, Surface, TimeRange,
};
use gateway_upstreams::reader::Document;

/// Tavily's own limit on `max_results`.
const MAX_RESULTS: u32 = 20;
/// `max_results` when the request has none (Tavily's default).
const DEFAULT_MAX_RESULTS: u32 = 5;

/// `POST /tavily/search`.
pub(crate) async fn search(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    // `?explain=1` adds the gateway's `gateway` object to Tavily's reply.
    let Ok(explain) = explain::wanted_in_query(query.as_deref()) else {
        let err = TavilyError::Own(TavilyOwn::InvalidExplain);
        search_call::log_refused(Surface::Tavily, err.code());
        return err.into_response();
    };
    // A client the key check named has shown its key; an anonymous one must still carry one.
    let keyed = admitted.clients.requires_keys();
    let max_query_bytes = gateway.server().max_query_bytes;
    let decoded = body
        .map_err(TavilyError::from)
        .and_then(|body| decode(keyed, &headers, &body, max_query_bytes));
    let (req, options) = match decoded {
        Ok(request) => request,
        Err(err) => {
            search_call::log_refused(Surface::Tavily, err.code());
            return err.into_response();
        }
    };
    let echoed = req.query.clone();
    let (served, found) = match search_call::found(&gateway, Surface::Tavily, req, &admitted).await
    {
        Ok(answer) => answer,
        Err(unanswered) => return TavilyError::from(unanswered).into_response(),
    };
    let mut reply = options.reply(echoed, found, started.elapsed().as_secs_f64());
    // Which ranking chose each page's chunks, for `explain`.
    let mut rankings: Vec<Value> = Vec::new();
    if options.raw_content.is_some() || options.chunks.is_some() {
        let left = search_read::budget_left(&gateway, started, None);
        let urls: Vec<String> = reply.results.iter().map(|r| r.url.clone()).collect();
        let format = options.raw_content.unwrap_or(ReadFormat::Markdown);
        let reads = search_read::read_hits(
            &gateway,
            &admitted,
            urls.iter().map(String::as_str),
            format,
            left,
        )
        .await;
        let documents: Vec<Option<Arc<Document>>> = reads
            .into_iter()
            .map(|read| match read.map(|read| read.result) {
                Some(Ok(done)) => Some(done.document),
                _ => None,
            })
            .collect();
        // Each page's chunks at once (a reranker's call per page, not one after another), within
        // what is left of the budget.
        let left = search_read::budget_left(&gateway, started, None);
        let gateway = &gateway;
        let chosen = futures::future::join_all(documents.iter().map(|document| {
            let asked = options.chunks.as_ref().zip(document.clone());
            async move {
                match asked {
                    Some((chunks, document)) => Some(chunks.of(gateway, document, left).await),
                    None => None,
                }
            }
        }))
        .await;
        for ((result, document), chosen) in reply.results.iter_mut().zip(documents).zip(chosen) {
            let Some(document) = document else {
                continue;
            };
            if options.raw_content.is_some() {
                result.raw_content = Some(document.content.clone());
            }
            if let Some((chosen, by)) = chosen {
                let mut ranking = explain::passages_object(by);
                ranking["url"] = Value::from(result.url.as_str());
                rankings.push(ranking);
                if !chosen.is_empty() {
                    result.content = chosen;
                }
            }
        }
        reply.response_time = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    }
    let mut body = serde_json::to_vec(&reply).unwrap_or_default();
    if explain {
        let mut object = explain::object(&served, &admitted);
        if options.chunks.is_some() {
            object["passages"] = Value::from(rankings);
        }
        body = explain::add_to(&body, object);
    }
    let mut response = json_response(StatusCode::OK, body);
    search_call::set_served_headers(response.headers_mut(), &served);
    response
}

/// The fields a search reads.
const READS: [&str; 13] = [
    "query",
    "max_results",
    "topic",
    "time_range",
    "days",
    "include_domains",
    "exclude_domains",
    "include_answer",
    "include_raw_content",
    "language",
    "search_depth",
    "chunks_per_source",
    "api_key",
];

/// The fields harmless whatever their value.
const HARMLESS: [&str; 4] = [
    "timeout",
    "fetch_timeout",
    "cache_fallback",
    "include_usage",
];

/// Whether a field this door does not read is harmless at `value` (else it is refused by name).
fn harmless_at(name: &str, value: &Value) -> bool {
    match name {
        "include_images"
        | "include_image_descriptions"
        | "include_favicon"
        | "auto_parameters"
        | "exact_match"
        | "filter_by_language" => value == &Value::Bool(false),
        "include_domains_mode" => value.as_str() == Some("restrict"),
        _ => false,
    }
}

/// The body as a JSON object, checked for a key (unless the key check named the caller: `keyed`),
/// read into the validated search and the reply options.
fn decode(
    keyed: bool,
    headers: &HeaderMap,
    body: &[u8],
    max_query_bytes: usize,
) -> Result<(SearchRequest, ReplyOptions), TavilyError> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(Refusal::NotJson);
    };
    if !keyed && !carries_key(headers, &fields) {
        return Err(Refusal::MissingKey);
    }
    if let Some(named) = json_fields::unhonoured(&fields, &READS, &HARMLESS, harmless_at) {
        return Err(Refusal::Own(TavilyOwn::Unsupported(named)));
    }
    let (input, options) = TavilyRequest::read(&fields)?.into_search()?;
    Ok((SearchRequest::new(input, max_query_bytes)?, options))
}

/// One request body through what this surface does with it around the pipeline, for the fuzz
/// target: [`decode`] (with a bearer key, so the body is read past the key check), then the cache
/// key and the reply over one result at each of `urls`, or the refusal as a response. Returns the
/// number of results in the reply, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8], urls: &[&str]) -> Result<usize, StatusCode> {
    let mut headers = HeaderMap::new();
    headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k"));
    let (req, options) =
        decode(false, &headers, body, 2048).map_err(|err| err.into_response().status())?;
    let _ = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
    let hits = urls
        .iter()
        .map(|url| Hit {
            url: (*url).to_owned(),
            title: req.query.clone(),
            content: req.query.clone(),
            engines: vec!["fuzz".to_owned()],
            published_date: None,
        })
        .collect();
    let found = Found {
        hits,
        answers: vec![req.query.clone()],
        ..Found::default()
    };
    let reply = options.reply(req.query, found, 0.25);
    assert!(reply.results.len() <= options.max_results.min(urls.len()));
    assert!(serde_json::to_string(&reply).is_ok());
    Ok(reply.results.len())
}

/// `topic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Topic {
    General,
    News,
    Finance,
}

/// `time_range`, in either of Tavily's spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum WireTimeRange {
    #[serde(alias = "d", rename = "day")]
    Day,
    #[serde(alias = "w", rename = "week")]
    Week,
    #[serde(alias = "m", rename = "month")]
    Month,
    #[serde(alias = "y", rename = "year")]
    Year,
}

impl From<WireTimeRange> for TimeRange {
    fn from(range: WireTimeRange) -> Self {
        match range {
            WireTimeRange::Day => Self::Day,
            WireTimeRange::Week => Self::Week,
            WireTimeRange::Month => Self::Month,
            WireTimeRange::Year => Self::Year,
        }
    }
}

/// `include_answer`: a flag or a depth, any depth meaning yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum IncludeAnswer {
    Flag(bool),
    Depth(AnswerDepth),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AnswerDepth {
    Basic,
    Advanced,
}

/// The fields of a Tavily search request this surface reads.
#[derive(Debug, Default, PartialEq, Eq)]
struct TavilyRequest {
    query: String,
    max_results: Option<u32>,
    topic: Option<Topic>,
    time_range: Option<WireTimeRange>,
    days: Option<u32>,
    domains: DomainFilter,
    include_answer: Option<IncludeAnswer>,
    include_raw_content: Option<RawContent>,
    language: Option<String>,
    search_depth: Option<SearchDepth>,
    chunks_per_source: Option<u32>,
}

/// `search_depth`: only `advanced` changes what this door does (it reads pages for chunks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum SearchDepth {
    Basic,
    Advanced,
    Fast,
    UltraFast,
}

/// What Tavily's search takes for `chunks_per_source`.
const CHUNKS_EXPECTED: &str = "an integer from 1 to 3, with search_depth \"advanced\"";

/// `include_raw_content`: a flag (`true` is Markdown) or a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum RawContent {
    Flag(bool),
    Format(RawFormat),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RawFormat {
    Markdown,
    Text,
}

impl RawContent {
    fn format(self) -> Option<ReadFormat> {
        match self {
            Self::Flag(false) => None,
            Self::Flag(true) | Self::Format(RawFormat::Markdown) => Some(ReadFormat::Markdown),
            Self::Format(RawFormat::Text) => Some(ReadFormat::Text),
        }
    }
}

impl TavilyRequest {
    fn read(fields: &Map<String, Value>) -> Result<Self, InvalidField> {
        Ok(Self {
            query: field(fields, "query", "a string")?.unwrap_or_default(),
            max_results: number_in(
                fields,
                "max_results",
                0..=MAX_RESULTS,
                "an integer from 0 to 20",
            )?,
            topic: field(fields, "topic", "general, news or finance")?,
            time_range: field(fields, "time_range", "day, week, month or year")?,
            days: number_in(fields, "days", 1..=u32::MAX, "a positive integer")?,
            domains: domain_filter(
                &field::<Vec<String>>(fields, "include_domains", "a list of domains")?
                    .unwrap_or_default(),
                &field::<Vec<String>>(fields, "exclude_domains", "a list of domains")?
                    .unwrap_or_default(),
            )?,
            include_answer: field(
                fields,
                "include_answer",
                "a boolean, \"basic\" or \"advanced\"",
            )?,
            include_raw_content: field(
                fields,
                "include_raw_content",
                "a boolean, \"markdown\" or \"text\"",
            )?,
            language: field(fields, "language", "a language code such as en")?,
            search_depth: field(
                fields,
                "search_depth",
                "basic, advanced, fast or ultra-fast",
            )?,
            chunks_per_source: number_in(fields, "chunks_per_source", 1..=3, CHUNKS_EXPECTED)?,
        })
    }

    /// The gateway search it asks for, and what shapes the reply; `chunks_per_source` without
    /// `search_depth: "advanced"` is named (Tavily makes chunks only then).
    fn into_search(self) -> Result<(SearchInput, ReplyOptions), InvalidField> {
        let advanced = self.search_depth == Some(SearchDepth::Advanced);
        if self.chunks_per_source.is_some() && !advanced {
            return Err(InvalidField {
                name: "chunks_per_source",
                expected: CHUNKS_EXPECTED,
            });
        }
        let raw_content = self.include_raw_content.and_then(RawContent::format);
        let chunks = (advanced && (self.chunks_per_source.is_some() || raw_content.is_some()))
            .then(|| Chunks {
                query: self.query.clone(),
                per_source: self
                    .chunks_per_source
                    .map_or(DEFAULT_CHUNKS, |n| n as usize),
            });
        let categories = match self.topic {
            None => Vec::new(),
            Some(Topic::News) => vec!["news".to_owned()],
            Some(Topic::General | Topic::Finance) => vec!["general".to_owned()],
        };
        let time_range = self
            .time_range
            .map(TimeRange::from)
            .or(self.days.map(TimeRange::covering_days));
        let input = SearchInput {
            query: self.query,
            categories,
            time_range,
            domains: self.domains,
            language: self.language,
            ..SearchInput::default()
        };
        let options = ReplyOptions {
            max_results: self.max_results.unwrap_or(DEFAULT_MAX_RESULTS) as usize,
            answer: matches!(
                self.include_answer,
                Some(IncludeAnswer::Flag(true) | IncludeAnswer::Depth(_))
            ),
            raw_content,
            chunks,
        };
        Ok((input, options))
    }
}

/// Tavily's two lists as the search's filter, a bad entry named by its field.
fn domain_filter(include: &[String], exclude: &[String]) -> Result<DomainFilter, InvalidField> {
    DomainFilter::new(include, exclude).map_err(|err| InvalidField {
        name: match err.side() {
            Side::Include => "include_domains",
            Side::Exclude => "exclude_domains",
        },
        expected: "a list of at most 300 domains",
    })
}

/// What shapes a reply beyond the search itself.
#[derive(Debug, Clone, PartialEq)]
struct ReplyOptions {
    max_results: usize,
    answer: bool,
    /// Read each result returned, in this format.
    raw_content: Option<ReadFormat>,
    /// Each result read, its `content` the page's chunks for the query (`search_depth:
    /// "advanced"`).
    chunks: Option<Chunks>,
}

/// Tavily's response.
#[derive(Debug, Serialize)]
struct Reply {
    query: String,
    follow_up_questions: Option<Vec<String>>,
    answer: Option<String>,
    images: Vec<String>,
    results: Vec<ReplyResult>,
    response_time: f64,
}

/// One result in Tavily's shape.
#[derive(Debug, Serialize)]
struct ReplyResult {
    title: String,
    url: String,
    content: String,
    score: f64,
    raw_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    published_date: Option<String>,
}

impl ReplyOptions {
    fn reply(&self, query: String, found: Found, elapsed_seconds: f64) -> Reply {
        let results = found
            .hits
            .into_iter()
            .take(self.max_results)
            .enumerate()
            .map(|(i, hit)| ReplyResult {
                title: hit.title,
                url: hit.url,
                content: hit.content,
                score: 1.0 / (i as f64 + 1.0),
                raw_content: None,
                published_date: hit.published_date,
            })
            .collect();
        Reply {
            query,
            follow_up_questions: None,
            answer: if self.answer {
                found.answers.into_iter().next()
            } else {
                None
            },
            images: Vec::new(),
            results,
            response_time: (elapsed_seconds * 1000.0).round() / 1000.0,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::server::kit::body::BodyError;
    use crate::server::kit::document::FailedUpstream;
    use gateway_core::request::RequestError;
    use gateway_core::upstream::ErrorClass;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn hit(url: &str) -> Hit {
        Hit {
            url: url.into(),
            title: format!("title of {url}"),
            content: "c".into(),
            engines: vec!["alpha".into()],
            published_date: None,
        }
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name_and_the_harmless_is_taken() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        let decode = |body: Value| decode(false, &headers, body.to_string().as_bytes(), 2048);
        let (req, _) = decode(json!({"query": "q", "search_depth": "advanced",
            "include_images": false, "include_favicon": false, "include_usage": true,
            "include_domains_mode": "restrict", "timeout": 60, "language": "de"}))
        .unwrap();
        assert_eq!(req.language.as_deref(), Some("de"));
        for (body, named) in [
            (
                json!({"query": "q", "include_images": true}),
                "include_images: true",
            ),
            (
                json!({"query": "q", "country": "germany"}),
                "country: \"germany\"",
            ),
            (
                json!({"query": "q", "start_date": "2026-01-01"}),
                "start_date",
            ),
            (
                json!({"query": "q", "include_domains_mode": "prefer"}),
                "include_domains_mode",
            ),
            (
                json!({"query": "q", "some_future_field": {"x": 1}}),
                "some_future_field",
            ),
        ] {
            let err = decode(body.clone()).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(err.code(), "unsupported_option", "{body}");
            assert!(err.message().contains(named), "{body}: {}", err.message());
        }
    }

    #[test]
    fn chunks_come_with_an_advanced_search_and_are_named_otherwise() {
        let options = |body: Value| {
            TavilyRequest::read(&fields(body))
                .map_err(|err| err.name)
                .and_then(|r| r.into_search().map_err(|err| err.name))
                .map(|(_, options)| options.chunks)
        };
        let chunks = |query: &str, per_source| {
            Ok(Some(Chunks {
                query: query.into(),
                per_source,
            }))
        };
        assert_eq!(
            options(json!({"query": "q", "search_depth": "advanced", "chunks_per_source": 2})),
            chunks("q", 2)
        );
        assert_eq!(
            options(json!({"query": "q", "search_depth": "advanced",
                "include_raw_content": true})),
            chunks("q", 3),
            "Tavily's default with the pages read"
        );
        assert_eq!(
            options(json!({"query": "q", "search_depth": "advanced"})),
            Ok(None),
            "no page read unless asked"
        );
        assert_eq!(
            options(json!({"query": "q", "include_raw_content": true})),
            Ok(None),
            "a basic search keeps SearXNG's snippets"
        );
        for body in [
            json!({"query": "q", "chunks_per_source": 2}),
            json!({"query": "q", "search_depth": "basic", "chunks_per_source": 2}),
            json!({"query": "q", "search_depth": "advanced", "chunks_per_source": 4}),
            json!({"query": "q", "search_depth": "advanced", "chunks_per_source": 0}),
        ] {
            assert_eq!(options(body.clone()), Err("chunks_per_source"), "{body}");
        }
        assert_eq!(
            options(json!({"query": "q", "search_depth": "deepest"})),
            Err("search_depth")
        );
    }

    #[test]
    fn reads_what_tavily_python_sends() {
        let request = TavilyRequest::read(&fields(json!({
            "query": "rust", "search_depth": "advanced", "topic": "news", "time_range": "w",
            "days": 3, "max_results": 7, "include_domains": ["Docs.rs"], "exclude_domains": [],
            "include_answer": "basic", "include_raw_content": "markdown", "include_images": true,
            "country": "germany", "chunks_per_source": 3, "some_future_field": {"x": 1}
        })))
        .unwrap();
        let (input, options) = request.into_search().unwrap();
        assert_eq!(input.query, "rust");
        assert_eq!(input.categories, ["news"]);
        assert_eq!(
            input.time_range,
            Some(TimeRange::Week),
            "time_range wins over days"
        );
        assert_eq!(options.max_results, 7);
        assert_eq!(
            input.domains,
            DomainFilter::new(&["docs.rs"], &[]).unwrap(),
            "the domains are the search's filter"
        );
        assert!(options.answer);
    }

    #[test]
    fn days_become_the_shortest_range_covering_them_and_topics_become_categories() {
        let (input, options) = TavilyRequest::read(&fields(json!({"query": "q", "days": 10})))
            .unwrap()
            .into_search()
            .unwrap();
        assert_eq!(input.time_range, Some(TimeRange::Month));
        assert!(input.categories.is_empty());
        assert_eq!(options.max_results, 5);
        assert!(!options.answer);
        let (finance, _) = TavilyRequest::read(&fields(json!({"query": "q", "topic": "finance"})))
            .unwrap()
            .into_search()
            .unwrap();
        assert_eq!(finance.categories, ["general"]);
    }

    #[test]
    fn a_field_of_the_wrong_type_or_range_is_named() {
        for (body, name) in [
            (json!({"query": 5}), "query"),
            (json!({"query": "q", "max_results": "ten"}), "max_results"),
            (json!({"query": "q", "max_results": 21}), "max_results"),
            (json!({"query": "q", "max_results": -1}), "max_results"),
            (json!({"query": "q", "topic": "sports"}), "topic"),
            (
                json!({"query": "q", "time_range": "fortnight"}),
                "time_range",
            ),
            (json!({"query": "q", "days": 0}), "days"),
            (
                json!({"query": "q", "include_domains": "a.com"}),
                "include_domains",
            ),
            (
                json!({"query": "q", "include_answer": "maybe"}),
                "include_answer",
            ),
        ] {
            match TavilyRequest::read(&fields(body.clone())) {
                Err(InvalidField { name: got, .. }) => assert_eq!(got, name, "{body}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_domain_that_is_none_is_named_by_its_field() {
        for (body, name) in [
            (
                json!({"query": "q", "include_domains": ["a b"]}),
                "include_domains",
            ),
            (
                json!({"query": "q", "exclude_domains": ["https://"]}),
                "exclude_domains",
            ),
        ] {
            match TavilyRequest::read(&fields(body.clone())) {
                Err(InvalidField { name: got, .. }) => assert_eq!(got, name, "{body}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_reply_ranks_results_and_answers_only_when_asked() {
        let found = Found {
            hits: vec![
                hit("https://a.example/"),
                hit("https://b.example/"),
                hit("https://c.example/"),
            ],
            answers: vec!["42".into()],
            ..Found::default()
        };
        let options = ReplyOptions {
            max_results: 2,
            answer: true,
            raw_content: None,
            chunks: None,
        };
        let reply =
            serde_json::to_value(options.reply("q".into(), found.clone(), 0.12345)).unwrap();
        assert_eq!(reply["answer"], "42");
        assert_eq!(reply["response_time"], 0.123);
        assert_eq!(reply["images"], json!([]));
        let urls: Vec<&str> = reply["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["url"].as_str().unwrap())
            .collect();
        assert_eq!(urls, ["https://a.example/", "https://b.example/"]);
        assert_eq!(reply["results"][0]["score"], 1.0);
        assert_eq!(reply["results"][1]["score"], 0.5);
        assert!(reply["results"][0].get("published_date").is_none());
        let without = ReplyOptions {
            answer: false,
            ..options
        };
        assert_eq!(without.reply("q".into(), found, 0.0).answer, None);
    }

    #[test]
    fn errors_have_tavilys_shape_and_the_statuses_tavily_python_knows() {
        let cases = [
            (TavilyError::MissingKey, 401),
            (TavilyError::NotJson, 400),
            (TavilyError::Request(RequestError::MissingQuery), 400),
            (TavilyError::Body(BodyError::TooLarge(65536)), 413),
            (TavilyError::Body(BodyError::Timeout(10)), 408),
            (TavilyError::Overloaded, 503),
            (
                TavilyError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: ErrorClass::RateLimited.into(),
                }]),
                429,
            ),
            (
                TavilyError::AllUpstreamsFailed(vec![
                    FailedUpstream {
                        name: "searxng".into(),
                        error_class: ErrorClass::Timeout.into(),
                    },
                    FailedUpstream {
                        name: "brave".into(),
                        error_class: ErrorClass::Quota.into(),
                    },
                ]),
                502,
            ),
        ];
        for (error, status) in cases {
            assert_eq!(error.status().as_u16(), status, "{error}");
        }
        assert_eq!(
            TavilyError::Request(RequestError::MissingQuery).to_string(),
            "query is required and must not be blank"
        );
        assert_eq!(
            TavilyError::AllUpstreamsFailed(vec![FailedUpstream {
                name: "searxng".into(),
                error_class: ErrorClass::Timeout.into(),
            }])
            .to_string(),
            "every upstream failed: searxng: timeout"
        );
    }

    #[test]
    fn a_key_is_a_non_blank_bearer_or_api_key_in_the_body() {
        let mut headers = HeaderMap::new();
        assert!(!carries_key(&headers, &fields(json!({}))));
        assert!(!carries_key(&headers, &fields(json!({"api_key": " "}))));
        assert!(carries_key(&headers, &fields(json!({"api_key": "k"}))));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert!(!carries_key(&headers, &fields(json!({}))));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer tvly-x"),
        );
        assert!(carries_key(&headers, &fields(json!({}))));
    }
}
