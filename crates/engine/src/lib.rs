//! The gateway's decisions: every answer and every page read is made here.
//!
//! [`pipeline`] answers a search from the cache (identical misses share one fan-out), picks a
//! SearXNG instance of the pool, plans its engines from their breakers and catalog, fans out to
//! SearXNG and the premium providers inside a hard budget, labels the outcome and caches the
//! answer; pages are read the same way (`pipeline::read`). It also keeps what the operator sees:
//! status, traffic, the explanations of recent decisions.
//!
//! Depends on `gateway-core` and `gateway-upstreams`; takes its settings as
//! [`pipeline::EngineSettings`], never the binary's whole configuration.

pub mod pipeline;
pub mod settings;
