//! The SearXNG instances of `SEARXNG_BACKEND_URL` and everything the gateway keeps about each:
//! which one an attempt goes to, when one is skipped, which of its engines a search may use, and
//! the gateway's own probes of the engines it blocked.
//!
//! - [`pool`]: the instances as a pool ([`SearxngPool`]); [`choice`]: the rule that picks one per
//!   attempt; [`instance`]: one instance's client, catalog, cooldown, engine breakers and latency.
//! - [`cooldown`]: when an instance itself is skipped.
//! - [`engine_plan`]: which engines a request may use, given the engine breakers.
//! - [`engine_probes`]: the probe of each blocked engine whose open period ended (never inside a
//!   client's search), asking a recent popular query ([`recent_queries`]), timed by what the
//!   engine is worth to clients ([`engine_value`]).

mod choice;
pub(crate) mod cooldown;
pub(crate) mod engine_plan;
pub(crate) mod engine_probes;
pub(crate) mod engine_value;
mod instance;
mod pool;
pub(crate) mod recent_queries;

pub(crate) use instance::Instance;
pub(crate) use pool::{Chosen, PoolSettings, SearxngPool};
