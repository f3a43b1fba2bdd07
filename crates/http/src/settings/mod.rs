//! The doors' settings: [`ServerSettings`], what the HTTP server and the surfaces need beside the
//! engine — the limits a client's request is held to, the metrics path, the admin token, the
//! operator's page, inbound clients and the state file. Read from the environment through
//! `gateway_core::env`; the binary's configuration holds one of these beside the engine's.

pub mod access;
pub mod limits;
pub mod ui;

use gateway_core::env::{ConfigError, Env, Problem};
use gateway_core::persist::StateDir;

use crate::clients::settings::ClientSettings;
use access::AdminToken;
use limits::ServerLimits;

/// Routes the gateway serves itself; `METRICS_PATH` must not be one of them (the server's router
/// test builds the router with each surface's path to keep this list whole).
pub const RESERVED_PATHS: &[&str] = &[
    "/search",
    "/healthz",
    "/readyz",
    "/status",
    "/",
    "/mcp",
    "/tavily/search",
    "/tavily/extract",
    "/tavily/crawl",
    "/tavily/map",
    "/firecrawl/v1/search",
    "/firecrawl/v2/search",
    "/firecrawl/v1/scrape",
    "/firecrawl/v2/scrape",
    "/v2/search",
    "/v2/scrape",
    "/firecrawl/v1/map",
    "/firecrawl/v2/map",
    "/v2/map",
    "/perplexity/search",
    "/openwebui/search",
    "/openwebui/loader",
    "/retriever",
    "/serper/search",
    "/serper/news",
    "/exa/search",
    "/exa/contents",
    "/v1/rerank",
    "/v1/capabilities",
    "/v1/webhook-secret",
];
/// Every path under each is one surface's: the admin routes', the operator's page's, Jina's reader
/// (`/r/<url>`) and search (`/s/<query>`), MCP's authorization (`/oauth/*`, `/.well-known/*`),
/// Firecrawl's doors (its jobs have IDs in their paths).
const RESERVED_PREFIXES: &[&str] = &[
    "/admin",
    "/ui",
    "/r",
    "/s",
    "/oauth",
    "/.well-known",
    "/firecrawl",
    "/v2",
];

/// What the gateway is started with: the engine's settings and the doors'.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewaySettings {
    /// The engine's.
    pub engine: gateway_engine::settings::EngineSettings,
    /// The doors'.
    pub server: ServerSettings,
}

/// Everything the doors need beside the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSettings {
    /// `METRICS_PATH`.
    pub metrics_path: String,
    /// `MAX_QUERY_BYTES`.
    pub max_query_bytes: usize,
    /// What the HTTP server accepts from a client.
    pub server_limits: ServerLimits,
    /// Inbound keys and per-client limits.
    pub clients: ClientSettings,
    /// `ADMIN_TOKEN`; `None`: no admin routes.
    pub admin_token: Option<AdminToken>,
    /// The operator's page (`UI_*`); `None`: no `/ui` routes.
    pub ui: Option<ui::UiSettings>,
    /// `STATE_DIR`; `None`: nothing survives a restart (but what Redis keeps).
    pub state_dir: Option<StateDir>,
    /// MCP's authorization (`MCP_OAUTH`); `None`: `/mcp` takes API keys only.
    pub oauth: Option<crate::oauth::settings::OAuthSettings>,
}

impl ServerSettings {
    /// Reads the doors' variables from `env`: the first that does not parse or is out of range is
    /// the error, naming it.
    pub fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let clients = ClientSettings::read(env)?;
        let oauth = crate::oauth::settings::OAuthSettings::read(env, clients.keys.is_some())?;
        Ok(Self {
            metrics_path: metrics_path(env)?,
            max_query_bytes: env.integer("MAX_QUERY_BYTES", 1usize, 65_536)?,
            server_limits: ServerLimits::read(env)?,
            clients,
            oauth,
            admin_token: AdminToken::read(env)?,
            ui: ui::UiSettings::read(env)?,
            state_dir: StateDir::read(env)?,
        })
    }
}

fn metrics_path(env: &Env<'_>) -> Result<String, ConfigError> {
    let Some(raw) = env.value("METRICS_PATH") else {
        return Ok("/metrics".to_owned());
    };
    let path = &raw.text;
    let well_formed = path.starts_with('/')
        && path.len() > 1
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'));
    if !well_formed {
        return Err(raw.error(Problem::NotAnAbsolutePath));
    }
    let bare = path.trim_end_matches('/');
    let under_prefix = RESERVED_PREFIXES.iter().any(|prefix| {
        bare.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if bare.is_empty() || RESERVED_PATHS.contains(&bare) || under_prefix {
        return Err(raw.error(Problem::CollidesWithRoute));
    }
    Ok(path.clone())
}
