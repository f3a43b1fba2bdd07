//! What the gateway calls, and the facts each upstream reports — never policy.
//!
//! - [`searxng`]: one SearXNG instance's client: its `/search` answer, its `/config` engine
//!   catalog, the engines it reports unresponsive.
//! - [`providers`]: the premium search APIs (one file per upstream with the same anatomy), their
//!   keys, quotas and prices, and the premium page readers (`providers::readers`).
//! - [`reader`]: reading a page directly: the address policy, the fetch, the parse workers that
//!   fence the extraction, the bot-wall detector.
//! - [`reranker`]: the passage reranker (`RERANK_URL`), asked to order a query's candidate
//!   passages in Jina's and Cohere's rerank shape.
//! - [`merge`]: the results of several upstreams deduplicated by canonical URL and fused by rank.
//!
//! Depends on `gateway-core` only.

mod breaker_keys;
pub mod merge;
pub mod providers;
pub mod reader;
pub mod reranker;
pub mod searxng;
