//! What this gateway can do as built and configured, for `GET /v1/capabilities`: a client asks
//! instead of guessing which options will be honoured. Only facts of the configuration and of what
//! SearXNG has shown so far (the engines it answered with); nothing secret (no key, no URL).

use serde::Serialize;

/// The engine's part of the capabilities document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capabilities {
    /// SearXNG instances in the pool (`SEARXNG_BACKEND_URL`).
    pub searxng_instances: usize,
    /// The SearXNG engines the pool has seen answer or fail so far, sorted (empty before the first
    /// search).
    pub engines: Vec<String>,
    /// Premium search providers with a key, in `FALLBACK_PROVIDERS` order (empty: keyless).
    pub premium_providers: Vec<&'static str>,
    /// Premium readers with a key, in `READ_PROVIDERS` order (empty: direct reads only).
    pub premium_readers: Vec<&'static str>,
    /// The formats a page is read in.
    pub read_formats: [&'static str; 4],
    /// PDFs are read (text extracted in a parse worker).
    pub pdf: bool,
    /// A local browser renders pages that need script (`BROWSER` on and a Chromium found).
    pub browser: bool,
    /// A reranker (`RERANK_URL`) re-scores the passages chosen for a query.
    pub reranker: bool,
    /// Query-relevant passages are chosen (Tavily extract's chunks; Exa's highlights and Tavily
    /// search's chunks not yet).
    pub passages: bool,
    /// A Redis/Valkey tier is shared with other replicas (`REDIS_URL`).
    pub shared_tier: bool,
}
