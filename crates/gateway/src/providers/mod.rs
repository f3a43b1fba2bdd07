//! Premium web-search APIs. One trait ([`PremiumApi`]) says how a provider builds its request and
//! reads its answer; [`http::ProviderClient`] holds the HTTP mechanics (origin, auth, timeout, body
//! cap, error classification, metrics) once for all of them. One file per provider, same anatomy.

pub mod brave;
pub mod exa;
pub mod http;
pub mod jina;
pub mod tavily;

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::metrics::Metrics;
use crate::request::SearchRequest;
use crate::upstream::UpstreamError;

pub use http::ProviderClient;

/// The premium providers the gateway knows: a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderKind {
    /// Brave Search API.
    Brave,
    /// Exa.
    Exa,
    /// Jina Search (s.jina.ai).
    Jina,
    /// Tavily.
    Tavily,
}

impl ProviderKind {
    /// Every provider, in a fixed order.
    pub const ALL: [ProviderKind; 4] = [Self::Brave, Self::Exa, Self::Jina, Self::Tavily];

    /// Lower-case name used in `FALLBACK_PROVIDERS`, metric labels and result `engine` fields.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Brave => "brave",
            Self::Exa => "exa",
            Self::Jina => "jina",
            Self::Tavily => "tavily",
        }
    }

    /// Parses a name from `FALLBACK_PROVIDERS` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// Upper-case prefix of its environment variables (`BRAVE` → `BRAVE_API_KEY`).
    pub fn env_prefix(self) -> &'static str {
        match self {
            Self::Brave => "BRAVE",
            Self::Exa => "EXA",
            Self::Jina => "JINA",
            Self::Tavily => "TAVILY",
        }
    }

    /// The real origin of the API (overridden by `<NAME>_BASE_URL`).
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Brave => "https://api.search.brave.com",
            Self::Exa => "https://api.exa.ai",
            Self::Jina => "https://s.jina.ai",
            Self::Tavily => "https://api.tavily.com",
        }
    }

    /// The value of a result's `engine` field for this provider's results. Distinct from any
    /// SearXNG engine name (SearXNG has a `brave` engine; the Brave API is `brave_api`).
    pub fn engine_label(self) -> &'static str {
        match self {
            Self::Brave => "brave_api",
            Self::Exa => "exa_api",
            Self::Jina => "jina_api",
            Self::Tavily => "tavily_api",
        }
    }

    /// The adapter for this provider.
    pub fn api(self) -> Box<dyn PremiumApi> {
        match self {
            Self::Brave => Box::new(brave::Brave),
            Self::Exa => Box::new(exa::Exa),
            Self::Jina => Box::new(jina::Jina),
            Self::Tavily => Box::new(tavily::Tavily),
        }
    }
}

/// One result from a premium API, before it becomes a SearXNG result object in the merge.
#[derive(Debug, Clone, PartialEq)]
pub struct PremiumHit {
    /// Result URL.
    pub url: String,
    /// Title (may be empty when the provider gives none).
    pub title: String,
    /// Snippet text.
    pub content: String,
    /// Publication date (ISO 8601) when the provider gives one.
    pub published_date: Option<String>,
}

/// A successful provider answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderAnswer {
    /// Results in the provider's rank order.
    pub hits: Vec<PremiumHit>,
    /// Set when the call succeeded but the provider said to stop (a rate-limit window at zero):
    /// the breaker parks the provider as this error says.
    pub park: Option<UpstreamError>,
    /// Spend the provider reported for this call, in US dollars.
    pub cost_dollars: Option<f64>,
}

/// The HTTP method of a provider request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET with query parameters.
    Get,
    /// POST with a JSON body.
    Post,
}

/// What a provider wants sent: the origin comes from configuration, everything else from here.
/// Its `Debug` hides header values (one of them carries the key).
#[derive(Clone)]
pub struct ApiRequest {
    /// GET or POST.
    pub method: Method,
    /// The provider's real path, e.g. `/res/v1/web/search`.
    pub path: &'static str,
    /// Query-string parameters.
    pub query: Vec<(&'static str, String)>,
    /// Headers, including the auth header carrying the key.
    pub headers: Vec<(&'static str, String)>,
    /// JSON body for POST.
    pub body: Option<serde_json::Value>,
}

impl std::fmt::Debug for ApiRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| *name).collect();
        f.debug_struct("ApiRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("headers", &headers)
            .finish_non_exhaustive()
    }
}

/// How one provider speaks: build the request, read the response. No I/O here.
pub trait PremiumApi: Send + Sync + 'static {
    /// Which provider this is.
    fn kind(&self) -> ProviderKind;

    /// Builds the request for `req`, carrying `key` in the provider's auth header.
    fn request(&self, req: &SearchRequest, key: &str) -> ApiRequest;

    /// Reads a complete response: results, empty, or a classified error (from status AND body).
    fn interpret(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<ProviderAnswer, UpstreamError>;

    /// Records what the response headers say about quotas (Brave's `X-RateLimit-*`). Default: nothing.
    fn observe_headers(&self, _headers: &HeaderMap, _metrics: &Metrics) {}
}

/// The call timeout of a provider: its own `<NAME>_TIMEOUT_SECONDS`, else `PROVIDER_TIMEOUT_SECONDS`.
pub fn effective_timeout(own: Option<Duration>, default: Duration) -> Duration {
    own.unwrap_or(default)
}
