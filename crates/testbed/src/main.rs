//! `searxng-gateway-demo` (`cargo demo`): the real gateway against simulated upstreams, on a machine with
//! no SearXNG, no keys and no internet, narrating round after round what it decides and why.
//!
//! The crate, one concern per file:
//!
//! - `main.rs`: options → `LOG_LEVEL` → logging → run until the rounds are done, Ctrl-C or SIGTERM;
//! - [`options`]: the command line (clap) and `LISTEN_ADDR`;
//! - [`logging`]: `LOG_LEVEL`, checked as the gateway checks it; the gateway's log lines on stderr;
//! - [`demo`]: binding, starting the upstreams and the gateway, stopping them in order;
//! - [`upstreams`]: the simulated SearXNG and premium APIs, their scripts, the gateway's environment;
//! - [`scenario`]: the rounds and their eight steps;
//! - [`gateway_client`] and [`scrape`]: asking the gateway `/search`, `/metrics` and `/status`;
//! - [`decisions`]: what the gateway decided for one search, in words;
//! - [`narrator`]: the printing.

mod decisions;
mod demo;
mod gateway_client;
mod logging;
mod narrator;
mod options;
mod scenario;
mod scrape;
mod upstreams;

#[cfg(test)]
mod tests;

use std::process::ExitCode;

use options::{DemoOptions, OptionsError};

fn main() -> ExitCode {
    let listen_env = std::env::var_os("LISTEN_ADDR").map(|v| v.to_string_lossy().into_owned());
    let options = match DemoOptions::parse_from(std::env::args_os(), listen_env.as_deref()) {
        Ok(options) => options,
        // Help and version go to stdout with status 0, usage errors to stderr with status 2.
        Err(OptionsError::CommandLine(err)) => err.exit(),
        Err(err @ OptionsError::ListenAddr(_)) => {
            eprintln!("searxng-gateway-demo: {err}");
            return ExitCode::from(2);
        }
    };
    let log_level = std::env::var_os("LOG_LEVEL").map(|v| v.to_string_lossy().into_owned());
    let level = match logging::level_from_env_value(log_level.as_deref()) {
        Ok(level) => level,
        Err(err) => {
            eprintln!("searxng-gateway-demo: {err}");
            return ExitCode::from(2);
        }
    };
    logging::init(level);
    let result = tokio::runtime::Runtime::new()
        .map_err(demo::DemoError::Serve)
        .and_then(|rt| {
            rt.block_on(async {
                let listener = demo::bind(options.listen).await?;
                demo::run(listener, options, std::io::stdout(), shutdown_signal()).await
            })
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("searxng-gateway-demo: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
