//! searxng-gateway: a decision proxy in front of a self-hosted SearXNG, which also reads the pages
//! its clients found.
//!
//! The request path, top to bottom; each module depends only on the ones below it (the table of
//! allowed edges is `scripts/module-graph.py`, checked in CI; ARCHITECTURE.md draws it):
//! 1. [`server`] is every front door — SearXNG's API (`/search`, `/`), the MCP tools (`/mcp` and
//!    stdio), the Tavily-compatible API — each behind the gate with its own refusals, reading its
//!    input into one validated [`request::SearchRequest`] (or a page to read) and rendering the
//!    answer in its own shape; it holds no decision.
//! 2. [`clients`] decides who may search and how much: inbound API keys, a token bucket and a
//!    premium budget per client (the server asks it before every search or read).
//! 3. [`pipeline`] answers from the [`cache`] (identical misses share one fan-out), picks a SearXNG
//!    instance of the pool (not cooling down, its needed engines not excluded, least loaded), plans
//!    which of its engines to use from its engine [`breaker`]s and the catalog its `/config`
//!    reported ([`searxng`]), then fans out: SearXNG and the T1 premium [`providers`] together, the
//!    fallback one provider at a time, all inside a hard budget; labels the outcome, records
//!    [`metrics`] and caches the rendered answer. Pages are read the same way (`pipeline::read`):
//!    the page cache, the direct [`reader`] behind a breaker per host, the premium readers as the
//!    fallback.
//! 4. [`config`] is the whole configuration, put together from the sections each owner reads
//!    through [`env`].
//! 5. Upstreams report facts: [`searxng`], [`providers`] (search APIs and page readers), [`reader`]
//!    (a page read directly: the address policy, the fetch, the extraction).
//! 6. [`merge`] deduplicates by canonical URL with order-free attribution; one source keeps its
//!    order, several are fused by rank. Each result is a [`search_result`]: the fields the merge
//!    reads, and the object as the upstream sent it (copied into the answer as it came).
//! 7. With `REDIS_URL`, [`shared`] is the tier several replicas share below the local one: answers,
//!    pages, computations in flight (leases), breaker open periods and probes, the rotation counter
//!    — every operation bounded, skipped while Redis is away.
//! 8. With `STATE_DIR`, [`persist`] is the file a gateway without Redis keeps its open breakers and
//!    the last 24 h of premium spend in across restarts; the owners fill it and take it back.
//! 9. Below everything: [`env`] (one variable at a time, its errors as variants), [`breaker`],
//!    [`upstream`] (error classes, the HTTP client, body cap, `Retry-After`), [`metrics`],
//!    [`request`], [`trace`] (the OpenTelemetry span names and their closed-set errors), [`runtime`]
//!    (`RUNTIME`: work-stealing, or a current-thread runtime per core; which worker a thread is).
//!
//! Beside the path, [`telemetry`] installs the log lines and, when configured, the trace export.
//! For people, [`server`] also serves the operator's page (`/ui`): the live state the pipeline
//! keeps (`/status`, the last 15 minutes per second, the last searches) and the admin actions.
//!
//! The public API is what the binary, the demo and the integration tests need: [`Config`] (and
//! `config::variables`, the table `--help` prints), [`serve`] and [`serve_mcp_stdio`],
//! `clients::keys_file::hash_line` (the `hash-key` command), [`runtime::Runtime`] (the tokio runtime
//! the binary builds and how it binds), and [`telemetry`]'s installer.
//! Everything else is crate-private (`unreachable_pub` keeps it so); the `fuzzing` and `bench`
//! features open a door each for the fuzz targets and the benchmarks.

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
mod persist;
mod pipeline;
mod providers;
mod reader;
mod request;
mod rolling;
pub mod runtime;
mod search_result;
mod searxng;
mod server;
mod shared;
pub mod telemetry;
mod trace;
mod upstream;

pub use config::{Config, ConfigError, LogFormat, LogLevel};

/// The parse worker: the child process pages are parsed in (`reader`'s sandbox). The binary runs
/// it for its hidden `parse-worker` command and passes itself as the program
/// ([`Config::with_parse_worker`]).
pub mod parse_worker {
    /// The command the gateway runs its workers with.
    pub const COMMAND: &str = crate::reader::WORKER_COMMAND;

    /// Runs a parse worker with an address space of `memory_bytes` until its stdin closes.
    pub fn run(memory_bytes: u64) -> std::process::ExitCode {
        crate::reader::run_worker(crate::reader::WorkerLimits { memory_bytes })
    }
}
pub use server::{serve, serve_mcp_stdio, Served};
