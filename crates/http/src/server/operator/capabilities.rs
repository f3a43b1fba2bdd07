//! `GET /v1/capabilities`: which doors, read formats, options and engines this build and
//! configuration serve — the premium providers and readers that have keys, whether a browser (and
//! with it Firecrawl's screenshot formats, `read.screenshot_formats`), a reranker or the passage
//! ranker exists, the SearXNG engines seen so far — so a client can ask
//! instead of guess. Behind the gate, as `/status`; nothing secret in it (no key, no upstream URL).
//!
//! `refused` lists the options whose answer depends on what this gateway has: an option a door
//! would refuse by name here (Exa's `summary`, Jina's `X-Engine: browser`, …), so a client can
//! leave it out rather than be refused.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Map, Value};

use crate::gateway::Gateway;
use crate::server::error::API_REFUSALS;
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::refusal::json_response;

/// Where the document is served.
pub(crate) const PATH: &str = "/v1/capabilities";
/// Where a client reads the secret its crawls' webhooks are signed with.
pub(crate) const WEBHOOK_SECRET_PATH: &str = "/v1/webhook-secret";

/// The doors, as the index lists them: name → path; and how `/mcp` is authorized.
#[derive(Debug, Clone)]
struct Doors(Arc<Map<String, Value>>, Arc<Value>);

/// The route, behind the gate; `doors` are the index's (name, path) pairs.
pub(crate) fn routes(gate: &Gate, doors: &[(&str, &str)]) -> Router<Gateway> {
    let doors: Map<String, Value> = doors
        .iter()
        .map(|(name, path)| ((*name).to_owned(), Value::from(*path)))
        .collect();
    // MCP's authorization: where a client finds how to sign in, or null (keys only).
    let oauth = gate.oauth.as_ref().map_or(Value::Null, |oauth| {
        json!({
            "issuer": oauth.issuer(),
            "resource": oauth.settings().resource(),
            "resource_metadata": oauth.resource_metadata_url(),
            "own_authorization_server": oauth.is_built_in(),
        })
    });
    Router::new()
        .route(PATH, get(capabilities))
        .route(WEBHOOK_SECRET_PATH, get(webhook_secret))
        .layer(Extension(Doors(Arc::new(doors), Arc::new(oauth))))
        .layer(gate.layer(API_REFUSALS))
}

/// `GET /v1/webhook-secret`: the caller's own webhook secret (`CRAWL_WEBHOOK_SECRET`, derived
/// per client), never cached; 404 naming the variable when webhooks are off.
async fn webhook_secret(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
) -> Response {
    let mut response = match gateway
        .crawls()
        .webhook_secret(admitted.caller.name.as_str())
    {
        Some(secret) => json_response(
            StatusCode::OK,
            json!({
                "secret": secret,
                "header": "X-Firecrawl-Signature",
                "signature": "sha256=<hex HMAC-SHA256 of the request body, keyed with secret>",
            })
            .to_string(),
        ),
        None => json_response(
            StatusCode::NOT_FOUND,
            json!({"error": "webhooks are off: the operator has not set CRAWL_WEBHOOK_SECRET"})
                .to_string(),
        ),
    };
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

/// `GET /v1/capabilities`.
async fn capabilities(
    State(gateway): State<Gateway>,
    Extension(doors): Extension<Doors>,
) -> Response {
    json_response(
        StatusCode::OK,
        document(&gateway, &doors.0, &doors.1).to_string(),
    )
}

/// The document.
fn document(gateway: &Gateway, doors: &Map<String, Value>, oauth: &Value) -> Value {
    let engine = gateway.capabilities();
    let mut refused = vec![
        "exa: contents.summary (no model is configured)",
        "exa: type neural, deep, deep-lite, deep-reasoning (SearXNG is a keyword metasearch)",
        "jina: X-Target-Selector, X-Remove-Selector, X-Wait-For-Selector, X-Set-Cookie, X-Proxy-Url, X-Token-Budget",
        "tavily: include_images, include_image_descriptions, include_favicon, auto_parameters, exact_match (true); country, start_date, end_date, max_age_hours",
        "firecrawl: actions, mobile, headers, includeTags, excludeTags, onlyMainContent: false, location",
        // The passage ranker answers Tavily's extract and advanced search, Perplexity's token
        // caps, Exa's highlights, MCP's web_fetch and web_research, and /v1/rerank (#41).
        "tavily: chunks_per_source on a search that is not search_depth advanced",
    ];
    if engine.browser {
        refused.push("jina: X-Return-Format: screenshot or pageshot (no screenshots yet)");
    } else {
        refused
            .push("jina: X-Engine: browser, X-Return-Format: screenshot or pageshot (no browser)");
        refused.push("firecrawl: waitFor, formats screenshot and screenshot@fullPage (no browser)");
    }
    // Firecrawl's screenshot formats: a single scrape's, with the local browser.
    let screenshots: &[&str] = if engine.browser {
        &["screenshot", "screenshot@fullPage"]
    } else {
        &[]
    };
    json!({
        "name": "searxng-gateway",
        "version": env!("CARGO_PKG_VERSION"),
        "endpoints": doors,
        "search": {
            "searxng_instances": engine.searxng_instances,
            "engines": engine.engines,
            "premium_providers": engine.premium_providers,
            "formats": ["json", "csv", "rss"],
        },
        "read": {
            "formats": engine.read_formats,
            "pdf": engine.pdf,
            "browser": engine.browser,
            "screenshot_formats": screenshots,
            "reranker": engine.reranker,
            "passages": engine.passages,
            "premium_readers": engine.premium_readers,
        },
        "crawl": {
            "max_pages": gateway.crawls().settings().max_pages,
            "webhooks": gateway.crawls().webhooks(),
            "shared_by_replicas": engine.shared_tier,
        },
        "mcp": {"oauth": oauth},
        "shared_tier": engine.shared_tier,
        "refused": refused,
    })
}
