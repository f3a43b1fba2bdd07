//! Everything about the SearXNG upstream: the client (retries, body cap, engine accounting), the
//! `unresponsive_engines` reasons, and the engine catalog learned from `/config`.

pub mod catalog;
pub mod client;
pub mod unresponsive;

pub use catalog::EngineCatalog;
pub use client::{SearxngAnswer, SearxngClient};
pub use unresponsive::{EngineReason, Unresponsive};
