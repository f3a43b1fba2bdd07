//! The gateway's foundations: what every layer above names and nothing here decides.
//!
//! - Requests and results: [`request`] (one validated search, the page to read, the cache key),
//!   [`search_result`] (the fields the merge reads, and the object as the upstream sent it),
//!   [`canonical_url`] (the key results are deduplicated and pages cached by).
//! - Keeping state: [`cache`] (the answer cache whose identical misses share one computation),
//!   [`breaker`] (circuit breakers and their board), [`rolling`] (rolling windows and counters).
//! - Talking to upstreams: [`upstream`] (error classes, the HTTP client, the body cap,
//!   `Retry-After`), [`runtime`] (the scheduler, and which worker a thread is: the client keeps
//!   one connection pool per worker), [`trace`] (OpenTelemetry span names, closed-set errors).
//! - Settings and telemetry plumbing: [`env`] (one variable at a time, its errors as variants),
//!   [`metrics`] (the Prometheus registry and label helpers).
//! - Across replicas and restarts: [`shared`] (the Redis/Valkey tier replicas share, every
//!   operation bounded and skipped while Redis is away) and [`persist`] (the `STATE_DIR` file a
//!   gateway without Redis keeps its open breakers and spend in).
//!
//! This crate depends on no other crate of the gateway.

pub mod breaker;
pub mod cache;
pub mod canonical_url;
pub mod env;
pub mod metrics;
pub mod persist;
pub mod request;
pub mod rolling;
pub mod runtime;
pub mod search_result;
pub mod shared;
pub mod trace;
pub mod upstream;
