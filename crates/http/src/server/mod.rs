//! The HTTP server: the search surfaces clients use, the operator endpoints, and the two ways the
//! gateway runs — [`serve`] (HTTP) and [`serve_mcp_stdio`] (the MCP server on stdin/stdout).
//!
//! Surfaces, one module each with the same anatomy (routes, input read into one validated
//! [`SearchRequest`], one call to the pipeline through [`search`], the answer rendered in the
//! surface's own shape, errors in the surface's own shape):
//! - [`searxng_api`]: `/search` and SearXNG's root path `/` ([`index`] without a query);
//! - [`mcp`]: the MCP tool `web_search` at `/mcp` (Streamable HTTP) and on stdio;
//! - [`tavily`]: the Tavily-compatible `POST /tavily/search` and `/tavily/extract`;
//! - [`firecrawl`]: Firecrawl's search and scrape, v1 and v2;
//! - [`perplexity`]: Perplexity's `POST /perplexity/search`;
//! - [`openwebui`]: Open WebUI's external web search and external web loader.
//!
//! For people: [`ui`], the operator's page (`/ui`), which lists the searches [`search_call`] keeps
//! in [`recent_searches`].
//!
//! Shared by them: [`body`] (the size and time limits), [`search_span`] (the request's trace span),
//! [`document`] (the answer as the JSON surfaces read
//! it), [`json_fields`] (field-by-field JSON input). The operator endpoints are [`operations`].
//! Below every route: [`front`] (`GET /search` taken before the router), [`connection`] (the
//! accept loop with the server limits) and [`read_guard`]
//! (a socket's idle and slow-head clocks); [`metrics`] counts what they turn away. Beside them,
//! [`state_file`] reads `STATE_DIR` at start and keeps it written.
//! No decision is made here: every search goes to the pipeline.

mod admin;
mod auth;
mod body;
mod connection;
mod document;
mod error;
mod explain;
mod firecrawl;
mod format;
mod front;
mod index;
mod json_fields;
mod mcp;
mod metrics;
mod openwebui;
mod operations;
mod perplexity;
mod read_call;
mod read_guard;
mod recent_searches;
mod request_id;
mod search_call;
mod search_span;
mod searxng_api;
mod state_file;
mod tavily;
mod ui;

use std::future::Future;
use std::pin::Pin;

use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clients::metrics::ClientMetrics;
use crate::clients::Clients;
use crate::gateway::Gateway;
use crate::settings::GatewaySettings;
use gateway_engine::pipeline::Engine;
use gateway_engine::pipeline::Metrics;
use gateway_engine::settings::EngineSettings;
use index::Index;

/// `/search`'s parameter parser, for the fuzz targets.
#[cfg(any(test, feature = "fuzzing"))]
pub fn parse_params(raw: &str) -> Option<gateway_core::request::RawParams> {
    searxng_api::parse(raw).ok()
}

/// A `POST /tavily/search` body through the Tavily surface's decoding and reply, for the fuzz
/// targets: the reply's result count, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub fn tavily_request(body: &[u8], urls: &[&str]) -> Result<usize, u16> {
    tavily::exercise(body, urls).map_err(|status| status.as_u16())
}

/// A body through one door's decoder and validation, for the fuzz target: `which` picks the door
/// (0 Firecrawl's v1 search, 1 its v2 search, 2 its scrape, 3 Perplexity's search, 4 Open WebUI's
/// search, 5 its loader). What it asks for, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub fn door_request(which: u8, body: &[u8], urls: &[&str]) -> Result<usize, u16> {
    match which % 6 {
        door @ 0..=2 => firecrawl::exercise(door, body),
        3 => perplexity::exercise(body, urls),
        door => openwebui::exercise(door == 5, body),
    }
    .map_err(|status| status.as_u16())
}

/// A `/mcp` body (or bare `web_search` arguments) through the MCP surface's checks, the tool's
/// argument decoding and its result, for the fuzz targets: whether it became a search.
#[cfg(any(test, feature = "fuzzing"))]
pub fn mcp_web_search(body: &[u8], urls: &[&str]) -> bool {
    mcp::exercise(body, urls)
}

/// The routes over `gateway`, admitting callers through `clients`. `mcp_shutdown` ends the MCP
/// transport's open streams.
///
/// Every surface a client searches through, and `/status`, is behind the inbound-key check and the
/// client's rate limit: each surface layers its own routes with the [`auth::Gate`] and its own
/// refusals. `/healthz`, `/readyz`, the metrics path and the admin routes (their own token) stay
/// outside, as do the operator's page and its files (its JSON is behind the gate). A new surface
/// is merged here, and its link added to the index. `GET /search` is taken before the router
/// ([`front`]), through the same layers.
fn router(gateway: Gateway, clients: Clients, mcp_shutdown: CancellationToken) -> front::Front {
    let metrics_path = gateway.server().metrics_path.clone();
    let admin = admin::routes(&gateway, &clients);
    let recent = gateway
        .server()
        .ui
        .map(|ui| recent_searches::RecentSearches::new(ui.queries));
    let gate = auth::Gate {
        clients,
        limits: gateway.server().server_limits,
        gateway: gateway.clone(),
        recent: recent.clone(),
    };
    let mut links = vec![
        ("search", searxng_api::SEARCH_PATH),
        ("mcp", mcp::PATH),
        ("tavily", tavily::PATH),
        ("tavily_extract", tavily::EXTRACT_PATH),
        ("firecrawl_search", firecrawl::V2_SEARCH_PATH),
        ("firecrawl_scrape", firecrawl::V2_SCRAPE_PATH),
        ("perplexity", perplexity::PATH),
        ("openwebui_search", openwebui::SEARCH_PATH),
        ("openwebui_loader", openwebui::LOADER_PATH),
        ("status", operations::STATUS_PATH),
        ("metrics", &metrics_path),
        ("healthz", operations::HEALTHZ_PATH),
        ("readyz", operations::READYZ_PATH),
    ];
    if recent.is_some() {
        links.push(("ui", ui::PATH));
    }
    let index = Index::new(&links);
    let mut router = Router::new()
        .merge(searxng_api::routes(&gate, index))
        .merge(tavily::routes(&gate))
        .merge(firecrawl::routes(&gate))
        .merge(perplexity::routes(&gate))
        .merge(openwebui::routes(
            &gate,
            gateway.server().clients.trust_end_user_headers,
        ))
        .merge(mcp::routes(gateway.clone(), &gate, mcp_shutdown))
        .merge(operations::status_routes(&gate));
    // The operator's actions exist only with `ADMIN_TOKEN`.
    if let Some(admin) = admin {
        router = router.merge(admin);
    }
    // The operator's page exists unless `UI_ENABLED=false`.
    if let Some(recent) = recent {
        router = router.merge(ui::routes(&gate, recent));
    }
    let search = searxng_api::search_stack(&gate, gateway.clone());
    let router = router
        .route(operations::HEALTHZ_PATH, get(operations::healthz))
        .route(operations::READYZ_PATH, get(operations::readyz))
        .route(&metrics_path, get(operations::metrics))
        .fallback(operations::not_found)
        .method_not_allowed_fallback(operations::method_not_allowed)
        .layer(request_id::TagLayer)
        .with_state(gateway);
    front::Front::new(router, search)
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
    /// The gateway built and its background work started; an error when it cannot be built.
    async fn start(config: GatewaySettings) -> std::io::Result<Self> {
        let mut metrics = Metrics::new();
        let server_metrics = metrics::ServerMetrics::new(metrics.registry_mut());
        let client_metrics = ClientMetrics::new(metrics.registry_mut());
        let clients = &config.server.clients;
        let (keys, defaults) = (clients.keys.clone(), clients.defaults);
        let state_dir = config.server.state_dir.clone();
        let engine = Engine::new(config.engine, metrics).map_err(std::io::Error::other)?;
        let gateway = Gateway::new(engine, config.server);
        let clients = Clients::new(
            keys.as_ref(),
            defaults,
            client_metrics,
            gateway.shared_tier(),
        );
        if let Some(dir) = &state_dir {
            state_file::restore(dir, &gateway, &clients).await;
        }
        let (stop, mut stopped) = watch::channel(false);
        let kept = state_dir.map(|dir| {
            tokio::spawn(state_file::keep(
                dir,
                gateway.clone(),
                clients.clone(),
                stop.subscribe(),
            ))
        });
        let background = {
            let gateway = gateway.clone();
            tokio::spawn(async move {
                gateway
                    .run_background(async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    })
                    .await;
                if let Some(kept) = kept {
                    let _ = kept.await;
                }
            })
        };
        Ok(Self {
            gateway,
            clients,
            server_metrics,
            stop,
            background,
        })
    }

    async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.background.await;
    }
}

/// Serves the gateway configured by `config` on `listener` until `shutdown` resolves: every
/// surface and operator endpoint, plus the background work. In-flight requests finish before it
/// returns. The binary, the demo and the tests all start the gateway this way.
pub fn serve(
    listener: TcpListener,
    config: GatewaySettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Served {
    serving(listener, config, Box::pin(shutdown))
}

/// The future [`serve`] and [`serve_mcp_stdio`] return. Boxed, and made in a function that is never
/// inlined, so that the server's state machines are compiled once, in this crate — a caller that
/// awaited the concrete future would compile the whole server again in its own crate (the binary,
/// the demo, every test binary: a minute of optimized build each).
pub type Served = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

#[inline(never)]
fn serving(
    listener: TcpListener,
    config: GatewaySettings,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
) -> Served {
    Box::pin(serve_until(listener, config, shutdown))
}

async fn serve_until(
    listener: TcpListener,
    mut config: GatewaySettings,
    shutdown: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
) -> std::io::Result<()> {
    // A page read must never reach the gateway itself (it would loop).
    config
        .engine
        .reader
        .policy
        .own
        .extend(listener.local_addr().ok());
    let runtime = config.engine.runtime;
    let listeners = connection::Listeners::new(listener, runtime)?;
    let running = Running::start(config).await?;
    // Registered before the "listening" line, so a SIGHUP sent once it is read reloads the keys
    // instead of ending the process (the signal's default action).
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    log_start(&listeners, &running.gateway, &running.clients);
    let reloads = tokio::spawn(reload_on_sighup(hangups, running.clients.clone()));
    let mcp_shutdown = CancellationToken::new();
    let shutdown = {
        let mcp_shutdown = mcp_shutdown.clone();
        async move {
            shutdown.await;
            mcp_shutdown.cancel();
        }
    };
    let gateway = running.gateway.clone();
    let limits = gateway.server().server_limits;
    let served = connection::serve_connections(
        listeners,
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
#[inline(never)]
pub fn serve_mcp_stdio(config: GatewaySettings) -> Served {
    Box::pin(mcp_stdio(config))
}

async fn mcp_stdio(config: GatewaySettings) -> std::io::Result<()> {
    let running = Running::start(config).await?;
    warn_config_fixes(running.gateway.settings());
    tracing::info!(
        searxng = %gateway_engine::pipeline::status::redact_urls(running.gateway.settings()),
        providers = %provider_names(running.gateway.settings()),
        "searxng-gateway MCP server on stdio"
    );
    let served = mcp::serve_stdio(running.gateway.clone(), running.clients.clone()).await;
    running.stop().await;
    served
}

fn provider_names(config: &EngineSettings) -> String {
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
async fn reload_on_sighup(hangups: std::io::Result<tokio::signal::unix::Signal>, clients: Clients) {
    let Ok(mut hangups) = hangups else {
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

/// One warning for each thing the configuration corrected rather than refused: a
/// `T1_PREMIUM_COUNT` beyond the active providers, a `SEARXNG_BACKEND_URL` entry that was
/// SearXNG's search URL.
fn warn_config_fixes(config: &EngineSettings) {
    warn_t1_cut(config);
    for backend in &config.searxng {
        if let Some(given) = &backend.corrected_from {
            tracing::warn!(
                variable = "SEARXNG_BACKEND_URL",
                given = %gateway_engine::pipeline::status::redact_url(given),
                using = %gateway_engine::pipeline::status::redact_url(&backend.url),
                "SEARXNG_BACKEND_URL names SearXNG's search URL, not its base URL: using the base URL (the gateway adds /search itself); set SEARXNG_BACKEND_URL to the base URL to silence this"
            );
        }
    }
}

/// Keyless mode with a `T1_PREMIUM_COUNT` meant for keys that are not there yet (a compose file
/// whose keys come later): one warning naming the variable; the gateway runs with what is active.
fn warn_t1_cut(config: &EngineSettings) {
    if config.t1_cut() {
        tracing::warn!(
            variable = "T1_PREMIUM_COUNT",
            configured = config.t1_requested,
            effective = config.t1_premium_count,
            active_providers = %provider_names(config),
            "T1_PREMIUM_COUNT is more than the active premium providers (a provider is active when it is in FALLBACK_PROVIDERS and its <NAME>_API_KEY is set): using the active ones"
        );
    }
}

/// One line saying what is being served, with nothing secret in it (the worker `threads`, every
/// runtime's together, and the SearXNG `instances`); a warning when anyone on the network can
/// search (no keys, not on loopback).
fn log_start(listeners: &connection::Listeners, gateway: &Gateway, clients: &Clients) {
    let config = gateway.settings();
    let local = listeners.local_addr().ok();
    let listen = local.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
    let beyond_loopback = local.is_some_and(|a| !a.ip().is_loopback());
    if !clients.requires_keys() && beyond_loopback {
        tracing::warn!(
            listen = %listen,
            "the gateway is open: no API_KEYS_FILE, and it listens beyond loopback, so anyone who reaches it can search and spend the premium quota"
        );
    }
    warn_config_fixes(config);
    tracing::info!(
        listen = %listen,
        searxng = %gateway_engine::pipeline::status::redact_urls(config),
        providers = %provider_names(config),
        t1 = config.t1_premium_count,
        budget_s = config.request_budget.as_secs_f64(),
        metrics = %gateway.server().metrics_path,
        runtime = %config.runtime.as_str(),
        threads = config.runtime.workers(),
        instances = config.searxng.len(),
        "searxng-gateway listening"
    );
}

#[cfg(test)]
mod tests {
    use crate::settings::RESERVED_PATHS;

    /// `METRICS_PATH` is refused for every route a surface serves (a collision would make the
    /// router panic at start).
    #[test]
    fn the_config_reserves_every_surface_path() {
        for path in [
            super::searxng_api::SEARCH_PATH,
            super::mcp::PATH,
            super::tavily::PATH,
            super::tavily::EXTRACT_PATH,
            super::firecrawl::V1_SEARCH_PATH,
            super::firecrawl::V2_SEARCH_PATH,
            super::firecrawl::V1_SCRAPE_PATH,
            super::firecrawl::V2_SCRAPE_PATH,
            super::firecrawl::ROOT_V2_SEARCH_PATH,
            super::firecrawl::ROOT_V2_SCRAPE_PATH,
            super::perplexity::PATH,
            super::openwebui::SEARCH_PATH,
            super::openwebui::LOADER_PATH,
            super::operations::STATUS_PATH,
            super::operations::HEALTHZ_PATH,
            super::operations::READYZ_PATH,
        ] {
            assert!(RESERVED_PATHS.contains(&path), "{path} is not reserved");
        }
    }
}
