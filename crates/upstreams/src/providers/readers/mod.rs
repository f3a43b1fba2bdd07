//! Premium readers: APIs that return one page's text, the gateway's fallback when a direct read is
//! blocked, fails or finds no readable text (`READ_PROVIDERS`, in order). They are siblings of the
//! search adapters: the same answer steps ([`super::api::decode`]), the same HTTP mechanics
//! ([`KeyedHttp`]: origin, key, timeout, body cap), the same keys (`JINA_API_KEY`,
//! `TAVILY_API_KEY`, `EXA_API_KEY`, plus `FIRECRAWL_API_KEY`), and one file per reader with the
//! providers' anatomy — module doc (endpoint, auth, quirks), the adapter, its [`ReaderApi`] impl,
//! a private `wire` module, tests on recorded bodies.
//!
//! A reader that answered but could not read that page (Tavily's `failed_results`, Exa's error
//! `statuses`, Firecrawl's target status) is [`PageResult::Unreadable`]: the reader works, the
//! page does not — no breaker trips for it. Every other failure is an [`UpstreamError`] with its
//! class, as for a search.
//!
//! To add a reader: a variant in [`ReaderKind`], a file implementing [`ReaderApi`], its arm in
//! [`ReaderKind::adapter`], its rows in the variables table, its fake in the simulator.

mod exa;
mod firecrawl;
mod jina;
mod tavily;

use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use reqwest::header::HeaderMap;
use url::Url;

use super::api::{decode, ApiRequest, Auth, Decoded, Wire};
use super::http::KeyedHttp;
use super::ApiKey;
use gateway_core::env::{ConfigError, Env};
use gateway_core::metrics::{label_value_as_str, Registry};
use gateway_core::request::ReadFormat;
use gateway_core::upstream::{ErrorClass, UpstreamError, UpstreamHttp};

/// The premium readers the gateway knows: a closed set (`READ_PROVIDERS` names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReaderKind {
    /// Jina Reader (r.jina.ai).
    Jina,
    /// Tavily's `/extract`.
    Tavily,
    /// Exa's `/contents`.
    Exa,
    /// Firecrawl's `/v2/scrape`.
    Firecrawl,
}

impl ReaderKind {
    /// Every reader, in a fixed order.
    pub(crate) const ALL: [ReaderKind; 4] = [Self::Jina, Self::Tavily, Self::Exa, Self::Firecrawl];

    /// The name in `READ_PROVIDERS`, metric labels, `/status` and `explain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jina => "jina",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
            Self::Firecrawl => "firecrawl",
        }
    }

    /// Parses a name from `READ_PROVIDERS` (case-insensitive).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// The prefix of its key and timeout variables (`JINA` → `JINA_API_KEY`), shared with the
    /// provider's search.
    pub fn env_prefix(self) -> &'static str {
        match self {
            Self::Jina => "JINA",
            Self::Tavily => "TAVILY",
            Self::Exa => "EXA",
            Self::Firecrawl => "FIRECRAWL",
        }
    }

    /// The variable of its origin (Jina's reader lives on another host than its search).
    pub(crate) fn base_variable(self) -> &'static str {
        match self {
            Self::Jina => "JINA_READER_BASE_URL",
            Self::Tavily => "TAVILY_BASE_URL",
            Self::Exa => "EXA_BASE_URL",
            Self::Firecrawl => "FIRECRAWL_BASE_URL",
        }
    }

    fn adapter(self) -> Box<dyn ReaderAdapter> {
        match self {
            Self::Jina => Box::new(jina::JinaReader),
            Self::Tavily => Box::new(tavily::TavilyExtract),
            Self::Exa => Box::new(exa::ExaContents),
            Self::Firecrawl => Box::new(firecrawl::FirecrawlScrape),
        }
    }
}

/// A page as a premium reader returned it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PremiumPage {
    /// Where the reader says it read it from.
    pub final_url: Option<String>,
    /// The page's title, when the reader gave one.
    pub title: Option<String>,
    /// The main content, in the format asked for.
    pub content: String,
    /// The publication date, as the reader wrote it.
    pub published: Option<String>,
    /// The page's language, when the reader gave one.
    pub language: Option<String>,
    /// Image URLs the reader listed.
    pub images: Vec<String>,
    /// Spend the reader reported for this call, in US dollars.
    pub(crate) cost_dollars: Option<f64>,
}

/// What a reader that answered said about the page.
#[derive(Debug, Clone, PartialEq)]
pub enum PageResult {
    /// Its text.
    Page(PremiumPage),
    /// It could not read that page (the page's failure, not the reader's).
    Unreadable,
}

/// One reader's wire protocol.
pub(crate) trait ReaderApi: Wire + Send + Sync + 'static {
    /// Which reader this is.
    const KIND: ReaderKind;
    /// Where the key goes.
    const AUTH: Auth;

    /// The request for `url`, as `format`, within `timeout`.
    fn request(&self, url: &str, format: ReadFormat, timeout: Duration) -> ApiRequest;

    /// Whether it gives pages in `format` (Markdown and text by default; the HTML formats only
    /// where the API returns markup).
    fn serves(&self, format: ReadFormat) -> bool {
        !format.is_html()
    }

    /// Maps a decoded 2xx body to the page; an `Err` is a body of the wrong shape.
    fn page(&self, body: Self::Success, url: &str) -> Result<PageResult, ErrorClass>;
}

/// A reader as the client holds it: the wire protocol behind a trait object.
trait ReaderAdapter: Send + Sync + 'static {
    fn kind(&self) -> ReaderKind;
    fn auth(&self) -> Auth;
    fn request(&self, url: &str, format: ReadFormat, timeout: Duration) -> ApiRequest;
    fn serves(&self, format: ReadFormat) -> bool;
    fn interpret(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
        url: &str,
    ) -> Result<PageResult, UpstreamError>;
}

impl<A: ReaderApi> ReaderAdapter for A {
    fn kind(&self) -> ReaderKind {
        A::KIND
    }

    fn auth(&self) -> Auth {
        A::AUTH
    }

    fn request(&self, url: &str, format: ReadFormat, timeout: Duration) -> ApiRequest {
        ReaderApi::request(self, url, format, timeout)
    }

    fn serves(&self, format: ReadFormat) -> bool {
        ReaderApi::serves(self, format)
    }

    fn interpret(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
        url: &str,
    ) -> Result<PageResult, UpstreamError> {
        interpret(self, status, headers, body, url)
    }
}

/// Reads one complete answer of reader `api` for `url`.
pub(crate) fn interpret<A: ReaderApi>(
    api: &A,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    url: &str,
) -> Result<PageResult, UpstreamError> {
    match decode(api, status, headers, body)? {
        Decoded::Nothing => Ok(PageResult::Unreadable),
        Decoded::Success(body) => api.page(body, url).map_err(UpstreamError::new),
    }
}

/// What one premium reader is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct PremiumReaderSettings {
    /// Which reader.
    pub kind: ReaderKind,
    /// Its key; `None` makes it inactive.
    pub(crate) key: Option<ApiKey>,
    /// Its origin.
    pub(crate) base_url: Url,
    /// Its call timeout.
    pub(crate) timeout: Duration,
}

/// Reads `READ_PROVIDERS`: the readers to try, in order (unset: none).
pub fn read_list(env: &Env<'_>) -> Result<Vec<ReaderKind>, ConfigError> {
    env.name_list(
        "READ_PROVIDERS",
        "reader",
        &ReaderKind::ALL.map(ReaderKind::as_str),
        ReaderKind::from_name,
    )
}

/// Reads every reader's settings (active or not), in [`ReaderKind::ALL`] order.
pub fn read_settings(env: &Env<'_>) -> Result<Vec<PremiumReaderSettings>, ConfigError> {
    let mut readers = Vec::new();
    for kind in ReaderKind::ALL {
        let prefix = kind.env_prefix();
        // The variable may hold a pool of search keys (`crate::providers::keys`); a reader
        // reads with the first.
        let key = crate::providers::settings::read_keys(env, &format!("{prefix}_API_KEY"))?
            .into_iter()
            .next();
        readers.push(PremiumReaderSettings {
            kind,
            key,
            base_url: env.origin(kind.base_variable())?,
            timeout: env.seconds(&format!("{prefix}_TIMEOUT_SECONDS"))?,
        });
    }
    Ok(readers)
}

label_value_as_str!(ReaderKind, ReadCallResult);

/// What one premium read came to: `ok`, `unreadable`, or the reader's error class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadCallResult {
    /// The page was read.
    Ok,
    /// The reader answered, with nothing readable.
    Unreadable,
    /// The call failed with this class.
    Failed(ErrorClass),
}

impl ReadCallResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Unreadable => "unreadable",
            Self::Failed(class) => class.as_str(),
        }
    }
}

/// `{provider, outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ReadCallLabels {
    pub(crate) provider: ReaderKind,
    pub(crate) outcome: ReadCallResult,
}

/// The premium readers' families. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ReaderCallMetrics {
    /// `premium_read_calls_total{provider,outcome}`.
    pub(crate) calls: Family<ReadCallLabels, Counter>,
}

impl ReaderCallMetrics {
    /// The families, registered on `r`.
    pub fn new(r: &mut Registry) -> Self {
        let m = Self::default();
        r.register(
            "premium_read_calls",
            "Premium reader calls (page reads through Jina, Tavily, Exa, Firecrawl) by reader and outcome",
            m.calls.clone(),
        );
        m
    }
}

/// A premium reader ready to be called.
pub struct PremiumReader {
    adapter: Box<dyn ReaderAdapter>,
    http: KeyedHttp,
    metrics: ReaderCallMetrics,
}

impl std::fmt::Debug for PremiumReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PremiumReader")
            .field("kind", &self.kind())
            .field("http", &self.http)
            .finish()
    }
}

impl PremiumReader {
    /// The reader `settings` describe, or `None` without a key (keyless: direct reads only).
    pub fn new(
        settings: &PremiumReaderSettings,
        http: UpstreamHttp,
        metrics: ReaderCallMetrics,
    ) -> Option<Self> {
        let key = settings.key.clone()?;
        Some(Self {
            adapter: settings.kind.adapter(),
            http: KeyedHttp::new(http, settings.base_url.clone(), settings.timeout, key),
            metrics,
        })
    }

    /// Which reader this is.
    pub fn kind(&self) -> ReaderKind {
        self.adapter.kind()
    }

    /// Whether it gives pages in `format`.
    pub fn serves(&self, format: ReadFormat) -> bool {
        self.adapter.serves(format)
    }

    /// Reads `url` as `format`, within `limit` (and its own timeout). Records
    /// `premium_read_calls_total`. Dropping the future cancels the call.
    pub async fn read(
        &self,
        url: &str,
        format: ReadFormat,
        limit: Duration,
    ) -> Result<PageResult, UpstreamError> {
        let started = Instant::now();
        let budget = self.http.timeout().min(limit);
        let api_req = self.adapter.request(url, format, budget);
        let mut status = None;
        let result = match self
            .http
            .call_within(self.adapter.auth(), &api_req, limit, &mut status)
            .await
        {
            Ok(exchanged) => {
                self.adapter
                    .interpret(exchanged.status, &exchanged.headers, &exchanged.body, url)
            }
            Err(err) => Err(err),
        };
        let outcome = match &result {
            Ok(PageResult::Page(_)) => ReadCallResult::Ok,
            Ok(PageResult::Unreadable) => ReadCallResult::Unreadable,
            Err(err) => ReadCallResult::Failed(err.class),
        };
        self.metrics
            .calls
            .get_or_create(&ReadCallLabels {
                provider: self.kind(),
                outcome,
            })
            .inc();
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(_) => tracing::debug!(
                reader = self.kind().as_str(),
                status,
                outcome = outcome.as_str(),
                elapsed_ms,
                "premium read answered"
            ),
            Err(err) => tracing::warn!(
                reader = self.kind().as_str(),
                status,
                class = err.class.as_str(),
                retry_after_secs = err.retry_after.map(|d| d.as_secs()),
                elapsed_ms,
                "premium read failed"
            ),
        }
        result
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Vec<(String, String)> {
        vars.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn read_providers_are_a_closed_ordered_list() {
        let vars = env(&[("READ_PROVIDERS", "firecrawl, Jina")]);
        let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        assert_eq!(
            read_list(&Env::new(&lookup)).unwrap(),
            [ReaderKind::Firecrawl, ReaderKind::Jina]
        );
        for bad in ["jina,bing", "exa,exa"] {
            let vars = env(&[("READ_PROVIDERS", bad)]);
            let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let err = read_list(&Env::new(&lookup)).unwrap_err();
            assert_eq!(err.variable, "READ_PROVIDERS", "{bad}");
        }
    }

    #[test]
    fn each_reader_has_its_origin_key_and_timeout() {
        let vars = env(&[
            ("FIRECRAWL_API_KEY", "fc-1"),
            ("JINA_READER_BASE_URL", "http://127.0.0.1:9"),
            ("PROVIDER_TIMEOUT_SECONDS", "4"),
        ]);
        let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let settings = read_settings(&Env::new(&lookup)).unwrap();
        let get = |kind| settings.iter().find(|s| s.kind == kind).unwrap();
        assert!(get(ReaderKind::Firecrawl).key.is_some());
        assert!(get(ReaderKind::Tavily).key.is_none());
        assert_eq!(
            get(ReaderKind::Jina).base_url.as_str(),
            "http://127.0.0.1:9/"
        );
        assert_eq!(
            get(ReaderKind::Firecrawl).base_url.as_str(),
            "https://api.firecrawl.dev/"
        );
        assert_eq!(get(ReaderKind::Exa).timeout, Duration::from_secs(4));
    }
}
