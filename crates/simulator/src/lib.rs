//! Faithful fakes of the gateway's upstreams, for the gateway's integration tests, the benchmarks
//! and the demo. Each fake serves real HTTP on a loopback listener and is strict where the real
//! service is: a wrong method, path or auth header fails the way the real API fails, so an adapter
//! bug fails a test. [`fault`] is misbehaviour below the API (resets, hangs, garbage, huge or trickling
//! bodies) that either fake serves. [`script`] makes them misbehave over time — latency distributions, error
//! rates, quotas, and spells (a CAPTCHA wall, a 429 burst, a slow patch) that lift by themselves.
//!
//! [`site`] is a web site for the gateway's page reads (pages, redirects, walls, trickles); [`site_graph`]
//! generates one of hundreds of pages with a known link graph and a crawler's traps; and
//! [`readers`] fakes the premium page readers (Jina Reader, Tavily extract, Exa contents,
//! Firecrawl scrape). [`reranker`] fakes a reranker in Jina's and Cohere's shape (`RERANK_URL`).
//!
//! This crate knows nothing of the gateway: it fakes the *services*, from their documentation
//! (shared/spec/PROVIDERS.md, shared/spec/SEARXNG.md), so a test cannot pass by sharing a bug.

pub mod fault;
mod in_flight;
pub mod premium;
pub mod readers;
pub mod reranker;
pub mod script;
pub mod searxng;
pub mod site;
pub mod site_graph;
mod transport;

pub use transport::LifetimeStats;

/// The premium search APIs the simulator fakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
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
    /// SearchAPI.io.
    SearchApi,
    /// Serper.
    Serper,
    /// Tavily.
    Tavily,
}

impl Provider {
    /// Every provider, in a fixed order.
    pub const ALL: [Provider; 9] = [
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

    /// The provider's lower-case name (as the gateway's `FALLBACK_PROVIDERS` spells it).
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

    /// The upper-case prefix of the gateway's variables for it (`BRAVE_API_KEY`, `BRAVE_BASE_URL`).
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
}
