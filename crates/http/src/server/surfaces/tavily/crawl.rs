//! `POST /tavily/crawl` and `POST /tavily/map` (issue #43): Tavily's site crawl and site map,
//! synchronous as Tavily's are — a crawl job of the engine ([`gateway_engine::crawl`]) run to its
//! end within `timeout`, answered with every page it read (crawl) or every URL it found (map).
//!
//! Request: `url`; `max_depth` (1–5, default 1), `max_breadth` (1–500, default 20: new links
//! followed per page), `limit` (default 50, at most `CRAWL_MAX_PAGES`); `select_paths` /
//! `exclude_paths` (regular expressions on the path), `select_domains` / `exclude_domains`
//! (regular expressions on the host), `allow_external` (default true, as Tavily); `format`
//! (`markdown`, the default, or `text`), `extract_depth` (`basic`; `advanced` is refused: a crawl
//! reads with the direct reader only), `timeout` (10–150 s, default 150). Taken as harmless:
//! `include_usage`, `include_favicon: false`, `include_images: false`. Refused by name:
//! `instructions` and `chunks_per_source` (need a model), `categories`, `include_images: true`,
//! `include_favicon: true`, any other field.
//!
//! Answers: crawl `{"base_url", "results": [{"url", "raw_content"}], "response_time",
//! "request_id"}`; map `{"base_url", "results": ["url", …], "response_time", "request_id"}`.
//! Errors in Tavily's shape ([`super::TavilyError`]).

use std::time::Duration;

use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::{carries_key, TavilyError, TavilyOwn};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{field, InvalidField};
use crate::server::kit::refusal::json_response;
use gateway_core::request::ReadFormat;
use gateway_engine::crawl::scope::{patterns, CrawlScope};
use gateway_engine::crawl::{CrawlRequest, JobKind};

/// Which of the two a route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Crawl,
    Map,
}

/// A crawl or map request, read.
#[derive(Debug)]
struct Ask {
    request: CrawlRequest,
    timeout: Duration,
    as_sent: String,
}

/// `POST /tavily/crawl` and `/tavily/map`.
pub(crate) async fn crawl(
    answer: Answer,
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    let crawls = gateway.crawls();
    let max_pages = crawls.settings().max_pages;
    let keyed = admitted.clients.requires_keys();
    let decoded = body.map_err(TavilyError::from).and_then(|body| {
        let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(&body) else {
            return Err(TavilyError::NotJson);
        };
        if !keyed && !carries_key(&headers, &fields) {
            return Err(TavilyError::MissingKey);
        }
        read(answer, &fields, max_pages)
    });
    let mut ask = match decoded {
        Ok(ask) => ask,
        Err(err) => {
            tracing::info!(error = err.code(), "tavily crawl refused");
            return err.into_response();
        }
    };
    let owner = admitted.caller.name.as_str().to_owned();
    ask.request.owner.clone_from(&owner);
    let ask_limit = ask.request.limit;
    let id = match crawls.start(ask.request).await {
        Ok(id) => id,
        Err(refusal) => {
            tracing::info!(client = %owner, error = %refusal, "tavily crawl refused");
            return TavilyError::RateLimited(30).into_response();
        }
    };
    let Some((view, discovered)) = crawls.wait(&id, &owner, ask.timeout).await else {
        return TavilyError::Internal.into_response();
    };
    let results: Vec<Value> = match answer {
        Answer::Crawl => view
            .pages
            .iter()
            .filter_map(|page| {
                let (_, read) = page.reads.first()?;
                Some(json!({"url": page.url, "raw_content": read.content}))
            })
            .collect(),
        Answer::Map => discovered
            .into_iter()
            .take(ask_limit)
            .map(Value::from)
            .collect(),
    };
    json_response(
        StatusCode::OK,
        json!({
            "base_url": ask.as_sent,
            "results": results,
            "response_time": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
            "request_id": id,
        })
        .to_string(),
    )
}

fn refuse(what: impl Into<String>) -> TavilyError {
    TavilyError::Own(TavilyOwn::Unsupported(what.into()))
}

fn regexes(
    fields: &Map<String, Value>,
    name: &'static str,
) -> Result<Vec<regex::Regex>, TavilyError> {
    let raw =
        field::<Vec<String>>(fields, name, "a list of regular expressions")?.unwrap_or_default();
    patterns(&raw).map_err(|err| refuse(format!("{name} ({err})")))
}

fn number(
    fields: &Map<String, Value>,
    name: &'static str,
    range: std::ops::RangeInclusive<u64>,
    default: u64,
    expected: &'static str,
) -> Result<u64, TavilyError> {
    match field::<u64>(fields, name, expected)? {
        None => Ok(default),
        Some(n) if range.contains(&n) => Ok(n),
        Some(_) => Err(InvalidField { name, expected }.into()),
    }
}

fn read(answer: Answer, fields: &Map<String, Value>, max_pages: usize) -> Result<Ask, TavilyError> {
    const KNOWN: &[&str] = &[
        "url",
        "max_depth",
        "max_breadth",
        "limit",
        "select_paths",
        "exclude_paths",
        "select_domains",
        "exclude_domains",
        "allow_external",
        "format",
        "extract_depth",
        "timeout",
        "include_usage",
        "include_favicon",
        "include_images",
        "api_key",
    ];
    for (name, value) in fields {
        let refused = match name.as_str() {
            "instructions" | "chunks_per_source" => Some(format!("{name} (needs a model)")),
            "include_images" | "include_favicon" if value.as_bool() == Some(true) => {
                Some(format!("{name}: true"))
            }
            "extract_depth" if value.as_str() == Some("advanced") => {
                Some("extract_depth: advanced (a crawl reads with the direct reader)".to_owned())
            }
            "format" | "extract_depth" if answer == Answer::Map => Some(name.clone()),
            other if !KNOWN.contains(&other) => Some(other.chars().take(40).collect()),
            _ => None,
        };
        if let Some(refused) = refused {
            return Err(refuse(refused));
        }
    }
    const URL: InvalidField = InvalidField {
        name: "url",
        expected: "an http or https URL (or a domain)",
    };
    let as_sent: String = field(fields, "url", URL.expected)?.ok_or(URL)?;
    let trimmed = as_sent.trim();
    // Tavily takes a bare domain too.
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_owned()
    } else {
        format!("https://{trimmed}")
    };
    let url = url::Url::parse(&with_scheme)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or(URL)?;
    let depth = number(fields, "max_depth", 1..=5, 1, "a whole number from 1 to 5")?;
    let breadth = number(
        fields,
        "max_breadth",
        1..=500,
        20,
        "a whole number from 1 to 500",
    )?;
    let limit = number(fields, "limit", 1..=100_000, 50, "a whole number from 1")?;
    let format = match field::<String>(fields, "format", "markdown or text")?.as_deref() {
        None | Some("markdown") => ReadFormat::Markdown,
        Some("text") => ReadFormat::Text,
        Some(_) => {
            return Err(InvalidField {
                name: "format",
                expected: "markdown or text",
            }
            .into())
        }
    };
    let timeout = match field::<f64>(fields, "timeout", "seconds from 10 to 150")? {
        None => Duration::from_secs(150),
        Some(s) if (10.0..=150.0).contains(&s) => Duration::from_secs_f64(s),
        Some(_) => {
            return Err(InvalidField {
                name: "timeout",
                expected: "seconds from 10 to 150",
            }
            .into())
        }
    };
    let scope = CrawlScope {
        allow_external: field::<bool>(fields, "allow_external", "true or false")?.unwrap_or(true),
        allow_subdomains: true,
        include: regexes(fields, "select_paths")?,
        exclude: regexes(fields, "exclude_paths")?,
        on_full_url: false,
        max_depth: usize::try_from(depth).unwrap_or(1),
        ignore_query: false,
        max_breadth: Some(usize::try_from(breadth).unwrap_or(20)),
        include_hosts: regexes(fields, "select_domains")?,
        exclude_hosts: regexes(fields, "exclude_domains")?,
    };
    Ok(Ask {
        request: CrawlRequest {
            owner: String::new(),
            kind: JobKind::Crawl,
            urls: vec![url],
            scope,
            formats: vec![format],
            limit: usize::try_from(limit).unwrap_or(max_pages).min(max_pages),
            delay: None,
            concurrency: None,
            sitemap: false,
            discover_only: answer == Answer::Map,
            links: false,
            markdown: format == ReadFormat::Markdown,
            webhook: None,
        },
        timeout,
        as_sent,
    })
}

/// A body through the crawl and map decoders, for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8]) -> Result<usize, StatusCode> {
    let (which, body) = body.split_first().ok_or(StatusCode::BAD_REQUEST)?;
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(StatusCode::BAD_REQUEST);
    };
    let answer = if which % 2 == 0 {
        Answer::Crawl
    } else {
        Answer::Map
    };
    read(answer, &fields, 1000)
        .map(|ask| ask.request.limit)
        .map_err(|err| err.into_response().status())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn reads_what_tavily_python_sends() {
        let ask = read(
            Answer::Crawl,
            &fields(
                json!({"url": "docs.example.com", "max_depth": 2, "max_breadth": 5,
                "limit": 10, "select_paths": ["/docs/.*"], "exclude_domains": ["^ads\\."],
                "format": "text", "timeout": 60, "include_usage": true}),
            ),
            100,
        )
        .unwrap();
        assert_eq!(ask.request.urls[0].as_str(), "https://docs.example.com/");
        assert_eq!(ask.request.scope.max_depth, 2);
        assert_eq!(ask.request.scope.max_breadth, Some(5));
        assert_eq!(ask.request.formats, [ReadFormat::Text]);
        assert_eq!(ask.timeout, Duration::from_secs(60));
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (answer, body) in [
            (
                Answer::Crawl,
                json!({"url": "a.example", "instructions": "docs"}),
            ),
            (
                Answer::Crawl,
                json!({"url": "a.example", "extract_depth": "advanced"}),
            ),
            (
                Answer::Crawl,
                json!({"url": "a.example", "categories": ["Blog"]}),
            ),
            (Answer::Map, json!({"url": "a.example", "format": "text"})),
            (Answer::Crawl, json!({"url": "a.example", "max_depth": 9})),
            (
                Answer::Crawl,
                json!({"url": "a.example", "select_paths": ["("]}),
            ),
        ] {
            let err = read(answer, &fields(body.clone()), 100).unwrap_err();
            assert_eq!(
                err.into_response().status(),
                StatusCode::BAD_REQUEST,
                "{body}"
            );
        }
    }
}
