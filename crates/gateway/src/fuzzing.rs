//! Entry points for the coverage-guided fuzz targets in `fuzz/` (and for replaying their corpora
//! in `cargo test`): one function per decoder that reads bytes from outside the gateway, each
//! calling the production code exactly as the request path does. Public only with the `fuzzing`
//! feature, which the fuzz crate enables and the production build never does; the decoders
//! themselves stay crate-private.
//!
//! Every function must return for every input: a panic here is a crash the fuzzer reports. Inputs
//! that need more than one part (a status, headers and a body) are split by [`Parts`].

// Without the feature (plain `cargo test`) the module is private and only its replay test uses it.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use gateway_core::request::SearchRequest;
use gateway_upstreams::providers::ProviderKind;

/// The providers, by the name each fuzz target uses.
pub fn provider_names() -> [&'static str; 9] {
    ProviderKind::ALL.map(ProviderKind::as_str)
}

/// A query string or form body through the `/search` parser and validation, then the cache key.
pub fn search_params(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    if let Some(raw) = gateway_http::server::parse_params(text) {
        if let Ok(req) = SearchRequest::parse(raw, 2048) {
            let key = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
            assert!(key.as_str().len() >= req.query.split_whitespace().count());
            assert!(key.as_str().starts_with(key.query()));
            assert!(key.is_of_query(&req.query));
        }
    }
}

/// A SearXNG `/search` body through the answer decoder and the per-engine accounting it feeds.
pub fn searxng_answer(input: &[u8]) {
    let answer = gateway_upstreams::searxng::parse_answer(input);
    // The one-pass reader accepts what a tree of the body accepts: one JSON object whose
    // `results` is an array. (Each result gets serde_json's nesting limit of its own, so a body
    // nested deeper than the limit allows from the top may be read where a tree is refused.)
    match serde_json::from_slice::<serde_json::Value>(input) {
        Ok(tree) => assert_eq!(
            answer.is_some(),
            tree.get("results").is_some_and(serde_json::Value::is_array)
        ),
        Err(_) => assert!(
            answer.is_none()
                || serde_json::from_slice::<&serde_json::value::RawValue>(input).is_ok()
                || input.iter().filter(|&&b| b == b'[' || b == b'{').count() > 120,
            "only JSON is read"
        ),
    }
    if let Some(answer) = answer {
        let _ = answer.is_degraded();
        let engines = answer.engines_with_results();
        for result in &answer.results {
            // The object the client gets is valid JSON, and the one the fields were read from
            // (when a tree can hold it: a lone surrogate in a field the gateway does not read is
            // forwarded as SearXNG wrote it).
            let mut json = Vec::new();
            result.write_json(&mut json);
            assert!(serde_json::from_slice::<&serde_json::value::RawValue>(&json).is_ok());
            if let Ok(object) =
                serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&json)
            {
                let url = object.get("url").and_then(|u| u.as_str());
                assert_eq!(
                    url.map(gateway_core::canonical_url::canonical_url)
                        .as_deref(),
                    Some(result.key())
                );
                assert!(object.get("title").is_some_and(|t| t.is_string()));
            }
            for engine in gateway_upstreams::searxng::result_engines(result) {
                assert!(engines.contains(&engine));
            }
        }
    }
}

/// A JSON document as SearXNG's `unresponsive_engines`, and the bytes as one engine message.
pub fn unresponsive_engines(input: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(input) {
        let parsed = gateway_upstreams::searxng::parse_unresponsive(Some(&value));
        for (i, a) in parsed.iter().enumerate() {
            assert!(
                !parsed[i + 1..].iter().any(|b| b.engine == a.engine),
                "deduplicated"
            );
        }
    }
    if let Ok(message) = std::str::from_utf8(input) {
        let _ = gateway_upstreams::searxng::EngineReason::parse(message);
    }
}

/// One complete response of provider `name` (status, headers, body from [`Parts`]) through the
/// shared steps and the provider's own decoding, plus its rate-limit headers.
pub fn provider_response(name: &str, input: &[u8]) {
    let Some(kind) = ProviderKind::from_name(name) else {
        return;
    };
    let parts = Parts::split(input);
    let adapter = kind.adapter();
    let _ = adapter.rate_windows(&parts.headers);
    if let Ok(answer) = adapter.interpret(parts.status, &parts.headers, parts.body) {
        assert!(answer.cost_dollars.is_none_or(|c| !c.is_nan()));
    }
}

/// `Retry-After` in either of its forms.
pub fn retry_after(input: &[u8]) {
    if let Ok(text) = std::str::from_utf8(input) {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let _ = gateway_core::upstream::parse_retry_after(text, now);
        let _ = gateway_core::upstream::parse_retry_after(text, SystemTime::now());
    }
}

/// Brave's four `X-RateLimit-*` headers (one input line each: limit, policy, remaining, reset) on
/// a success and on a 429, where they decide how long Brave is parked.
pub fn brave_rate_limits(input: &[u8]) {
    let mut headers = HeaderMap::new();
    let names = [
        "x-ratelimit-limit",
        "x-ratelimit-policy",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ];
    for (name, line) in names.iter().zip(input.split(|b| *b == b'\n')) {
        if let Ok(value) = HeaderValue::from_bytes(line) {
            headers.insert(*name, value);
        }
    }
    let brave = ProviderKind::Brave.adapter();
    let _ = brave.rate_windows(&headers);
    let _ = brave.interpret(200, &headers, br#"{"type":"search","web":{"results":[]}}"#);
    let _ = brave.interpret(429, &headers, br#"{"error":{"code":"RATE_LIMITED"}}"#);
    let _ = brave.interpret(429, &headers, b"{}");
}

/// URL canonicalisation, the merge's deduplication key.
pub fn canonical_url(input: &[u8]) {
    if let Ok(text) = std::str::from_utf8(input) {
        let key = gateway_core::canonical_url::canonical_url(text);
        assert_eq!(
            key,
            gateway_core::canonical_url::canonical_url(text),
            "deterministic"
        );
    }
}

/// Result URLs the surfaces' replies are rendered over: hosts with and without `www.`, a
/// subdomain, an IP literal, an IDNA host, and a string that is no URL.
const REPLY_URLS: [&str; 6] = [
    "https://docs.rs/serde",
    "https://www.example.com/a?b=c",
    "http://news.sub.example.org:8080/x#y",
    "http://[::1]/",
    "https://xn--bcher-kva.example/",
    "not a url",
];

/// A `POST /tavily/search` body through the Tavily surface: the JSON object read field by field,
/// validation into a search and its cache key, then the reply (domain filters, `max_results`,
/// the answer) over a handful of results — or the refusal as a response.
pub fn tavily_request(input: &[u8]) {
    match gateway_http::server::tavily_request(input, &REPLY_URLS) {
        Ok(results) => assert!(results <= REPLY_URLS.len()),
        Err(status) => assert!(
            matches!(status, 400 | 401),
            "a body is refused as bad or unauthorised, not {status}"
        ),
    }
}

/// A body for one of the doors other tools knock on — Firecrawl's search (v1, v2) and scrape,
/// Perplexity's search, Open WebUI's search and loader, the retriever's query string, Serper's
/// search, Jina's reader (a body or a path) and search, Exa's search and contents, MCP's authorization endpoints (registration, authorization, consent and token forms, Basic credentials, a JWT's header); the first byte choosing which — through
/// its decoder, validation and (Perplexity) reply. Bad input is refused as bad (400, 413), never a
/// panic, never a 5xx.
pub fn door_request(input: &[u8]) {
    let Some((&which, body)) = input.split_first() else {
        return;
    };
    if let Err(status) = gateway_http::server::door_request(which, body, &REPLY_URLS) {
        assert!(
            matches!(status, 400 | 413),
            "a body is refused as bad, not {status}"
        );
    }
}

/// An MCP `/mcp` body through the server's JSON-RPC check and, for a `tools/call` of
/// `web_search` (or a bare JSON object taken as its arguments), the argument decoder, validation
/// and the tool's result over a handful of results.
pub fn mcp_web_search(input: &[u8]) {
    let _ = gateway_http::server::mcp_web_search(input, &REPLY_URLS);
}

/// A page through the reader's extraction entry point, as a read would take it: the first line is
/// its `Content-Type` (empty: none), the rest its body — the media type and charset, HTML
/// extraction behind the nesting guard (as Markdown and as text), PDF, JSON, XML and plain text.
pub fn page_extraction(input: &[u8]) {
    let (content_type, body) = match input.iter().position(|b| *b == b'\n') {
        Some(end) => (std::str::from_utf8(&input[..end]).ok(), &input[end + 1..]),
        None => (None, input),
    };
    let content_type = content_type.map(str::trim).filter(|ct| !ct.is_empty());
    let _ = gateway_upstreams::reader::extract_for_fuzzing(body, content_type);
}

/// A PDF through the parse as the gateway runs it: a job to a parse worker process (the program
/// in `SEARXNG_GATEWAY_BIN`, which `scripts/fuzz.sh` builds; nothing is parsed without it). The
/// worker may die on an input — that is the bound working; the fuzz process itself must not.
/// Coverage guides the fuzzer through the gateway's side (frames, replies, limits); the worker's
/// parser is driven by the inputs it mutates. (The test suite's replay names the program itself.)
#[cfg_attr(not(feature = "fuzzing"), allow(dead_code))]
pub fn page_pdf(input: &[u8]) {
    if let Some(program) = std::env::var_os("SEARXNG_GATEWAY_BIN") {
        let _ =
            gateway_upstreams::reader::parse_pdf_for_fuzzing(std::path::Path::new(&program), input);
    }
}

/// A fuzz input as a response: two bytes of status (folded into 100–599), header lines up to the
/// first empty line (`name: value`; unreadable lines are skipped), then the body.
struct Parts<'a> {
    status: u16,
    headers: HeaderMap,
    body: &'a [u8],
}

impl<'a> Parts<'a> {
    fn split(input: &'a [u8]) -> Self {
        let (status, rest) = match input {
            [a, b, rest @ ..] => (100 + u16::from_be_bytes([*a, *b]) % 500, rest),
            _ => (200, input),
        };
        let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
            Some(end) => (&rest[..end], &rest[end + 2..]),
            None => (&[][..], rest),
        };
        let mut headers = HeaderMap::new();
        for line in head.split(|b| *b == b'\n') {
            let Some(colon) = line.iter().position(|b| *b == b':') else {
                continue;
            };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if let (Ok(name), Ok(value)) =
                (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
            {
                headers.append(name, value);
            }
        }
        Self {
            status,
            headers,
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every committed input — seed corpora and the regressions of crashes found — through its
    //! target, so a fixed crash stays fixed in a plain `cargo test`.

    use std::path::{Path, PathBuf};

    fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        let mut found = Vec::new();
        for kind in ["corpus", "regressions"] {
            let Ok(dir) = std::fs::read_dir(root.join(kind).join(target)) else {
                continue;
            };
            for entry in dir.flatten() {
                if let Ok(bytes) = std::fs::read(entry.path()) {
                    found.push((entry.path(), bytes));
                }
            }
        }
        found
    }

    fn replay(target: &str, run: impl Fn(&[u8])) {
        let inputs = inputs(target);
        assert!(!inputs.is_empty(), "fuzz/corpus/{target} has seed inputs");
        for (path, bytes) in inputs {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&bytes)));
            assert!(outcome.is_ok(), "{} crashes {target}", path.display());
        }
    }

    #[test]
    fn every_committed_fuzz_input_passes_its_target() {
        replay("search_params", super::search_params);
        replay("searxng_answer", super::searxng_answer);
        replay("unresponsive_engines", super::unresponsive_engines);
        for name in super::provider_names() {
            replay(&format!("provider_{name}"), |input| {
                super::provider_response(name, input)
            });
        }
        replay("retry_after", super::retry_after);
        replay("brave_rate_limits", super::brave_rate_limits);
        replay("canonical_url", super::canonical_url);
        replay("tavily_request", super::tavily_request);
        replay("door_request", super::door_request);
        replay("mcp_web_search", super::mcp_web_search);
        replay("page_extraction", super::page_extraction);
        // The PDF target needs the gateway's binary as its worker: the one cargo built beside
        // this test (target/<profile>/searxng-gateway), when it did.
        let binary = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("searxng-gateway")))
            .filter(|binary| binary.is_file());
        match binary {
            Some(binary) => replay("page_pdf", |input| {
                let _ = gateway_upstreams::reader::parse_pdf_for_fuzzing(&binary, input);
            }),
            None => eprintln!("no searxng-gateway binary beside the test: page_pdf not replayed"),
        }
    }
}
