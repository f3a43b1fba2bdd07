//! The `searxng-gateway` binary: configuration → logging → build → serve until SIGTERM/SIGINT.

use std::process::ExitCode;

use anyhow::Context;
use searxng_gateway::config::Config;
use searxng_gateway::engine::Gateway;
use searxng_gateway::metrics::Metrics;
use searxng_gateway::server;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--help" | "-h" | "help") => {
            print!("{}", Config::help_text());
            return ExitCode::SUCCESS;
        }
        Some("--config-table") => {
            print!("{}", Config::markdown_table());
            return ExitCode::SUCCESS;
        }
        Some("--version" | "-V") => {
            println!("searxng-gateway {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("healthcheck") | Some("serve") | None => {}
        Some(other) => {
            eprintln!("searxng-gateway: unknown argument {other:?} (see --help)");
            return ExitCode::from(2);
        }
    }
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("searxng-gateway: configuration error: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("searxng-gateway: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = if args.first().map(String::as_str) == Some("healthcheck") {
        runtime.block_on(healthcheck(&config))
    } else {
        runtime.block_on(serve(config))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("searxng-gateway: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(format!(
            "searxng_gateway={level},searxng-gateway={level},warn",
            level = config.log_level.as_str()
        )))
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let listener = tokio::net::TcpListener::bind(config.listen_addr)
        .await
        .with_context(|| format!("cannot bind LISTEN_ADDR {}", config.listen_addr))?;
    let local = listener.local_addr()?;
    let gateway = Gateway::new(config.clone(), Metrics::new());
    tracing::info!(
        listen = %local,
        searxng = %searxng_gateway::engine::redact_url(&config.searxng_url),
        providers = ?gateway.active_providers().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        t1 = config.t1_premium_count,
        budget_s = config.request_budget.as_secs_f64(),
        metrics = %config.metrics_path,
        "searxng-gateway listening"
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let background = {
        let gateway = gateway.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            gateway
                .run_background(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
        })
    };
    let shutdown = async move {
        shutdown_signal().await;
        tracing::info!("shutdown requested: finishing in-flight requests");
        let _ = stop_tx.send(true);
    };
    server::run(listener, gateway, shutdown).await?;
    let _ = background.await;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// `searxng-gateway healthcheck`: exit 0 when the local `/healthz` answers 200 (for HEALTHCHECK in
/// images without curl).
async fn healthcheck(config: &Config) -> anyhow::Result<()> {
    let url = format!("http://127.0.0.1:{}/healthz", config.listen_addr.port());
    let response = reqwest::Client::new()
        .get(&url)
        .timeout(std::time::Duration::from_secs(3))
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
