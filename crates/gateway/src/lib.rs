//! searxng-gateway: a decision proxy in front of a self-hosted SearXNG, which also reads the pages
//! its clients found.
//!
//! The product is a workspace whose crates are its layers; each depends only on the ones below it
//! (the compiler enforces the direction; ARCHITECTURE.md draws it):
//! 1. this crate, the binary: [`config`] assembles every crate's settings from the environment,
//!    [`telemetry`] installs logs and traces, [`serve`] and [`serve_mcp_stdio`] start the gateway;
//! 2. `gateway-http`: the doors (SearXNG's API, MCP, Tavily, Firecrawl, Perplexity, Open WebUI),
//!    inbound clients and keys, the operator's routes and page;
//! 3. `gateway-engine`: the decisions — cache, SearXNG pool, fan-out, premium fallback, breakers,
//!    reading pages, replica sync, the operator's state;
//! 4. `gateway-upstreams`: what is called — the SearXNG client, the premium APIs and readers, the
//!    page reader — and the merge of their results;
//! 5. `gateway-core`: requests and results, canonical URLs, caches, breakers, rolling windows,
//!    environment variables, metrics plumbing, the shared Redis tier, the persisted state.
//!
//! The public API is what the binary, the demo and the integration tests need: [`Config`] (and
//! `config::variables`, the table `--help` prints), [`serve`] and [`serve_mcp_stdio`],
//! `clients::keys_file::hash_line` (the `hash-key` command), [`runtime::Runtime`] (the tokio
//! runtime the binary builds and how it binds), and [`telemetry`]'s installer. The `fuzzing` and
//! `bench` features open a door each for the fuzz targets and the benchmarks.

use std::future::Future;

use tokio::net::TcpListener;

pub mod config;
pub mod telemetry;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(all(test, not(feature = "fuzzing")))]
mod fuzzing;

#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod bench;

pub use config::{Config, ConfigError, LogFormat, LogLevel};
pub use gateway_core::runtime;
pub use gateway_http::server::Served;

/// Inbound clients: what the `hash-key` command needs of them.
pub mod clients {
    pub use gateway_http::clients::keys_file;
}

/// The parse worker: the child process pages are parsed in (the reader's sandbox). The binary
/// runs it for its hidden `parse-worker` command and passes itself as the program
/// ([`Config::with_parse_worker`]).
pub mod parse_worker {
    /// The command the gateway runs its workers with.
    pub const COMMAND: &str = gateway_upstreams::reader::WORKER_COMMAND;

    /// Runs a parse worker with an address space of `memory_bytes` until its stdin closes.
    pub fn run(memory_bytes: u64) -> std::process::ExitCode {
        gateway_upstreams::reader::run_worker(gateway_upstreams::reader::WorkerLimits {
            memory_bytes,
        })
    }
}

/// Serves the gateway configured by `config` on `listener` until `shutdown` resolves: every
/// surface and operator endpoint, plus the background work. In-flight requests finish before it
/// returns. The binary, the demo and the tests all start the gateway this way.
pub fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Served {
    gateway_http::server::serve(listener, config.gateway, shutdown)
}

/// Serves the MCP tool on stdin/stdout, with the gateway's pipeline in-process, until the client
/// closes stdin: what an MCP client that launches a command runs (`searxng-gateway mcp`).
pub fn serve_mcp_stdio(config: Config) -> Served {
    gateway_http::server::serve_mcp_stdio(config.gateway)
}
