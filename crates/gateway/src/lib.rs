//! searxng-gateway: a decision proxy in front of a self-hosted SearXNG.
//!
//! The request path, one module per step:
//! 1. [`server`] parses `/search` parameters into one validated [`request::SearchRequest`].
//! 2. [`engine`] looks the normalised key up in the [`cache`] (identical misses share one fan-out).
//! 3. [`engine`] checks the SearXNG cooldown and plans which SearXNG engines to use, asking the
//!    per-engine [`breaker`]s and the engine catalog learned from SearXNG's `/config` ([`searxng`]).
//! 4. SearXNG ([`searxng`]) and the T1 premium [`providers`] start together; the fallback calls the
//!    remaining providers one at a time, all inside a hard budget.
//! 5. [`merge`] deduplicates by canonical URL with order-free attribution and one scoring rule.
//! 6. [`engine`] labels the outcome, records [`metrics`], and caches the rendered answer.
//!
//! [`config`] reads the environment; [`upstream`] holds the error classes every upstream shares.

pub mod breaker;
pub mod cache;
pub mod config;
pub mod engine;
pub mod merge;
pub mod metrics;
pub mod providers;
pub mod request;
pub mod searxng;
pub mod server;
pub mod upstream;

pub use config::{Config, ConfigError};
pub use server::serve;
