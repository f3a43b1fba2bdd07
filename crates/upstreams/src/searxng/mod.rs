//! Everything about one SearXNG upstream: the client (one attempt, body cap, accounting), the
//! answer it decodes, the `unresponsive_engines` reasons, the engine catalog learned from
//! `/config`, and the engines SearXNG's own `/stats/errors` reports blocked.

mod answer;
pub mod catalog;
mod client;
pub mod engine_errors;
mod metrics;
mod unresponsive;

pub use answer::{decode_answer, parse_answer};
pub use answer::{SearxngAnswer, TopLevel};
pub use catalog::{EngineCatalog, EngineName};
pub use client::{backoff_delay, SearxngClient, MAX_ATTEMPTS};
pub use metrics::SearxngMetrics;
pub use unresponsive::EngineReason;
#[cfg(any(test, feature = "testing"))]
pub use unresponsive::Unresponsive;
pub use {answer::result_engines, unresponsive::parse_unresponsive};
