//! `searxng-gateway-demo`: the real gateway against simulated upstreams, narrating its decisions.

mod demo;

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match demo::DemoOptions::from_args(&args, std::env::var("LISTEN_ADDR").ok()) {
        Ok(options) => options,
        Err(err) => {
            eprintln!("searxng-gateway demo: {err}");
            return ExitCode::from(2);
        }
    };
    // The narration is the demo's output: the gateway's own log lines only when LOG_LEVEL asks.
    let level = std::env::var("LOG_LEVEL").unwrap_or_else(|_| "error".to_owned());
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(format!("searxng_gateway={level},error")))
        .with_target(false)
        .init();
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
            eprintln!("searxng-gateway demo: {err}");
            ExitCode::FAILURE
        }
    }
}

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
