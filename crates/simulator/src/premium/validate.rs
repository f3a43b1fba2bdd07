//! What each provider accepts, checked in the order a real one checks: its path and methods, its auth header
//! (Brave `X-Subscription-Token`, Exa and Serper `x-api-key`, Jina, Linkup, Perplexity, SearchAPI and Tavily
//! `Authorization: Bearer`, Kagi `Authorization: Bot`), then its
//! parameters and their ranges. A request that passes becomes [`Asked`]: what the reply has to honour.

use axum::http::Method;
use serde_json::{Map, Value};

use super::RecordedRequest;
use crate::Provider;

/// The one path the provider serves search on.
pub(super) fn path(kind: Provider) -> &'static str {
    match kind {
        Provider::Brave => "/res/v1/web/search",
        Provider::Exa | Provider::Perplexity | Provider::Serper | Provider::Tavily => "/search",
        Provider::Jina => "/",
        Provider::Kagi => "/api/v0/search",
        Provider::Linkup => "/v1/search",
        Provider::SearchApi => "/api/v1/search",
    }
}

/// The methods that path accepts.
pub(super) fn methods(kind: Provider) -> &'static [Method] {
    match kind {
        Provider::Brave | Provider::Kagi | Provider::SearchApi => &[Method::GET],
        Provider::Exa
        | Provider::Linkup
        | Provider::Perplexity
        | Provider::Serper
        | Provider::Tavily => &[Method::POST],
        Provider::Jina => &[Method::GET, Method::POST],
    }
}

/// What the request asked for, once it passed the provider's checks.
pub(super) struct Asked {
    /// The query.
    pub(super) query: String,
    /// The most results the provider would return.
    pub(super) count: usize,
    /// Exa: `contents.highlights` requested.
    pub(super) highlights: bool,
    /// Exa: `contents.text` requested.
    pub(super) text: bool,
    /// Jina: `Accept: application/json` (else plain text).
    pub(super) accept_json: bool,
    /// Jina: `X-Respond-With: no-content` (snippets only).
    pub(super) no_content: bool,
}

/// Why the fake refused a request before its behaviour was consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rejection {
    /// No auth header at all (Jina names this case differently).
    MissingKey,
    /// The auth header is absent under its real name, or carries another key.
    WrongKey,
    /// A parameter the real API would refuse.
    Invalid,
}

/// Auth and parameter checks.
pub(super) fn check(kind: Provider, req: &RecordedRequest, key: &str) -> Result<Asked, Rejection> {
    let bearer = format!("Bearer {key}");
    let bot = format!("Bot {key}");
    let (auth_header, auth_value) = match kind {
        Provider::Brave => ("x-subscription-token", key),
        Provider::Exa | Provider::Serper => ("x-api-key", key),
        Provider::Kagi => ("authorization", bot.as_str()),
        Provider::Jina
        | Provider::Linkup
        | Provider::Perplexity
        | Provider::SearchApi
        | Provider::Tavily => ("authorization", bearer.as_str()),
    };
    match req.header(auth_header) {
        None => return Err(Rejection::MissingKey),
        Some(value) if value != auth_value => return Err(Rejection::WrongKey),
        Some(_) => {}
    }
    let asked = match kind {
        Provider::Brave => check_brave(req),
        Provider::Exa => check_exa(req),
        Provider::Jina => check_jina(req),
        Provider::Kagi => check_kagi(req),
        Provider::Linkup => check_linkup(req),
        Provider::Perplexity => check_perplexity(req),
        Provider::SearchApi => check_searchapi(req),
        Provider::Serper => check_serper(req),
        Provider::Tavily => check_tavily(req),
    };
    asked.map_err(|()| Rejection::Invalid)
}

fn check_brave(req: &RecordedRequest) -> Result<Asked, ()> {
    let query = req.query_param("q").unwrap_or_default();
    if query.trim().is_empty() || query.chars().count() > 400 {
        return Err(());
    }
    let count = bounded(req.query_param("count"), 1, 20, 20)?;
    bounded(req.query_param("offset"), 0, 9, 0)?;
    one_of(
        req.query_param("safesearch"),
        &["off", "moderate", "strict"],
    )?;
    one_of(
        req.query_param("text_decorations"),
        &["true", "false", "1", "0"],
    )?;
    if let Some(freshness) = req.query_param("freshness") {
        let range = freshness.len() == 22 && freshness.get(10..12) == Some("to");
        if !(["pd", "pw", "pm", "py"].contains(&freshness) || range) {
            return Err(());
        }
    }
    if let Some(lang) = req.query_param("search_lang") {
        let valid = (2..=7).contains(&lang.len())
            && lang.chars().all(|c| c.is_ascii_lowercase() || c == '-');
        if !valid {
            return Err(());
        }
    }
    if let Some(market) = req.query_param("ui_lang") {
        let mut parts = market.split('-');
        let valid = matches!(
            (parts.next(), parts.next(), parts.next()),
            (Some(l), Some(r), None)
                if l.len() == 2 && l.chars().all(|c| c.is_ascii_lowercase())
                    && r.len() == 2 && r.chars().all(|c| c.is_ascii_uppercase())
        );
        if !valid {
            return Err(());
        }
    }
    Ok(Asked {
        query: query.to_owned(),
        count,
        highlights: false,
        text: false,
        accept_json: true,
        no_content: true,
    })
}

fn check_exa(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = non_empty_string(&body, "query")?;
    let count = json_bounded(&body, "numResults", 1, 100, 10)?;
    if let Some(start) = body.get("startPublishedDate") {
        let start = start.as_str().ok_or(())?;
        if !start.get(..10).is_some_and(is_day) {
            return Err(());
        }
    }
    let (mut highlights, mut text) = (false, false);
    if let Some(contents) = body.get("contents") {
        let contents = contents.as_object().ok_or(())?;
        highlights = contents
            .get("highlights")
            .is_some_and(|h| h.as_bool().unwrap_or(h.is_object()));
        text = contents
            .get("text")
            .is_some_and(|t| t.as_bool().unwrap_or(t.is_object()));
    }
    Ok(Asked {
        query,
        count,
        highlights,
        text,
        accept_json: true,
        no_content: true,
    })
}

fn check_jina(req: &RecordedRequest) -> Result<Asked, ()> {
    let (query, count) = if req.method == "GET" {
        let query = req.query_param("q").unwrap_or_default().to_owned();
        (query, bounded(req.query_param("num"), 1, 20, 10)?)
    } else {
        let body = json_object(req)?;
        json_bounded(&body, "page", 1, 1000, 1)?;
        (
            non_empty_string(&body, "q")?,
            json_bounded(&body, "num", 1, 20, 10)?,
        )
    };
    if query.trim().is_empty() {
        return Err(());
    }
    Ok(Asked {
        query,
        count,
        highlights: false,
        text: false,
        accept_json: req
            .header("accept")
            .is_some_and(|a| a.contains("application/json")),
        no_content: req.header("x-respond-with") == Some("no-content"),
    })
}

fn check_tavily(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = non_empty_string(&body, "query")?;
    let count = json_bounded(&body, "max_results", 0, 20, 5)?;
    json_one_of(&body, "search_depth", &["basic", "advanced"])?;
    json_one_of(
        &body,
        "time_range",
        &["day", "week", "month", "year", "d", "w", "m", "y"],
    )?;
    Ok(Asked {
        query,
        count,
        highlights: false,
        text: false,
        accept_json: true,
        no_content: true,
    })
}

fn check_kagi(req: &RecordedRequest) -> Result<Asked, ()> {
    let query = req.query_param("q").unwrap_or_default();
    if query.trim().is_empty() {
        return Err(());
    }
    let count = bounded(req.query_param("limit"), 1, 100, 20)?;
    Ok(Asked::plain(query.to_owned(), count))
}

fn check_linkup(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = non_empty_string(&body, "q")?;
    // Both are required by the real API.
    json_required_one_of(&body, "depth", &["standard", "deep"])?;
    json_required_one_of(
        &body,
        "outputType",
        &["searchResults", "sourcedAnswer", "structured"],
    )?;
    let count = json_bounded(&body, "maxResults", 1, 100, 10)?;
    for field in ["fromDate", "toDate"] {
        if let Some(date) = body.get(field) {
            date.as_str().filter(|d| is_day(d)).ok_or(())?;
        }
    }
    for field in ["includeDomains", "excludeDomains"] {
        json_strings(&body, field, 100)?;
    }
    Ok(Asked::plain(query, count))
}

fn check_perplexity(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = match body.get("query") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.clone(),
        Some(Value::Array(list)) if (1..=5).contains(&list.len()) => list
            .iter()
            .map(|q| {
                q.as_str()
                    .filter(|q| !q.trim().is_empty())
                    .map(str::to_owned)
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(())?
            .join(" | "),
        _ => return Err(()),
    };
    let count = json_bounded(&body, "max_results", 1, 20, 10)?;
    json_one_of(
        &body,
        "search_recency_filter",
        &["hour", "day", "week", "month", "year"],
    )?;
    json_strings(&body, "search_domain_filter", 20)?;
    if let Some(languages) = json_strings(&body, "search_language_filter", 10)? {
        let valid = languages
            .iter()
            .all(|l| l.len() == 2 && l.chars().all(|c| c.is_ascii_lowercase()));
        if !valid {
            return Err(());
        }
    }
    if let Some(country) = body.get("country") {
        let country = country.as_str().ok_or(())?;
        if country.len() != 2 || !country.chars().all(|c| c.is_ascii_uppercase()) {
            return Err(());
        }
    }
    Ok(Asked::plain(query, count))
}

fn check_searchapi(req: &RecordedRequest) -> Result<Asked, ()> {
    if req.query_param("engine") != Some("google") {
        return Err(());
    }
    let query = req.query_param("q").unwrap_or_default();
    if query.trim().is_empty() {
        return Err(());
    }
    let count = bounded(req.query_param("num"), 1, 100, 10)?;
    bounded(req.query_param("page"), 1, 100, 1)?;
    one_of(
        req.query_param("time_period"),
        &[
            "last_hour",
            "last_day",
            "last_week",
            "last_month",
            "last_year",
        ],
    )?;
    one_of(req.query_param("safe"), &["active", "off"])?;
    for name in ["hl", "gl"] {
        if let Some(code) = req.query_param(name) {
            if code.len() != 2 || !code.chars().all(|c| c.is_ascii_lowercase()) {
                return Err(());
            }
        }
    }
    Ok(Asked::plain(query.to_owned(), count))
}

fn check_serper(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = non_empty_string(&body, "q")?;
    let count = json_bounded(&body, "num", 1, 100, 10)?;
    json_bounded(&body, "page", 1, 100, 1)?;
    json_one_of(&body, "tbs", &["qdr:h", "qdr:d", "qdr:w", "qdr:m", "qdr:y"])?;
    for field in ["hl", "gl"] {
        if let Some(code) = body.get(field) {
            let code = code.as_str().ok_or(())?;
            if code.len() != 2 || !code.chars().all(|c| c.is_ascii_lowercase()) {
                return Err(());
            }
        }
    }
    Ok(Asked::plain(query, count))
}

impl Asked {
    /// A request of a provider without content options: `query`, at most `count` results.
    fn plain(query: String, count: usize) -> Self {
        Self {
            query,
            count,
            highlights: false,
            text: false,
            accept_json: true,
            no_content: true,
        }
    }
}

/// `YYYY-MM-DD`.
fn is_day(text: &str) -> bool {
    text.len() == 10
        && text.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// An optional list of at most `max` non-empty strings.
fn json_strings(
    body: &Map<String, Value>,
    field: &str,
    max: usize,
) -> Result<Option<Vec<String>>, ()> {
    let Some(value) = body.get(field) else {
        return Ok(None);
    };
    let list = value.as_array().filter(|l| l.len() <= max).ok_or(())?;
    list.iter()
        .map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .map(Some)
        .ok_or(())
}

fn json_required_one_of(
    body: &Map<String, Value>,
    field: &str,
    allowed: &[&str],
) -> Result<(), ()> {
    if body.contains_key(field) {
        json_one_of(body, field, allowed)
    } else {
        Err(())
    }
}

/// A number parameter within `min..=max`, `default` when absent.
fn bounded(value: Option<&str>, min: usize, max: usize, default: usize) -> Result<usize, ()> {
    match value {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or(()),
    }
}

fn one_of(value: Option<&str>, allowed: &[&str]) -> Result<(), ()> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(()),
        _ => Ok(()),
    }
}

/// The JSON object body of a POST that declared `Content-Type: application/json`.
fn json_object(req: &RecordedRequest) -> Result<Map<String, Value>, ()> {
    let declared = req
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/json"));
    if !declared {
        return Err(());
    }
    match req.json() {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(()),
    }
}

fn non_empty_string(body: &Map<String, Value>, field: &str) -> Result<String, ()> {
    body.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .ok_or(())
}

fn json_bounded(
    body: &Map<String, Value>,
    field: &str,
    min: u64,
    max: u64,
    default: usize,
) -> Result<usize, ()> {
    match body.get(field) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| (min..=max).contains(n))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(()),
    }
}

fn json_one_of(body: &Map<String, Value>, field: &str, allowed: &[&str]) -> Result<(), ()> {
    match body.get(field) {
        None => Ok(()),
        Some(v) => v
            .as_str()
            .filter(|s| allowed.contains(s))
            .map(|_| ())
            .ok_or(()),
    }
}
