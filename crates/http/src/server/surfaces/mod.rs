//! The doors clients call, one module each with the same anatomy: routes, the input read into one
//! validated request, the engine asked through the [`super::kit`], the answer and the errors in
//! the door's own shape.
//!
//! - [`searxng`]: `/search` and SearXNG's root path `/` (its index without a query), JSON, CSV and
//!   RSS;
//! - [`mcp`]: the MCP tools `web_search`, `web_fetch` and `web_research` at `/mcp` (Streamable
//!   HTTP) and on stdio;
//! - [`tavily`]: the Tavily-compatible `POST /tavily/search` and `/tavily/extract`;
//! - [`firecrawl`]: Firecrawl's search and scrape, v1 and v2;
//! - [`perplexity`]: Perplexity's `POST /perplexity/search`;
//! - [`openwebui`]: Open WebUI's external web search and external web loader;
//! - [`retriever`]: gpt-researcher's custom retriever, `GET /retriever`;
//! - [`serper`]: Serper's Google search API, `POST /serper/search` and `/serper/news`;
//! - [`jina`]: Jina Reader's reader and search, `/r/<url>` and `/s/<query>`;
//! - [`exa`]: Exa's search and contents, `POST /exa/search` and `/exa/contents`;
//! - [`rerank`]: a reranker in Jina's and Cohere's shape, `POST /v1/rerank`.
//!
//! A new door is a module here, its `routes` merged in `server::router`, its path in
//! `RESERVED_PATHS` (`crate::settings`).

pub(crate) mod exa;
pub(crate) mod firecrawl;
pub(crate) mod jina;
pub(crate) mod mcp;
pub(crate) mod openwebui;
pub(crate) mod perplexity;
pub(crate) mod rerank;
pub(crate) mod retriever;
pub(crate) mod searxng;
pub(crate) mod serper;
pub(crate) mod tavily;
