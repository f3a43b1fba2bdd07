//! The gateway's decisions: every answer and every page read is made here.
//!
//! [`Engine`] (`engine`) owns every upstream client, breaker and cache; the doors hand it a
//! validated request and get an answer back. Below it, one module per concern:
//!
//! - [`search`]: a search's fan-out to SearXNG and the premium providers inside a hard budget,
//!   the fallback, the answer and its outcome, the record of what it did;
//! - `searxng_pool`: the SearXNG instances — which one an attempt goes to, their cooldowns, the
//!   engines a search may use, the probes of blocked engines;
//! - [`read`]: reading pages — the page cache, the direct read, the premium readers, and the
//!   passages of a read page that answer a query within a token budget (`read::passages`);
//! - [`crawl`]: whole sites — crawls and batch scrapes as background jobs, their scope, their
//!   politeness (`robots.txt`, per-host concurrency, crawl delay) and caps;
//! - `fleet`: what replicas share through the Redis/Valkey tier (a miss, breakers, quotas);
//! - [`operator`]: what the operator sees (`/status`, the traffic of the last 15 minutes);
//! - `breaker_signals`: what upstream facts mean for breakers, for every floor;
//! - `packed`: the versioned, compressed JSON blobs the crawls and the page cache keep outside
//!   the process;
//! - [`settings`]: [`EngineSettings`](settings::EngineSettings), read from the environment by the
//!   engine itself, never the binary's whole configuration.
//!
//! Depends on `gateway-core` and `gateway-upstreams`.

/// Registers metric families on a registry from a table, one `name, help => family;` per line
/// (each family is cloned: its owner and the registry share it), in the table's order.
macro_rules! register_families {
    ($registry:expr; $($name:literal, $help:literal => $family:expr;)+) => {
        $($registry.register($name, $help, $family.clone());)+
    };
}

mod breaker_signals;
pub mod crawl;
mod engine;
mod fleet;
pub mod operator;
mod packed;
pub mod read;
pub mod search;
mod searxng_pool;
pub mod settings;

pub use engine::{Engine, Metrics, NotReady, Restored, SearchError, Served};
