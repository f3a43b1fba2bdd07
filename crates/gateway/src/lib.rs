//! searxng-gateway: a decision proxy in front of a self-hosted SearXNG.
//!
//! The request path, one module per step, each depending only on the ones below it:
//! 0. [`clients`] decides who may search and how much: inbound API keys, a token bucket and a
//!    premium budget per client (the server asks it before every search).
//! 1. [`server`] is every front door — SearXNG's API (`/search`, `/`), the MCP tool (`/mcp` and
//!    stdio), the Tavily-compatible API — each reading its input into one validated
//!    [`request::SearchRequest`] and rendering the answer in its own shape; it holds no decision.
//! 2. [`pipeline`] answers from the [`cache`] (identical misses share one fan-out), picks a SearXNG
//!    instance of the pool (not cooling down, its needed engines not excluded, least loaded), plans
//!    which of its engines to use from its engine [`breaker`]s and the catalog its `/config`
//!    reported ([`searxng`]), then fans out: SearXNG and the T1 premium [`providers`] together, the
//!    fallback one provider at a time, all inside a hard budget; a failed SearXNG attempt is retried
//!    on another instance.
//! 3. [`merge`] deduplicates by canonical URL with order-free attribution; one source keeps its
//!    order, several are fused by rank. Each result is a [`search_result`]: the fields the merge
//!    reads, and the object as the upstream sent it (copied into the answer as it came).
//! 4. [`pipeline`] labels the outcome, records [`metrics`] and caches the rendered answer.
//! 5. With `REDIS_URL`, [`shared`] is the tier several replicas share below the local one: answers,
//!    computations in flight (leases), breaker open periods and probes, the rotation counter —
//!    every operation bounded, skipped while Redis is away.
//!
//! Beside the path: [`config`] reads the environment once at start-up; [`upstream`] holds what
//! every upstream call shares (error classes, the HTTP client, body cap, `Retry-After`);
//! [`trace`] names the OpenTelemetry spans the path creates, and [`telemetry`] installs the log
//! lines and, when configured, the trace export.
//!
//! The public API is what the binary, the demo and the integration tests need: [`Config`],
//! [`serve`] and [`serve_mcp_stdio`]. Everything else is crate-private.

pub mod config;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(all(test, not(feature = "fuzzing")))]
mod fuzzing;

#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod bench;

mod breaker;
mod cache;
mod canonical_url;
pub mod clients;
mod env;
mod merge;
mod metrics;
mod pipeline;
mod providers;
mod reader;
mod request;
mod search_result;
mod searxng;
mod server;
mod shared;
pub mod telemetry;
mod trace;
mod upstream;

pub use config::{Config, ConfigError, LogFormat, LogLevel};
pub use server::{serve, serve_mcp_stdio};
