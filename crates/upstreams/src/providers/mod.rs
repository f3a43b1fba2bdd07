//! Premium web-search APIs: which ones exist ([`ProviderKind`]), what a provider is configured with
//! ([`settings`]), how one speaks ([`api`]: the `PremiumApi` trait, with the status-code and
//! JSON-decoding steps written once), how it is called ([`client`]: HTTP, auth, timeout, metrics),
//! and one file per provider with the same anatomy: module doc (endpoint, auth, quirks), the adapter
//! struct, its `PremiumApi` impl, a private `wire` module mirroring the upstream JSON, tests
//! decoding recorded bodies.
//!
//! To add a provider: a variant in [`ProviderKind`] (name, variable prefix, origin, result label),
//! a file implementing [`api::PremiumApi`], its arm in [`ProviderKind::adapter`], its fake in the
//! simulator crate, and the contract suite in the integration tests runs against it.

pub(crate) mod api;
mod brave;
pub(crate) mod client;
mod exa;
mod google_organic;
pub(crate) mod http;
mod jina;
mod kagi;
pub mod keys;
mod linkup;
mod metrics;
mod perplexity;
pub mod price;
pub mod quota;
pub mod readers;
mod searchapi;
mod serper;
pub mod settings;
mod tavily;

use std::time::Duration;

pub use client::ProviderClient;
pub use metrics::ProviderMetrics;
pub use settings::{ApiKey, ProviderSettings};

/// The premium providers the gateway knows: a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Brave Search API.
    Brave,
    /// Exa.
    Exa,
    /// Jina Search (s.jina.ai).
    Jina,
    /// Kagi Search API.
    Kagi,
    /// Linkup.
    Linkup,
    /// Perplexity Search API.
    Perplexity,
    /// SearchAPI.io (Google results).
    SearchApi,
    /// Serper (Google results).
    Serper,
    /// Tavily.
    Tavily,
}

impl ProviderKind {
    /// Every provider, in a fixed order.
    pub const ALL: [ProviderKind; 9] = [
        Self::Brave,
        Self::Exa,
        Self::Jina,
        Self::Kagi,
        Self::Linkup,
        Self::Perplexity,
        Self::SearchApi,
        Self::Serper,
        Self::Tavily,
    ];

    /// Lower-case name used in `FALLBACK_PROVIDERS`, metric labels and `/status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Brave => "brave",
            Self::Exa => "exa",
            Self::Jina => "jina",
            Self::Kagi => "kagi",
            Self::Linkup => "linkup",
            Self::Perplexity => "perplexity",
            Self::SearchApi => "searchapi",
            Self::Serper => "serper",
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
            Self::Kagi => "KAGI",
            Self::Linkup => "LINKUP",
            Self::Perplexity => "PERPLEXITY",
            Self::SearchApi => "SEARCHAPI",
            Self::Serper => "SERPER",
            Self::Tavily => "TAVILY",
        }
    }

    /// The value of a result's `engine` field for this provider's results. Distinct from any
    /// SearXNG engine name (SearXNG has a `brave` engine; the Brave API is `brave_api`).
    pub(crate) fn engine_label(self) -> &'static str {
        match self {
            Self::Brave => "brave_api",
            Self::Exa => "exa_api",
            Self::Jina => "jina_api",
            Self::Kagi => "kagi_api",
            Self::Linkup => "linkup_api",
            Self::Perplexity => "perplexity_api",
            Self::SearchApi => "searchapi_api",
            Self::Serper => "serper_api",
            Self::Tavily => "tavily_api",
        }
    }

    /// The adapter for this provider.
    pub fn adapter(self) -> Box<dyn api::Adapter> {
        match self {
            Self::Brave => Box::new(brave::Brave),
            Self::Exa => Box::new(exa::Exa),
            Self::Jina => Box::new(jina::Jina),
            Self::Kagi => Box::new(kagi::Kagi),
            Self::Linkup => Box::new(linkup::Linkup),
            Self::Perplexity => Box::new(perplexity::Perplexity),
            Self::SearchApi => Box::new(searchapi::SearchApi),
            Self::Serper => Box::new(serper::Serper),
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

impl PremiumHit {
    /// A hit from a provider's result fields: `None` without a URL (such a result is dropped); a
    /// missing title or snippet is `""`, an empty date none.
    pub(crate) fn from_fields(
        url: Option<String>,
        title: Option<String>,
        content: Option<String>,
        published_date: Option<String>,
    ) -> Option<Self> {
        Some(Self {
            url: url.filter(|u| !u.is_empty())?,
            title: title.unwrap_or_default(),
            content: content.unwrap_or_default(),
            published_date: published_date.filter(|d| !d.is_empty()),
        })
    }
}

/// The `{"results": [...]}` body several providers answer a search with (Linkup, Perplexity,
/// Tavily), each result entry of the provider's own shape `E`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Results<E> {
    /// The entries, in the provider's rank order.
    pub(crate) results: Vec<E>,
}

/// One result entry of a provider's answer, as its `wire` module decodes it.
pub(crate) trait Entry {
    /// The hit it is, or `None` (no URL, or not a web result).
    fn into_hit(self) -> Option<PremiumHit>;
}

impl<E: Entry> Results<E> {
    /// The answer of the entries that are hits, in the provider's rank order.
    pub(crate) fn into_answer(self) -> ProviderAnswer {
        ProviderAnswer::of_hits(self.results.into_iter().filter_map(E::into_hit))
    }
}

/// A provider that answered but said to stop calling it for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Park {
    /// A short rate-limit window is spent: pause until it resets (not a failure, no backoff).
    Window(Duration),
    /// The monthly or plan quota is spent: open the breaker, for at least the reset hint.
    Quota(Option<Duration>),
}

/// A successful provider answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderAnswer {
    /// Results in the provider's rank order.
    pub hits: Vec<PremiumHit>,
    /// Set when the call succeeded but the provider said a window or quota is spent.
    pub park: Option<Park>,
    /// Spend the provider reported for this call, in US dollars.
    pub cost_dollars: Option<f64>,
    /// What the call cost, in US dollars: the reported spend, else the provider's price (set by
    /// the client).
    pub spend_usd: f64,
}

impl ProviderAnswer {
    /// An answer of these hits, in the provider's rank order.
    pub(crate) fn of_hits(hits: impl IntoIterator<Item = PremiumHit>) -> Self {
        Self {
            hits: hits.into_iter().collect(),
            ..Self::default()
        }
    }
}
