//! Firecrawl's jobs (issue #43): `POST …/crawl` (a start page and its links, within a scope),
//! `POST …/batch/scrape` (a list of pages), their status with the pages read (`GET …/{id}`,
//! paginated with `next`), `DELETE …/{id}` (cancel) and `GET …/{id}/errors` — v1 and v2 under
//! `/firecrawl`, v2 at the root too. The jobs run in the engine ([`gateway_engine::crawl`]); a job
//! is its client's alone (another key asking for it gets 404).
//!
//! Crawl request: `url`; `includePaths` / `excludePaths` (regular expressions on the path, on the
//! whole URL with `regexOnFullURL`); `maxDiscoveryDepth` (v1 also `maxDepth`; default 10);
//! `limit` (default and most: `CRAWL_MAX_PAGES`); `crawlEntireDomain` (v1 also
//! `allowBackwardLinks`; default false: only the start page's path and below);
//! `allowSubdomains`, `allowExternalLinks`, `ignoreQueryParameters`; `sitemap` (`include`, the
//! default, seeds the crawl with the site's sitemaps; `skip`; v1's `ignoreSitemap`); `delay`
//! (seconds between two reads on a host); `maxConcurrency` (at most `CRAWL_CONCURRENCY`);
//! `scrapeOptions.formats` (`markdown`, `html`, `rawHtml`, `links`). Harmless and taken:
//! `deduplicateSimilarURLs`, `origin`, `integration`, `zeroDataRetention: false`,
//! `ignoreRobotsTxt: false`. `webhook` (a URL or `{url, headers, metadata, events}`, signed and
//! sent by the engine, refused by name without `CRAWL_WEBHOOK_SECRET` or to an address behind
//! the fence; [`super::webhook`]). Refused by name: `prompt` (needs a model),
//! `ignoreRobotsTxt: true` (robots.txt is always honoured), `robotsUserAgent`,
//! `zeroDataRetention: true` (pages are kept for `CRAWL_RESULT_TTL_SECONDS`), any other field.
//!
//! Batch request (v2): `urls` (1–`CRAWL_MAX_PAGES`), `formats`, `ignoreInvalidURLs` (invalid
//! ones listed in `invalidURLs` instead of a 400), `maxConcurrency`; v1 takes the same with
//! `formats` at the top level too.
//!
//! Answers: a start is `{"success": true, "id", "url"}` (the status URL); a status is
//! `{"success": true, "status": "scraping" | "completed" | "failed" | "cancelled", "total",
//! "completed", "creditsUsed", "expiresAt", "next", "data": [documents]}`, at most
//! [`PAGE_SIZE`] documents a response, `next` the URL of the rest; a cancel `{"success": true,
//! "status": "cancelled"}`; errors `{"errors": [{"id", "timestamp", "url", "error"}],
//! "robotsBlocked": ["…"]}`.

use std::time::{Duration, SystemTime};

use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::{page_metadata, unsupported, FirecrawlError, Formats, Named, Version};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field, InvalidField};
use crate::server::kit::refusal::{json_response, Refusal};
use gateway_core::request::ReadFormat;
use gateway_engine::crawl::scope::{patterns, CrawlScope};
use gateway_engine::crawl::{CrawlRequest, CrawledPage, JobKind, StartRefusal};

/// Documents in one status response.
pub(crate) const PAGE_SIZE: usize = 100;
/// Depth followed when the request sets none.
const DEFAULT_DEPTH: usize = 10;

/// Which of the two kinds a route serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Jobs {
    Crawl,
    Batch,
}

impl Jobs {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Self::Crawl => "crawl",
            Self::Batch => "batch/scrape",
        }
    }
}

/// Where the client reaches this door: the status URLs it is given are built on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) version: Version,
    pub(crate) jobs: Jobs,
    /// `/firecrawl/v2` or `/v2`.
    pub(crate) prefix: &'static str,
}

fn base_url(headers: &HeaderMap, route: Route) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(axum::http::header::HOST))
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-' | '[' | ']'))
        })
        .unwrap_or("localhost");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|p| matches!(*p, "http" | "https"))
        .unwrap_or("http");
    format!("{scheme}://{host}{}/{}", route.prefix, route.jobs.path())
}

/// `POST …/crawl` and `POST …/batch/scrape`.
pub(crate) async fn start(
    route: Route,
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let crawls = gateway.crawls();
    let max_pages = crawls.settings().max_pages;
    let concurrency = crawls.settings().concurrency;
    let decoded = body.map_err(FirecrawlError::from).and_then(|body| {
        let fields = json_fields::object(&body).ok_or(Refusal::NotJson)?;
        match route.jobs {
            Jobs::Crawl => read_crawl(route.version, &fields, max_pages, concurrency),
            Jobs::Batch => read_batch(&fields, max_pages),
        }
    });
    let (mut request, invalid) = match decoded {
        Ok(decoded) => decoded,
        Err(err) => {
            tracing::info!(
                error = err.code(),
                jobs = route.jobs.path(),
                "crawl refused"
            );
            return err.into_response();
        }
    };
    request.owner = admitted.caller.name.as_str().to_owned();
    match crawls.start(request).await {
        Ok(id) => {
            let mut answer = json!({
                "success": true,
                "id": id,
                "url": format!("{}/{id}", base_url(&headers, route)),
            });
            if route.jobs == Jobs::Batch {
                answer["invalidURLs"] = Value::from(invalid);
            }
            json_response(StatusCode::OK, answer.to_string())
        }
        Err(StartRefusal::TooManyJobs(_)) => {
            let mut response = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                json!({"success": false, "error": StartRefusal::TooManyJobs(crawls.settings().jobs_per_client).to_string()})
                    .to_string(),
            );
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("30"),
            );
            response
        }
        Err(StartRefusal::Webhook(refusal)) => {
            tracing::info!(error = %refusal, "crawl refused");
            unsupported(refusal.to_string()).into_response()
        }
        Err(StartRefusal::NoUrl) => Refusal::<super::Firecrawl>::InvalidField(InvalidField {
            name: "urls",
            expected: "a list of http or https URLs",
        })
        .into_response(),
    }
}

/// `?skip=` of a status page, and `explain=1` for the `gateway` object (what the gateway does
/// with the job and why: [`gateway_engine::crawl::explain`]).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct StatusQuery {
    #[serde(default)]
    skip: usize,
    explain: Option<String>,
}

/// `GET …/{id}`.
pub(crate) async fn status(
    route: Route,
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(StatusQuery { skip, explain }): Query<StatusQuery>,
) -> Response {
    let Ok(explain) = crate::server::kit::explain::wanted(explain.as_deref()) else {
        return Refusal::<super::Firecrawl>::InvalidField(InvalidField {
            name: "explain",
            expected: "1, true, 0 or false",
        })
        .into_response();
    };
    let owner = admitted.caller.name.as_str();
    let Some(view) = gateway.crawls().status(&id, owner, skip, PAGE_SIZE).await else {
        return no_such_job();
    };
    let next = view.more.then(|| {
        format!(
            "{}/{id}?skip={}",
            base_url(&headers, route),
            skip + view.pages.len()
        )
    });
    let data: Vec<Value> = view
        .pages
        .iter()
        .map(|page| document(page, view.markdown, view.links))
        .collect();
    let mut body = json!({
        "success": true,
        "status": view.status.as_str(),
        "total": view.total.max(view.completed),
        "completed": view.completed,
        "creditsUsed": view.completed,
        "expiresAt": rfc3339(view.expires_at),
        "next": next,
        "data": data,
    });
    if explain {
        body["gateway"] = serde_json::to_value(&view.explain).unwrap_or(Value::Null);
    }
    json_response(StatusCode::OK, body.to_string())
}

/// `DELETE …/{id}`.
pub(crate) async fn cancel(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    Path(id): Path<String>,
) -> Response {
    match gateway
        .crawls()
        .cancel(&id, admitted.caller.name.as_str())
        .await
    {
        Some(status) => json_response(
            StatusCode::OK,
            json!({"success": true, "status": status.as_str()}).to_string(),
        ),
        None => no_such_job(),
    }
}

/// `GET …/{id}/errors`.
pub(crate) async fn errors(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    Path(id): Path<String>,
) -> Response {
    let Some((failures, blocked)) = gateway
        .crawls()
        .errors(&id, admitted.caller.name.as_str())
        .await
    else {
        return no_such_job();
    };
    let errors: Vec<Value> = failures
        .iter()
        .enumerate()
        .map(|(i, f)| {
            json!({"id": format!("{id}-{i}"), "timestamp": rfc3339(f.at), "url": f.url, "error": f.error})
        })
        .collect();
    json_response(
        StatusCode::OK,
        json!({"success": true, "errors": errors, "robotsBlocked": blocked}).to_string(),
    )
}

fn no_such_job() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        json!({"success": false, "error": "Job not found"}).to_string(),
    )
}

/// A crawled page as Firecrawl's document: the formats asked (`markdown` only when asked: a
/// links-only crawl reads Markdown for the links), `links` when asked, `metadata`.
fn document(page: &CrawledPage, markdown: bool, links: bool) -> Value {
    let mut doc = Map::new();
    for (format, read) in &page.reads {
        let name = match format {
            ReadFormat::Markdown | ReadFormat::Text => "markdown",
            ReadFormat::Html => "html",
            ReadFormat::RawHtml => "rawHtml",
        };
        if *format != ReadFormat::Markdown || markdown {
            doc.insert(name.into(), Value::from(read.content.as_str()));
        }
    }
    if let Some((_, first)) = page.reads.first() {
        if links {
            doc.insert("links".into(), Value::from(first.links.clone()));
        }
        doc.insert(
            "metadata".into(),
            Value::Object(page_metadata(&page.url, first)),
        );
    }
    Value::Object(doc)
}

/// A time as RFC 3339 in UTC, seconds precision.
fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// `scrapeOptions` (or a batch's own fields): the formats, other options checked by name.
fn scrape_formats(options: Option<Map<String, Value>>) -> Result<Formats, FirecrawlError> {
    let Some(options) = options else {
        return Formats::read(None);
    };
    if super::page_options::check(&options, &["formats"])? == gateway_engine::read::Freshness::Fresh
    {
        return Err(unsupported(
            "maxAge: 0 is not supported in a crawl (scrape the page)".to_owned(),
        ));
    }
    Formats::read(field::<Vec<Named>>(
        &options,
        "formats",
        "a list of markdown, html, rawHtml and links",
    )?)?
    .without_screenshot("a crawl or a batch scrape")
}

fn formats_of(formats: &Formats) -> Vec<ReadFormat> {
    formats.reads()
}

fn regexes(
    fields: &Map<String, Value>,
    name: &'static str,
) -> Result<Vec<regex::Regex>, FirecrawlError> {
    let raw =
        field::<Vec<String>>(fields, name, "a list of regular expressions")?.unwrap_or_default();
    patterns(&raw).map_err(|err| unsupported(format!("{name}: {err}")))
}

/// `maxConcurrency`: at least 1; more than `CRAWL_CONCURRENCY` (`most`) is held to it.
fn max_concurrency(
    fields: &Map<String, Value>,
    most: usize,
) -> Result<Option<usize>, FirecrawlError> {
    match field::<u64>(fields, "maxConcurrency", "a whole number from 1")? {
        None => Ok(None),
        Some(0) => Err(InvalidField {
            name: "maxConcurrency",
            expected: "a whole number from 1",
        }
        .into()),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX).min(most))),
    }
}

fn flag(fields: &Map<String, Value>, name: &'static str) -> Result<Option<bool>, FirecrawlError> {
    Ok(field::<bool>(fields, name, "true or false")?)
}

type Decoded = (CrawlRequest, Vec<String>);

fn read_crawl(
    version: Version,
    fields: &Map<String, Value>,
    max_pages: usize,
    concurrency: usize,
) -> Result<Decoded, FirecrawlError> {
    let known: &[&str] = &[
        "url",
        "includePaths",
        "excludePaths",
        "maxDiscoveryDepth",
        "maxDepth",
        "limit",
        "crawlEntireDomain",
        "allowBackwardLinks",
        "allowSubdomains",
        "allowExternalLinks",
        "ignoreQueryParameters",
        "sitemap",
        "ignoreSitemap",
        "delay",
        "maxConcurrency",
        "scrapeOptions",
        "regexOnFullURL",
        "deduplicateSimilarURLs",
        "ignoreRobotsTxt",
        "zeroDataRetention",
        "origin",
        "integration",
        "webhook",
    ];
    for (name, value) in fields {
        let refused = match name.as_str() {
            "prompt" => Some("prompt needs a model, which this gateway does not have"),
            "robotsUserAgent" => Some("robotsUserAgent: robots.txt is read for FETCH_USER_AGENT"),
            "ignoreRobotsTxt" if value.as_bool() == Some(true) => {
                Some("ignoreRobotsTxt: robots.txt is always honoured")
            }
            "zeroDataRetention" if value.as_bool() == Some(true) => {
                Some("zeroDataRetention: pages are kept for CRAWL_RESULT_TTL_SECONDS")
            }
            "maxDepth" | "allowBackwardLinks" | "ignoreSitemap" if version == Version::V2 => {
                Some("that is a v1 option")
            }
            "sitemap" if version == Version::V1 => Some("that is a v2 option (v1: ignoreSitemap)"),
            other if !known.contains(&other) => None,
            _ => continue,
        };
        return Err(unsupported(match refused {
            Some(why) => why.to_owned(),
            None => format!(
                "crawl option {:?} is not one this gateway takes",
                name.chars().take(40).collect::<String>()
            ),
        }));
    }
    const URL: InvalidField = InvalidField {
        name: "url",
        expected: "an http or https URL",
    };
    let as_sent: String = field(fields, "url", "an http or https URL")?.ok_or(URL)?;
    let url = http_url(&as_sent).ok_or(URL)?;
    let depth = field::<usize>(fields, "maxDiscoveryDepth", "a whole number")?
        .or(field::<usize>(fields, "maxDepth", "a whole number")?)
        .unwrap_or(DEFAULT_DEPTH);
    let limit = match field::<u64>(fields, "limit", "a whole number from 1")? {
        None => max_pages,
        Some(0) => {
            return Err(InvalidField {
                name: "limit",
                expected: "a whole number from 1",
            }
            .into())
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX).min(max_pages),
    };
    let entire = flag(fields, "crawlEntireDomain")?
        .or(flag(fields, "allowBackwardLinks")?)
        .unwrap_or(false);
    let mut include = regexes(fields, "includePaths")?;
    if !entire {
        // Only the start page's path and below, as Firecrawl without crawlEntireDomain.
        let dir = match url.path().rfind('/') {
            Some(at) => &url.path()[..=at],
            None => "/",
        };
        if dir != "/" {
            let under = regex::escape(dir);
            include.extend(
                patterns(&[format!("^{under}")]).map_err(|err| unsupported(err.to_string()))?,
            );
        }
    }
    let sitemap = match version {
        Version::V2 => match field::<String>(fields, "sitemap", "include or skip")?.as_deref() {
            None | Some("include") => true,
            Some("skip") => false,
            Some(_) => {
                return Err(InvalidField {
                    name: "sitemap",
                    expected: "include or skip",
                }
                .into())
            }
        },
        Version::V1 => !flag(fields, "ignoreSitemap")?.unwrap_or(false),
    };
    let delay = match field::<f64>(fields, "delay", "seconds from 0 to 60")? {
        None => None,
        Some(s) if (0.0..=60.0).contains(&s) => Some(Duration::from_secs_f64(s)),
        Some(_) => {
            return Err(InvalidField {
                name: "delay",
                expected: "seconds from 0 to 60",
            }
            .into())
        }
    };
    let concurrency = max_concurrency(fields, concurrency)?;
    let formats = scrape_formats(field::<Map<String, Value>>(
        fields,
        "scrapeOptions",
        "an object with formats",
    )?)?;
    let scope = CrawlScope {
        allow_external: flag(fields, "allowExternalLinks")?.unwrap_or(false),
        allow_subdomains: flag(fields, "allowSubdomains")?.unwrap_or(false),
        include,
        exclude: regexes(fields, "excludePaths")?,
        on_full_url: flag(fields, "regexOnFullURL")?.unwrap_or(false),
        max_depth: depth,
        ignore_query: flag(fields, "ignoreQueryParameters")?.unwrap_or(false),
        max_breadth: None,
        include_hosts: Vec::new(),
        exclude_hosts: Vec::new(),
    };
    Ok((
        CrawlRequest {
            owner: String::new(),
            kind: JobKind::Crawl,
            urls: vec![url],
            scope,
            formats: formats_of(&formats),
            limit,
            delay,
            concurrency,
            sitemap,
            discover_only: false,
            links: formats.links,
            markdown: formats.content.contains(&ReadFormat::Markdown),
            webhook: fields
                .get("webhook")
                .map(super::webhook::read)
                .transpose()?,
        },
        Vec::new(),
    ))
}

fn read_batch(fields: &Map<String, Value>, max_pages: usize) -> Result<Decoded, FirecrawlError> {
    const URLS: InvalidField = InvalidField {
        name: "urls",
        expected: "a list of http or https URLs",
    };
    let raw: Vec<String> = field(fields, "urls", "a list of http or https URLs")?.ok_or(URLS)?;
    if raw.is_empty() || raw.len() > max_pages {
        return Err(URLS.into());
    }
    let ignore_invalid = flag(fields, "ignoreInvalidURLs")?.unwrap_or(false);
    let concurrency = max_concurrency(fields, usize::MAX)?;
    let mut urls = Vec::new();
    let mut invalid = Vec::new();
    for entry in raw {
        match http_url(&entry) {
            Some(url) => urls.push(url),
            None if ignore_invalid => invalid.push(entry),
            None => return Err(URLS.into()),
        }
    }
    let mut options = fields.clone();
    for taken in [
        "urls",
        "ignoreInvalidURLs",
        "maxConcurrency",
        "origin",
        "integration",
        "appendToId",
    ] {
        options.remove(taken);
    }
    let webhook = options
        .remove("webhook")
        .map(|value| super::webhook::read(&value))
        .transpose()?;
    let formats = scrape_formats(Some(options))?;
    let limit = urls.len().max(1);
    Ok((
        CrawlRequest {
            owner: String::new(),
            kind: JobKind::Batch,
            urls,
            scope: CrawlScope {
                allow_external: true,
                allow_subdomains: true,
                include: Vec::new(),
                exclude: Vec::new(),
                on_full_url: false,
                max_depth: 0,
                ignore_query: false,
                max_breadth: None,
                include_hosts: Vec::new(),
                exclude_hosts: Vec::new(),
            },
            formats: formats_of(&formats),
            limit,
            delay: None,
            concurrency,
            sitemap: false,
            discover_only: false,
            links: formats.links,
            markdown: formats.content.contains(&ReadFormat::Markdown),
            webhook,
        },
        invalid,
    ))
}

fn http_url(raw: &str) -> Option<url::Url> {
    url::Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// A body through the crawl and batch decoders, for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8]) -> Result<usize, StatusCode> {
    let status = |err: FirecrawlError| err.into_response().status();
    let (which, body) = body.split_first().ok_or(StatusCode::BAD_REQUEST)?;
    let fields = json_fields::object(body).ok_or_else(|| status(Refusal::NotJson))?;
    let (request, _) = match which % 3 {
        0 => read_crawl(Version::V1, &fields, 1000, 4),
        1 => read_crawl(Version::V2, &fields, 1000, 4),
        _ => read_batch(&fields, 1000),
    }
    .map_err(status)?;
    Ok(request.limit)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_crawl_reads_firecrawls_options() {
        let (request, _) = read_crawl(
            Version::V2,
            &fields(json!({"url": "https://a.example/docs/start", "limit": 5000,
                "includePaths": ["^/docs/"], "excludePaths": ["/old/"], "maxDiscoveryDepth": 2,
                "sitemap": "skip", "scrapeOptions": {"formats": ["markdown", "links"]}})),
            100,
            4,
        )
        .unwrap();
        assert_eq!(request.limit, 100);
        assert_eq!(request.scope.max_depth, 2);
        assert!(!request.sitemap);
        // The start page's directory bounds it without crawlEntireDomain.
        assert_eq!(request.scope.include.len(), 2);
        assert_eq!(request.formats, [ReadFormat::Markdown]);
        assert_eq!(request.concurrency, None);
        let (held, _) = read_crawl(
            Version::V2,
            &fields(json!({"url": "https://a.example/", "maxConcurrency": 50})),
            100,
            4,
        )
        .unwrap();
        assert_eq!(held.concurrency, Some(4));
        assert!(read_crawl(
            Version::V2,
            &fields(json!({"url": "https://a.example/", "maxConcurrency": 0})),
            100,
            4
        )
        .is_err());
    }

    #[test]
    fn what_a_crawl_cannot_honour_is_refused_by_name() {
        for body in [
            json!({"url": "https://a.example/", "prompt": "docs only"}),
            json!({"url": "https://a.example/", "webhook": "ftp://hook.example/"}),
            json!({"url": "https://a.example/", "ignoreRobotsTxt": true}),
            json!({"url": "https://a.example/", "includePaths": ["("]}),
            json!({"url": "https://a.example/", "whatever": 1}),
            json!({"url": "https://a.example/", "maxDepth": 2}),
        ] {
            let err = read_crawl(Version::V2, &fields(body.clone()), 100, 4).unwrap_err();
            assert_eq!(
                err.into_response().status(),
                StatusCode::BAD_REQUEST,
                "{body}"
            );
        }
        assert!(read_crawl(
            Version::V1,
            &fields(json!({"url": "https://a.example/", "maxDepth": 2})),
            100,
            4
        )
        .is_ok());
    }

    #[test]
    fn a_batch_takes_its_urls_and_lists_the_invalid_ones_when_asked() {
        let (request, invalid) = read_batch(
            &fields(
                json!({"urls": ["https://a.example/1", "nope"], "ignoreInvalidURLs": true,
                "formats": ["html"]}),
            ),
            100,
        )
        .unwrap();
        assert_eq!(request.urls.len(), 1);
        assert_eq!(invalid, ["nope"]);
        assert_eq!(request.formats, [ReadFormat::Html]);
        assert!(read_batch(&fields(json!({"urls": ["nope"]})), 100).is_err());
    }
}
