//! Every environment variable the gateway reads, once: name, default and meaning. The parser takes
//! each default from here (so a default is written in exactly one place), `--help` and
//! `--config-table` render this table, and a test keeps the book's copy
//! (`docs/src/configuration.md`) equal to it.

/// What a variable falls back to when it is unset or empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// This text, parsed like a value the operator gave.
    Text(&'static str),
    /// The value of another variable (a provider's timeout defaults to `PROVIDER_TIMEOUT_SECONDS`).
    Variable(&'static str),
    /// Nothing: the feature it enables stays off (an API key).
    Unset,
}

impl Fallback {
    /// As shown in `--help` and the book's configuration reference.
    pub(crate) fn shown(self) -> &'static str {
        match self {
            Self::Text(text) | Self::Variable(text) => text,
            Self::Unset => "—",
        }
    }
}

/// One environment variable.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    /// The variable's name.
    pub name: &'static str,
    pub(crate) fallback: Fallback,
    /// What it means.
    pub meaning: &'static str,
}

impl Variable {
    /// Its default, as shown to humans (`—` when there is none).
    pub fn default_shown(&self) -> &'static str {
        self.fallback.shown()
    }
}

const fn var(name: &'static str, fallback: Fallback, meaning: &'static str) -> Variable {
    Variable {
        name,
        fallback,
        meaning,
    }
}

use Fallback::{Text, Unset, Variable as From};

/// Every variable the gateway reads, in the order `--help` and the book show them.
pub const VARIABLES: &[Variable] = &[
    var("LISTEN_ADDR", Text(":8080"), "Bind address; `:PORT` means all interfaces."),
    var("SEARXNG_BACKEND_URL", Text("http://127.0.0.1:8888"), "SearXNG base URL (a trailing `/` is tolerated; its search URL, `…/search`, is corrected to the base with a warning; a query string is refused), or a comma-separated list of them: a pool, balanced per call, with health, cooldown and engine breakers per instance."),
    var("FALLBACK_PROVIDERS", Text("brave"), "Comma list of premium providers (brave, exa, jina, kagi, linkup, perplexity, searchapi, serper, tavily): the preference order for `PROVIDER_POLICY=ordered`, the rotation's order for `rotate`."),
    var("PROVIDER_POLICY", Text("rotate"), "`rotate`: each request starts at the next provider of `FALLBACK_PROVIDERS` (spreads calls, so several free tiers last longer; a provider whose reported quota is nearly spent goes last). `ordered`: always the first usable provider first (it spends that provider's quota before the next is touched). `cheapest`: the cheapest usable provider first by `PREMIUM_PRICE_<NAME>` (ties: the better recent success rate), so a free tier is spent before a paid one."),
    var("T1_PREMIUM_COUNT", Text("0"), "Providers called concurrently with SearXNG on every cache miss (at most the number of active providers)."),
    var("SUFFICIENT_MIN_RESULTS", Text("1"), "Merged-result target that stops the fallback loop."),
    var("FALLBACK_TIMEOUT_SECONDS", Text("30"), "Hard budget of one request: calls still in flight at the end are cancelled."),
    var("SEARXNG_TIMEOUT_SECONDS", Text("25"), "Timeout of one SearXNG attempt, never beyond what is left of the budget."),
    var("SEARXNG_FAIL_THRESHOLD", Text("6"), "Consecutive failed SearXNG calls that start the cooldown."),
    var("SEARXNG_FAIL_COOLDOWN_SECONDS", Text("180"), "How long SearXNG is skipped after the threshold; then exactly one request probes it."),
    var("SEARXNG_MAX_COOLDOWN_SECONDS", Text("1800"), "Pool only: cap of an instance's cooldown, which doubles on each trip in a row (never below `SEARXNG_FAIL_COOLDOWN_SECONDS`); a single instance keeps the fixed cooldown."),
    var("SEARXNG_SLOW_SECONDS", Text("auto"), "How long the fallback waits for SearXNG before starting alongside it; `auto` = 2 × SearXNG's recent p95, at least 1 s, at most half the budget."),
    var("SEARXNG_HEDGE_SECONDS", Text("auto"), "Hedge a slow SearXNG: when the instance a cache miss goes to has lately taken at least this long to answer (a weighted mean of its recent answer times), the fallback starts alongside SearXNG at once instead of after `SEARXNG_SLOW_SECONDS`; hedging stops as soon as its answers are fast again. `auto`: as long as the slow threshold in effect (an instance that is always slow is not hedged, a sudden slowdown is); seconds: a fixed bar; `off` never hedges."),
    var("CACHE_SIZE", Text("1000"), "Answer cache capacity in entries (0 disables the cache)."),
    var("CACHE_TTL_SECONDS", Text("3600"), "Lifetime of a complete cached answer (degraded answers live at most 60 s)."),
    var("CACHE_STALE_SECONDS", Text("86400"), "How long past its lifetime a complete answer is kept to serve when every upstream fails (`X-Cache: stale`); 0 disables. Popular entries are refreshed in the background shortly before they expire."),
    var("LOG_LEVEL", Text("info"), "error, warn, info, debug or trace."),
    var("METRICS_PATH", Text("/metrics"), "Path of the Prometheus exposition; must not collide with another route."),
    var("MAX_QUERY_BYTES", Text("2048"), "Longest accepted `q`, in bytes."),
    var("PROVIDER_TIMEOUT_SECONDS", Text("15"), "Call timeout of every provider without its own `<NAME>_TIMEOUT_SECONDS`."),
    var("BRAVE_API_KEY", Unset, "Brave Search API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve; a page reader uses the first); without it Brave is inactive."),
    var("BRAVE_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Brave's call timeout."),
    var("BRAVE_BASE_URL", Text("https://api.search.brave.com"), "Origin replacing Brave's (egress proxy, tests)."),
    var("EXA_API_KEY", Unset, "Exa API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve; a page reader uses the first); without it Exa is inactive."),
    var("EXA_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Exa's call timeout."),
    var("EXA_BASE_URL", Text("https://api.exa.ai"), "Origin replacing Exa's."),
    var("JINA_API_KEY", Unset, "Jina API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve; a page reader uses the first); without it Jina is inactive."),
    var("JINA_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Jina's call timeout."),
    var("JINA_BASE_URL", Text("https://s.jina.ai"), "Origin replacing Jina's."),
    var("KAGI_API_KEY", Unset, "Kagi Search API token (`Authorization: Bot`), or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve); without it Kagi is inactive."),
    var("KAGI_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Kagi's call timeout."),
    var("KAGI_BASE_URL", Text("https://kagi.com"), "Origin replacing Kagi's."),
    var("LINKUP_API_KEY", Unset, "Linkup API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve); without it Linkup is inactive."),
    var("LINKUP_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Linkup's call timeout."),
    var("LINKUP_BASE_URL", Text("https://api.linkup.so"), "Origin replacing Linkup's."),
    var("PERPLEXITY_API_KEY", Unset, "Perplexity API key (its Search API), or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve); without it Perplexity is inactive."),
    var("PERPLEXITY_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Perplexity's call timeout."),
    var("PERPLEXITY_BASE_URL", Text("https://api.perplexity.ai"), "Origin replacing Perplexity's."),
    var("SEARCHAPI_API_KEY", Unset, "SearchAPI.io API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve); without it SearchAPI is inactive."),
    var("SEARCHAPI_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "SearchAPI's call timeout."),
    var("SEARCHAPI_BASE_URL", Text("https://www.searchapi.io"), "Origin replacing SearchAPI's."),
    var("SERPER_API_KEY", Unset, "Serper API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve); without it Serper is inactive."),
    var("SERPER_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Serper's call timeout."),
    var("SERPER_BASE_URL", Text("https://google.serper.dev"), "Origin replacing Serper's."),
    var("TAVILY_API_KEY", Unset, "Tavily API key, or several separated by commas (a pool: calls take turns, a key refused, rate-limited or out of quota is set aside while the others serve; a page reader uses the first); without it Tavily is inactive."),
    var("TAVILY_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Tavily's call timeout."),
    var("TAVILY_BASE_URL", Text("https://api.tavily.com"), "Origin replacing Tavily's."),
    var("PREMIUM_USD_PER_DAY", Text("0"), "US dollars the gateway may spend on premium search calls in any rolling 24 h, every client together (0: no cap); once spent, every request is answered from SearXNG and the cache only (`X-Gateway-Premium: global_budget_spent`)."),
    var("PREMIUM_PRICE_BRAVE", Text("5"), "US dollars per 1000 Brave calls, for spend (the Search plan's $5 per 1000 requests, read 2026-12-02; 0 for a free tier)."),
    var("PREMIUM_PRICE_EXA", Text("7"), "US dollars per 1000 Exa calls (search with up to 10 results, read 2026-12-02); a call whose answer reports its own cost counts that."),
    var("PREMIUM_PRICE_JINA", Text("0.5"), "US dollars per 1000 Jina calls (about 10 000 tokens a search at the token price; an estimate, read 2026-12-02)."),
    var("PREMIUM_PRICE_KAGI", Text("12"), "US dollars per 1000 Kagi calls (the Search API's $12 per 1000 searches, read 2026-12-02)."),
    var("PREMIUM_PRICE_LINKUP", Text("5"), "US dollars per 1000 Linkup calls (a standard search is 1 credit, about $0.005, read 2026-12-02)."),
    var("PREMIUM_PRICE_PERPLEXITY", Text("5"), "US dollars per 1000 Perplexity Search calls ($5 per 1000 requests, read 2026-12-02)."),
    var("PREMIUM_PRICE_SEARCHAPI", Text("4"), "US dollars per 1000 SearchAPI.io calls (the entry plan's price per search, read 2026-12-02; an estimate: plans are monthly)."),
    var("PREMIUM_PRICE_SERPER", Text("1"), "US dollars per 1000 Serper calls (the entry credit pack, about $1 per 1000 searches, read 2026-12-02)."),
    var("PREMIUM_PRICE_TAVILY", Text("8"), "US dollars per 1000 Tavily calls (a basic search is 1 credit, $0.008 pay-as-you-go, read 2026-12-02)."),
    var("FIRECRAWL_API_KEY", Unset, "Firecrawl API key (a reader only: `READ_PROVIDERS`); without it Firecrawl is inactive."),
    var("FIRECRAWL_TIMEOUT_SECONDS", From("PROVIDER_TIMEOUT_SECONDS"), "Firecrawl's call timeout."),
    var("FIRECRAWL_BASE_URL", Text("https://api.firecrawl.dev"), "Origin replacing Firecrawl's."),
    var("JINA_READER_BASE_URL", Text("https://r.jina.ai"), "Origin replacing Jina Reader's (Jina's page reader, another host than its search)."),
    var("READ_PROVIDERS", Unset, "Comma list of premium readers (jina, tavily, exa, firecrawl), in the order they are tried when a direct page read is blocked, fails or finds no readable text; each needs its `<NAME>_API_KEY`. Unset: direct reads only."),
    var("FETCH_TIMEOUT_SECONDS", Text("10"), "Time one direct page read may take (every redirect and the body), never beyond the request's budget."),
    var("FETCH_MAX_BYTES", Text("8388608"), "Largest page body read (counted after decompression while reading); a larger page fails as `too_large`. 8 MiB by default (product pages with inline data pass 5 MB), at most 16 MiB."),
    var("FETCH_USER_AGENT", Text(concat!("searxng-gateway/", env!("CARGO_PKG_VERSION"))), "`User-Agent` of direct page reads."),
    var("FETCH_ALLOW_PRIVATE", Text("false"), "`false`: page reads reach public addresses only (never loopback, private, link-local — cloud metadata included —, CGNAT, ULA, multicast or the gateway's own address); `true`: the address check is off; or a comma list of CIDRs allowed besides public addresses (an intranet). The gateway's own address is always refused."),
    var("FETCH_ALLOW_HOSTS", Unset, "Comma list of the only hosts pages may be read from (`example.com`; `.example.com` for a domain and every name under it). Unset: any host."),
    var("FETCH_DENY_HOSTS", Unset, "Comma list of hosts pages are never read from (same form as `FETCH_ALLOW_HOSTS`); wins over it."),
    var("PARSE_WORKERS", Text("0"), "Pages parsed at once (HTML and PDF), each in a worker process of its own; one more waits within its read's time (0: one per core)."),
    var("PARSE_MEMORY_MB", Text("1024"), "Address space of one parse worker, in MiB; a page whose parse needs more fails as `too_complex` and only that worker ends. At least 256."),
    var("PARSE_WORKER_PROGRAM", Unset, "The program run as a parse worker (`PROGRAM parse-worker`). Unset: the gateway's own binary. A library embedding the gateway without it parses in threads (same slots and deadlines, no memory cap)."),
    var("BROWSER", Text("auto"), "Local rendering with a headless Chromium: `auto` renders a page whose direct read is a script shell or has no readable text (before any premium reader), `always` renders every page, `off` never. `auto` without a Chromium found is `off` (the start-up log says which); `always` without one is a configuration error."),
    var("BROWSER_PATH", Unset, "The Chromium binary. Unset: `chromium`, `chromium-browser` or `google-chrome` on `PATH`."),
    var("BROWSER_TABS", Text("2"), "Pages rendered at once (tab leases); one more waits within its read's time."),
    var("BROWSER_TIMEOUT_SECONDS", Text("15"), "Time one rendered read may take (the page, its requests, the settle), never beyond the request's budget."),
    var("BROWSER_MEMORY_MB", Text("2048"), "Resident memory of the browser's whole process tree, in MiB; above it the browser is killed and started again. At least 128."),
    var("BROWSER_HOSTS", Unset, "Comma list of hosts always rendered (same form as `FETCH_ALLOW_HOSTS`), without a direct read first."),
    var("FETCH_PER_HOST_CONCURRENCY", Text("2"), "Direct reads in flight at once per host; one more waits (within its budget)."),
    var("FETCH_CACHE_TTL_SECONDS", Text("3600"), "Lifetime of a cached page (keyed by its canonical URL, format and depth)."),
    var("FETCH_CACHE_BYTES", Text("67108864"), "Bytes of pages the local cache holds at most (least recently used go first; 0 disables it). The pages' splits into passages (for queries) are kept beside them within as much again, so reading takes up to twice this. The Redis tier, when set, keeps pages too."),
    var("CRAWL_MAX_PAGES", Text("1000"), "The most pages one crawl or batch scrape reads, whatever it asks (Firecrawl's `limit` is held to it)."),
    var("CRAWL_MAX_SECONDS", Text("1800"), "The longest one crawl runs; then it ends `completed` with what it read."),
    var("CRAWL_MAX_BYTES", Text("67108864"), "The most text (bytes) one crawl keeps; then it ends `completed` with what it read. A client keeps at most four ended jobs per job it may run (`CRAWL_MAX_JOBS_PER_CLIENT`), its oldest forgotten first, so what crawls hold in memory is bounded."),
    var("CRAWL_CONCURRENCY", Text("4"), "Pages one crawl reads at once."),
    var("CRAWL_PER_HOST_CONCURRENCY", Text("2"), "Pages read at once on one host by one crawl (and `robots.txt`'s `Crawl-delay` between them, when it asks one)."),
    var("CRAWL_MAX_JOBS_PER_CLIENT", Text("3"), "Crawls and batch scrapes a client may have running at once; one more is refused (429)."),
    var("CRAWL_WEBHOOK_SECRET", Unset, "Key (at least 16 characters) each client's webhook secret is derived from: crawls' webhooks (Firecrawl's `webhook`) are signed with it, `X-Firecrawl-Signature: sha256=<HMAC-SHA256 of the body>`; a client reads its own at `GET /v1/webhook-secret`. Unset: `webhook` is refused by name."),
    var("CRAWL_STALL_SECONDS", Text("300"), "A running crawl or batch scrape that reads or fails no page for this long is ended `failed` (\"no progress\"): its client's rate spent, every read hanging, or — shared on Redis — every replica working on it gone."),
    var("CRAWL_RESULT_TTL_SECONDS", Text("86400"), "How long a crawl's status and pages are kept after it started (`expiresAt`)."),
    var("TOKENIZER_ENCODING", Text("o200k_base"), "The tokenizer a passage budget is counted with: `o200k_base` (GPT-4o, GPT-4.1, GPT-5, the `o` models) or `cl100k_base` (GPT-4, GPT-3.5); both are built into the binary."),
    var("RERANK_URL", Unset, "A reranker the passages chosen for a query are re-scored by: the URL its `POST` goes to, as is (`http://infinity:7997/rerank`, `https://api.jina.ai/v1/rerank`), speaking Jina's and Cohere's shape (`{model, query, documents, top_n}` → `{results: [{index, relevance_score}]}`). The lexical ranking picks the candidates; the reranker orders them. Unset: lexical ranking only. A failure, a timeout, a garbled answer or its open breaker (`reranker`) falls back to the lexical order."),
    var("RERANK_MODEL", Unset, "The `model` sent to the reranker (unset: none sent; a server with one model needs none)."),
    var("RERANK_API_KEY", Unset, "Bearer key sent to the reranker (unset: none)."),
    var("RERANK_TIMEOUT_SECONDS", Text("2"), "Time one reranker call may take; then the lexical order is used."),
    var("BREAKER_OPEN_SECONDS", Text("300"), "First open period of a tripped circuit breaker."),
    var("BREAKER_MAX_OPEN_SECONDS", Text("3600"), "Cap of the doubling open period (a server's own reset hint may exceed it)."),
    var("QUOTA_PARK_SECONDS", Text("86400"), "How long a provider whose monthly or plan quota is spent is parked when it gives no reset time of its own (Brave's headers do); then one call checks whether it returned."),
    var("BREAKER_JITTER", Text("0.1"), "Fraction (0–1) of a tripped breaker's open period added at random, so breakers tripped together are not probed together (a pool member's SearXNG cooldown too); 0 makes every period exact."),
    var("BREAKER_FAILURE_THRESHOLD", Text("5"), "Consecutive transient failures (5xx, timeout, connect) that trip a breaker."),
    var("ENGINE_PROBE_TIMEOUT_MS", Text("3000"), "Bound of the gateway's own probe of a blocked SearXNG engine (one search with `engines=<engine>` when its open period ends; clients' searches leave the engine out until a probe succeeded); a probe that takes longer fails, and the engine stays out for a longer period."),
    var("ENGINE_PROBE_WEIGHT", Text("0.25"), "What one probe into a still-blocked SearXNG engine is weighed as, in client searches' worth of that engine's results lost while a recovered engine stays out (0.01–100). The probe of an open period is due `√(2 × period × weight / loss per second)` after it began: a smaller weight probes sooner (engines back sooner, more calls into engines still blocked), a larger one later."),
    var("MAX_CONCURRENT_MISSES", Text("64"), "Cache misses fanning out to the upstreams at once; one more waits up to `MAX_MISS_WAIT_MS` for a slot, then gets 503 `overloaded`. Cache hits and requests sharing an identical miss in flight never take a slot."),
    var("MAX_MISS_WAIT_MS", Text("250"), "How long a cache miss waits for a fan-out slot before it is shed (0: shed at once)."),
    var("MAX_CONNECTIONS", Text("1024"), "Client connections served at once; one more is answered 503 `overloaded` and closed."),
    var("REQUEST_READ_TIMEOUT_SECONDS", Text("10"), "Time a client has to send a request's head once its first byte arrived (slowloris), and again to send a form body; then 408."),
    var("KEEPALIVE_IDLE_SECONDS", Text("60"), "How long a connection may wait for its next request (or, new, for its first) before it is closed."),
    var("MAX_URL_BYTES", Text("8192"), "Longest request target (path and query string); longer is 414."),
    var("MAX_HEADER_BYTES", Text("16384"), "Largest total of header names and values; larger is 431."),
    var("MAX_BODY_BYTES", Text("65536"), "Largest form body of `POST /search`; larger is 413."),
    var("LOG_FORMAT", Text("text"), "`text` (one readable line per event) or `json` (one JSON object per line); both carry the request's `request_id`."),
    var("LOG_QUEUE_LINES", Text("65536"), "Log lines waiting to be written. A thread of its own writes them, so a slow or stalled stdout never holds up a request; when the queue is full a line is dropped and counted in `searxng_gateway_log_lines_dropped_total`."),
    var("RUNTIME", Text("work-stealing"), "The scheduler: `work-stealing` (one tokio runtime whose threads, one per core, take work from each other) or `thread-per-core` (one single-threaded runtime per core, each with its own `SO_REUSEPORT` listener and its own upstream connections; the cache, breakers, metrics and clients' state are shared). The book's \"Runtime\" page has the measurements."),
    var("WORKER_THREADS", Text("0"), "Threads serving requests, under either `RUNTIME` (0: one per core, as the container's CPU limit allows)."),
    var("API_KEYS_FILE", Unset, "File of clients allowed to search, one `NAME:SHA256_HEX_OF_KEY[:REQUESTS_PER_MINUTE[:PREMIUM_CALLS_PER_DAY[:USD_PER_DAY]]]` per line (`searxng-gateway hash-key NAME` prints one); re-read on SIGHUP. Unset: the gateway is open to anyone who reaches it."),
    var("RATE_LIMIT_PER_MINUTE", Text("0"), "Requests per minute of a client whose line sets none, and of all anonymous callers together (0: unlimited); over it: 429 with `Retry-After`."),
    var("PREMIUM_CALLS_PER_DAY", Text("0"), "Premium API calls per client in any rolling 24 h, for a client whose line sets none (0: unlimited); a spent client gets SearXNG and cache answers only."),
    var("ADMIN_TOKEN", Unset, "Bearer token (at least 16 characters) of the `/admin/*` routes (breakers, cache purge, per-client usage); the operator's page accepts it too, to show every client's searches and usage (a client key sees its own only). Unset: those routes do not exist."),
    var("UI_ENABLED", Text("true"), "Serve the operator's page at `/ui` (live traffic, breakers, SearXNG instances, premium spend, cache, recent searches; its JSON at `/ui/api/*`), behind the inbound keys like `/status`. `false`: no `/ui` route, nothing recorded for it."),
    var("UI_SHOW_QUERIES", Text("true"), "`false`: the page's recent searches never keep what was searched for (client, outcome, latency and the `explain` record only)."),
    var("OPENWEBUI_USER_HEADER_TRUST", Text("false"), "`true`: on the Open WebUI doors, the `X-OpenWebUI-User-Id` (or `-Email`) header Open WebUI forwards names an end user, a sub-client of the key that sent it: rate limits and premium budgets apply per user (and to the key as a whole), and the user shows in logs, metrics (an ID or a hash, never an email) and `/admin/status`. Only for an Open WebUI you trust to set the header."),
    var("OPENWEBUI_USER_RATE_LIMIT_PER_MINUTE", Unset, "Requests per minute of each Open WebUI user (with `OPENWEBUI_USER_HEADER_TRUST`; 0: unlimited). Unset: the limit of the key that sent the request."),
    var("OPENWEBUI_USER_PREMIUM_CALLS_PER_DAY", Unset, "Premium API calls per Open WebUI user in any rolling 24 h (with `OPENWEBUI_USER_HEADER_TRUST`; 0: unlimited). Unset: the budget of the key that sent the request."),
    var("PUBLIC_URL", Unset, "The URL clients reach the gateway at (`https://search.example.org`, with the path prefix a reverse proxy adds, if any): names the MCP resource (`<PUBLIC_URL>/mcp`) and the gateway's OAuth issuer. Needed by `MCP_OAUTH`."),
    var("MCP_OAUTH", Text("auto"), "OAuth 2.1 for `/mcp` (the MCP authorization spec), so hosted assistants (Claude.ai and ChatGPT connectors) can connect: `on`: the gateway is the protected resource and, without `MCP_OAUTH_ISSUER`, its own authorization server (dynamic client registration, authorization code with PKCE, a consent page where the person signs in with their gateway API key, access and refresh tokens bound to that key and revoked when it leaves `API_KEYS_FILE`); API keys keep working beside the tokens. `auto`: on when `PUBLIC_URL` and `API_KEYS_FILE` (or `MCP_OAUTH_ISSUER`) are set. `off`: keys only."),
    var("MCP_OAUTH_ISSUER", Unset, "An external OAuth issuer (Keycloak, Authentik, …) whose access tokens `/mcp` takes instead of the gateway's own: JWTs verified with the keys of its JWKS (found through its `/.well-known/oauth-authorization-server` or `openid-configuration`), their `iss`, `aud` (`MCP_OAUTH_AUDIENCE`) and expiry checked."),
    var("MCP_OAUTH_AUDIENCE", Unset, "The `aud` an external issuer's tokens must carry. Unset: the MCP resource, `<PUBLIC_URL>/mcp`."),
    var("MCP_OAUTH_CLIENT", Unset, "The `API_KEYS_FILE` client whose limits and premium budget an external issuer's users share, each as an end user named by its `sub`. Unset: the limits of a client whose line sets none."),
    var("MCP_OAUTH_TOKEN_SECONDS", Text("3600"), "Lifetime of an access token the gateway issues."),
    var("MCP_OAUTH_REFRESH_SECONDS", Text("2592000"), "Lifetime of a refresh token the gateway issues (30 days); each use replaces it."),
    var("REDIS_URL", Unset, "Redis or Valkey shared by several gateway replicas (`redis://[user:pass@]host:port/db`, `rediss://` for TLS; `redis+cluster://host:port,host:port` for a Cluster; `redis+sentinel://host:port,host:port/<master>[/db]` behind Sentinel): answers, coalescing, breakers, parking and the clients' rate limits and premium budgets are shared. Unset: one process, nothing shared."),
    var("REDIS_KEY_PREFIX", Text("sxgw:"), "Put in front of every Redis key (several gateways on one Redis keep apart by prefix)."),
    var("REDIS_TIMEOUT_MS", Text("50"), "Bound of every Redis operation; a slower or absent Redis is skipped (local tiers only) and retried in the background."),
    var("STATE_DIR", Unset, "A directory where a gateway without Redis keeps what it must not forget across a restart or upgrade: open breakers (parked quotas included), the premium spend of the last 24 h (its own, each provider's, each client's). Written atomically every 5 s and at shutdown, read at start; created if missing. Unset: every start is a first start."),
    var("OTEL_EXPORTER_OTLP_ENDPOINT", Unset, "OpenTelemetry collector (`http://host:4318`): spans go to its `/v1/traces`. Unset (and no traces endpoint): tracing is off."),
    var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Unset, "The full OTLP traces URL; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`."),
    var("OTEL_EXPORTER_OTLP_PROTOCOL", Text("http/protobuf"), "OTLP protocol; `http/protobuf` (the specification's default) is the one supported."),
    var("OTEL_SERVICE_NAME", Text("searxng-gateway"), "`service.name` of the exported spans."),
];

/// The variable called `name`, if the gateway reads it.
pub(crate) fn find(name: &str) -> Option<&'static Variable> {
    VARIABLES.iter().find(|v| v.name == name)
}

/// The book's configuration table (`docs/src/configuration.md`).
pub fn markdown_table() -> String {
    let mut out = String::from("| variable | default | meaning |\n|---|---|---|\n");
    for v in VARIABLES {
        out.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            v.name,
            v.default_shown(),
            v.meaning
        ));
    }
    out
}

/// The variables as plain text for `--help`: one line each, aligned.
pub fn help_table() -> String {
    let width = VARIABLES.iter().map(|v| v.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for v in VARIABLES {
        out.push_str(&format!(
            "  {:width$}  {} (default: {})\n",
            v.name,
            v.meaning.replace('`', ""),
            v.default_shown()
        ));
    }
    out
}
