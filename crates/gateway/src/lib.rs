//! searxng-gateway: a decision proxy in front of a self-hosted SearXNG.
//!
//! The request path, one module per step, each depending only on the ones below it:
//! 1. [`server`] parses `/search` parameters into one validated [`request::SearchRequest`] and
//!    renders the answer; it holds no decision.
//! 2. [`pipeline`] answers from the [`cache`] (identical misses share one fan-out), checks the
//!    SearXNG cooldown, plans which SearXNG engines to use from the engine [`breaker`]s and the
//!    catalog [`searxng`]'s `/config` reported, then fans out: SearXNG and the T1 premium
//!    [`providers`] together, the fallback one provider at a time, all inside a hard budget.
//! 3. [`merge`] deduplicates by canonical URL with order-free attribution; one source keeps its
//!    order, several are fused by rank.
//! 4. [`pipeline`] labels the outcome, records [`metrics`] and caches the rendered answer.
//!
//! Beside the path: [`config`] reads the environment once at start-up; [`upstream`] holds what
//! every upstream call shares (error classes, the HTTP client, body cap, `Retry-After`).
//!
//! The public API is what the binary, the demo and the integration tests need: [`Config`] and
//! [`serve`]. Everything else is crate-private.

pub mod config;

mod breaker;
mod cache;
mod merge;
mod metrics;
mod pipeline;
mod providers;
mod request;
mod searxng;
mod server;
mod upstream;

pub use config::{Config, ConfigError, LogLevel};
pub use server::serve;
