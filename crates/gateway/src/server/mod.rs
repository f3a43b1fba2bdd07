//! The HTTP server: the search surfaces clients use, the operator endpoints, and the two ways the
//! gateway runs — [`serve`] (HTTP) and [`serve_mcp_stdio`] (the MCP server on stdin/stdout).
//!
//! Surfaces, one module each with the same anatomy (routes, input read into one validated
//! [`SearchRequest`], one call to the pipeline through [`search`], the answer rendered in the
//! surface's own shape, errors in the surface's own shape):
//! - [`searxng_api`]: `/search` and SearXNG's root path `/` ([`index`] without a query);
//! - [`mcp`]: the MCP tool `web_search` at `/mcp` (Streamable HTTP) and on stdio;
//! - [`tavily`]: the Tavily-compatible `POST /tavily/search`.
//!
//! Shared by them: [`body`] (the size and time limits), [`search_span`] (the request's trace span),
//! [`document`] (the answer as the JSON surfaces read
//! it), [`json_fields`] (field-by-field JSON input). The operator endpoints are [`operations`].
//! Below every route: [`connection`] (the accept loop with the server limits) and [`read_guard`]
//! (a socket's idle and slow-head clocks); [`metrics`] counts what they turn away.
//! No decision is made here: every search goes to the pipeline.

mod admin;
mod auth;
mod body;
mod connection;
mod document;
mod error;
mod explain;
mod format;
mod index;
mod json_fields;
mod mcp;
mod metrics;
mod operations;
mod read_guard;
mod request_id;
mod search_span;
mod searxng_api;
mod tavily;

use std::future::Future;

use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Span;

use crate::clients::metrics::ClientMetrics;
use crate::clients::Clients;
use crate::config::Config;
use crate::pipeline::{Gateway, Metrics, SearchError, Served};
use crate::request::{SearchRequest, Surface};
use crate::trace;

/// `/search`'s parameter parser, for the fuzz targets.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn parse_params(raw: &str) -> Option<crate::request::RawParams> {
    searxng_api::parse(raw).ok()
}

/// A `POST /tavily/search` body through the Tavily surface's decoding and reply, for the fuzz
/// targets: the reply's result count, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn tavily_request(body: &[u8], urls: &[&str]) -> Result<usize, u16> {
    tavily::exercise(body, urls).map_err(|status| status.as_u16())
}

/// A `/mcp` body (or bare `web_search` arguments) through the MCP surface's checks, the tool's
/// argument decoding and its result, for the fuzz targets: whether it became a search.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn mcp_web_search(body: &[u8], urls: &[&str]) -> bool {
    mcp::exercise(body, urls)
}

/// The routes over `gateway`, admitting callers through `clients`. `mcp_shutdown` ends the MCP
/// transport's open streams.
fn router(gateway: Gateway, clients: Clients, mcp_shutdown: CancellationToken) -> Router {
    let metrics_path = gateway.config().metrics_path.clone();
    let admin = admin::routes(&gateway, &clients);
    let gate = auth::GateLayer {
        clients: clients.clone(),
        limits: gateway.config().server_limits,
    };
    // Every surface a client searches through, and `/status`, behind the inbound-key check and
    // the client's rate limit ([`auth`]); `/healthz`, `/readyz` and the metrics path stay outside.
    // Each search through the SearXNG API or the Tavily API gets its `search` span
    // ([`search_span`]); MCP messages are not one search each: the MCP surface opens the span
    // around each `tools/call` of `web_search` itself.
    let surfaces = Router::new()
        .merge(searxng_api::routes())
        .merge(tavily::routes())
        .layer(search_span::TracedLayer)
        .merge(mcp::routes(gateway.clone(), clients, mcp_shutdown))
        .route(operations::STATUS_PATH, get(operations::status))
        .layer(gate);
    let mut router = Router::new().merge(surfaces);
    // The operator's actions exist only with `ADMIN_TOKEN`.
    if let Some(admin) = admin {
        router = router.merge(admin);
    }
    router
        .route(operations::HEALTHZ_PATH, get(operations::healthz))
        .route(operations::READYZ_PATH, get(operations::readyz))
        .route(&metrics_path, get(operations::metrics))
        .fallback(operations::not_found)
        .method_not_allowed_fallback(operations::method_not_allowed)
        .layer(request_id::TagLayer)
        .with_state(gateway)
}

/// Asks the pipeline for one search that came through `surface`, and logs the one line each
/// search gets. Every surface searches through here.
async fn search(
    gateway: &Gateway,
    surface: Surface,
    req: SearchRequest,
    admitted: &auth::Admitted,
) -> Result<Served, SearchError> {
    let started = Instant::now();
    let span = Span::current();
    let served = match gateway.search(req, surface, admitted.premium).await {
        Ok(served) => served,
        Err(err) => {
            let code = match err {
                SearchError::Overloaded(_) => "overloaded",
                SearchError::Lost(_) => "internal_error",
            };
            tracing::info!(surface = surface.as_str(), error = code, "search shed");
            trace::record_error(&span, code);
            return Err(err);
        }
    };
    admitted
        .clients
        .charge(&admitted.caller, served.premium_calls);
    let cache = served.cache.as_str();
    span.record("outcome", served.outcome.as_str());
    span.record("cache", cache);
    let cache_tier = served.cache.tier().unwrap_or("");
    if !(200..300).contains(&served.answer.status) {
        trace::record_error(&span, "all_upstreams_failed");
    }
    tracing::info!(
        surface = surface.as_str(),
        client = admitted.caller.name.as_str(),
        status = served.answer.status,
        outcome = served.outcome.as_str(),
        cache,
        premium_calls = served.premium_calls,
        cache_tier,
        results = served.answer.result_count,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search"
    );
    Ok(served)
}

/// The headers that say how a search was answered: `X-Cache`, `X-Cache-Tier` (a hit from the
/// shared tier) and `X-Gateway-Outcome`. Every surface that answers over HTTP sets them.
/// (Names as constants: a `&str` name is parsed again on every insert.)
fn set_served_headers(headers: &mut axum::http::HeaderMap, served: &Served) {
    use axum::http::{HeaderName, HeaderValue};
    const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
    const X_CACHE_TIER: HeaderName = HeaderName::from_static("x-cache-tier");
    const X_GATEWAY_OUTCOME: HeaderName = HeaderName::from_static("x-gateway-outcome");
    headers.insert(X_CACHE, HeaderValue::from_static(served.cache.as_str()));
    if let Some(tier) = served.cache.tier() {
        headers.insert(X_CACHE_TIER, HeaderValue::from_static(tier));
    }
    headers.insert(
        X_GATEWAY_OUTCOME,
        HeaderValue::from_static(served.outcome.as_str()),
    );
}

/// The log line of a search a surface refused before asking the pipeline.
fn log_refused(surface: Surface, code: &str) {
    tracing::info!(surface = surface.as_str(), error = code, "search refused");
    trace::record_error(&Span::current(), code);
}

/// The pipeline with its background work (SearXNG's engine catalog, the cache sweep) running
/// until [`Running::stop`].
struct Running {
    gateway: Gateway,
    clients: Clients,
    server_metrics: metrics::ServerMetrics,
    stop: watch::Sender<bool>,
    background: JoinHandle<()>,
}

impl Running {
    fn start(config: Config) -> Self {
        let mut metrics = Metrics::new();
        let server_metrics = metrics::ServerMetrics::new(metrics.registry_mut());
        let clients = Clients::new(
            config.access.keys.as_ref(),
            config.access.defaults,
            ClientMetrics::new(metrics.registry_mut()),
        );
        let gateway = Gateway::new(config, metrics);
        let (stop, mut stopped) = watch::channel(false);
        let background = {
            let gateway = gateway.clone();
            tokio::spawn(async move {
                gateway
                    .run_background(async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    })
                    .await;
            })
        };
        Self {
            gateway,
            clients,
            server_metrics,
            stop,
            background,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.background.await;
    }
}

/// Serves the gateway configured by `config` on `listener` until `shutdown` resolves: every
/// surface and operator endpoint, plus the background work. In-flight requests finish before it
/// returns. The binary, the demo and the tests all start the gateway this way.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let running = Running::start(config);
    log_start(&listener, running.gateway.config(), &running.clients);
    let reloads = tokio::spawn(reload_on_sighup(running.clients.clone()));
    let mcp_shutdown = CancellationToken::new();
    let shutdown = {
        let mcp_shutdown = mcp_shutdown.clone();
        async move {
            shutdown.await;
            mcp_shutdown.cancel();
        }
    };
    let gateway = running.gateway.clone();
    let limits = gateway.config().server_limits;
    let served = connection::serve_connections(
        listener,
        router(gateway, running.clients.clone(), mcp_shutdown),
        limits,
        running.server_metrics.clone(),
        shutdown,
    )
    .await;
    reloads.abort();
    running.stop().await;
    served
}

/// Serves the MCP tool on stdin/stdout, with the gateway's pipeline in-process, until the client
/// closes stdin: what an MCP client that launches a command runs (`searxng-gateway mcp`). Stdout
/// carries the protocol only; the caller sends logs to stderr.
pub async fn serve_mcp_stdio(config: Config) -> std::io::Result<()> {
    let running = Running::start(config);
    tracing::info!(
        searxng = %crate::pipeline::status::redact_urls(running.gateway.config()),
        providers = %provider_names(running.gateway.config()),
        "searxng-gateway MCP server on stdio"
    );
    let served = mcp::serve_stdio(running.gateway.clone(), running.clients.clone()).await;
    running.stop().await;
    served
}

fn provider_names(config: &Config) -> String {
    let names: Vec<&str> = config
        .active_providers()
        .iter()
        .map(|k| k.as_str())
        .collect();
    names.join(",")
}

/// Re-reads `API_KEYS_FILE` on every SIGHUP, for as long as the server runs. The registry is
/// swapped whole, so requests in flight finish with the clients they were admitted under; a file
/// that no longer parses is logged and the current clients stay.
async fn reload_on_sighup(clients: Clients) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP: API_KEYS_FILE will not be reloaded");
        return;
    };
    while hangups.recv().await.is_some() {
        match clients.reload() {
            None => tracing::info!("SIGHUP: no API_KEYS_FILE to reload"),
            Some(Ok(count)) => tracing::info!(clients = count, "SIGHUP: API_KEYS_FILE reloaded"),
            Some(Err(err)) => tracing::warn!(
                error = %err,
                "SIGHUP: API_KEYS_FILE not reloaded, the current clients stay"
            ),
        }
    }
}

/// One line saying what is being served, with nothing secret in it; a warning when anyone on the
/// network can search (no keys, not on loopback).
fn log_start(listener: &TcpListener, config: &Config, clients: &Clients) {
    let local = listener.local_addr().ok();
    let listen = local.map_or_else(|| config.listen_addr().to_string(), |a| a.to_string());
    let beyond_loopback = local.is_some_and(|a| !a.ip().is_loopback());
    if !clients.requires_keys() && beyond_loopback {
        tracing::warn!(
            listen = %listen,
            "the gateway is open: no API_KEYS_FILE, and it listens beyond loopback, so anyone who reaches it can search and spend the premium quota"
        );
    }
    tracing::info!(
        listen = %listen,
        searxng = %crate::pipeline::status::redact_urls(config),
        providers = %provider_names(config),
        t1 = config.t1_premium_count,
        budget_s = config.request_budget.as_secs_f64(),
        metrics = %config.metrics_path(),
        "searxng-gateway listening"
    );
}

#[cfg(test)]
mod tests {
    use crate::config::RESERVED_PATHS;

    /// `METRICS_PATH` is refused for every route a surface serves (a collision would make the
    /// router panic at start).
    #[test]
    fn the_config_reserves_every_surface_path() {
        for path in [
            super::searxng_api::SEARCH_PATH,
            super::mcp::PATH,
            super::tavily::PATH,
            super::operations::STATUS_PATH,
            super::operations::HEALTHZ_PATH,
            super::operations::READYZ_PATH,
        ] {
            assert!(RESERVED_PATHS.contains(&path), "{path} is not reserved");
        }
    }
}
