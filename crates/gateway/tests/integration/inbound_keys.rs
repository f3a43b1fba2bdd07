//! Inbound API keys, per-client rate limits and request IDs, end to end: every surface refuses a
//! missing or wrong key in its own shape and serves a right one; the operator endpoints stay open; a
//! key in the query string never reaches SearXNG or the logs; the bucket's 429; SIGHUP reloads the
//! keys file in the running binary; request IDs are returned and logged.

use std::io::Write;

use serde_json::{json, Value};
use simulator::searxng::SearxngMode;

use crate::support::gateway::{Reply, TestGateway};
use crate::support::keys::keys_file;
use crate::support::process::{command, GatewayProcess};
use crate::support::stack::SimStack;

const ALICE_KEY: &str = "alice-key-0123456789";
const BOB_KEY: &str = "bob-key-0123456789";

async fn send(
    gateway: &TestGateway,
    method: reqwest::Method,
    path: &str,
    key: Option<&str>,
    body: Option<(&str, String)>,
) -> (Reply, reqwest::header::HeaderMap) {
    let mut request = gateway
        .http
        .request(method, format!("{}{path}", gateway.url));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some((content_type, body)) = body {
        request = request.header("content-type", content_type).body(body);
    }
    let response = request.send().await.expect("the gateway answers");
    let headers = response.headers().clone();
    (TestGateway::reply(response).await, headers)
}

/// A method, a path and an optional body with its content type.
type Route = (
    reqwest::Method,
    &'static str,
    Option<(&'static str, String)>,
);

fn mcp_call() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_surface_refuses_a_missing_or_wrong_key_in_its_own_shape_and_serves_a_right_one() {
    let keys = keys_file(&[("alice", ALICE_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[("API_KEYS_FILE", &path), ("TEST_CLIENT_KEY", ALICE_KEY)],
    )
    .await;
    let g = &s.gateway;
    let form = "application/x-www-form-urlencoded";
    let surfaces: Vec<Route> = vec![
        (reqwest::Method::GET, "/search?q=keys&format=json", None),
        (
            reqwest::Method::POST,
            "/search",
            Some((form, "q=keys&format=json".into())),
        ),
        (reqwest::Method::GET, "/?q=keys", None),
        (reqwest::Method::GET, "/status", None),
        (
            reqwest::Method::POST,
            "/tavily/search",
            Some(("application/json", json!({"query": "keys"}).to_string())),
        ),
        (
            reqwest::Method::POST,
            "/firecrawl/v2/search",
            Some(("application/json", json!({"query": "keys"}).to_string())),
        ),
        (
            reqwest::Method::POST,
            "/v2/search",
            Some(("application/json", json!({"query": "keys"}).to_string())),
        ),
        (
            reqwest::Method::POST,
            "/perplexity/search",
            Some(("application/json", json!({"query": "keys"}).to_string())),
        ),
        (
            reqwest::Method::POST,
            "/openwebui/search",
            Some(("application/json", json!({"query": "keys"}).to_string())),
        ),
    ];
    for (method, path, body) in &surfaces {
        for key in [None, Some("wrong-key")] {
            let (reply, headers) = send(g, method.clone(), path, key, body.clone()).await;
            assert_eq!(reply.status, 401, "{method} {path} {key:?}: {}", reply.text);
            assert_eq!(headers["www-authenticate"], "Bearer", "{path}");
            // Each door answers in its own API's shape.
            match *path {
                "/tavily/search" => {
                    assert!(reply.json["detail"]["error"].is_string(), "{}", reply.text)
                }
                "/firecrawl/v2/search" | "/v2/search" => {
                    assert_eq!(reply.json["success"], false, "{}", reply.text)
                }
                "/perplexity/search" => {
                    assert_eq!(reply.json["error"]["type"], "authentication_error")
                }
                "/openwebui/search" => assert!(reply.json["detail"].is_string(), "{}", reply.text),
                _ => assert_eq!(reply.json["error"], "unauthorized", "{}", reply.text),
            }
            assert!(!reply.text.contains("wrong-key"));
        }
        let (reply, _) = send(g, method.clone(), path, Some(ALICE_KEY), body.clone()).await;
        assert!(
            matches!(reply.status, 200 | 308),
            "{method} {path}: {} {}",
            reply.status,
            reply.text
        );
    }
    // MCP: 401 before any MCP session, then the session with the key.
    let mcp = |key: Option<&'static str>| {
        let mut request = g
            .http
            .post(format!("{}/mcp", g.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(mcp_call());
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        request.send()
    };
    let refused = mcp(None).await.expect("answers");
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["www-authenticate"], "Bearer");
    let wrong = mcp(Some("nope")).await.expect("answers");
    assert_eq!(wrong.status(), 401);
    let served = mcp(Some(ALICE_KEY)).await.expect("answers");
    assert_eq!(served.status(), 200);
    assert!(served.text().await.expect("body").contains("web_search"));
    // A key in a form body or the Tavily JSON body counts too.
    let (reply, _) = send(
        g,
        reqwest::Method::POST,
        "/search",
        None,
        Some((form, format!("q=body+key&api_key={ALICE_KEY}"))),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let (reply, _) = send(
        g,
        reqwest::Method::POST,
        "/tavily/search",
        None,
        Some((
            "application/json",
            json!({"query": "body key", "api_key": ALICE_KEY}).to_string(),
        )),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // The operator endpoints stay open.
    for path in ["/healthz", "/metrics"] {
        assert_eq!(g.get(path).await.status, 200, "{path}");
    }
    let metrics = g.get("/metrics").await.text;
    assert!(
        metrics.contains(
            r#"searxng_gateway_client_rejections_total{client="anonymous",reason="unauthorized"}"#
        ),
        "{metrics}"
    );
    assert!(metrics.contains(r#"searxng_gateway_client_requests_total{client="alice"}"#));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_in_the_query_string_never_reaches_searxng_nor_the_cache_key() {
    let keys = keys_file(&[("alice", ALICE_KEY, ""), ("bob", BOB_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[("API_KEYS_FILE", &path), ("TEST_CLIENT_KEY", ALICE_KEY)],
    )
    .await;
    let first = s
        .gateway
        .search(&[("q", "query key"), ("api_key", ALICE_KEY)])
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let sent = s.searxng.last_request().expect("SearXNG was asked");
    assert!(
        sent.iter()
            .all(|(k, v)| k != "api_key" && !v.contains(ALICE_KEY)),
        "{sent:?}"
    );
    let second = s
        .gateway
        .search(&[("q", "query key"), ("api_key", BOB_KEY)])
        .await;
    assert_eq!(second.cache, "hit", "another key is the same search");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_over_its_rate_gets_429_with_retry_after_and_cache_hits_count() {
    let keys = keys_file(&[("alice", ALICE_KEY, ":2"), ("bob", BOB_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[("API_KEYS_FILE", &path), ("TEST_CLIENT_KEY", BOB_KEY)],
    )
    .await;
    let g = &s.gateway;
    let q = "/search?q=rate&format=json";
    for _ in 0..2 {
        let (reply, _) = send(g, reqwest::Method::GET, q, Some(ALICE_KEY), None).await;
        assert_eq!(reply.status, 200);
    }
    let hits_before = s.searxng_hits();
    let (reply, headers) = send(g, reqwest::Method::GET, q, Some(ALICE_KEY), None).await;
    assert_eq!(
        reply.status, 429,
        "the second was a cache hit and still counted"
    );
    assert_eq!(reply.json["error"], "rate_limited");
    let retry: u64 = headers["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("whole seconds");
    assert!((1..=30).contains(&retry), "{retry}");
    assert_eq!(
        s.searxng_hits(),
        hits_before,
        "a refused request touches nothing"
    );
    let (tavily, headers) = send(
        g,
        reqwest::Method::POST,
        "/tavily/search",
        Some(ALICE_KEY),
        Some(("application/json", json!({"query": "rate"}).to_string())),
    )
    .await;
    assert_eq!(tavily.status, 429);
    assert!(tavily.json["detail"]["error"].is_string());
    assert!(headers.contains_key("retry-after"));
    // Bob has a bucket of his own (and no limit).
    for _ in 0..5 {
        let (reply, _) = send(g, reqwest::Method::GET, q, Some(BOB_KEY), None).await;
        assert_eq!(reply.status, 200);
    }
    let metrics = g.get("/metrics").await.text;
    assert!(
        metrics.contains(
            r#"searxng_gateway_client_rejections_total{client="alice",reason="rate_limited"} 2"#
        ),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn request_ids_are_adopted_when_sane_made_otherwise_and_returned() {
    let s = SimStack::start(&[], &[]).await;
    let g = &s.gateway;
    let with = |id: &'static str| {
        g.http
            .get(format!("{}/search?q=ids", g.url))
            .header("x-request-id", id)
            .send()
    };
    let adopted = with("client-id_1.2").await.expect("answers");
    assert_eq!(adopted.headers()["x-request-id"], "client-id_1.2");
    let replaced = with("has spaces and \"quotes\"").await.expect("answers");
    let made = replaced.headers()["x-request-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_eq!(made.len(), 36, "a UUID: {made}");
    let health = g
        .http
        .get(format!("{}/healthz", g.url))
        .send()
        .await
        .expect("answers");
    assert!(
        health.headers().contains_key("x-request-id"),
        "every response"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_keys_file_stops_start_up_with_its_line_number() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(file, "# ok\nalice:nothex").expect("write");
    let path = file.path().to_str().expect("utf-8").to_owned();
    let out = command(&[("API_KEYS_FILE", &path)]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("API_KEYS_FILE") && stderr.contains("line 2"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hash_key_prints_the_line_for_a_key_read_on_stdin() {
    use std::process::Stdio;
    let mut child = command(&[])
        .args(["hash-key", "ci-bot"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"the-secret\n")
        .expect("write");
    let out = child.wait_with_output().expect("exits");
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(
        line.trim(),
        searxng_gateway::clients::keys_file::hash_line("ci-bot", "the-secret").expect("valid")
    );
    assert!(!line.contains("the-secret"));
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_keys_file_while_a_request_is_in_flight_and_logs_carry_request_ids() {
    let s = SimStack::start(&[], &[]).await;
    let keys = keys_file(&[("alice", ALICE_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let searxng = s.searxng.base_url();
    let mut p = GatewayProcess::start(&[
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("SEARXNG_BACKEND_URL", &searxng),
        ("API_KEYS_FILE", &path),
        ("LOG_FORMAT", "json"),
        ("LOG_LEVEL", "info"),
        ("FALLBACK_PROVIDERS", ""),
    ]);
    let started = p.wait_for_line("searxng-gateway listening").await;
    let start: Value = serde_json::from_str(&started).expect("a JSON line");
    let url = format!(
        "http://{}",
        start["fields"]["listen"].as_str().expect("listen")
    );
    let http = reqwest::Client::new();
    let search = |key: &str, q: &str| {
        http.get(format!("{url}/search"))
            .query(&[("q", q), ("api_key", key)])
            .header("x-request-id", "rid-sighup-1")
            .send()
    };
    assert_eq!(
        search(ALICE_KEY, "before").await.expect("answers").status(),
        200
    );
    // A slow SearXNG keeps a request in flight across the reload.
    s.searxng
        .set_mode(SearxngMode::Delay(std::time::Duration::from_millis(800)));
    let in_flight = tokio::spawn(search(ALICE_KEY, "in flight"));
    crate::support::wait::until("the request to reach SearXNG", || {
        let seen = s
            .searxng
            .requests()
            .iter()
            .any(|r| r.iter().any(|(_, v)| v == "in flight"));
        async move { seen }
    })
    .await;
    let replacement = keys_file(&[("bob", BOB_KEY, "")]);
    std::fs::copy(replacement.path(), keys.path()).expect("replace the file");
    p.signal("HUP").await;
    p.wait_for_line("API_KEYS_FILE reloaded").await;
    let finished = in_flight.await.expect("task").expect("answers");
    assert_eq!(finished.status(), 200, "the request in flight completes");
    s.searxng.set_mode(SearxngMode::Normal);
    assert_eq!(
        search(BOB_KEY, "after").await.expect("answers").status(),
        200
    );
    assert_eq!(
        search(ALICE_KEY, "after").await.expect("answers").status(),
        401
    );
    p.terminate().await;
    let output = p.output().await;
    let lines: Vec<Value> = output
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !lines.is_empty(),
        "LOG_FORMAT=json writes JSON lines:\n{output}"
    );
    let search_line = lines
        .iter()
        .find(|l| l["fields"]["message"] == "search" && l["fields"]["client"] == "bob")
        .unwrap_or_else(|| panic!("no search line for bob:\n{output}"));
    assert_eq!(search_line["span"]["request_id"], "rid-sighup-1");
    assert!(
        !output.contains(ALICE_KEY) && !output.contains(BOB_KEY),
        "no key in the logs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_gateway_beyond_loopback_says_so_at_start_up_and_a_keyed_one_does_not() {
    let s = SimStack::start(&[], &[]).await;
    let searxng = s.searxng.base_url();
    let keys = keys_file(&[("alice", ALICE_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8").to_owned();
    for (keys, warned) in [(None, true), (Some(path.as_str()), false)] {
        let mut vars = vec![
            ("LISTEN_ADDR", "0.0.0.0:0"),
            ("SEARXNG_BACKEND_URL", searxng.as_str()),
            ("FALLBACK_PROVIDERS", ""),
        ];
        if let Some(path) = keys {
            vars.push(("API_KEYS_FILE", path));
        }
        let mut p = GatewayProcess::start(&vars);
        p.wait_for_line("searxng-gateway listening").await;
        p.terminate().await;
        let output = p.output().await;
        assert_eq!(output.contains("the gateway is open"), warned, "{output}");
    }
}
