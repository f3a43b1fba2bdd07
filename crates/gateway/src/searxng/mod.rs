//! Everything about one SearXNG upstream: the client (one attempt, body cap, accounting), the
//! answer it decodes, the `unresponsive_engines` reasons, the engine catalog learned from
//! `/config`, and the engines SearXNG's own `/stats/errors` reports blocked.

mod answer;
pub(crate) mod catalog;
mod client;
pub(crate) mod engine_errors;
mod metrics;
mod unresponsive;

#[cfg(any(test, feature = "bench"))]
pub(crate) use answer::decode_answer;
#[cfg(any(test, feature = "fuzzing", feature = "bench"))]
pub(crate) use answer::parse_answer;
pub(crate) use answer::{SearxngAnswer, TopLevel};
pub(crate) use catalog::{EngineCatalog, EngineName};
pub(crate) use client::{backoff_delay, SearxngClient, MAX_ATTEMPTS};
pub(crate) use metrics::SearxngMetrics;
pub(crate) use unresponsive::EngineReason;
#[cfg(test)]
pub(crate) use unresponsive::Unresponsive;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use {answer::result_engines, unresponsive::parse_unresponsive};
