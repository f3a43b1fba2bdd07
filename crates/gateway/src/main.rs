//! The `searxng-gateway` binary: command line → configuration → logging and tracing
//! ([`searxng_gateway::telemetry`]) → serve until SIGTERM or SIGINT. `mcp` serves the MCP tool on
//! stdin/stdout instead (logs on stderr); `healthcheck` probes a running gateway; `hash-key` prints
//! an `API_KEYS_FILE` line for a key read on stdin; `demo` runs the separately built demo.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use searxng_gateway::config::variables;
use searxng_gateway::telemetry::LogTo;
use searxng_gateway::Config;

/// The allocator: jemalloc, with its background threads returning freed pages to the system (dirty
/// pages after 10 s of disuse, none kept lazily). What the soak with faults (BENCHMARKS.md, g.)
/// measured once the premium-budget log no longer grew: mimalloc's resident memory swung by a third
/// between samples of the same steady load (39–64 MB) and peaked at 160–180 MB while upstream bodies
/// were 20 MB; jemalloc follows the live heap within a few MB (35–41 MB) and peaks at 110–139 MB.
/// (glibc's malloc, measured before that fix, stepped up after every pass of huge bodies.)
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A decision proxy in front of SearXNG: cache, retries, premium fallback, circuit breakers,
/// Prometheus metrics. Configured by environment variables (below).
#[derive(Debug, Parser)]
#[command(name = "searxng-gateway", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Print the environment variables as the book's configuration table (Markdown), and exit.
    #[arg(long)]
    config_table: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve searches (the default).
    Serve,
    /// Serve the MCP tool web_search on stdin/stdout, with the gateway's pipeline in-process, for
    /// MCP clients that launch a command. Logs go to stderr; stdout carries only the protocol.
    Mcp,
    /// Read a client's API key on stdin and print its API_KEYS_FILE line (NAME:SHA256_HEX); append
    /// `:REQUESTS_PER_MINUTE:PREMIUM_CALLS_PER_DAY` to give it limits of its own.
    HashKey {
        /// The client's name (A-Z a-z 0-9 . _ -, at most 64 characters).
        name: String,
    },
    /// Exit 0 when the gateway on this host (LISTEN_ADDR's port) answers /healthz with 200.
    Healthcheck,
    /// The gateway against simulated SearXNG and premium APIs, narrating its decisions. Runs the
    /// `searxng-gateway-demo` binary built next to this one (`cargo demo` in a source checkout).
    Demo {
        /// Arguments for the demo (`--listen ADDR`, `--rounds N`, `--pause SECONDS`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// A parse worker: pages' bytes in on stdin, their text out on stdout, in a process with an
    /// address space of MEMORY_BYTES (the gateway starts these itself).
    #[command(hide = true)]
    ParseWorker {
        /// The worker's address space, in bytes.
        #[arg(long)]
        memory_bytes: u64,
    },
}

fn command() -> clap::Command {
    Cli::command().after_help(format!("ENVIRONMENT:\n{}", variables::help_table()))
}

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    if cli.config_table {
        print!("{}", variables::markdown_table());
        return ExitCode::SUCCESS;
    }
    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::ParseWorker { memory_bytes } = command {
        return searxng_gateway::parse_worker::run(memory_bytes);
    }
    if let Command::Demo { args } = command {
        return demo(args);
    }
    if let Command::HashKey { name } = &command {
        return hash_key(name);
    }
    let config = match Config::from_env() {
        // Pages are parsed in workers that are this very binary.
        Ok(config) => match std::env::current_exe() {
            Ok(program) => config.with_parse_worker(program),
            Err(_) => config,
        },
        Err(err) => {
            eprintln!("searxng-gateway: configuration error: {err}");
            return ExitCode::from(2);
        }
    };
    let log_to = match command {
        Command::Serve => Some(LogTo::Stdout),
        Command::Mcp => Some(LogTo::Stderr),
        _ => None,
    };
    let telemetry = if let Some(log_to) = log_to {
        match searxng_gateway::telemetry::init(&config, log_to) {
            Ok(telemetry) => Some(telemetry),
            Err(err) => {
                eprintln!("searxng-gateway: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    // RUNTIME: the work-stealing runtime, or worker 0's of thread-per-core (the server starts the
    // other workers).
    let runtime = match config.runtime().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("searxng-gateway: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Command::Healthcheck => runtime.block_on(healthcheck(&config)),
        Command::Mcp => runtime.block_on(mcp(config)),
        _ => runtime.block_on(serve(config)),
    };
    drop(runtime);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("searxng-gateway: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let listener = config
        .runtime()
        .bind(config.listen_addr())
        .await
        .with_context(|| format!("cannot bind LISTEN_ADDR {}", config.listen_addr()))?;
    // Registered before the "listening" line: a SIGTERM sent as soon as that line is read must
    // stop the gateway cleanly, not kill it with the signal's default action.
    let stop = shutdown_signal().context("cannot listen for SIGTERM and SIGINT")?;
    let shutdown = async {
        stop.await;
        tracing::info!("shutdown requested: finishing in-flight requests");
    };
    searxng_gateway::serve(listener, config, shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// `searxng-gateway mcp`: the MCP server on stdin/stdout until the client closes stdin.
async fn mcp(config: Config) -> anyhow::Result<()> {
    searxng_gateway::serve_mcp_stdio(config)
        .await
        .context("MCP server on stdio")?;
    tracing::info!("stopped");
    Ok(())
}

/// Registers for SIGINT (Ctrl-C) and SIGTERM now; the future resolves on the first of them.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// `searxng-gateway healthcheck`: exit 0 when the local `/healthz` answers 200 (for HEALTHCHECK in
/// images without curl).
async fn healthcheck(config: &Config) -> anyhow::Result<()> {
    let url = format!("http://127.0.0.1:{}/healthz", config.listen_addr().port());
    let response = reqwest::Client::new()
        .get(&url)
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .with_context(|| format!("{url} unreachable"))?;
    anyhow::ensure!(
        response.status().is_success(),
        "{url} answered {}",
        response.status()
    );
    Ok(())
}

/// `searxng-gateway hash-key NAME`: the key from stdin (surrounding whitespace dropped) to its
/// `API_KEYS_FILE` line on stdout. The key itself is never printed.
fn hash_key(name: &str) -> ExitCode {
    use std::io::Read;
    let mut key = String::new();
    if let Err(err) = std::io::stdin().take(64 * 1024).read_to_string(&mut key) {
        eprintln!("searxng-gateway: cannot read the key from stdin: {err}");
        return ExitCode::from(2);
    }
    match searxng_gateway::clients::keys_file::hash_line(name, &key) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(problem) => {
            eprintln!("searxng-gateway: hash-key: {problem}");
            ExitCode::from(2)
        }
    }
}

/// `searxng-gateway demo`: hands over to the demo binary next to this one. The demo and its
/// simulators are a separate crate, so the production binary and image never carry them.
fn demo(args: Vec<OsString>) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let sibling = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("searxng-gateway-demo"))
        .filter(|path| path.is_file());
    let Some(demo) = sibling else {
        eprintln!(
            "searxng-gateway: the demo is not part of this build; in a source checkout run `cargo demo`"
        );
        return ExitCode::from(2);
    };
    let err = std::process::Command::new(&demo).args(args).exec();
    eprintln!("searxng-gateway: cannot run {}: {err}", demo.display());
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        command().debug_assert();
    }

    #[test]
    fn help_lists_every_variable_with_the_default_the_parser_uses() {
        let help = command().render_help().to_string();
        for v in variables::VARIABLES {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(v.name))
                .unwrap_or_else(|| panic!("{} missing from --help", v.name));
            assert!(
                line.ends_with(&format!("(default: {})", v.default_shown())),
                "{line}"
            );
        }
        for sub in [
            "serve",
            "mcp",
            "healthcheck",
            "hash-key",
            "demo",
            "--config-table",
            "--version",
        ] {
            assert!(help.contains(sub), "{sub}");
        }
    }

    #[test]
    fn serve_is_the_default_and_demo_takes_its_own_flags() {
        let cli = Cli::try_parse_from(["searxng-gateway"]).ok();
        assert!(cli.is_some_and(|c| c.command.is_none() && !c.config_table));
        let demo = Cli::try_parse_from(["searxng-gateway", "demo", "--rounds", "1"]).ok();
        assert!(matches!(
            demo.and_then(|c| c.command),
            Some(Command::Demo { args }) if args == ["--rounds", "1"]
        ));
        assert!(matches!(
            Cli::try_parse_from(["searxng-gateway", "mcp"])
                .ok()
                .and_then(|c| c.command),
            Some(Command::Mcp)
        ));
        assert!(Cli::try_parse_from(["searxng-gateway", "bogus"]).is_err());
    }
}
