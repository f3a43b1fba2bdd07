//! `POST /firecrawl/v1/map` and `/firecrawl/v2/map` (and `/v2/map` at the root): a site's URLs
//! without reading them ([`gateway_engine::read::site_map`]: its sitemaps, its start page's
//! links, in scope, allowed by `robots.txt`), in Firecrawl's shapes — synchronous, as Firecrawl's
//! map is.
//!
//! Request: `url`; `search` (URLs with its words first); `includeSubdomains` (default true, as
//! Firecrawl); `limit` (default 5000; at most 30,000 on v1, 100,000 on v2); `timeout` in
//! milliseconds (the budget; default `REQUEST_BUDGET_SECONDS`); v2's `sitemap` (`include`,
//! `skip`, `only`) and `ignoreQueryParameters` (default true); v1's `ignoreSitemap` (default
//! true, as Firecrawl's v1) and `sitemapOnly`. `location`, `ignoreCache` and v1's `useIndex` are
//! taken as harmless (there is no proxy to place, no index of earlier crawls, and sitemaps are
//! not cached); any other field is refused by name.
//!
//! Answer: v1 `{"success": true, "links": ["…"]}`; v2 `{"success": true, "links": [{"url",
//! "title"}]}` (a title where the map read the page).

use std::time::Duration;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::{unsupported, FirecrawlError, FirecrawlOwn, Version};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field, InvalidField};
use crate::server::kit::refusal::{json_response, Refusal};
use gateway_engine::read::site_map::{MapRequest, SitemapMode};

/// A map request, read and checked.
#[derive(Debug, Clone)]
struct MapAsk {
    request: MapRequest,
    timeout: Option<Duration>,
}

/// `POST …/map`.
pub(crate) async fn map(
    version: Version,
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let decoded = body
        .map_err(FirecrawlError::from)
        .and_then(|body| decode(version, &body));
    let ask = match decoded {
        Ok(ask) => ask,
        Err(err) => {
            tracing::info!(error = err.code(), "map refused");
            return err.into_response();
        }
    };
    let budget = ask.timeout.unwrap_or(gateway.settings().request_budget);
    let started = tokio::time::Instant::now();
    let mapped = gateway.map(ask.request, admitted.premium, budget).await;
    let map = match mapped {
        Ok(map) => map,
        Err(failure) => {
            tracing::info!(
                client = admitted.caller.name.as_str(),
                outcome = failure.code(),
                "map"
            );
            return FirecrawlError::Own(FirecrawlOwn::Page(failure)).into_response();
        }
    };
    admitted
        .clients
        .charge(&admitted.caller, map.premium_calls, 0.0)
        .await;
    tracing::info!(
        client = admitted.caller.name.as_str(),
        outcome = "ok",
        links = map.links.len(),
        robots = map.sources.robots,
        sitemaps = map.sources.sitemaps,
        sitemap_urls = map.sources.sitemap_urls,
        page_links = map.sources.page_links,
        disallowed = map.sources.disallowed,
        out_of_time = map.sources.out_of_time,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "map"
    );
    let links: Vec<Value> = map
        .links
        .into_iter()
        .map(|link| match version {
            Version::V1 => Value::from(link.url),
            Version::V2 => {
                let mut entry = json!({ "url": link.url });
                if let Some(title) = link.title {
                    entry["title"] = Value::from(title);
                }
                entry
            }
        })
        .collect();
    json_response(
        StatusCode::OK,
        json!({ "success": true, "links": links }).to_string(),
    )
}

fn decode(version: Version, body: &[u8]) -> Result<MapAsk, FirecrawlError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    MapAsk::read(version, &fields)
}

/// A body through the map decoder, for the fuzz target: the limit it asks for, or the refusal's
/// status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(version: Version, body: &[u8]) -> Result<usize, StatusCode> {
    let ask = decode(version, body).map_err(|err| err.into_response().status())?;
    Ok(ask.request.limit)
}

impl MapAsk {
    fn read(version: Version, fields: &Map<String, Value>) -> Result<Self, FirecrawlError> {
        const URL: InvalidField = InvalidField {
            name: "url",
            expected: "an http or https URL",
        };
        let (known, max_limit): (&[&str], usize) = match version {
            Version::V1 => (
                &[
                    "url",
                    "search",
                    "ignoreSitemap",
                    "sitemapOnly",
                    "useIndex",
                    "includeSubdomains",
                    "limit",
                    "timeout",
                    "location",
                    "origin",
                    "integration",
                ],
                30_000,
            ),
            Version::V2 => (
                &[
                    "url",
                    "search",
                    "sitemap",
                    "includeSubdomains",
                    "ignoreQueryParameters",
                    "ignoreCache",
                    "limit",
                    "timeout",
                    "location",
                    "origin",
                    "integration",
                ],
                100_000,
            ),
        };
        if let Some(other) = fields.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(unsupported(format!(
                "map option {:?} is not one this gateway takes",
                other.chars().take(40).collect::<String>()
            )));
        }
        let as_sent: String = field(fields, "url", "an http or https URL")?.ok_or(URL)?;
        let url = url::Url::parse(as_sent.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or(URL)?;
        let search =
            field::<String>(fields, "search", "a string")?.filter(|s| !s.trim().is_empty());
        let include_subdomains =
            field::<bool>(fields, "includeSubdomains", "true or false")?.unwrap_or(true);
        let limit_expected = match version {
            Version::V1 => "a whole number from 1 to 30000",
            Version::V2 => "a whole number from 1 to 100000",
        };
        let limit = match field::<u64>(fields, "limit", limit_expected)? {
            None => 5_000,
            Some(n) if (1..=max_limit as u64).contains(&n) => n as usize,
            Some(_) => {
                return Err(InvalidField {
                    name: "limit",
                    expected: limit_expected,
                }
                .into())
            }
        };
        let timeout = super::timeout(fields)?;
        let (sitemap, ignore_query) = match version {
            Version::V1 => {
                let ignore =
                    field::<bool>(fields, "ignoreSitemap", "true or false")?.unwrap_or(true);
                let only = field::<bool>(fields, "sitemapOnly", "true or false")?.unwrap_or(false);
                let mode = match (only, ignore) {
                    (true, _) => SitemapMode::Only,
                    (false, true) => SitemapMode::Skip,
                    (false, false) => SitemapMode::Include,
                };
                (mode, true)
            }
            Version::V2 => {
                const SITEMAP: InvalidField = InvalidField {
                    name: "sitemap",
                    expected: "include, skip or only",
                };
                let mode =
                    match field::<String>(fields, "sitemap", "include, skip or only")?.as_deref() {
                        None | Some("include") => SitemapMode::Include,
                        Some("skip") => SitemapMode::Skip,
                        Some("only") => SitemapMode::Only,
                        Some(_) => return Err(SITEMAP.into()),
                    };
                let ignore = field::<bool>(fields, "ignoreQueryParameters", "true or false")?
                    .unwrap_or(true);
                (mode, ignore)
            }
        };
        Ok(Self {
            request: MapRequest {
                url,
                sitemap,
                include_subdomains,
                ignore_query,
                search,
                limit,
            },
            timeout,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn reads_what_firecrawl_py_sends_in_each_version() {
        let v2 = MapAsk::read(
            Version::V2,
            &fields(json!({"url": "https://a.example/", "search": "docs", "sitemap": "only",
                "includeSubdomains": false, "limit": 10, "timeout": 15000, "origin": "python-sdk@4"})),
        )
        .unwrap();
        assert_eq!(v2.request.sitemap, SitemapMode::Only);
        assert!(!v2.request.include_subdomains && v2.request.ignore_query);
        assert_eq!(v2.request.limit, 10);
        assert_eq!(v2.timeout, Some(Duration::from_secs(15)));
        let v1 = MapAsk::read(Version::V1, &fields(json!({"url": "https://a.example/"}))).unwrap();
        assert_eq!(v1.request.sitemap, SitemapMode::Skip);
        assert_eq!(v1.request.limit, 5_000);
        let v1 = MapAsk::read(
            Version::V1,
            &fields(json!({"url": "https://a.example/", "ignoreSitemap": false})),
        )
        .unwrap();
        assert_eq!(v1.request.sitemap, SitemapMode::Include);
    }

    #[test]
    fn what_it_cannot_take_is_refused_by_name() {
        for (version, body, named) in [
            (Version::V2, json!({"url": "ftp://a.example/"}), "url"),
            (
                Version::V2,
                json!({"url": "https://a.example/", "sitemap": "maybe"}),
                "sitemap",
            ),
            (
                Version::V1,
                json!({"url": "https://a.example/", "limit": 30001}),
                "limit",
            ),
            (
                Version::V2,
                json!({"url": "https://a.example/", "limit": 0}),
                "limit",
            ),
            (
                Version::V2,
                json!({"url": "https://a.example/", "crawlEntireDomain": true}),
                "crawlEntireDomain",
            ),
            (
                Version::V1,
                json!({"url": "https://a.example/", "sitemap": "only"}),
                "sitemap",
            ),
        ] {
            let refused = MapAsk::read(version, &fields(body.clone())).unwrap_err();
            let status = refused.into_response();
            assert_eq!(status.status(), StatusCode::BAD_REQUEST, "{body}");
            let _ = named;
        }
    }
}
