//! Per-client premium budgets, `explain=1` and the admin actions, end to end through the
//! in-process server against the simulators: a spent client gets SearXNG-only answers (and says
//! so) while another still gets premium results; `explain` reports what the fakes saw; admin
//! actions change what the next request does.

use serde_json::Value;
use simulator::Provider::Brave;

use crate::support::gateway::Reply;
use crate::support::keys::keys_file;
use crate::support::stack::SimStack;

const ALICE_KEY: &str = "alice-key-0123456789";
const BOB_KEY: &str = "bob-key-0123456789";
const ADMIN: &str = "admin-token-0123456789";

async fn search(s: &SimStack, key: &str, query: &str) -> (Reply, reqwest::header::HeaderMap) {
    let response = s
        .gateway
        .http
        .get(format!("{}/search", s.gateway.url))
        .query(&[("q", query), ("format", "json"), ("explain", "1")])
        .bearer_auth(key)
        .send()
        .await
        .expect("the gateway answers");
    let headers = response.headers().clone();
    (
        crate::support::gateway::TestGateway::reply(response).await,
        headers,
    )
}

fn engines_of(reply: &Reply) -> Vec<String> {
    reply.json["results"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["engines"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_client_gets_searxng_only_answers_while_another_still_gets_premium() {
    let keys = keys_file(&[("alice", ALICE_KEY, "::1"), ("bob", BOB_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let s = SimStack::start(
        &[Brave],
        &[
            ("API_KEYS_FILE", &path),
            ("TEST_CLIENT_KEY", BOB_KEY),
            ("T1_PREMIUM_COUNT", "1"),
        ],
    )
    .await;
    let brave = s.provider(Brave);
    // Alice's first miss spends her one premium call.
    let (first, headers) = search(&s, ALICE_KEY, "budget one").await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(!headers.contains_key("x-gateway-premium"));
    assert_eq!(brave.calls(), 1);
    assert_eq!(first.json["gateway"]["premium"]["charged"], 1);
    // Her budget is spent: SearXNG only, and the response says so.
    let (spent, headers) = search(&s, ALICE_KEY, "budget two").await;
    assert_eq!(spent.status, 200, "{}", spent.text);
    assert_eq!(headers["x-gateway-premium"], "budget_spent");
    assert_eq!(brave.calls(), 1, "no premium call for a spent client");
    assert_eq!(spent.outcome, "searxng_ok");
    assert!(
        engines_of(&spent).iter().all(|e| e != "brave_api"),
        "{:?}",
        engines_of(&spent)
    );
    let gateway = &spent.json["gateway"];
    assert_eq!(gateway["premium"]["allowed"], false);
    assert_eq!(gateway["premium"]["reason"], "budget_spent");
    assert_eq!(gateway["fanout"]["skipped"][0]["why"], "budget_spent");
    // Bob's same query is not worsened by Alice's SearXNG-only answer: he gets premium results.
    let (bob, headers) = search(&s, BOB_KEY, "budget two").await;
    assert_eq!(bob.status, 200);
    assert!(!headers.contains_key("x-gateway-premium"));
    assert_eq!(bob.json["gateway"]["cache"]["status"], "miss");
    assert_eq!(brave.calls(), 2);
    assert_eq!(bob.outcome, "searxng_plus_premium_ok");
    // Alice may still read what Bob's request cached (a premium-quality hit costs nothing).
    let (hit, _) = search(&s, ALICE_KEY, "budget two").await;
    assert_eq!(hit.cache, "hit");
    assert_eq!(brave.calls(), 2);
    let metrics = s.gateway.get("/metrics").await.text;
    assert!(
        metrics.contains(r#"searxng_gateway_client_premium_calls_total{client="alice"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"searxng_gateway_client_premium_calls_total{client="bob"} 1"#));
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_reports_the_calls_the_fakes_saw_and_a_hit_with_its_age() {
    let s = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1")]).await;
    let plain = s
        .gateway
        .search(&[("q", "explained"), ("format", "json")])
        .await;
    assert!(
        plain.json.get("gateway").is_none(),
        "no explain, no gateway object"
    );
    let (hit, headers) = search(&s, "unused", "explained").await;
    assert_eq!(hit.cache, "hit");
    let request_id = headers["x-request-id"].to_str().expect("ascii");
    let g = &hit.json["gateway"];
    assert_eq!(g["request_id"], request_id);
    assert_eq!(g["cache"]["status"], "hit");
    assert_eq!(g["cache"]["tier"], "local");
    assert_eq!(
        headers["x-cache-tier"], "local",
        "explain and the header say the same word"
    );
    assert!(g["cache"]["age_ms"].as_u64().is_some());
    assert_eq!(g["outcome"], "cache_hit");
    assert_eq!(g["client"], "anonymous");
    let calls = g["fanout"]["calls"].as_array().expect("calls");
    let names: Vec<&str> = calls.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["searxng", "brave"], "{g}");
    assert_eq!(s.provider(Brave).calls(), 1);
    assert_eq!(s.searxng_hits(), 1);
    let brave_results = s.provider(Brave).requests().len();
    assert_eq!(brave_results, 1);
    for call in calls {
        assert_eq!(call["outcome"], "ok", "{call}");
        assert!(call["results"].as_u64().is_some_and(|n| n > 0));
        assert!(call["duration_ms"].as_u64().is_some());
    }
    assert_eq!(calls[1]["pass"], "t1");
    assert_eq!(g["fanout"]["premium_calls"], 1);
    assert!(g["fanout"]["budget_ms"].as_u64() == Some(30_000));
    // The answer itself is the same as without explain.
    let mut without = hit.json.clone();
    without.as_object_mut().expect("object").remove("gateway");
    assert_eq!(without, plain.json);
    // A SearXNG failure shows its error class and why the fallback started.
    s.fail_every_engine();
    let (degraded, _) = search(&s, "unused", "explained degraded").await;
    let g = &degraded.json["gateway"];
    assert_eq!(g["fanout"]["calls"][0]["outcome"], "degraded", "{g}");
    let junk = s.gateway.search(&[("q", "x"), ("explain", "maybe")]).await;
    assert_eq!(junk.status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_actions_change_what_the_next_request_does() {
    let s = SimStack::start(
        &[Brave],
        &[("T1_PREMIUM_COUNT", "1"), ("ADMIN_TOKEN", ADMIN)],
    )
    .await;
    let g = &s.gateway;
    let admin = |method: reqwest::Method, path: &str, token: Option<&str>| {
        let mut request = g.http.request(method, format!("{}{path}", g.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let refused = admin(reqwest::Method::POST, "/admin/cache/purge", None)
        .await
        .expect("answers");
    assert_eq!(refused.status(), 401);
    let wrong = admin(reqwest::Method::POST, "/admin/cache/purge", Some("wrong"))
        .await
        .expect("answers");
    assert_eq!(wrong.status(), 401);
    // Open Brave's breaker: the next miss does not call Brave.
    let opened = admin(
        reqwest::Method::POST,
        "/admin/breakers/provider/brave/open?seconds=600",
        Some(ADMIN),
    )
    .await
    .expect("answers");
    assert_eq!(opened.status(), 200);
    assert_eq!(g.breaker("provider", "brave").await["state"], "open");
    let first = g.search(&[("q", "admin one")]).await;
    assert_eq!(first.status, 200);
    assert_eq!(s.provider(Brave).calls(), 0);
    // Close it: the next miss calls Brave again.
    let closed = admin(
        reqwest::Method::POST,
        "/admin/breakers/provider/brave/close",
        Some(ADMIN),
    )
    .await
    .expect("answers");
    assert_eq!(closed.status(), 200);
    let second = g.search(&[("q", "admin two")]).await;
    assert_eq!(second.status, 200);
    assert_eq!(s.provider(Brave).calls(), 1);
    let unknown = admin(
        reqwest::Method::POST,
        "/admin/breakers/provider/nobody/close",
        Some(ADMIN),
    )
    .await
    .expect("answers");
    assert_eq!(unknown.status(), 404);
    // The SearXNG cooldown: opened, the next miss skips SearXNG; closed, SearXNG is asked again.
    let hits = s.searxng_hits();
    admin(
        reqwest::Method::POST,
        "/admin/breakers/searxng/searxng/open?seconds=600",
        Some(ADMIN),
    )
    .await
    .expect("answers");
    g.search(&[("q", "admin cooled")]).await;
    assert_eq!(
        s.searxng_hits(),
        hits,
        "SearXNG skipped while the operator holds it open"
    );
    admin(
        reqwest::Method::POST,
        "/admin/breakers/searxng/searxng/close",
        Some(ADMIN),
    )
    .await
    .expect("answers");
    g.search(&[("q", "admin warm")]).await;
    assert_eq!(s.searxng_hits(), hits + 1);
    // Purge one query: it is a miss again, the other stays a hit.
    let purged = admin(
        reqwest::Method::POST,
        "/admin/cache/purge?q=Admin%20ONE",
        Some(ADMIN),
    )
    .await
    .expect("answers");
    let purged: Value = purged.json().await.expect("json");
    assert_eq!(purged["purged"], 1);
    assert_eq!(g.search(&[("q", "admin one")]).await.cache, "miss");
    assert_eq!(g.search(&[("q", "admin two")]).await.cache, "hit");
    // Purge all.
    admin(reqwest::Method::POST, "/admin/cache/purge", Some(ADMIN))
        .await
        .expect("answers");
    assert_eq!(g.search(&[("q", "admin two")]).await.cache, "miss");
    let status: Value = admin(reqwest::Method::GET, "/admin/status", Some(ADMIN))
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(status["clients"][0]["client"], "anonymous");
    assert!(status["status"]["breakers"].is_array());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_admin_token_the_admin_routes_do_not_exist() {
    let s = SimStack::start(&[], &[]).await;
    let reply = s
        .gateway
        .http
        .post(format!("{}/admin/cache/purge", s.gateway.url))
        .bearer_auth("anything-at-all-0000")
        .send()
        .await
        .expect("answers");
    assert_eq!(reply.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn premium_spend_is_counted_in_dollars_per_provider_and_per_client_against_a_usd_budget() {
    // Alice may spend one cent a day: two Brave calls at the default $5 per 1000.
    let keys = keys_file(&[("alice", ALICE_KEY, ":::0.01"), ("bob", BOB_KEY, "")]);
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let s = SimStack::start(
        &[Brave],
        &[
            ("API_KEYS_FILE", &path),
            ("TEST_CLIENT_KEY", BOB_KEY),
            ("T1_PREMIUM_COUNT", "1"),
            ("ADMIN_TOKEN", ADMIN),
        ],
    )
    .await;
    let brave = s.provider(Brave);
    for query in ["usd one", "usd two"] {
        let (reply, headers) = search(&s, ALICE_KEY, query).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert!(!headers.contains_key("x-gateway-premium"));
        assert_eq!(reply.json["gateway"]["premium"]["charged_usd"], 0.005);
    }
    assert_eq!(brave.calls(), 2);
    let (spent, headers) = search(&s, ALICE_KEY, "usd three").await;
    assert_eq!(headers["x-gateway-premium"], "budget_spent");
    assert_eq!(
        spent.json["gateway"]["premium"]["reason"],
        "usd_budget_spent"
    );
    assert_eq!(brave.calls(), 2, "no call past the dollar budget");
    let (bob, _) = search(&s, BOB_KEY, "bob pays nothing yet").await;
    assert_eq!(bob.json["gateway"]["premium"]["allowed"], true);
    assert_eq!(brave.calls(), 3);
    let metrics = s.gateway.metrics_text().await;
    let value = |name: &str, labels: &[(&str, &str)]| {
        crate::support::gateway::metric_value(&metrics, name, labels)
    };
    assert!(
        (value(
            "searxng_gateway_premium_spend_usd_total",
            &[("provider", "brave")]
        ) - 0.015)
            .abs()
            < 1e-9
    );
    assert!(
        (value(
            "searxng_gateway_client_premium_spend_usd_total",
            &[("client", "alice")]
        ) - 0.01)
            .abs()
            < 1e-9
    );
    let status: Value = s
        .gateway
        .http
        .get(format!("{}/admin/status", s.gateway.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("admin status")
        .json()
        .await
        .expect("JSON");
    let alice = status["clients"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["client"] == "alice"))
        .cloned()
        .expect("alice");
    assert_eq!(alice["usd_per_day"], 0.01);
    assert_eq!(alice["premium_spend_usd_last_24h"], 0.01);
    assert_eq!(alice["premium_allowed"], false);
    let public = s.gateway.status().await;
    assert_eq!(public["premium_spend"]["usd_last_24h"], 0.015);
    assert_eq!(public["providers"][0]["usd_per_1000_calls"], 5.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gateways_daily_cap_stops_premium_calls_for_everyone() {
    let s = SimStack::start(
        &[Brave],
        &[
            ("T1_PREMIUM_COUNT", "1"),
            ("PREMIUM_USD_PER_DAY", "0.01"),
            ("PREMIUM_PRICE_BRAVE", "5"),
        ],
    )
    .await;
    let brave = s.provider(Brave);
    for query in ["cap one", "cap two"] {
        let reply = s.gateway.search(&[("q", query), ("explain", "1")]).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(brave.calls(), 2);
    let response = s
        .gateway
        .http
        .get(format!("{}/search", s.gateway.url))
        .query(&[("q", "cap three"), ("format", "json"), ("explain", "1")])
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(
        response.headers()["x-gateway-premium"],
        "global_budget_spent"
    );
    let reply = crate::support::gateway::TestGateway::reply(response).await;
    assert_eq!(reply.status, 200, "SearXNG still answers");
    assert_eq!(
        reply.json["gateway"]["premium"]["reason"],
        "global_budget_spent"
    );
    assert_eq!(brave.calls(), 2, "no premium call past the cap");
    let status = s.gateway.status().await;
    assert_eq!(status["premium_spend"]["capped"], true, "{status}");
    assert_eq!(status["premium_spend"]["usd_per_day_cap"], 0.01);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cheapest_policy_spends_the_free_tier_first() {
    let s = SimStack::start(
        &[simulator::Provider::Brave, simulator::Provider::Exa],
        &[
            ("PROVIDER_POLICY", "cheapest"),
            ("PREMIUM_PRICE_EXA", "0"),
            ("T1_PREMIUM_COUNT", "1"),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await;
    for i in 0..4 {
        s.gateway.search(&[("q", &format!("cheap {i}"))]).await;
    }
    assert_eq!(
        s.provider_calls(),
        [0, 4],
        "Exa (free here) takes every call while it answers"
    );
    s.provider(simulator::Provider::Exa).set_behaviour(
        simulator::premium::ProviderBehaviour::Error(simulator::premium::SimError::Quota),
    );
    s.gateway.search(&[("q", "cheap spent")]).await;
    s.gateway.search(&[("q", "cheap after")]).await;
    assert_eq!(s.provider_calls(), [1, 5], "then the paid one");
}
