//! Reading a page directly: one URL in, a [`Document`] out — or a [`ReadFailure`] that knows its
//! class. Facts only: which decisions follow (the cache, the host's breaker, a premium reader
//! instead) are the pipeline's (the engine's `read`).
//!
//! - [`address`]: where a read may go (`FETCH_ALLOW_PRIVATE`, `FETCH_ALLOW_HOSTS`,
//!   `FETCH_DENY_HOSTS`, the gateway's own address), and [`resolve`]: the resolver that connects
//!   only to addresses it checked.
//! - [`fetch`]: the page over HTTP — redirects by hand, each hop checked, the timeout and the
//!   body cap.
//! - [`wall`]: whether the answer is a wall (403, 429, a bot challenge, an empty script shell).
//! - [`content`]: the media type and the character encoding.
//! - [`extract`]: HTML → the readable article → Markdown or text; [`second_read`]: forums,
//!   products, grids and listings Readability read thin, read again by a page-type-aware
//!   extractor; [`declared`]: the date, author and site name a page declares where Readability
//!   does not look; [`inert`]: what is handed out runs nothing (no `javascript:` link, no event
//!   attribute); [`pdf`]: a PDF's text.
//! - [`sandbox`]: where those parsers run — a bounded pool of worker processes, each job with the
//!   read's deadline, each worker with a memory cap and a large stack, so nothing a page contains
//!   can abort the gateway or outlive the request's budget.
//! - [`site`]: a site's own files — `robots.txt` and sitemaps — fetched raw
//!   ([`Reader::fetch_resource`], the same fence and caps) and parsed as facts for mapping it.
//! - [`browser`]: a page rendered by a local headless Chromium, for pages whose text arrives by
//!   script — every request it makes fenced by the same policy and client ([`Reader::render`]).
//! - [`metrics`]: bytes read and time spent extracting.

mod address;
pub mod browser;
mod content;
mod declared;
mod extract;
mod fetch;
mod headings;
mod inert;
mod metrics;
mod pdf;
mod resolve;
mod sandbox;
mod second_read;
mod settings;
pub mod site;
mod structured;
mod wall;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use url::Url;

pub(crate) use address::AddressPolicy;
pub use browser::{BrowserMode, BrowserSettings, RenderOptions, RenderOutcome, Screenshot, Shot};
pub use metrics::ReaderMetrics;
pub use resolve::{GuardedResolver, Lookup, SystemLookup};
pub use sandbox::{run_worker, ParseLimit, SandboxSettings, WorkerLimits, WORKER_COMMAND};
pub use wall::Wall;

use content::Kind;
use fetch::{Fetched, Fetcher};
use gateway_core::request::ReadFormat;
use gateway_core::upstream::ErrorClass;

/// A page as read: what every read surface renders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The URL that was asked for.
    pub url: String,
    /// Where it was read from, after redirects.
    pub final_url: String,
    /// Its title, when it has one.
    pub title: Option<String>,
    /// Its readable text, in `format`.
    pub content: String,
    /// Markdown, text, or one of the HTML formats.
    pub format: ReadFormat,
    /// When it says it was published.
    pub published: Option<String>,
    /// The language it says it is in.
    pub language: Option<String>,
    /// Who it says wrote it (its JSON-LD, its `author` meta or its byline).
    #[serde(default)]
    pub author: Option<String>,
    /// The site it says it is part of (JSON-LD's publisher, `og:site_name`).
    #[serde(default)]
    pub site_name: Option<String>,
    /// Images of the article (absolute URLs).
    pub images: Vec<String>,
    /// The page's links, navigation included (absolute URLs, each once, at most a bound of them):
    /// Firecrawl's `links`, what a crawl follows.
    #[serde(default)]
    pub links: Vec<String>,
    /// Its media type (`text/html`, `application/pdf`, …).
    pub content_type: String,
    /// Bytes read (after decompression).
    pub bytes_read: u64,
}

impl Document {
    /// The number of words of its text (outside the markup, for the HTML formats).
    pub fn words(&self) -> usize {
        if self.format.is_html() {
            extract::words_outside_tags(&self.content)
        } else {
            extract::words(&self.content)
        }
    }
}

/// Why a page could not be read, as a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReadFailure {
    /// Not an `http` or `https` URL with a host.
    #[error("not an http or https URL")]
    InvalidUrl,
    /// The address (or host) is one reads may not reach.
    #[error("the address is not one the gateway reads")]
    ForbiddenAddress,
    /// Not a kind of page the reader turns into text.
    #[error("the content type is not one the gateway reads")]
    UnsupportedContentType,
    /// A wall in front of the page.
    #[error("the site blocked the read ({})", .0.as_str())]
    Blocked(Wall),
    /// The `rate_limited` wall (429) of a site that said how long to stay away (`Retry-After`).
    #[error("the site blocked the read (rate_limited)")]
    RateLimitedFor(Duration),
    /// The page has no text to read.
    #[error("the page has no readable text")]
    NoReadableText,
    /// More redirects than [`fetch::MAX_REDIRECTS`].
    #[error("too many redirects")]
    TooManyRedirects,
    /// A PDF that could not be parsed.
    #[error("the PDF could not be read")]
    UnreadablePdf,
    /// An HTTP status that is neither a page nor a wall (404, 410, …).
    #[error("the page answered HTTP {0}")]
    HttpStatus(u16),
    /// The transport failed (timeout, connection, too large, truncated, 5xx).
    #[error("{}", .0.as_str())]
    Upstream(ErrorClass),
    /// The page ran into a limit of its parse (nesting, time, memory or stack, a free slot).
    #[error("the page is too complex to parse within the gateway's limits ({})", .0.as_str())]
    TooComplex(ParseLimit),
    /// The read was lost inside the gateway (a bug): an error, never a hang.
    #[error("the gateway failed to read the page")]
    Internal,
}

impl ReadFailure {
    /// Whether the page did not arrive in time.
    pub fn timed_out(self) -> bool {
        self == Self::Upstream(ErrorClass::Timeout)
    }

    /// The stable code logs, metrics and `explain` use.
    pub fn code(self) -> &'static str {
        match self {
            Self::InvalidUrl => "invalid_url",
            Self::ForbiddenAddress => "forbidden_address",
            Self::UnsupportedContentType => "unsupported_content_type",
            Self::Blocked(_) | Self::RateLimitedFor(_) => "blocked",
            Self::NoReadableText => "no_readable_text",
            Self::TooManyRedirects => "too_many_redirects",
            Self::UnreadablePdf => "unreadable_pdf",
            Self::HttpStatus(_) => "http_status",
            Self::Upstream(class) => class.as_str(),
            Self::TooComplex(_) => "too_complex",
            Self::Internal => "internal_error",
        }
    }
}

/// The direct reader's settings (`FETCH_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReaderSettings {
    /// `FETCH_TIMEOUT_SECONDS`: one read's time, never beyond the request's budget.
    pub timeout: Duration,
    /// `FETCH_MAX_BYTES`: the most of a body read.
    pub(crate) max_bytes: usize,
    /// `FETCH_USER_AGENT`.
    pub(crate) user_agent: String,
    /// Where reads may go.
    pub policy: AddressPolicy,
    /// Where pages are parsed (`PARSE_*`).
    pub sandbox: SandboxSettings,
    /// The local browser (`BROWSER_*`).
    pub browser: BrowserSettings,
}

/// The direct reader. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Reader {
    fetcher: Fetcher,
    /// `FETCH_USER_AGENT`'s product token (`searxng-gateway` of `searxng-gateway/0.2 (…)`), as
    /// `robots.txt` names agents.
    agent: Arc<str>,
    sandbox: sandbox::Sandbox,
    /// The local browser; `None` when `BROWSER` is off (or no Chromium was found).
    browser: Option<browser::Browser>,
    metrics: ReaderMetrics,
}

impl Reader {
    /// A reader with `settings`, looking names up with `lookup`.
    pub fn new(settings: &ReaderSettings, lookup: Arc<dyn Lookup>, metrics: ReaderMetrics) -> Self {
        let resolver = Arc::new(GuardedResolver::new(
            Arc::new(settings.policy.clone()),
            lookup,
        ));
        let fetcher = Fetcher::new(resolver, &settings.user_agent, settings.max_bytes);
        Self {
            browser: browser::Browser::new(
                &settings.browser,
                fetcher.clone(),
                settings.max_bytes,
                metrics.browser.clone(),
            ),
            fetcher,
            agent: Arc::from(
                settings
                    .user_agent
                    .split(['/', ' '])
                    .next()
                    .filter(|token| !token.is_empty())
                    .unwrap_or("searxng-gateway"),
            ),
            sandbox: sandbox::Sandbox::new(settings.sandbox.clone(), metrics.clone()),
            metrics,
        }
    }

    /// Whether pages may be rendered locally (`BROWSER` on and a Chromium found).
    pub fn renders(&self) -> bool {
        self.browser.is_some()
    }

    /// Whether `url` is rendered without a direct read first (`BROWSER=always`, or its host is
    /// one of `BROWSER_HOSTS`); never without a browser.
    pub fn renders_first(&self, url: &Url) -> bool {
        match (&self.browser, url.host_str()) {
            (Some(browser), Some(host)) => browser.renders_first(host),
            _ => false,
        }
    }

    /// Renders `url` in the local browser within `timeout` (at most `BROWSER_TIMEOUT_SECONDS`) and reads the rendered DOM as `format`
    /// (the same parse, walls and caps as a direct read); `connect` when there is no browser.
    /// The render's own outcome is counted in `browser_reads_total` and returned beside the read.
    pub async fn render(
        &self,
        url: &Url,
        format: ReadFormat,
        options: RenderOptions,
        timeout: Duration,
    ) -> (Result<Document, ReadFailure>, RenderOutcome) {
        let deadline = tokio::time::Instant::now() + timeout;
        if let Err(failure) = Self::admits(url) {
            return (Err(failure), RenderOutcome::Forbidden);
        }
        let Some(browser) = &self.browser else {
            return (
                Err(ReadFailure::Upstream(ErrorClass::Connect)),
                RenderOutcome::Unavailable,
            );
        };
        let rendered = match browser.render(url, options, timeout).await {
            Ok(rendered) => rendered,
            Err(outcome) => return (Err(render_failure(outcome)), outcome),
        };
        self.metrics.bytes.inc_by(rendered.html.len() as u64);
        let job = sandbox::Job {
            header: sandbox::JobHeader {
                url: url.to_string(),
                final_url: rendered.final_url.to_string(),
                content_type: Some("text/html; charset=utf-8".to_owned()),
                format,
            },
            body: bytes::Bytes::from(rendered.html),
        };
        let started = Instant::now();
        let parsed = self.sandbox.parse(job, deadline).await;
        self.metrics
            .extraction
            .observe(started.elapsed().as_secs_f64());
        (parsed, RenderOutcome::Ok)
    }

    /// Renders `url` in the local browser within `timeout` (as [`Reader::render`]: the same
    /// fence, tab leases and time) and takes its screenshot; `connect` when there is no browser.
    /// Counted in `browser_reads_total` as a render.
    pub async fn screenshot(
        &self,
        url: &Url,
        shot: Shot,
        options: RenderOptions,
        timeout: Duration,
    ) -> (Result<Screenshot, ReadFailure>, RenderOutcome) {
        if let Err(failure) = Self::admits(url) {
            return (Err(failure), RenderOutcome::Forbidden);
        }
        let Some(browser) = &self.browser else {
            return (
                Err(ReadFailure::Upstream(ErrorClass::Connect)),
                RenderOutcome::Unavailable,
            );
        };
        match browser.screenshot(url, shot, options, timeout).await {
            Ok(screenshot) => (Ok(screenshot), RenderOutcome::Ok),
            // An image over the cap is the page's size, not a cut-off transfer.
            Err(RenderOutcome::TooLarge) => (
                Err(ReadFailure::Upstream(ErrorClass::TooLarge)),
                RenderOutcome::TooLarge,
            ),
            Err(outcome) => (Err(render_failure(outcome)), outcome),
        }
    }

    /// The agent `robots.txt` rules are read for.
    pub fn robots_agent(&self) -> &str {
        &self.agent
    }

    /// Whether `url` may be read at all (scheme and host), before anything is looked up.
    pub fn admits(url: &Url) -> Result<(), ReadFailure> {
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ReadFailure::InvalidUrl);
        }
        Ok(())
    }

    /// Reads `url` as `format` within `timeout`: the fetch and the parse together.
    pub async fn read(
        &self,
        url: &Url,
        format: ReadFormat,
        timeout: Duration,
    ) -> Result<Document, ReadFailure> {
        let deadline = tokio::time::Instant::now() + timeout;
        Self::admits(url)?;
        let fetched = self.fetcher.fetch(url, timeout).await?;
        self.metrics.bytes.inc_by(fetched.body.len() as u64);
        if let Some(wall) = wall::by_reply(fetched.status, &fetched.headers) {
            return Err(
                match gateway_core::upstream::retry_after(&fetched.headers) {
                    Some(period) if wall == Wall::RateLimited => {
                        ReadFailure::RateLimitedFor(period)
                    }
                    _ => ReadFailure::Blocked(wall),
                },
            );
        }
        match fetched.status {
            200..=299 => {}
            500..=599 => return Err(ReadFailure::Upstream(ErrorClass::Server)),
            status => return Err(ReadFailure::HttpStatus(status)),
        }
        content::kind_of(fetched.content_type(), &fetched.body)
            .ok_or(ReadFailure::UnsupportedContentType)?;
        let job = sandbox::Job {
            header: sandbox::JobHeader {
                url: url.to_string(),
                final_url: fetched.final_url.to_string(),
                content_type: fetched.content_type().map(str::to_owned),
                format,
            },
            body: fetched.body,
        };
        let started = Instant::now();
        let parsed = self.sandbox.parse(job, deadline).await;
        self.metrics
            .extraction
            .observe(started.elapsed().as_secs_f64());
        parsed
    }
}

/// A render's failure as a read's.
fn render_failure(outcome: RenderOutcome) -> ReadFailure {
    match outcome {
        RenderOutcome::Forbidden => ReadFailure::ForbiddenAddress,
        RenderOutcome::Timeout | RenderOutcome::Busy => ReadFailure::Upstream(ErrorClass::Timeout),
        RenderOutcome::TooLarge => ReadFailure::Upstream(ErrorClass::Truncated),
        RenderOutcome::Crashed => ReadFailure::Upstream(ErrorClass::Server),
        RenderOutcome::Unavailable | RenderOutcome::Failed | RenderOutcome::Ok => {
            ReadFailure::Upstream(ErrorClass::Connect)
        }
    }
}

/// A file as fetched, not parsed (a site's `robots.txt`, a sitemap).
#[derive(Debug, Clone)]
pub struct Resource {
    /// Where it was read from, after redirects.
    pub final_url: Url,
    /// Its `Content-Type`.
    pub content_type: Option<String>,
    /// Its body (decompressed per `Content-Encoding`), at most `FETCH_MAX_BYTES`.
    pub body: bytes::Bytes,
}

impl Reader {
    /// Whether `url` may be contacted: its scheme, its host and every address it has, as for a
    /// read (`forbidden_address` when the fence refuses it).
    pub async fn check_fence(&self, url: &Url) -> Result<(), ReadFailure> {
        Self::admits(url)?;
        self.fetcher.check(url).await
    }

    /// Sends a JSON `body` to `url` (a client's webhook) with `headers` within `timeout`, through
    /// the same fence as a read, redirects not followed; the reply's status.
    pub async fn post_json(
        &self,
        url: &Url,
        body: Vec<u8>,
        headers: reqwest::header::HeaderMap,
        timeout: Duration,
    ) -> Result<u16, ReadFailure> {
        Self::admits(url)?;
        self.fetcher.post_json(url, body, headers, timeout).await
    }

    /// Fetches `url` within `timeout` without parsing it: the same address fence, redirects,
    /// timeout and cap as a read; a wall or an error status is the read's failure.
    pub async fn fetch_resource(
        &self,
        url: &Url,
        timeout: Duration,
    ) -> Result<Resource, ReadFailure> {
        Self::admits(url)?;
        let fetched = self.fetcher.fetch(url, timeout).await?;
        self.metrics.bytes.inc_by(fetched.body.len() as u64);
        if let Some(wall) = wall::by_reply(fetched.status, &fetched.headers) {
            return Err(ReadFailure::Blocked(wall));
        }
        match fetched.status {
            200..=299 => {}
            500..=599 => return Err(ReadFailure::Upstream(ErrorClass::Server)),
            status => return Err(ReadFailure::HttpStatus(status)),
        }
        Ok(Resource {
            content_type: fetched.content_type().map(str::to_owned),
            final_url: fetched.final_url,
            body: fetched.body,
        })
    }
}

/// The CPU part of a read: the body decoded and its text extracted.
fn into_document(
    url: String,
    fetched: Fetched,
    kind: Kind,
    format: ReadFormat,
) -> Result<Document, ReadFailure> {
    let content_type = fetched
        .content_type()
        .map_or_else(|| default_type(kind).to_owned(), content::essence);
    let extracted = match kind {
        Kind::Pdf => as_format(extract::passthrough(pdf::text(&fetched.body)?), format),
        Kind::Html => {
            let html = content::decode(&fetched.body, fetched.content_type(), kind);
            if extract::too_deep(&html) {
                return Err(ReadFailure::TooComplex(ParseLimit::Nesting));
            }
            let mut extracted = extract::html(&html, &fetched.final_url, format)
                .ok_or(ReadFailure::NoReadableText)?;
            if extracted.words < extract::FEW_WORDS {
                // What a reader without scripts sees: a forum that serves its thread in
                // `<noscript>` for them (Discourse, Flarum) has its text there.
                if let Some(shown) = extract::with_noscript_shown(&html)
                    .and_then(|shown| extract::html(&shown, &fetched.final_url, format))
                    .filter(|shown| shown.words > extracted.words)
                {
                    extracted = shown;
                }
            }
            if let Some(wall) = wall::by_page(&html, extracted.words) {
                return Err(ReadFailure::Blocked(wall));
            }
            if format == ReadFormat::RawHtml {
                extracted.content = html;
            }
            extracted
        }
        Kind::Plain | Kind::Markdown | Kind::Json | Kind::Xml => as_format(
            extract::passthrough(content::decode(&fetched.body, fetched.content_type(), kind)),
            format,
        ),
    };
    if extracted.words == 0 {
        return Err(ReadFailure::NoReadableText);
    }
    Ok(Document {
        url,
        final_url: fetched.final_url.to_string(),
        title: extracted.title,
        content: extracted.content,
        format,
        published: extracted.published,
        language: extracted.language,
        author: extracted.author,
        site_name: extracted.site_name,
        images: extracted.images,
        links: extracted.links,
        content_type,
        bytes_read: fetched.body.len() as u64,
    })
}

/// Text that is no HTML page, in `format`: as it is, or escaped into a `<pre>` when the article's
/// HTML was asked for.
fn as_format(mut extracted: extract::Extracted, format: ReadFormat) -> extract::Extracted {
    if format == ReadFormat::Html {
        extracted.content = extract::preformatted(&extracted.content);
    }
    extracted
}

fn default_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Html => "text/html",
        Kind::Plain => "text/plain",
        Kind::Markdown => "text/markdown",
        Kind::Json => "application/json",
        Kind::Xml => "application/xml",
        Kind::Pdf => "application/pdf",
    }
}

/// A body read from `url` (at `final_url` after redirects) through the parse as a read takes it
/// (content type, charset, walls and all), in this process: what a parse worker runs for each job,
/// and the fuzz targets' and the benchmark's entry point.
pub fn extract_body(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
    final_url: &str,
    format: ReadFormat,
) -> Result<Document, ReadFailure> {
    let final_url = Url::parse(final_url).map_err(|_| ReadFailure::InvalidUrl)?;
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(value) = content_type.and_then(|ct| ct.parse().ok()) {
        headers.insert(reqwest::header::CONTENT_TYPE, value);
    }
    let fetched = Fetched {
        final_url,
        status: 200,
        headers,
        body: bytes::Bytes::copy_from_slice(body),
    };
    let kind = content::kind_of(fetched.content_type(), &fetched.body)
        .ok_or(ReadFailure::UnsupportedContentType)?;
    into_document(url.to_owned(), fetched, kind, format)
}

/// A body through the extraction entry point as Markdown and as text, in this process, for the
/// HTML fuzz target: whether it became a document both ways. A PDF is not parsed here (its
/// parser is bounded only in a worker process: [`parse_pdf_for_fuzzing`]).
#[cfg(any(test, feature = "fuzzing"))]
pub fn extract_for_fuzzing(body: &[u8], content_type: Option<&str>) -> bool {
    if content::kind_of(content_type, body) == Some(Kind::Pdf) {
        return false;
    }
    [ReadFormat::Markdown, ReadFormat::Text]
        .into_iter()
        .map(|format| {
            let url = "https://fuzz.example/page";
            extract_body(body, content_type, url, url, format)
        })
        .all(|doc| doc.is_ok_and(|d| !d.content.trim().is_empty()))
}

/// A PDF through the parse as a read takes it — a job to a worker process of `program` — for the
/// PDF fuzz target: the answer (a document, or why none) by the deadline, whatever the bytes do to
/// the worker. One pool and runtime for every input, so a worker is reused while it lives.
#[cfg(any(test, feature = "fuzzing"))]
pub fn parse_pdf_for_fuzzing(
    program: &std::path::Path,
    body: &[u8],
) -> Result<Document, ReadFailure> {
    use std::sync::OnceLock;
    static POOL: OnceLock<Option<(tokio::runtime::Runtime, sandbox::Sandbox)>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let settings = SandboxSettings {
            workers: 1,
            memory_bytes: 512 * 1024 * 1024,
            program: Some(program.to_owned()),
        };
        let metrics = ReaderMetrics::new(&mut gateway_core::metrics::Registry::new());
        Some((runtime, sandbox::Sandbox::new(settings, metrics)))
    });
    let Some((runtime, pool)) = pool else {
        return Err(ReadFailure::Internal);
    };
    let url = "https://fuzz.example/paper.pdf".to_owned();
    let job = sandbox::Job {
        header: sandbox::JobHeader {
            final_url: url.clone(),
            url,
            content_type: Some("application/pdf".into()),
            format: ReadFormat::Text,
        },
        body: bytes::Bytes::copy_from_slice(body),
    };
    runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        pool.parse(job, deadline).await
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_forum_thread_served_in_noscript_is_read_as_a_reader_without_scripts_sees_it() {
        // A Discourse topic (from the WCXB corpus, trimmed): the whole thread is in `<noscript>`,
        // which the article pass leaves out; it failed as "no readable text" once it was no longer
        // taken for a script shell.
        let page = include_bytes!("testdata/walls/readable/discourse-thread-in-noscript.html");
        let url = "https://users.rust-lang.org/t/msrv-change/1";
        let document = extract_body(page, Some("text/html"), url, url, ReadFormat::Text).unwrap();
        assert!(
            document.content.contains("MSRV aware resolver"),
            "{}",
            document.content
        );
        assert!(document.words() > 100, "{}", document.words());
    }
}
