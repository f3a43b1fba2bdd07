//! Everything about the SearXNG upstream: the client (retries, body cap, engine accounting), the
//! answer it decodes, the `unresponsive_engines` reasons, the engine catalog learned from
//! `/config`, and the engines SearXNG's own `/stats/errors` reports blocked.

mod answer;
pub(crate) mod catalog;
mod client;
pub(crate) mod engine_errors;
mod metrics;
mod unresponsive;

pub(crate) use answer::SearxngAnswer;
pub(crate) use catalog::EngineCatalog;
pub(crate) use client::SearxngClient;
pub(crate) use metrics::SearxngMetrics;
pub(crate) use unresponsive::EngineReason;
#[cfg(test)]
pub(crate) use unresponsive::Unresponsive;
