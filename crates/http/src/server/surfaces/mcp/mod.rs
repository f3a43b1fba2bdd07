//! The MCP surface: five tools, [`web_search`], [`web_fetch`] (read one page, or its passages
//! that answer a query), [`web_research`] (search, read the top results, and return the
//! passages of all of them that answer the query, within a token budget), [`web_map`] (a site's
//! URLs) and [`web_crawl`] (read a site from a start page: its pages, or their passages that
//! answer a query, within a token budget), served with the
//! official Rust SDK (`rmcp`) over Streamable HTTP at `/mcp` and over stdio (`searxng-gateway
//! mcp`), both answering through the same pipeline as every other surface.
//!
//! Over HTTP the server is stateless: each POST is answered on its own with a JSON body, so there
//! is no session to keep, expire or share between replicas, and a client that never says goodbye
//! costs nothing. `Host` is not checked — DNS-rebinding protection is for servers on a desktop;
//! the gateway is a network service reached by name, like `/search`. The shutdown token ends
//! whatever streams are open, so a graceful shutdown is never held up by an idle client.
//!
//! Errors keep MCP's two kinds apart. A call that reached the tool and did not work — an argument
//! of the wrong type, a blank query, every upstream failing — is a tool result with `isError`,
//! whose text names what to fix or which upstreams failed with which error class. A request the
//! server cannot read at all — a body over the size limit, a body that is not JSON, JSON that is
//! not a JSON-RPC message, an unknown tool — is a JSON-RPC error (with an HTTP 4xx over HTTP).
//!
//! Each `tools/call` of `web_search` or `web_research` runs in its own `search` span
//! (`search_span::tool_call`), continuing the `traceparent` of the HTTP request that carried it.

mod web_crawl;
mod web_fetch;
mod web_map;
mod web_research;
mod web_search;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ErrorData, Implementation,
    JsonRpcError, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::clients::Clients;
use crate::gateway::Gateway;
use crate::server::error::ApiError;
use crate::server::kit::body::{self, BodyError};
use crate::server::kit::document::Document;
use crate::server::kit::gate::{Admitted, Gate, Refusals, Refused};
use crate::server::kit::read_call;
use crate::server::kit::search_call::{self, Unanswered};
use crate::server::kit::search_read;
use crate::server::transport::search_span;
use crate::settings::limits::ServerLimits;
use gateway_core::request::{ReadFormat, Surface};
use gateway_engine::read::{Depth, Render};
use gateway_engine::SearchError;
use gateway_upstreams::reader::ReadFailure;
use web_crawl::WebCrawlOutput;
use web_fetch::WebFetchOutput;
use web_map::WebMapOutput;
use web_research::{Source, Unread, WebResearchOutput};
use web_search::{Refusal, WebSearchOutput};

/// Where the Streamable HTTP transport is served.
pub(crate) const PATH: &str = "/mcp";

const INSTRUCTIONS: &str = "Web search through a SearXNG gateway: call web_search with a query, \
     web_fetch with a URL to read a page's text (with a query, only the passages that answer it), \
     web_research with a question for the passages of the top results that answer it, \
     within a token budget, web_map with a site's URL for its pages' URLs, and web_crawl with a \
     site's URL to read the site (with a query, only the passages that answer it). Results come from SearXNG's engines, with \
     premium search APIs as fallback; repeated queries and pages are answered from the gateway's \
     cache.";

/// The MCP server: the tool list and the tool, over the gateway's pipeline.
#[derive(Debug, Clone)]
struct SearchTools {
    gateway: Gateway,
    clients: Clients,
}

impl SearchTools {
    /// Runs `web_search` with these arguments; every outcome is a tool result.
    async fn web_search(
        &self,
        arguments: rmcp::model::JsonObject,
        admitted: &Admitted,
    ) -> rmcp::model::CallToolResult {
        let (req, max_results) =
            match web_search::decode(&arguments, self.gateway.server().max_query_bytes) {
                Ok(search) => search,
                Err(refusal) => return refused(&refusal),
            };
        let query = req.query.clone();
        let served = match search_call::run(&self.gateway, Surface::Mcp, req, admitted).await {
            Ok(served) => served,
            Err(SearchError::Overloaded(_)) => {
                return web_search::tool_error(
                    "the gateway is at capacity; retry in a second".to_owned(),
                )
            }
            Err(SearchError::Lost(_)) => {
                return web_search::tool_error("the gateway failed to compute an answer".to_owned())
            }
        };
        match Document::of(&served) {
            Document::Found(found) => WebSearchOutput::new(query, found, max_results).into_result(),
            Document::AllFailed(upstreams) => web_search::all_failed(&upstreams),
        }
    }
}

impl SearchTools {
    /// Runs `web_fetch` with these arguments; every outcome is a tool result.
    async fn web_fetch(
        &self,
        arguments: rmcp::model::JsonObject,
        admitted: &Admitted,
    ) -> rmcp::model::CallToolResult {
        let fetch = match web_fetch::decode(&arguments) {
            Ok(fetch) => fetch,
            Err(refusal) => {
                tracing::info!(error = refusal.code(), "web_fetch refused");
                return web_search::tool_error(refusal.to_string());
            }
        };
        if fetch.render == Render::Always && !self.gateway.renders() {
            let refusal = web_fetch::Refusal::NoBrowser;
            tracing::info!(error = refusal.code(), "web_fetch refused");
            return web_search::tool_error(refusal.to_string());
        }
        let started = tokio::time::Instant::now();
        let budget = self.gateway.settings().request_budget;
        let asked = read_call::Asking {
            depth: Depth::Basic,
            render: fetch.render,
            ..read_call::Asking::default()
        };
        let read = read_call::run_asking(
            &self.gateway,
            admitted,
            fetch.url.clone(),
            fetch.format,
            asked,
            budget,
        )
        .await;
        let document = match &read.result {
            Ok(done) => std::sync::Arc::clone(&done.document),
            Err(failed) => return web_fetch::unread(failed.failure),
        };
        let Some(focus) = fetch.focus.clone() else {
            return WebFetchOutput::new(&fetch, &document).into_result();
        };
        // Ranked once (lexically on the blocking pool, then by the reranker when one is
        // configured); choosing within the budget is milliseconds of CPU: off the request's worker.
        let ranked = match &focus {
            web_fetch::Focus::Query { query, .. } => Some(
                self.gateway
                    .rank_passages(
                        vec![std::sync::Arc::clone(&document)],
                        query.clone(),
                        web_fetch::PASSAGE_CHARS,
                        budget.saturating_sub(started.elapsed()),
                    )
                    .await,
            ),
            web_fetch::Focus::Cut(_) => None,
        };
        let selector = self.gateway.passages();
        tokio::task::spawn_blocking(move || {
            WebFetchOutput::focused(&fetch, &focus, &document, selector, ranked.as_ref())
        })
        .await
        .map_or_else(
            |_| {
                web_search::tool_error(
                    "web_fetch failed: the gateway failed to choose the passages".to_owned(),
                )
            },
            WebFetchOutput::into_result,
        )
    }

    /// Runs `web_research` with these arguments: the search, its top results read at once within
    /// what is left of the request's budget, the passages of those read chosen on the blocking
    /// pool; every outcome is a tool result.
    async fn web_research(
        &self,
        arguments: rmcp::model::JsonObject,
        admitted: &Admitted,
    ) -> rmcp::model::CallToolResult {
        let started = tokio::time::Instant::now();
        let research = match web_research::decode(&arguments, self.gateway.server().max_query_bytes)
        {
            Ok(research) => research,
            Err(refusal) => {
                search_call::log_refused(Surface::Mcp, refusal.code());
                return web_search::tool_error(refusal.to_string());
            }
        };
        let query = research.request.query.clone();
        let found =
            match search_call::found(&self.gateway, Surface::Mcp, research.request, admitted).await
            {
                Ok((_, found)) => found,
                Err(Unanswered::Overloaded) => {
                    return web_search::tool_error(
                        "the gateway is at capacity; retry in a second".to_owned(),
                    )
                }
                Err(Unanswered::Lost) => {
                    return web_search::tool_error(
                        "the gateway failed to compute an answer".to_owned(),
                    )
                }
                Err(Unanswered::AllFailed(upstreams)) => {
                    return web_research::all_failed(&upstreams)
                }
            };
        let hits: Vec<_> = found.hits.into_iter().take(research.max_results).collect();
        let budget = search_read::budget_left(&self.gateway, started, None);
        let reads = search_read::read_hits(
            &self.gateway,
            admitted,
            hits.iter().map(|hit| hit.url.as_str()),
            ReadFormat::Markdown,
            budget,
        )
        .await;
        let mut sources = Vec::new();
        let mut failed = Vec::new();
        for (hit, read) in hits.into_iter().zip(reads) {
            let result = match read {
                None => Err(ReadFailure::InvalidUrl),
                Some(read) => read
                    .result
                    .map(|done| done.document)
                    .map_err(|failed| failed.failure),
            };
            match result {
                Ok(document) => sources.push(Source {
                    title: if hit.title.trim().is_empty() {
                        document.title.clone().unwrap_or_default()
                    } else {
                        hit.title
                    },
                    url: hit.url,
                    document,
                }),
                Err(failure) => failed.push(Unread {
                    url: hit.url,
                    reason: read_call::unread_reason(failure),
                }),
            }
        }
        // The pages' passages ranked as one corpus once (by the reranker too when one is
        // configured), chosen within the budget on the blocking pool.
        let ranked = self
            .gateway
            .rank_passages(
                sources
                    .iter()
                    .map(|s| std::sync::Arc::clone(&s.document))
                    .collect(),
                query.clone(),
                web_fetch::PASSAGE_CHARS,
                search_read::budget_left(&self.gateway, started, None),
            )
            .await;
        let selector = self.gateway.passages();
        let tokens = research.budget;
        tokio::task::spawn_blocking(move || {
            WebResearchOutput::new(query, &sources, failed, tokens, selector, Some(&ranked))
        })
        .await
        .map_or_else(
            |_| {
                web_search::tool_error(
                    "web_research failed: the gateway failed to choose the passages".to_owned(),
                )
            },
            |(output, text)| output.into_result(text),
        )
    }
}

impl SearchTools {
    /// Runs `web_map`: the site's URLs within the request's budget; every outcome is a tool
    /// result.
    async fn web_map(
        &self,
        arguments: rmcp::model::JsonObject,
        admitted: &Admitted,
    ) -> rmcp::model::CallToolResult {
        let request = match web_map::decode(&arguments) {
            Ok(request) => request,
            Err(refusal) => {
                tracing::info!(error = refusal.code(), "web_map refused");
                return web_search::tool_error(refusal.to_string());
            }
        };
        let url = request.url.clone();
        let budget = self.gateway.settings().request_budget;
        match self.gateway.map(request, admitted.premium, budget).await {
            Ok(map) => {
                admitted
                    .clients
                    .charge(&admitted.caller, map.premium_calls, 0.0)
                    .await;
                WebMapOutput::new(&url, map).into_result()
            }
            Err(failure) => web_search::tool_error(format!(
                "web_map failed: {}",
                read_call::unread_reason(failure)
            )),
        }
    }

    /// Runs `web_crawl`: a crawl job of the caller's, waited for within the request's budget
    /// (what it read by then is the answer), then its pages or their passages within the token
    /// budget, chosen on the blocking pool; every outcome is a tool result.
    async fn web_crawl(
        &self,
        arguments: rmcp::model::JsonObject,
        admitted: &Admitted,
    ) -> rmcp::model::CallToolResult {
        /// Left of the budget for choosing and answering once the crawl is cut.
        const ANSWER_TIME: std::time::Duration = std::time::Duration::from_millis(500);
        let started = tokio::time::Instant::now();
        let crawls = self.gateway.crawls();
        let mut crawl = match web_crawl::decode(&arguments, crawls.settings().max_pages) {
            Ok(crawl) => crawl,
            Err(refusal) => {
                tracing::info!(error = refusal.code(), "web_crawl refused");
                return web_search::tool_error(refusal.to_string());
            }
        };
        let owner = admitted.caller.name.as_str().to_owned();
        crawl.request.owner.clone_from(&owner);
        let id = match crawls.start(crawl.request).await {
            Ok(id) => id,
            Err(refusal) => return web_search::tool_error(format!("web_crawl refused: {refusal}")),
        };
        let budget = self.gateway.settings().request_budget;
        let wait = budget
            .saturating_sub(started.elapsed())
            .saturating_sub(ANSWER_TIME);
        let Some((view, _)) = crawls.wait(&id, &owner, wait).await else {
            return web_search::tool_error("web_crawl failed: the crawl was lost".to_owned());
        };
        let failures = crawls
            .errors(&id, &owner)
            .await
            .map(|(failures, _)| failures)
            .unwrap_or_default();
        let sources: Vec<Source> = view
            .pages
            .into_iter()
            .filter_map(|page| {
                let (_, document) = page.reads.into_iter().next()?;
                Some(Source {
                    title: document.title.clone().unwrap_or_default(),
                    url: page.url,
                    document,
                })
            })
            .collect();
        let failed: Vec<Unread> = failures
            .into_iter()
            .map(|f| Unread {
                url: f.url,
                reason: f.error,
            })
            .collect();
        tracing::info!(client = %owner, job = %id, pages = sources.len(), failed = failed.len(), status = view.status.as_str(), "web_crawl");
        let selector = self.gateway.passages();
        let tokens = crawl.budget;
        let chosen = match crawl.query {
            Some(query) => {
                let ranked = self
                    .gateway
                    .rank_passages(
                        sources
                            .iter()
                            .map(|s| std::sync::Arc::clone(&s.document))
                            .collect(),
                        query.clone(),
                        web_fetch::PASSAGE_CHARS,
                        budget.saturating_sub(started.elapsed()),
                    )
                    .await;
                tokio::task::spawn_blocking(move || {
                    let (output, text) = WebResearchOutput::new(
                        query,
                        &sources,
                        failed,
                        tokens,
                        selector,
                        Some(&ranked),
                    );
                    output.into_result(text)
                })
                .await
            }
            None => {
                let url = crawl.url;
                tokio::task::spawn_blocking(move || {
                    let (output, text) =
                        WebCrawlOutput::new(&url, &sources, failed, tokens, selector.counter());
                    output.into_result(text)
                })
                .await
            }
        };
        chosen.unwrap_or_else(|_| {
            web_search::tool_error(
                "web_crawl failed: the gateway failed to choose what to return".to_owned(),
            )
        })
    }
}

/// A tool that reads the open web and changes nothing, as `tools/list` shows it (its schemas
/// added by the tool's module).
fn read_only_tool(name: &'static str, title: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, rmcp::model::JsonObject::new())
        .with_title(title)
        .with_annotations(
            rmcp::model::ToolAnnotations::with_title(title)
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(true),
        )
}

fn refused(refusal: &Refusal) -> rmcp::model::CallToolResult {
    let code = match refusal {
        Refusal::Argument(_) => "invalid_argument",
        Refusal::Request(err) => err.code(),
        Refusal::Unknown(_) => "unknown_argument",
    };
    search_call::log_refused(Surface::Mcp, code);
    web_search::tool_error(refusal.to_string())
}

impl ServerHandler for SearchTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "searxng-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            web_search::tool(),
            web_fetch::tool(),
            web_research::tool(),
            web_map::tool(),
            web_crawl::tool(),
        ]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        match name {
            web_search::NAME => Some(web_search::tool()),
            web_fetch::NAME => Some(web_fetch::tool()),
            web_research::NAME => Some(web_research::tool()),
            web_map::NAME => Some(web_map::tool()),
            web_crawl::NAME => Some(web_crawl::tool()),
            _ => None,
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if ![
            web_search::NAME,
            web_fetch::NAME,
            web_research::NAME,
            web_map::NAME,
            web_crawl::NAME,
        ]
        .contains(&request.name.as_ref())
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}: this server has web_search, web_fetch, web_research, web_map and web_crawl",
                    request.name
                ),
                None,
            ));
        }
        // Over HTTP the key check admitted the caller (`crate::server::kit::gate`); on stdio the caller is the
        // local user, counted as anonymous.
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let admitted = parts
            .and_then(|parts| parts.extensions.get::<Admitted>())
            .cloned()
            .unwrap_or_else(|| Admitted::local(&self.clients, &self.gateway));
        let arguments = request.arguments.unwrap_or_default();
        if request.name == web_fetch::NAME {
            return Ok(self.web_fetch(arguments, &admitted).await.into());
        }
        if request.name == web_map::NAME {
            return Ok(self.web_map(arguments, &admitted).await.into());
        }
        if request.name == web_crawl::NAME {
            return Ok(self.web_crawl(arguments, &admitted).await.into());
        }
        let span = search_span::tool_call(parts);
        if request.name == web_research::NAME {
            return Ok(self
                .web_research(arguments, &admitted)
                .instrument(span)
                .await
                .into());
        }
        Ok(self
            .web_search(arguments, &admitted)
            .instrument(span)
            .await
            .into())
    }
}

/// The gate's refusals as the SearXNG API answers them (an MCP client reads the HTTP status; a
/// JSON-RPC message has no place for a key), with the key in the head only. With `MCP_OAUTH`, a
/// 401's `WWW-Authenticate` points at the protected resource's metadata (RFC 9728 §5.1), which
/// is how an MCP client finds where to sign in.
#[derive(Debug, Clone)]
struct McpRefusals {
    /// `<PUBLIC_URL>/.well-known/oauth-protected-resource/mcp`, with `MCP_OAUTH`.
    resource_metadata: Option<std::sync::Arc<str>>,
}

impl Refusals for McpRefusals {
    const KEY_IN_BODY: bool = false;
    const OAUTH: bool = true;

    fn refused(&self, refused: Refused) -> Response {
        let mut response = ApiError::from(refused).into_response();
        if let (Refused::Unauthorized(why), Some(metadata)) = (refused, &self.resource_metadata) {
            let error = match why {
                crate::clients::Unauthorized::Missing => String::new(),
                _ => ", error=\"invalid_token\"".to_owned(),
            };
            let challenge = format!("Bearer resource_metadata=\"{metadata}\"{error}");
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
            }
        }
        response
    }

    fn unreadable(&self, err: BodyError) -> Response {
        unreadable_body(err)
    }
}

/// `/mcp`: the Streamable HTTP transport behind the gate, stateless, ending its streams when
/// `shutdown` is cancelled; requests it cannot read answered as JSON-RPC errors.
pub(crate) fn routes(
    gateway: Gateway,
    gate: &Gate,
    shutdown: CancellationToken,
) -> Router<Gateway> {
    let limits = gateway.server().server_limits;
    let clients = gate.clients.clone();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(limits.max_body_bytes)
        .with_cancellation_token(shutdown);
    let tools = SearchTools { gateway, clients };
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        std::sync::Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(
            limits,
            readable_requests,
        ))
        .layer(
            gate.layer(McpRefusals {
                resource_metadata: gate
                    .oauth
                    .as_ref()
                    .map(|oauth| std::sync::Arc::from(oauth.resource_metadata_url())),
            }),
        )
}

/// Serves the tool on stdin/stdout until the client closes stdin.
pub(crate) async fn serve_stdio(gateway: Gateway, clients: Clients) -> std::io::Result<()> {
    let running = SearchTools { gateway, clients }
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// A body the server limits refused, as a JSON-RPC error with the limit's status.
fn unreadable_body(err: BodyError) -> Response {
    let status = match err {
        BodyError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        BodyError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
        BodyError::Unreadable => StatusCode::BAD_REQUEST,
    };
    let mut response = json_rpc_error(status, ErrorData::invalid_request(err.to_string(), None));
    err.mark(&mut response);
    response
}

/// A JSON-RPC error without an id (the request's could not be read), as an HTTP response.
fn json_rpc_error(status: StatusCode, error: ErrorData) -> Response {
    let body = serde_json::to_string(&JsonRpcError::new(None, error)).unwrap_or_default();
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Refuses, as JSON-RPC errors, the POSTs the transport cannot read — over the size limit, not
/// JSON, not a JSON-RPC message — and gives the transport's own plain-text refusals (a wrong
/// `Accept` or `Content-Type`, a method it does not take) a JSON-RPC error body.
async fn readable_requests(
    State(limits): State<ServerLimits>,
    request: Request,
    next: Next,
) -> Response {
    let request = if request.method() == Method::POST {
        let (parts, body) = request.into_parts();
        let bytes = match body::read(&limits, &parts.headers, body).await {
            Ok(bytes) => bytes,
            Err(err) => return unreadable_body(err),
        };
        if let Some(refusal) = unreadable(&bytes) {
            return refusal;
        }
        Request::from_parts(parts, Body::from(bytes))
    } else {
        request
    };
    let response = next.run(request).await;
    let plain_refusal = response.status().is_client_error()
        && !response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
    if !plain_refusal {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let message = String::from_utf8_lossy(&text).trim().to_owned();
    json_rpc_error(parts.status, ErrorData::invalid_request(message, None))
}

/// One `/mcp` request body through what the server does with it before and after the pipeline,
/// for the fuzz target: the check that it is a JSON-RPC message of MCP; then, when it is a
/// `tools/call` of `web_search` (or, for a body that is not a JSON-RPC message, a JSON object
/// taken as the tool's arguments), the arguments decoded and the tool's result over one result at
/// each of `urls`. Returns whether the call became a search and its result was not an error.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8], urls: &[&str]) -> bool {
    use rmcp::model::{ClientRequest, JsonRpcMessage};

    let bytes = Bytes::copy_from_slice(body);
    let arguments = match unreadable(&bytes) {
        None => match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
            Ok(JsonRpcMessage::Request(request)) => match request.request {
                ClientRequest::CallToolRequest(call) if call.params.name == web_search::NAME => {
                    call.params.arguments.unwrap_or_default()
                }
                _ => return false,
            },
            _ => return false,
        },
        Some(refusal) => {
            assert!(refusal.status().is_client_error());
            match serde_json::from_slice::<serde_json::Value>(body) {
                Ok(serde_json::Value::Object(arguments)) => arguments,
                _ => return false,
            }
        }
    };
    let (req, max_results) = match web_search::decode(&arguments, 2048) {
        Ok(search) => search,
        Err(refusal) => {
            assert!(refused(&refusal).is_error == Some(true));
            return false;
        }
    };
    let _ = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
    web_search::exercise_output(req.query, urls, max_results)
}

/// The refusal of a body that is not JSON or not a JSON-RPC message of MCP; `None` for one that is.
fn unreadable(body: &Bytes) -> Option<Response> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Some(json_rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorData::parse_error("Parse error: the request body is not JSON", None),
        ));
    };
    if serde_json::from_value::<ClientJsonRpcMessage>(value).is_err() {
        return Some(json_rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorData::invalid_request(
                "Invalid Request: the body is not a JSON-RPC request or notification of MCP",
                None,
            ),
        ));
    }
    None
}
