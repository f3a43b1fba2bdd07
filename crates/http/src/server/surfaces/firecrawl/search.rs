//! `POST /firecrawl/v1/search` and `/firecrawl/v2/search`: Firecrawl's search request and both
//! versions' answers.
//!
//! Request: `query`; `limit` (1–100, default 5); `tbs` (Google's time filter: `qdr:h` and `qdr:d`
//! → the last day, `qdr:w`, `qdr:m`, `qdr:y`, or a custom range `cdr:1,cd_min:M/D/YYYY,…` → the
//! shortest time range reaching back to its start); v1's `lang` and `country` → the language
//! (`en` and `us` → `en-US`); v2's `sources` (`web`, `news`: each its own search, run at once,
//! news through SearXNG's `news` category; `images` is refused) and `includeDomains` /
//! `excludeDomains` (the search's domain filter); `scrapeOptions.formats` (`markdown`, `html`,
//! `rawHtml`, `links`: each result returned is read, within `timeout` milliseconds, and carries
//! those fields and its `metadata`; the other page options as a scrape's,
//! [`super::page_options`], but `maxAge: 0`, which only a scrape honours). `ignoreInvalidURLs`,
//! `origin` and `integration` are harmless and taken; `location`, v2's `country` and
//! `categories`, `threatProtection` and any field Firecrawl's API does not have are refused by name
//! (this gateway cannot honour them).
//!
//! Answer: v1 `{"success": true, "data": [{"url", "title", "description", "position", …}]}`;
//! v2 `{"success": true, "data": {"web": [{"url", "title", "description", "position", …}],
//! "news": [{"url", "title", "snippet", "date", "position", …}]}}` with the sources asked for —
//! plus the gateway's `X-Cache` and `X-Gateway-Outcome` headers (of the web search).

use std::time::Duration;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::{
    document, truncated, unanswered, unsupported, FirecrawlError, Formats, Named, Version,
};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::document::{Found, Hit};
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use crate::server::kit::refusal::{json_response, Refusal};
use crate::server::kit::{search_call, search_read};
use gateway_core::request::{DomainFilter, SearchInput, SearchRequest, Side, Surface, TimeRange};
use gateway_engine::read::{Freshness, PageRead};
use gateway_engine::search::Premium;

/// Firecrawl's limits on `limit`, and its default.
const MAX_LIMIT: u32 = 100;
const DEFAULT_LIMIT: u32 = 5;

/// Where a search's results come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Web,
    News,
}

/// A search request, read and checked.
#[derive(Debug, Clone)]
struct SearchAsk {
    input: SearchInput,
    limit: usize,
    sources: Vec<Source>,
    formats: Formats,
    timeout: Option<Duration>,
}

/// `POST …/search`.
pub(crate) async fn search(
    version: Version,
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    let max_query_bytes = gateway.server().max_query_bytes;
    let asked = body
        .map_err(FirecrawlError::from)
        .and_then(|body| decode(version, &body))
        .and_then(|ask| Ok((ask.requests(max_query_bytes)?, ask)));
    let ((sources, requests), ask) = match asked {
        Ok(asked) => asked,
        Err(err) => {
            search_call::log_refused(Surface::Firecrawl, err.code());
            return err.into_response();
        }
    };
    let spent = admitted.premium == Premium::BudgetSpent
        && !gateway.settings().active_providers().is_empty();
    let searched =
        match search_read::search_all(&gateway, Surface::Firecrawl, requests, &admitted).await {
            Ok(searched) => searched,
            Err(not) => return unanswered(not, spent).into_response(),
        };
    let mut data: Vec<(Source, Vec<Map<String, Value>>)> = sources
        .into_iter()
        .zip(searched.found)
        .map(|(source, found)| (source, items(source, found, ask.limit)))
        .collect();
    if !ask.formats.is_empty() {
        let budget = search_read::budget_left(&gateway, started, ask.timeout);
        for (_, list) in &mut data {
            read_into(&gateway, &admitted, &ask.formats, list, budget).await;
        }
    }
    let body = match version {
        Version::V1 => {
            let web = data
                .into_iter()
                .flat_map(|(_, list)| list)
                .collect::<Vec<_>>();
            json!({ "success": true, "data": web, "warning": null })
        }
        Version::V2 => {
            let mut by_source = Map::new();
            for (source, list) in data {
                let name = match source {
                    Source::Web => "web",
                    Source::News => "news",
                };
                by_source.insert(name.into(), Value::from(list));
            }
            json!({ "success": true, "data": by_source })
        }
    };
    let mut response = json_response(StatusCode::OK, body.to_string());
    if let Some(served) = &searched.first {
        search_call::set_served_headers(response.headers_mut(), served);
    }
    response
}

/// Each result of `list` read in `formats` at once, its fields added to it.
async fn read_into(
    gateway: &Gateway,
    admitted: &Admitted,
    formats: &Formats,
    list: &mut [Map<String, Value>],
    budget: Duration,
) {
    let urls: Vec<&str> = list
        .iter()
        .map(|item| item.get("url").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let reads = futures::future::join_all(formats.reads().into_iter().map(|format| {
        search_read::read_hits(gateway, admitted, urls.iter().copied(), format, budget)
    }))
    .await;
    let as_sent: Vec<String> = urls.iter().map(|url| (*url).to_owned()).collect();
    for (i, (item, as_sent)) in list.iter_mut().zip(&as_sent).enumerate() {
        let page: Vec<PageRead> = reads
            .iter()
            .filter_map(|per_format| per_format.get(i).cloned().flatten())
            .collect();
        if page.len() != reads.len() {
            continue;
        }
        item.extend(document(as_sent, formats, &page));
    }
}

/// The results of one source in its version's item shape, `limit` at most.
fn items(source: Source, found: Found, limit: usize) -> Vec<Map<String, Value>> {
    found
        .hits
        .into_iter()
        .take(limit)
        .enumerate()
        .map(|(i, hit)| item(source, hit, i + 1))
        .collect()
}

fn item(source: Source, hit: Hit, position: usize) -> Map<String, Value> {
    let mut item = Map::new();
    item.insert("url".into(), Value::from(hit.url));
    item.insert("title".into(), Value::from(hit.title));
    match source {
        Source::Web => {
            item.insert("description".into(), Value::from(hit.content));
        }
        Source::News => {
            item.insert("snippet".into(), Value::from(hit.content));
            if let Some(date) = hit.published_date {
                item.insert("date".into(), Value::from(date));
            }
        }
    }
    item.insert("position".into(), Value::from(position));
    item
}

/// The body read as `version`'s search request.
fn decode(version: Version, body: &[u8]) -> Result<SearchAsk, FirecrawlError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    SearchAsk::read(version, &fields)
}

/// A body through the search decoder and validation, for the fuzz target: the searches it asks
/// for, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(version: Version, body: &[u8]) -> Result<usize, StatusCode> {
    let refused = |err: FirecrawlError| err.into_response().status();
    let ask = decode(version, body).map_err(refused)?;
    let _ = ask.formats.reads();
    let (sources, requests) = ask.requests(2048).map_err(refused)?;
    for req in &requests {
        let _ = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
    }
    Ok(sources.len())
}

/// The fields a search reads; `ignoreInvalidURLs`, `origin` and `integration` are harmless.
const SEARCH_FIELDS: [&str; 14] = [
    "query",
    "limit",
    "tbs",
    "timeout",
    "scrapeOptions",
    "lang",
    "country",
    "sources",
    "categories",
    "includeDomains",
    "excludeDomains",
    "ignoreInvalidURLs",
    "origin",
    "integration",
];

impl SearchAsk {
    /// One validated search per source asked (news searched in SearXNG's news category).
    fn requests(
        &self,
        max_query_bytes: usize,
    ) -> Result<(Vec<Source>, Vec<SearchRequest>), FirecrawlError> {
        let mut requests = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            let mut input = self.input.clone();
            if *source == Source::News {
                input.categories = vec!["news".to_owned()];
            }
            requests.push(SearchRequest::new(input, max_query_bytes)?);
        }
        Ok((self.sources.clone(), requests))
    }

    fn read(version: Version, fields: &Map<String, Value>) -> Result<Self, FirecrawlError> {
        if let Some((name, _)) = fields
            .iter()
            .find(|(name, value)| !value.is_null() && !SEARCH_FIELDS.contains(&name.as_str()))
        {
            return Err(unsupported(format!(
                "{name} is not supported by this gateway (it cannot honour it)"
            )));
        }
        let query: String = field(fields, "query", "a string")?.unwrap_or_default();
        let limit = number_in(fields, "limit", 1..=MAX_LIMIT, "an integer from 1 to 100")?
            .unwrap_or(DEFAULT_LIMIT) as usize;
        let time_range = match field::<String>(fields, "tbs", "a string such as qdr:w")? {
            None => None,
            Some(tbs) => time_range_of_tbs(&tbs).ok_or(InvalidField {
                name: "tbs",
                expected: "qdr:h, qdr:d, qdr:w, qdr:m, qdr:y or a cdr:1 custom range",
            })?,
        };
        let timeout = super::timeout(fields)?;
        let formats =
            match field::<Map<String, Value>>(fields, "scrapeOptions", "an object with formats")? {
                None => Formats::default(),
                Some(options) => {
                    if super::page_options::check(&options, &["formats"])? == Freshness::Fresh {
                        return Err(unsupported(
                        "scrapeOptions.maxAge: 0 is not supported in a search (scrape the page)"
                            .to_owned(),
                    ));
                    }
                    Formats::read(Some(
                        field::<Vec<Named>>(
                            &options,
                            "formats",
                            "a list of markdown, html, rawHtml and links",
                        )?
                        .unwrap_or_else(|| vec![Named::Name("markdown".to_owned())]),
                    ))?
                    .without_screenshot("a search's scrapeOptions")?
                }
            };
        let mut input = SearchInput {
            query,
            time_range,
            ..SearchInput::default()
        };
        let mut sources = vec![Source::Web];
        match version {
            Version::V1 => {
                input.language = language(
                    field(fields, "lang", "a language code such as en")?,
                    field(fields, "country", "a country code such as us")?,
                );
            }
            Version::V2 => {
                if field::<Value>(fields, "country", "a country code")?.is_some() {
                    return Err(unsupported(
                        "country is not supported by this gateway in v2 (use v1's lang and country)"
                            .to_owned(),
                    ));
                }
                if let Some(raw) = field::<Vec<Named>>(fields, "sources", "a list of web and news")?
                {
                    sources = read_sources(&raw)?;
                }
                if field::<Value>(fields, "categories", "a list")?.is_some() {
                    return Err(unsupported(
                        "categories are not supported by this gateway (search with includeDomains instead)"
                            .to_owned(),
                    ));
                }
                input.domains = domain_filter(
                    &field::<Vec<String>>(fields, "includeDomains", "a list of domains")?
                        .unwrap_or_default(),
                    &field::<Vec<String>>(fields, "excludeDomains", "a list of domains")?
                        .unwrap_or_default(),
                )?;
            }
        }
        Ok(Self {
            input,
            limit,
            sources,
            formats,
            timeout,
        })
    }
}

fn read_sources(raw: &[Named]) -> Result<Vec<Source>, FirecrawlError> {
    let mut sources = Vec::new();
    for entry in raw {
        let source = match entry.name() {
            "web" => Source::Web,
            "news" => Source::News,
            other => {
                return Err(unsupported(format!(
                    "source {:?} is not one this gateway searches (web, news)",
                    truncated(other)
                )))
            }
        };
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    if sources.is_empty() {
        sources.push(Source::Web);
    }
    Ok(sources)
}

fn domain_filter(include: &[String], exclude: &[String]) -> Result<DomainFilter, InvalidField> {
    DomainFilter::new(include, exclude).map_err(|err| InvalidField {
        name: match err.side() {
            Side::Include => "includeDomains",
            Side::Exclude => "excludeDomains",
        },
        expected: "a list of at most 300 domains",
    })
}

/// v1's `lang` and `country` as a SearXNG language: `en` and `us` → `en-US`. A country alone
/// selects no language.
fn language(lang: Option<String>, country: Option<String>) -> Option<String> {
    let lang = lang
        .map(|l| l.trim().to_ascii_lowercase())
        .filter(|l| !l.is_empty())?;
    match country.map(|c| c.trim().to_ascii_uppercase()) {
        Some(country) if country.len() == 2 && !lang.contains('-') => {
            Some(format!("{lang}-{country}"))
        }
        _ => Some(lang),
    }
}

/// Google's `tbs` as a time range: `Some(None)` for a value without a time filter (`sbd:1`,
/// sort by date), `None` for one this reads as nothing.
fn time_range_of_tbs(tbs: &str) -> Option<Option<TimeRange>> {
    let mut range = None;
    let mut custom_start = None;
    for part in tbs.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once(':')?;
        match (name, value) {
            ("qdr", v) => {
                range = Some(match v.chars().next()? {
                    'h' | 'd' => TimeRange::Day,
                    'w' => TimeRange::Week,
                    'm' => TimeRange::Month,
                    'y' => TimeRange::Year,
                    _ => return None,
                });
            }
            ("cd_min", v) => custom_start = Some(v),
            ("cdr" | "cd_max" | "sbd", _) => {}
            _ => return None,
        }
    }
    if let Some(start) = custom_start {
        let days = days_since(start)?;
        // Older than a year: no range reaches it, so none is asked.
        range = (days <= TimeRange::Year.days()).then(|| TimeRange::covering_days(days.max(1)));
    }
    Some(range)
}

/// Days from `M/D/YYYY` (Google's custom-range date) to today.
fn days_since(date: &str) -> Option<u32> {
    let mut parts = date.split('/').map(|p| p.trim().parse::<u32>());
    let (month, day, year) = (
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    );
    let iso = format!("{year:04}-{month:02}-{day:02}T00:00:00Z");
    let start = humantime::parse_rfc3339(&iso).ok()?;
    let elapsed = std::time::SystemTime::now()
        .duration_since(start)
        .unwrap_or_default();
    u32::try_from(elapsed.as_secs() / 86_400).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::FirecrawlOwn;
    use super::*;
    use gateway_core::request::ReadFormat;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn v1_reads_what_the_v1_client_sends_by_default() {
        let ask = SearchAsk::read(
            Version::V1,
            &fields(
                json!({"query": "rust", "limit": 5, "lang": "en", "country": "us",
                "timeout": 30000, "origin": "python-sdk@4.55.0"}),
            ),
        )
        .unwrap();
        assert_eq!(ask.input.query, "rust");
        assert_eq!(ask.input.language.as_deref(), Some("en-US"));
        assert_eq!(ask.limit, 5);
        assert_eq!(ask.sources, [Source::Web]);
        assert!(ask.formats.is_empty());
        assert_eq!(ask.timeout, Some(Duration::from_secs(30)));
    }

    #[test]
    fn v2_reads_sources_domains_and_scrape_formats() {
        let ask = SearchAsk::read(
            Version::V2,
            &fields(
                json!({"query": "rust", "sources": [{"type": "news"}, "web"],
                "includeDomains": ["docs.rs"], "tbs": "qdr:w",
                "scrapeOptions": {"formats": ["markdown"], "onlyMainContent": true}}),
            ),
        )
        .unwrap();
        assert_eq!(ask.sources, [Source::News, Source::Web]);
        assert_eq!(
            ask.input.domains,
            DomainFilter::new(&["docs.rs"], &[]).unwrap()
        );
        assert_eq!(ask.input.time_range, Some(TimeRange::Week));
        assert_eq!(ask.formats.content, [ReadFormat::Markdown]);
        assert_eq!(ask.limit, 5, "the sync client sends no limit");
        let defaults = SearchAsk::read(
            Version::V2,
            &fields(json!({"query": "q", "scrapeOptions": {}})),
        )
        .unwrap();
        assert_eq!(defaults.formats.content, [ReadFormat::Markdown]);
    }

    #[test]
    fn what_the_gateway_cannot_give_is_refused_by_name() {
        for (body, message) in [
            (json!({"query": "q", "sources": ["images"]}), "\"images\""),
            (
                json!({"query": "q", "categories": ["github"]}),
                "categories",
            ),
            (
                json!({"query": "q", "scrapeOptions": {"formats": ["screenshot"]}}),
                "\"screenshot\"",
            ),
            (json!({"query": "q", "location": "Germany"}), "location"),
            (json!({"query": "q", "country": "DE"}), "country"),
            (
                json!({"query": "q", "threatProtection": {}}),
                "threatProtection",
            ),
            (
                json!({"query": "q", "scrapeOptions": {"waitFor": 500}}),
                "waitFor: 500",
            ),
            (
                json!({"query": "q", "scrapeOptions": {"maxAge": 0}}),
                "maxAge: 0",
            ),
        ] {
            match SearchAsk::read(Version::V2, &fields(body.clone())) {
                Err(Refusal::Own(FirecrawlOwn::Unsupported(m))) => {
                    assert!(m.contains(message), "{m}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
        for (body, name) in [
            (json!({"query": "q", "limit": 101}), "limit"),
            (json!({"query": "q", "limit": 0}), "limit"),
            (json!({"query": "q", "tbs": "qdr:x"}), "tbs"),
            (json!({"query": "q", "timeout": 0}), "timeout"),
            (
                json!({"query": "q", "includeDomains": ["a b"]}),
                "includeDomains",
            ),
        ] {
            match SearchAsk::read(Version::V2, &fields(body.clone())) {
                Err(FirecrawlError::InvalidField(InvalidField { name: got, .. })) => {
                    assert_eq!(got, name, "{body}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn tbs_becomes_the_shortest_range_covering_it() {
        assert_eq!(time_range_of_tbs("qdr:h"), Some(Some(TimeRange::Day)));
        assert_eq!(
            time_range_of_tbs("sbd:1,qdr:m"),
            Some(Some(TimeRange::Month))
        );
        assert_eq!(time_range_of_tbs("sbd:1"), Some(None));
        assert_eq!(time_range_of_tbs("nonsense"), None);
        let ten_days_ago = std::time::SystemTime::now() - Duration::from_secs(10 * 86_400);
        let date = humantime::format_rfc3339(ten_days_ago).to_string();
        let (y, m, d) = (&date[0..4], &date[5..7], &date[8..10]);
        assert_eq!(
            time_range_of_tbs(&format!("cdr:1,cd_min:{m}/{d}/{y},cd_max:1/1/2100")),
            Some(Some(TimeRange::Month))
        );
        assert_eq!(time_range_of_tbs("cdr:1,cd_min:1/1/2001"), Some(None));
    }

    #[test]
    fn items_have_each_versions_fields_and_positions() {
        let hit = |url: &str| Hit {
            url: url.into(),
            title: "t".into(),
            content: "c".into(),
            engines: vec![],
            published_date: Some("2026-11-30".into()),
        };
        let found = Found {
            hits: vec![
                hit("https://a.example/"),
                hit("https://b.example/"),
                hit("https://c.example/"),
            ],
            answers: vec![],
            ..Found::default()
        };
        let web = items(Source::Web, found.clone(), 2);
        assert_eq!(web.len(), 2);
        assert_eq!(web[1]["position"], 2);
        assert_eq!(web[0]["description"], "c");
        let news = items(Source::News, found, 1);
        assert_eq!(news[0]["snippet"], "c");
        assert_eq!(news[0]["date"], "2026-11-30");
    }
}
