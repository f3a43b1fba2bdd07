//! The gateway's doors: HTTP and stdio.
//!
//! - [`server`]: every front door — SearXNG's API, MCP, Tavily, Firecrawl, Perplexity and
//!   Open WebUI — each reading its input into one validated request and rendering the answer in
//!   its own shape; the HTTP plumbing (connections, limits, request ids); the operator's routes
//!   and page (`/status`, `/admin`, `/ui`).
//! - [`clients`]: who may search and how much: inbound API keys, a token bucket and a premium
//!   budget per client.
//! - [`oauth`]: MCP's authorization (OAuth 2.1): the gateway as the protected resource and as its
//!   own small authorization server (people sign in with their API key), or an external issuer's
//!   tokens; what is issued, where it is kept, the token check the gate asks.
//! - [`settings`]: what the doors are held to ([`settings::ServerSettings`]), read beside the
//!   engine's settings; `gateway` joins the two for every route.
//!
//! Depends on `gateway-core`, `gateway-upstreams` and `gateway-engine`.

pub mod clients;
mod gateway;
pub mod oauth;
pub mod server;
pub mod settings;
