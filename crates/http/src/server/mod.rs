//! The HTTP server: the search surfaces clients use, the operator endpoints, and the two ways the
//! gateway runs — [`serve`] (HTTP) and [`serve_mcp_stdio`] (the MCP server on stdin/stdout).
//!
//! - [`surfaces`]: the doors clients call — SearXNG's API, MCP, Tavily, Firecrawl, Perplexity and
//!   Open WebUI —, one module each with the same anatomy;
//! - [`kit`]: what every door uses — the gate in front of it (keys, rate, premium budget, end
//!   users), the refusal core each JSON door maps to its own shape, the size-limited body, one
//!   search and one read asked of the engine (charged, logged, listed), search-then-read, the
//!   answer as typed hits and failures, `explain`, field-by-field JSON input;
//! - [`error`]: the JSON error shape of the SearXNG API and the operator routes;
//! - [`operator`]: `/healthz`, `/readyz`, `/metrics`, `/status`, `/admin`, the page (`/ui`),
//!   `STATE_DIR`;
//! - [`transport`]: HTTP below every route (the socket clocks, the request-ID and search spans,
//!   what the server limits turn away).
//!
//! This file wires them: the router, the app's start and shutdown ([`serve`],
//! [`serve_mcp_stdio`]); [`connection`] is the accept loop with the server limits and [`front`]
//! takes `GET /search` before the router.
//! No decision is made here: every search goes to the pipeline.

mod authorization;
mod connection;
mod error;
mod front;
mod kit;
mod operator;
mod surfaces;
mod transport;

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
use crate::oauth::metrics::OAuthMetrics;
use crate::oauth::Authorization;
use crate::settings::GatewaySettings;
use gateway_engine::settings::EngineSettings;
use gateway_engine::Engine;
use gateway_engine::Metrics;
use surfaces::searxng::index::Index;

/// `/search`'s parameter parser, for the fuzz targets.
#[cfg(any(test, feature = "fuzzing"))]
pub fn parse_params(raw: &str) -> Option<gateway_core::request::RawParams> {
    surfaces::searxng::parse(raw).ok()
}

/// A `POST /tavily/search` body through the Tavily surface's decoding and reply, for the fuzz
/// targets: the reply's result count, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub fn tavily_request(body: &[u8], urls: &[&str]) -> Result<usize, u16> {
    surfaces::tavily::exercise(body, urls).map_err(|status| status.as_u16())
}

/// A body through one door's decoder and validation, for the fuzz target: `which` picks the door
/// (0 Firecrawl's v1 search, 1 its v2 search, 2 its scrape, 3 Perplexity's search, 4 Open WebUI's
/// search, 5 its loader, 6 the retriever's query string, 7 Serper's search, 8 Jina's reader and
/// search, 9 Exa's search and contents, 10 MCP's authorization endpoints, or with a `t`
/// Tavily's crawl and map). What it asks for, or
/// the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub fn door_request(which: u8, body: &[u8], urls: &[&str]) -> Result<usize, u16> {
    match which % 11 {
        10 => match body.split_first() {
            Some((b't', rest)) => surfaces::tavily::exercise_crawl(rest),
            _ => authorization::exercise(body),
        },
        door @ 0..=2 => surfaces::firecrawl::exercise(door, body),
        3 => surfaces::perplexity::exercise(body, urls),
        6 => surfaces::retriever::exercise(body),
        7 => surfaces::serper::exercise(body),
        8 => surfaces::jina::exercise(body),
        9 => surfaces::exa::exercise(body),
        door => surfaces::openwebui::exercise(door == 5, body),
    }
    .map_err(|status| status.as_u16())
}

/// A `/mcp` body (or bare `web_search` arguments) through the MCP surface's checks, the tool's
/// argument decoding and its result, for the fuzz targets: whether it became a search.
#[cfg(any(test, feature = "fuzzing"))]
pub fn mcp_web_search(body: &[u8], urls: &[&str]) -> bool {
    surfaces::mcp::exercise(body, urls)
}

/// The routes over `gateway`, admitting callers through `clients`. `mcp_shutdown` ends the MCP
/// transport's open streams.
///
/// Every surface a client searches through, and `/status`, is behind the inbound-key check and the
/// client's rate limit: each surface layers its own routes with the [`kit::gate::Gate`] and its own
/// refusals. `/healthz`, `/readyz`, the metrics path and the admin routes (their own token) stay
/// outside, as do the operator's page and its files (its JSON is behind the gate). A new surface
/// is merged here, and its link added to the index. `GET /search` is taken before the router
/// ([`front`]), through the same layers.
fn router(
    gateway: Gateway,
    clients: Clients,
    oauth: Option<Authorization>,
    mcp_shutdown: CancellationToken,
) -> front::Front {
    let metrics_path = gateway.server().metrics_path.clone();
    let admin = operator::admin::routes(&gateway, &clients);
    let recent = gateway
        .server()
        .ui
        .map(|ui| kit::recent_searches::RecentSearches::new(ui.queries));
    let gate = kit::gate::Gate {
        clients,
        limits: gateway.server().server_limits,
        gateway: gateway.clone(),
        recent: recent.clone(),
        oauth: oauth.clone(),
    };
    let mut links = vec![
        ("search", surfaces::searxng::SEARCH_PATH),
        ("mcp", surfaces::mcp::PATH),
        ("tavily", surfaces::tavily::PATH),
        ("tavily_extract", surfaces::tavily::EXTRACT_PATH),
        ("tavily_crawl", surfaces::tavily::CRAWL_PATH),
        ("tavily_map", surfaces::tavily::MAP_PATH),
        ("firecrawl_search", surfaces::firecrawl::V2_SEARCH_PATH),
        ("firecrawl_scrape", surfaces::firecrawl::V2_SCRAPE_PATH),
        ("firecrawl_map", surfaces::firecrawl::V2_MAP_PATH),
        ("firecrawl_crawl", "/firecrawl/v2/crawl"),
        ("firecrawl_batch_scrape", "/firecrawl/v2/batch/scrape"),
        ("perplexity", surfaces::perplexity::PATH),
        ("openwebui_search", surfaces::openwebui::SEARCH_PATH),
        ("openwebui_loader", surfaces::openwebui::LOADER_PATH),
        ("retriever", surfaces::retriever::PATH),
        ("serper", surfaces::serper::PATH),
        ("serper_news", surfaces::serper::NEWS_PATH),
        ("jina_read", "/r/{url}"),
        ("jina_search", "/s/{query}"),
        ("exa_search", surfaces::exa::SEARCH_PATH),
        ("exa_contents", surfaces::exa::CONTENTS_PATH),
        ("rerank", surfaces::rerank::PATH),
        ("status", operator::operations::STATUS_PATH),
        ("capabilities", operator::capabilities::PATH),
        (
            "webhook_secret",
            operator::capabilities::WEBHOOK_SECRET_PATH,
        ),
        ("metrics", &metrics_path),
        ("healthz", operator::operations::HEALTHZ_PATH),
        ("readyz", operator::operations::READYZ_PATH),
    ];
    if recent.is_some() {
        links.push(("ui", operator::ui::PATH));
    }
    let index = Index::new(&links);
    let mut router = Router::new()
        .merge(surfaces::searxng::routes(&gate, index))
        .merge(surfaces::tavily::routes(&gate))
        .merge(surfaces::firecrawl::routes(&gate))
        .merge(surfaces::perplexity::routes(&gate))
        .merge(surfaces::openwebui::routes(
            &gate,
            gateway.server().clients.end_user_headers,
        ))
        .merge(surfaces::retriever::routes(&gate))
        .merge(surfaces::serper::routes(&gate))
        .merge(surfaces::jina::routes(&gate))
        .merge(surfaces::exa::routes(&gate))
        .merge(surfaces::rerank::routes(&gate))
        .merge(surfaces::mcp::routes(gateway.clone(), &gate, mcp_shutdown))
        .merge(operator::operations::status_routes(&gate))
        .merge(operator::capabilities::routes(&gate, &links));
    // MCP's authorization exists only with `MCP_OAUTH`.
    if let Some(oauth) = &oauth {
        router = router.merge(authorization::routes(oauth));
    }
    // The operator's actions exist only with `ADMIN_TOKEN`.
    if let Some(admin) = admin {
        router = router.merge(admin);
    }
    // The operator's page exists unless `UI_ENABLED=false`.
    if let Some(recent) = recent {
        router = router.merge(operator::ui::routes(&gate, recent));
    }
    let search = surfaces::searxng::search_stack(&gate, gateway.clone());
    let router = router
        .route(
            operator::operations::HEALTHZ_PATH,
            get(operator::operations::healthz),
        )
        .route(
            operator::operations::READYZ_PATH,
            get(operator::operations::readyz),
        )
        .route(&metrics_path, get(operator::operations::metrics))
        .fallback(operator::operations::not_found)
        .method_not_allowed_fallback(operator::operations::method_not_allowed)
        .layer(transport::request_id::TAGGED)
        .with_state(gateway);
    front::Front::new(router, search)
}

/// The pipeline with its background work (SearXNG's engine catalog, the cache sweep) running
/// until [`Running::stop`].
struct Running {
    gateway: Gateway,
    clients: Clients,
    /// MCP's authorization, with `MCP_OAUTH`.
    oauth: Option<Authorization>,
    server_metrics: transport::metrics::ServerMetrics,
    stop: watch::Sender<bool>,
    background: JoinHandle<()>,
}

impl Running {
    /// The gateway built and its background work started; an error when it cannot be built.
    async fn start(config: GatewaySettings) -> std::io::Result<Self> {
        let mut metrics = Metrics::new();
        let server_metrics = transport::metrics::ServerMetrics::new(metrics.registry_mut());
        let client_metrics = ClientMetrics::new(metrics.registry_mut());
        let oauth_metrics = OAuthMetrics::new(metrics.registry_mut());
        let oauth_settings = config.server.oauth.clone();
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
        // Before any job runs (the state file's resume included): a crawl's pages are its
        // client's requests.
        gateway.crawls().count_pages_with(std::sync::Arc::new(
            crate::clients::crawl_pages::CrawlPages(clients.clone()),
        ));
        let oauth = oauth_settings.map(|settings| {
            Authorization::new(
                settings,
                clients.clone(),
                gateway.shared_tier(),
                oauth_metrics,
            )
        });
        if let Some(dir) = &state_dir {
            operator::state_file::restore(dir, &gateway, &clients).await;
        }
        let (stop, mut stopped) = watch::channel(false);
        let kept = state_dir.map(|dir| {
            tokio::spawn(operator::state_file::keep(
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
            oauth,
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
    if let Some(oauth) = &running.oauth {
        tracing::info!(
            resource = %oauth.settings().resource(),
            issuer = %oauth.issuer(),
            own_server = oauth.is_built_in(),
            "MCP OAuth on: /mcp takes access tokens beside API keys"
        );
    }
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
        router(
            gateway,
            running.clients.clone(),
            running.oauth.clone(),
            mcp_shutdown,
        ),
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
        searxng = %gateway_engine::operator::status::redact_urls(running.gateway.settings()),
        providers = %provider_names(running.gateway.settings()),
        "searxng-gateway MCP server on stdio"
    );
    let served = surfaces::mcp::serve_stdio(running.gateway.clone(), running.clients.clone()).await;
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
                given = %gateway_engine::operator::status::redact_url(given),
                using = %gateway_engine::operator::status::redact_url(&backend.url),
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
        searxng = %gateway_engine::operator::status::redact_urls(config),
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

    /// The MCP door is the path OAuth names as the protected resource.
    #[test]
    fn the_oauth_resource_is_the_mcp_door() {
        assert_eq!(
            super::surfaces::mcp::PATH,
            crate::oauth::settings::RESOURCE_PATH
        );
    }

    /// `METRICS_PATH` is refused for every route a surface serves (a collision would make the
    /// router panic at start).
    #[test]
    fn the_config_reserves_every_surface_path() {
        for path in [
            super::surfaces::searxng::SEARCH_PATH,
            super::surfaces::mcp::PATH,
            super::surfaces::tavily::PATH,
            super::surfaces::tavily::EXTRACT_PATH,
            super::surfaces::tavily::CRAWL_PATH,
            super::surfaces::tavily::MAP_PATH,
            super::surfaces::firecrawl::V1_SEARCH_PATH,
            super::surfaces::firecrawl::V2_SEARCH_PATH,
            super::surfaces::firecrawl::V1_SCRAPE_PATH,
            super::surfaces::firecrawl::V2_SCRAPE_PATH,
            super::surfaces::firecrawl::ROOT_V2_SEARCH_PATH,
            super::surfaces::firecrawl::ROOT_V2_SCRAPE_PATH,
            super::surfaces::firecrawl::V1_MAP_PATH,
            super::surfaces::firecrawl::V2_MAP_PATH,
            super::surfaces::firecrawl::ROOT_V2_MAP_PATH,
            super::surfaces::perplexity::PATH,
            super::surfaces::openwebui::SEARCH_PATH,
            super::surfaces::openwebui::LOADER_PATH,
            super::surfaces::retriever::PATH,
            super::surfaces::serper::PATH,
            super::surfaces::serper::NEWS_PATH,
            super::surfaces::exa::SEARCH_PATH,
            super::surfaces::exa::CONTENTS_PATH,
            super::surfaces::rerank::PATH,
            super::operator::operations::STATUS_PATH,
            super::operator::capabilities::PATH,
            super::operator::capabilities::WEBHOOK_SECRET_PATH,
            super::operator::operations::HEALTHZ_PATH,
            super::operator::operations::READYZ_PATH,
        ] {
            assert!(RESERVED_PATHS.contains(&path), "{path} is not reserved");
        }
    }
}
