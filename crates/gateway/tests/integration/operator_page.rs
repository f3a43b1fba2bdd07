//! The operator's page (`/ui`) over HTTP: the page and its files with their security headers, its
//! JSON (`/ui/api/overview`, `/ui/api/searches/{request_id}`) showing what searches did, the inbound
//! keys in front of the JSON, `UI_SHOW_QUERIES=false` and `UI_ENABLED=false`, and the admin routes
//! the page's actions use. The page in a real browser: `real_clients.rs` (`test_ui.py`).

use std::io::Write;

use serde_json::Value;
use simulator::searxng::{EngineBehaviour, EngineFailure};
use simulator::Provider;

use crate::support::gateway::{Reply, TestGateway};
use crate::support::stack::SimStack;
use crate::support::wait;

const KEY: &str = "operator-page-key-0123";
const ADMIN_TOKEN: &str = "operator-page-admin-token";

async fn get(
    gateway: &TestGateway,
    path: &str,
    key: Option<&str>,
) -> (Reply, reqwest::header::HeaderMap) {
    let mut request = gateway.http.get(format!("{}{path}", gateway.url));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("the gateway answers");
    let headers = response.headers().clone();
    (TestGateway::reply(response).await, headers)
}

async fn overview(gateway: &TestGateway) -> Value {
    let (reply, _) = get(gateway, "/ui/api/overview", gateway.status_key.as_deref()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json
}

fn keys_file() -> tempfile::NamedTempFile {
    crate::support::keys::keys_file(&[("operator", KEY, "")])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_and_its_files_come_with_a_csp_without_inline_scripts_and_no_framing() {
    let s = SimStack::start(&[], &[]).await;
    let g = &s.gateway;
    for (path, content_type) in [
        ("/ui", "text/html"),
        ("/ui/", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/uPlot.iife.min.js", "text/javascript"),
        ("/ui/uPlot.min.css", "text/css"),
        ("/ui/uPlot.LICENSE", "text/plain"),
        ("/ui/api/overview", "application/json"),
    ] {
        let (reply, headers) = get(g, path, None).await;
        assert_eq!(reply.status, 200, "{path}");
        assert!(
            reply.content_type.starts_with(content_type),
            "{path}: {}",
            reply.content_type
        );
        let csp = headers["content-security-policy"].to_str().expect("ascii");
        assert!(csp.contains("script-src 'self';"), "{path}: {csp}");
        assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
    }
    let (page, _) = get(g, "/ui", None).await;
    assert!(
        page.text.contains("<script src=\"/ui/app.js\""),
        "{}",
        page.text
    );
    let (missing, headers) = get(g, "/ui/nothing.js", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json["error"], "not_found");
    assert_eq!(headers["x-frame-options"], "DENY");
    // The index names the page.
    let (index, _) = get(g, "/", None).await;
    assert_eq!(index.json["links"]["ui"], "/ui", "{}", index.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn ui_enabled_false_removes_every_route_of_the_page() {
    let s = SimStack::start(&[], &[("UI_ENABLED", "false")]).await;
    s.gateway
        .search(&[("q", "quiet"), ("format", "json")])
        .await;
    for path in [
        "/ui",
        "/ui/",
        "/ui/app.js",
        "/ui/api/overview",
        "/ui/api/searches/x",
    ] {
        let (reply, _) = get(&s.gateway, path, None).await;
        assert_eq!(reply.status, 404, "{path}: {}", reply.text);
        assert_eq!(reply.json["error"], "not_found", "{path}");
    }
    let (index, _) = get(&s.gateway, "/", None).await;
    assert!(index.json["links"].get("ui").is_none(), "{}", index.text);
    // /status does not depend on the page.
    assert_eq!(s.gateway.status().await["cache"]["size"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_api_keys_file_the_pages_json_wants_a_key_and_the_page_itself_does_not() {
    let keys = keys_file();
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(&[], &[("API_KEYS_FILE", &path), ("TEST_CLIENT_KEY", KEY)]).await;
    let g = &s.gateway;
    for json in ["/ui/api/overview", "/ui/api/searches/x"] {
        for key in [None, Some("not-a-key")] {
            let (reply, headers) = get(g, json, key).await;
            assert_eq!(reply.status, 401, "{json} {key:?}");
            assert_eq!(reply.json["error"], "unauthorized", "{}", reply.text);
            assert_eq!(headers["www-authenticate"], "Bearer");
            assert!(!reply.text.contains("not-a-key"));
        }
    }
    let (reply, _) = get(g, "/ui/api/overview", Some(KEY)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json["clients"][0]["client"], "operator");
    for page in ["/ui", "/ui/app.js"] {
        assert_eq!(get(g, page, None).await.0.status, 200, "{page}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_overview_shows_each_search_its_outcome_traffic_and_explain_record() {
    let s = SimStack::start(&[Provider::Brave], &[("ADMIN_TOKEN", ADMIN_TOKEN)]).await;
    let g = &s.gateway;
    let first = g
        .search(&[("q", "<b>bold</b> rust"), ("format", "json")])
        .await;
    assert_eq!(first.outcome, "searxng_ok");
    let again = g
        .search(&[("q", "<b>bold</b> rust"), ("format", "json")])
        .await;
    assert_eq!(again.outcome, "cache_hit");
    let explained = g
        .search(&[
            ("q", "<b>bold</b> rust"),
            ("format", "json"),
            ("explain", "1"),
        ])
        .await;

    let o = overview(g).await;
    let searches = o["searches"].as_array().expect("a list");
    assert_eq!(searches.len(), 3, "{searches:?}");
    assert_eq!(searches[1]["outcome"], "cache_hit", "newest first");
    assert_eq!(searches[2]["outcome"], "searxng_ok");
    assert_eq!(searches[2]["cache"], "miss");
    for search in searches {
        assert_eq!(search["query"], "<b>bold</b> rust", "kept as typed");
        assert_eq!(search["client"], "anonymous");
        assert_eq!(search["surface"], "searxng");
        assert_eq!(search["status"], 200);
        assert_eq!(search["premium_calls"], 0);
        assert!(search["latency_ms"].as_f64().is_some());
    }
    assert!(
        searches[2]["latency_ms"].as_f64().expect("a number") > 0.0,
        "the miss took time"
    );
    let traffic = &o["traffic"];
    assert_eq!(traffic["answered"], 3);
    assert_eq!(traffic["window_seconds"], 900);
    let per_outcome = |outcome: &str| -> u64 {
        traffic["outcomes"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["outcome"] == outcome))
            .and_then(|s| s["per_second"].as_array())
            .map(|seconds| seconds.iter().filter_map(Value::as_u64).sum())
            .expect("a series per outcome")
    };
    assert_eq!(
        (per_outcome("searxng_ok"), per_outcome("cache_hit")),
        (1, 2)
    );
    assert_eq!(traffic["latency"]["count"], 3);
    assert!(traffic["latency"]["p95_seconds"].as_f64().is_some());
    assert!((traffic["cache_hit_ratio"].as_f64().expect("a ratio") - 2.0 / 3.0).abs() < 1e-3);
    assert_eq!(o["status"]["cache"]["size"], 1, "the /status document");
    assert!(o["status"]["cache"]["bytes"].as_u64().expect("bytes") > 100);
    assert_eq!(o["admin"], true);
    assert_eq!(o["queries_shown"], true);

    // A search's explain record is the `gateway` object explain=1 gave it.
    let id = searches[0]["request_id"].as_str().expect("an ID");
    let (one, _) = get(g, &format!("/ui/api/searches/{id}"), None).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.json["search"]["request_id"], id);
    // The same record, but for the hit's age, read a moment apart.
    let without_age = |gateway: &Value| {
        let mut gateway = gateway.clone();
        gateway["cache"]
            .as_object_mut()
            .and_then(|cache| cache.remove("age_ms"))
            .expect("a hit's age");
        gateway
    };
    assert_eq!(
        without_age(&one.json["gateway"]),
        without_age(&explained.json["gateway"])
    );
    let miss_id = searches[2]["request_id"].as_str().expect("an ID");
    let (miss, _) = get(g, &format!("/ui/api/searches/{miss_id}"), None).await;
    assert_eq!(miss.json["gateway"]["cache"]["status"], "miss");
    assert_eq!(
        miss.json["gateway"]["fanout"]["calls"][0]["name"],
        "searxng"
    );
    let (gone, _) = get(g, "/ui/api/searches/no-such-id", None).await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json["error"], "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn premium_calls_and_spend_show_per_provider_and_per_client() {
    let keys = keys_file();
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[Provider::Brave],
        &[("API_KEYS_FILE", &path), ("TEST_CLIENT_KEY", KEY)],
    )
    .await;
    s.fail_every_engine();
    let reply = s
        .gateway
        .http
        .get(format!("{}/search", s.gateway.url))
        .query(&[("q", "premium please"), ("format", "json")])
        .bearer_auth(KEY)
        .send()
        .await
        .expect("answers");
    assert_eq!(TestGateway::reply(reply).await.outcome, "premium_ok");
    let o = overview(&s.gateway).await;
    let brave = &o["status"]["providers"][0];
    assert_eq!(brave["name"], "brave");
    assert_eq!(brave["calls_last_24h"], 1);
    let price = brave["usd_per_1000_calls"].as_f64().expect("a price") / 1000.0;
    assert!(
        (brave["usd_last_24h"].as_f64().expect("usd") - price).abs() < 1e-9,
        "{brave}"
    );
    let client = &o["clients"][0];
    assert_eq!(client["client"], "operator");
    assert_eq!(client["premium_calls_last_24h"], 1);
    let search = &o["searches"][0];
    assert_eq!(
        (search["client"].as_str(), search["premium_calls"].as_u64()),
        (Some("operator"), Some(1))
    );
    assert_eq!(search["outcome"], "premium_ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn ui_show_queries_false_keeps_no_query_but_the_rest_of_the_search() {
    let s = SimStack::start(&[], &[("UI_SHOW_QUERIES", "false")]).await;
    s.gateway
        .search(&[("q", "a private matter"), ("format", "json")])
        .await;
    let o = overview(&s.gateway).await;
    assert_eq!(o["queries_shown"], false);
    let search = &o["searches"][0];
    assert!(search["query"].is_null(), "{search}");
    assert_eq!(search["outcome"], "searxng_ok");
    assert!(!o.to_string().contains("a private matter"));
    let id = search["request_id"].as_str().expect("an ID");
    let (one, _) = get(&s.gateway, &format!("/ui/api/searches/{id}"), None).await;
    assert!(!one.text.contains("a private matter"), "{}", one.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tripped_engine_breaker_shows_with_its_reason_and_the_admin_routes_move_every_kind() {
    let s = SimStack::start(&[Provider::Brave], &[("ADMIN_TOKEN", ADMIN_TOKEN)]).await;
    s.searxng.set_engine(
        "gamma",
        EngineBehaviour::Fails(EngineFailure::TooManyRequests),
    );
    s.gateway
        .search(&[("q", "trip gamma"), ("format", "json")])
        .await;
    let o = overview(&s.gateway).await;
    let gamma = o["status"]["breakers"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|b| b["namespace"] == "engine" && b["name"] == "gamma")
        })
        .cloned()
        .expect("gamma's breaker");
    assert_eq!(gamma["state"], "open", "{gamma}");
    assert_eq!(gamma["reason"], "rate_limited", "{gamma}");
    assert!(gamma["open_for_seconds"].as_f64().expect("a wait") > 0.0);

    // The key breaker, named as /status names it (`brave:<fingerprint>`), opens and closes.
    let key = o["status"]["breakers"]
        .as_array()
        .and_then(|all| all.iter().find(|b| b["namespace"] == "key"))
        .and_then(|b| b["name"].as_str())
        .expect("brave's key breaker")
        .to_owned();
    let admin = |path: String| {
        s.gateway
            .http
            .post(format!("{}{path}", s.gateway.url))
            .bearer_auth(ADMIN_TOKEN)
            .send()
    };
    let opened = admin(format!("/admin/breakers/key/{key}/open?seconds=120"))
        .await
        .expect("answers");
    assert_eq!(opened.status(), 200);
    assert_eq!(s.gateway.breaker("key", &key).await["state"], "open");
    let closed = admin(format!("/admin/breakers/key/{key}/close"))
        .await
        .expect("answers");
    assert_eq!(closed.status(), 200);
    wait::until("the key breaker closes", || async {
        s.gateway.breaker("key", &key).await["state"] == "closed"
    })
    .await;
    let junk = admin("/admin/breakers/nonsense/x/close".to_owned())
        .await
        .expect("answers");
    assert_eq!(junk.status(), 400);
}

const ALICE_KEY: &str = "operator-page-alice-key-0123";
const BOB_KEY: &str = "operator-page-bob-key-0123";

/// A search through `/search` with `key`, under the request ID `id`.
async fn search_as(gateway: &TestGateway, key: &str, id: &str, query: &str) {
    let response = gateway
        .http
        .get(format!("{}/search", gateway.url))
        .query(&[("q", query), ("format", "json")])
        .bearer_auth(key)
        .header("x-request-id", id)
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.headers()["x-request-id"], id, "the ID is adopted");
    let reply = TestGateway::reply(response).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

fn queries(overview: &Value) -> Vec<String> {
    overview["searches"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|s| s["query"].as_str().map(str::to_owned))
        .collect()
}

fn client_names(overview: &Value) -> Vec<String> {
    overview["clients"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|c| c["client"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_key_reads_only_its_own_searches_and_usage_and_the_admin_token_reads_everyones() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for (name, key) in [("alice", ALICE_KEY), ("bob", BOB_KEY)] {
        let line = searxng_gateway::clients::keys_file::hash_line(name, key).expect("a line");
        writeln!(file, "{line}").expect("write the keys file");
    }
    let path = file.path().to_str().expect("utf-8 path").to_owned();
    let s = SimStack::start(
        &[],
        &[
            ("API_KEYS_FILE", &path),
            ("TEST_CLIENT_KEY", ALICE_KEY),
            ("ADMIN_TOKEN", ADMIN_TOKEN),
        ],
    )
    .await;
    let g = &s.gateway;
    let alice_query = "alice private medical question";
    search_as(g, ALICE_KEY, "alice-search-1", alice_query).await;
    search_as(g, BOB_KEY, "bob-search-1", "bob's own question").await;

    // Bob: his own search and usage, nothing of alice's, not even by her request ID.
    let (bob, _) = get(g, "/ui/api/overview", Some(BOB_KEY)).await;
    assert_eq!(bob.status, 200, "{}", bob.text);
    assert!(!bob.text.contains(alice_query), "{}", bob.text);
    assert_eq!(queries(&bob.json), ["bob's own question"]);
    assert_eq!(client_names(&bob.json), ["bob"]);
    assert_eq!(bob.json["scope"], "client");
    assert_eq!(bob.json["client"], "bob");
    assert_eq!(
        bob.json["traffic"]["answered"], 2,
        "the fleet's counts stay: no query, no client in them"
    );
    let (peek, _) = get(g, "/ui/api/searches/alice-search-1", Some(BOB_KEY)).await;
    assert_eq!(peek.status, 404, "{}", peek.text);
    assert_eq!(peek.json["error"], "not_found");
    assert!(!peek.text.contains(alice_query));

    // Alice: her own.
    let (alice, _) = get(g, "/ui/api/overview", Some(ALICE_KEY)).await;
    assert_eq!(queries(&alice.json), [alice_query]);
    assert_eq!(client_names(&alice.json), ["alice"]);
    let (own, _) = get(g, "/ui/api/searches/alice-search-1", Some(ALICE_KEY)).await;
    assert_eq!(own.status, 200, "{}", own.text);
    assert_eq!(own.json["search"]["query"], alice_query);

    // The admin token: everyone's, on the overview and one by one.
    let (all, _) = get(g, "/ui/api/overview", Some(ADMIN_TOKEN)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(queries(&all.json), ["bob's own question", alice_query]);
    assert_eq!(client_names(&all.json), ["alice", "bob"]);
    assert_eq!(all.json["scope"], "all");
    assert!(all.json.get("client").is_none(), "{}", all.text);
    for id in ["alice-search-1", "bob-search-1"] {
        let (one, _) = get(g, &format!("/ui/api/searches/{id}"), Some(ADMIN_TOKEN)).await;
        assert_eq!(one.status, 200, "{id}: {}", one.text);
    }
    // Neither a key nor the token: still refused.
    let (wrong, _) = get(g, "/ui/api/overview", Some("not-the-admin-token")).await;
    assert_eq!(wrong.status, 401, "{}", wrong.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_that_is_not_utf8_is_refused_as_json_naming_the_problem() {
    let s = SimStack::start(&[], &[("ADMIN_TOKEN", ADMIN_TOKEN)]).await;
    let g = &s.gateway;
    let send = |method: reqwest::Method, path: &str| {
        g.http
            .request(method, format!("{}{path}", g.url))
            .bearer_auth(ADMIN_TOKEN)
            .send()
    };
    for (method, path) in [
        (reqwest::Method::GET, "/ui/api/searches/%FF"),
        (reqwest::Method::GET, "/ui/%FF%FE.js"),
        (reqwest::Method::POST, "/admin/breakers/engine/%FF/close"),
        (
            reqwest::Method::POST,
            "/admin/breakers/%C3%28/gamma/open?seconds=5",
        ),
    ] {
        let reply = TestGateway::reply(send(method.clone(), path).await.expect("answers")).await;
        assert_eq!(reply.status, 400, "{method} {path}: {}", reply.text);
        assert!(
            reply.content_type.starts_with("application/json"),
            "{path}: {}",
            reply.content_type
        );
        assert_eq!(
            reply.json["error"], "invalid_path",
            "{path}: {}",
            reply.text
        );
        let message = reply.json["message"].as_str().expect("a message");
        assert!(message.contains("not valid UTF-8"), "{path}: {message}");
    }
    let twice = TestGateway::reply(
        send(
            reqwest::Method::POST,
            "/admin/breakers/engine/gamma/open?seconds=5&seconds=6",
        )
        .await
        .expect("answers"),
    )
    .await;
    assert_eq!(twice.status, 400, "{}", twice.text);
    assert_eq!(twice.json["error"], "bad_request", "{}", twice.text);
}
