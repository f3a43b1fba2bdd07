//! Several gateway replicas sharing one real `redis-server` (`REDIS_URL`): each replica is a gateway
//! of its own (its own cache, breakers and pool), in front of the same simulators. What one learns,
//! the others know: an answer, a computation in flight, a provider's 429, a CAPTCHA'd engine, the
//! probe that ends a shared open period. And Redis going away — killed, or frozen with SIGSTOP —
//! never costs a search, nor does a replica dying while others wait on its computation.

use crate::support::external::needs;
use std::time::Duration;

use futures::future::join_all;
use simulator::premium::{ProviderBehaviour, SimError};
use simulator::searxng::{EngineBehaviour, EngineFailure, SearxngMode};
use simulator::Provider::{self, Brave, Exa};

use crate::support::gateway::TestGateway;
use crate::support::process::GatewayProcess;
use crate::support::redis::RedisServer;
use crate::support::stack::SimStack;
use crate::support::wait;

/// A stack whose gateway (Brave its provider) shares `redis`, plus `more` replicas of it.
async fn replicas(
    redis: &RedisServer,
    more: usize,
    vars: &[(&str, &str)],
) -> (SimStack, Vec<TestGateway>) {
    replicas_of(&[Brave], redis, more, vars).await
}

/// Like [`replicas`], with these providers.
async fn replicas_of(
    providers: &[Provider],
    redis: &RedisServer,
    more: usize,
    vars: &[(&str, &str)],
) -> (SimStack, Vec<TestGateway>) {
    let url = redis.url();
    let mut all = vec![("REDIS_URL", url.as_str())];
    all.extend_from_slice(vars);
    let mut stack = SimStack::start(providers, &all).await;
    let mut others = Vec::new();
    for _ in 0..more {
        others.push(stack.replica().await);
    }
    (stack, others)
}

/// A gateway's Brave breaker state and reason from `/status`.
/// Brave's key's breaker (a 429 sets the key aside), as `/status` shows it.
async fn brave(g: &TestGateway) -> (String, String) {
    let key = g.key_name("brave").await;
    let b = g.breaker("key", &key).await;
    (
        b["state"].as_str().unwrap_or("").to_owned(),
        b["reason"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_computed_by_one_replica_is_a_hit_on_another() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 1, &[]).await;
    let (a, b) = (&s.gateway, &others[0]);

    let first = a.search(&[("q", "shared answer")]).await;
    assert_eq!((first.status, first.cache.as_str()), (200, "miss"));
    let on_b = b.search(&[("q", "shared answer")]).await;
    assert_eq!(
        (on_b.status, on_b.cache.as_str(), on_b.tier.as_str()),
        (200, "hit", "redis"),
        "B never computed it: {on_b:?}"
    );
    assert_eq!(on_b.json["results"], first.json["results"]);
    assert_eq!(on_b.outcome, "cache_hit");
    assert_eq!(s.searxng_hits(), 1, "one SearXNG call for both replicas");
    let again = b.search(&[("q", "shared answer")]).await;
    assert_eq!(
        (again.cache.as_str(), again.tier.as_str()),
        ("hit", "local")
    );
    assert_eq!(
        b.metric(
            "searxng_gateway_shared_cache_requests_total",
            &[("result", "hit")]
        )
        .await,
        1.0
    );
    assert_eq!(
        a.metric(
            "searxng_gateway_shared_cache_requests_total",
            &[("result", "miss")]
        )
        .await,
        1.0
    );
    assert_eq!(b.metric("searxng_gateway_redis_connected", &[]).await, 1.0);
    let status = b.status().await;
    assert_eq!(status["redis"]["connected"], true, "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_value_this_version_cannot_read_is_a_counted_miss() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 1, &[]).await;
    let (a, b) = (&s.gateway, &others[0]);
    a.search(&[("q", "versioned")]).await;
    // Every stored answer rewritten as a future version would write it.
    redis.rewrite_answers(b"sxgw\x09 from a later version");
    let on_b = b.search(&[("q", "versioned")]).await;
    assert_eq!((on_b.status, on_b.cache.as_str()), (200, "miss"));
    assert_eq!(s.searxng_hits(), 2, "B computed it again");
    assert_eq!(
        b.metric(
            "searxng_gateway_shared_cache_requests_total",
            &[("result", "unreadable")]
        )
        .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_identical_cold_queries_over_three_replicas_reach_searxng_once() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    // What is checked is the coalescing, not Redis's speed: with the default 50 ms bound on each
    // Redis call, a claim or a poll starved of CPU on a loaded machine (a CI run, a build beside
    // it) times out and that replica computes on its own — by design, Redis being slow never
    // costs a search — and SearXNG was reached twice (seen once in CI, 2026-12-06). 500 ms: ten
    // times the default, and short enough that a slow claim still leaves the leader's 1.5 s lease
    // alive until its first renewal.
    let (s, others) = replicas(&redis, 2, &[("REDIS_TIMEOUT_MS", "500")]).await;
    // Slow enough that all thirty arrive while the first is still computing.
    s.searxng
        .set_mode(SearxngMode::Delay(Duration::from_millis(700)));
    let gateways = [&s.gateway, &others[0], &others[1]];
    let searches = (0..30).map(|i| gateways[i % 3].spawn_search(&[("q", "stampede")]));
    let replies = wait::guarded("thirty searches", join_all(searches)).await;
    for reply in replies {
        let reply = reply.expect("search task");
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(!reply.json["results"].as_array().is_none_or(Vec::is_empty));
    }
    assert_eq!(s.searxng_hits(), 1, "one fan-out across three replicas");
    // Each other replica followed the leader once — or, reaching Redis after the leader had
    // stored its answer (a replica stalled on a loaded machine), found it there.
    let (mut coalesced, mut shared_hits) = (0.0, 0.0);
    for g in gateways {
        coalesced += g
            .metric("searxng_gateway_shared_coalesced_total", &[])
            .await;
        shared_hits += g
            .metric(
                "searxng_gateway_shared_cache_requests_total",
                &[("result", "hit")],
            )
            .await;
    }
    assert_eq!(
        (coalesced + shared_hits, coalesced >= 1.0),
        (2.0, true),
        "each other replica followed the leader or found its answer: {coalesced} followed, \
         {shared_hits} hits"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_seen_by_one_replica_stops_the_others_calling_that_provider() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 2, &[("T1_PREMIUM_COUNT", "1")]).await;
    let (a, b, c) = (&s.gateway, &others[0], &others[1]);
    let brave_sim = s.provider(Brave);
    brave_sim.set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
        retry_after_secs: 600,
    }));
    a.search(&[("q", "tripping")]).await;
    assert_eq!(brave_sim.calls(), 1);
    assert_eq!(brave(a).await, ("open".into(), "rate_limited".into()));

    for (i, g) in [b, c].into_iter().enumerate() {
        let reply = g.search(&[("q", &format!("elsewhere {i}"))]).await;
        assert_eq!(reply.status, 200, "SearXNG still answers");
        assert_eq!(brave(g).await, ("open".into(), "rate_limited".into()));
        let key = g.key_name("brave").await;
        let open_for = g.breaker("key", &key).await["open_for_seconds"]
            .as_f64()
            .unwrap_or(0.0);
        assert!(
            open_for > 500.0,
            "the server's reset hint is shared: {open_for}"
        );
    }
    assert_eq!(brave_sim.calls(), 1, "B and C never called Brave");
}

#[tokio::test(flavor = "multi_thread")]
async fn exactly_one_probe_across_replicas_ends_a_shared_open_period() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(
        &redis,
        2,
        &[
            ("T1_PREMIUM_COUNT", "1"),
            ("BREAKER_OPEN_SECONDS", "1"),
            ("SEARXNG_SLOW_SECONDS", "10"),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await;
    let gateways = [&s.gateway, &others[0], &others[1]];
    let brave_sim = s.provider(Brave);
    brave_sim.set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
        retry_after_secs: 1,
    }));
    gateways[0].search(&[("q", "trip")]).await;
    assert_eq!(brave_sim.calls(), 1);
    for (i, g) in gateways.iter().enumerate().skip(1) {
        g.search(&[("q", &format!("learn {i}"))]).await;
        assert_eq!(brave(g).await.0, "open");
    }
    let key = gateways[0].key_name("brave").await;
    gateways[0].wait_until_half_open("key", &key).await;
    // The probe is slow, so every other search is decided while it is out.
    brave_sim.set_behaviour(ProviderBehaviour::slow(
        Duration::from_millis(1500),
        ProviderBehaviour::results(3, "https://b.example/"),
    ));
    let searches = (0..12).map(|i| gateways[i % 3].spawn_search(&[("q", &format!("after {i}"))]));
    let replies = wait::guarded("searches after the open period", join_all(searches)).await;
    for reply in replies {
        assert_eq!(reply.expect("search task").status, 200);
    }
    assert_eq!(brave_sim.calls(), 2, "the trip, then one probe in total");
    // The probe's success closes it everywhere (each replica learns it on its next miss).
    for (i, g) in gateways.iter().enumerate() {
        g.search(&[("q", &format!("closed {i}"))]).await;
        assert_eq!(brave(g).await.0, "closed", "replica {i}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_captchad_engine_seen_by_one_replica_is_excluded_by_another() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 1, &[]).await;
    let (a, b) = (&s.gateway, &others[0]);
    s.searxng
        .set_engine("alpha", EngineBehaviour::Fails(EngineFailure::Captcha));
    a.search(&[("q", "captcha")]).await;
    assert_eq!(a.breaker("engine", "alpha").await["reason"], "captcha");

    b.search(&[("q", "after captcha")]).await;
    let sent = s.searxng.last_request().expect("SearXNG called");
    let engines = sent
        .iter()
        .find(|(k, _)| k == "engines")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assert!(
        !engines.is_empty() && !engines.split(',').any(|e| e == "alpha"),
        "B excludes alpha without having seen the CAPTCHA itself: engines={engines:?}"
    );
    assert_eq!(b.breaker("engine", "alpha").await["state"], "open");
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_on_a_redis_hit_shows_which_replica_computed_it_when_and_its_fan_out() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 1, &[("T1_PREMIUM_COUNT", "1")]).await;
    let (a, b) = (&s.gateway, &others[0]);

    let first = a
        .search(&[("q", "explained elsewhere"), ("explain", "1")])
        .await;
    let here = &first.json["gateway"];
    assert_eq!(here["cache"]["status"], "miss");
    let on_b = b
        .search(&[("q", "explained elsewhere"), ("explain", "1")])
        .await;
    let there = &on_b.json["gateway"];
    assert_eq!(
        (&there["cache"]["status"], &there["cache"]["tier"]),
        (&"hit".into(), &"redis".into()),
        "{there}"
    );
    let a_id = a.status().await["redis"]["replica"].clone();
    assert!(a_id.is_string(), "/status names the replica");
    assert_eq!(there["cache"]["computed_by"], a_id, "{there}");
    assert_ne!(
        there["cache"]["computed_by"],
        b.status().await["redis"]["replica"]
    );
    assert!(there["cache"]["age_ms"].as_u64().is_some(), "{there}");
    assert_eq!(
        there["fanout"], here["fanout"],
        "B shows the fan-out A ran: its calls, in full"
    );
    let names: Vec<&str> = there["fanout"]["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["searxng", "brave"], "{there}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quota_windows_brave_reported_to_one_replica_show_on_another() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 1, &[("BREAKER_FAILURE_THRESHOLD", "10")]).await;
    let (a, b) = (&s.gateway, &others[0]);
    let windows = |status: serde_json::Value| status["providers"][0]["quota_windows"].clone();
    assert_eq!(windows(b.status().await), serde_json::json!([]));

    // SearXNG fails once: A's fallback calls Brave, which reports its windows.
    s.searxng.set_mode(SearxngMode::Status(500));
    assert_eq!(a.search(&[("q", "brave reports")]).await.status, 200);
    s.searxng.set_mode(SearxngMode::Normal);
    let on_a = windows(a.status().await);
    assert!(
        on_a.as_array()
            .is_some_and(|w| w.iter().any(|w| w["window"] == "month")),
        "{on_a}"
    );

    // B never calls Brave (SearXNG answers its miss), yet knows the windows after that miss.
    assert_eq!(b.search(&[("q", "searxng answers")]).await.status, 200);
    assert_eq!(s.provider(Brave).calls(), 1, "only A called Brave");
    let on_b = windows(b.status().await);
    let month = |w: &serde_json::Value| {
        w.as_array()
            .and_then(|w| w.iter().find(|w| w["window"] == "month"))
            .map(|m| (m["limit"].clone(), m["remaining"].clone()))
    };
    assert!(month(&on_b).is_some(), "{on_b}");
    assert_eq!(month(&on_b), month(&on_a), "B shows what Brave told A");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_engine_is_probed_by_one_replica_alone_and_its_recovery_reaches_every_replica() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(
        &redis,
        2,
        &[
            ("BREAKER_OPEN_SECONDS", "1"),
            // Probe at the end of the period on every replica, whatever each one's traffic: the
            // replicas race for it.
            ("BREAKER_MAX_OPEN_SECONDS", "1"),
            ("BREAKER_JITTER", "0"),
            ("CACHE_SIZE", "0"),
            // Redis decides the race, not the machine's load: a claim that outlasts the Redis
            // timeout (50 ms by default; a loaded CI machine has seen it) is skipped, and that
            // replica probes on its own, as it does with Redis away.
            ("REDIS_TIMEOUT_MS", "5000"),
        ],
    )
    .await;
    let all: Vec<&TestGateway> = std::iter::once(&s.gateway).chain(others.iter()).collect();
    for g in &all {
        g.wait_for_catalog().await;
    }
    s.searxng
        .set_engine("alpha", EngineBehaviour::Fails(EngineFailure::Captcha));
    s.gateway.search(&[("q", "captcha")]).await;
    for (i, g) in all.iter().enumerate() {
        g.search(&[("q", &format!("adopt {i}"))]).await;
        assert_eq!(
            g.breaker("engine", "alpha").await["state"],
            "open",
            "replica {i}"
        );
    }
    s.searxng.set_engine(
        "alpha",
        EngineBehaviour::Ok {
            results: simulator::searxng::DEFAULT_RESULTS_PER_ENGINE,
        },
    );
    // The three replicas' probers race for the ended period: one of them probes, the others lose
    // the claim (open for the claim's hold) or find it closed already.
    let probes = || {
        s.searxng
            .requests()
            .iter()
            .filter(|r| r.iter().any(|(k, v)| k == "engines" && v == "alpha"))
            .count()
    };
    wait::until("one replica to probe alpha", || async { probes() >= 1 }).await;
    for (i, g) in all.iter().enumerate() {
        wait::until(&format!("replica {i}'s prober to settle alpha"), || async {
            let alpha = g.breaker("engine", "alpha").await;
            alpha["state"] == "closed"
                || (alpha["state"] == "open"
                    && alpha["open_for_seconds"].as_f64().unwrap_or(0.0) > 5.0)
        })
        .await;
    }
    assert_eq!(probes(), 1, "one probe across the replicas");
    for (i, g) in all.iter().enumerate() {
        wait::until(&format!("replica {i} to see alpha closed"), || async {
            g.search(&[("q", &format!("after the probe {i}"))]).await;
            g.breaker("engine", "alpha").await["state"] == "closed"
        })
        .await;
    }
    let mut recovered = 0.0;
    for g in &all {
        recovered += g
            .metric(
                "searxng_gateway_engine_probes_total",
                &[("engine", "alpha"), ("outcome", "recovered")],
            )
            .await;
    }
    assert_eq!(recovered, 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_redis_mid_load_loses_no_request_and_a_restart_restores_sharing() {
    needs!(RedisServer);
    let mut redis = RedisServer::start().await;
    let (s, others) = replicas(&redis, 1, &[]).await;
    let (a, b) = (&s.gateway, &others[0]);
    let load = |tag: &'static str| {
        let searches = (0..40).map(move |i| {
            let g = if i % 2 == 0 { a } else { b };
            g.spawn_search(&[("q", &format!("{tag} {}", i % 10))])
        });
        join_all(searches.collect::<Vec<_>>())
    };
    let before = load("before");
    redis.kill();
    let during = load("during");
    for reply in wait::guarded("searches across the kill", async {
        let mut all = before.await;
        all.extend(during.await);
        all
    })
    .await
    {
        let reply = reply.expect("search task");
        assert_eq!(reply.status, 200, "no request lost: {reply:?}");
    }
    for g in [a, b] {
        wait::until("the replica to see Redis gone", || async move {
            g.status().await["redis"]["connected"] == false
        })
        .await;
    }
    assert_eq!(a.search(&[("q", "while down")]).await.status, 200);
    assert_eq!(
        a.get("/readyz").await.status,
        200,
        "readiness ignores Redis"
    );

    redis.restart().await;
    for g in [a, b] {
        wait::until("the replica to reconnect", || async move {
            g.status().await["redis"]["connected"] == true
        })
        .await;
    }
    a.search(&[("q", "after restart")]).await;
    let on_b = b.search(&[("q", "after restart")]).await;
    assert_eq!(
        (on_b.cache.as_str(), on_b.tier.as_str()),
        ("hit", "redis"),
        "sharing is back"
    );
    assert!(
        a.metric(
            "searxng_gateway_redis_operations_total",
            &[("operation", "read"), ("result", "skipped")]
        )
        .await
            + a.metric(
                "searxng_gateway_redis_operations_total",
                &[("operation", "read"), ("result", "error")]
            )
            .await
            >= 1.0,
        "reads while Redis was away were counted as not done"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_redis_never_stalls_a_search() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    // A searxng timeout no search can wait for, so a stall would show as a hang-guard failure.
    let (s, others) = replicas(&redis, 1, &[("REDIS_TIMEOUT_MS", "50")]).await;
    let (a, b) = (&s.gateway, &others[0]);
    a.search(&[("q", "warm")]).await;
    redis.freeze();
    let searches = (0..20).map(|i| {
        let g = if i % 2 == 0 { a } else { b };
        g.spawn_search(&[("q", &format!("frozen {i}"))])
    });
    for reply in wait::guarded("searches with Redis frozen", join_all(searches)).await {
        assert_eq!(reply.expect("search task").status, 200);
    }
    assert_eq!(a.status().await["redis"]["connected"], false);
    assert!(
        a.metric(
            "searxng_gateway_redis_operations_total",
            &[("operation", "read"), ("result", "timeout")]
        )
        .await
            >= 1.0
    );
    redis.thaw();
    for g in [a, b] {
        wait::until("the replica to reconnect after SIGCONT", || async move {
            g.status().await["redis"]["connected"] == true
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_searxng_cooldown_started_by_one_replica_is_kept_by_another() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas(
        &redis,
        1,
        &[("SEARXNG_FAIL_THRESHOLD", "1"), ("CACHE_SIZE", "0")],
    )
    .await;
    let (a, b) = (&s.gateway, &others[0]);
    s.searxng.set_mode(SearxngMode::Status(500));
    a.search(&[("q", "failing")]).await;
    let after_a = s.searxng_hits();
    assert!(after_a >= 1);
    assert_eq!(
        a.status().await["searxng"]["cooldown"]["state"],
        "open",
        "{}",
        a.status().await
    );
    s.searxng.set_mode(SearxngMode::Normal);
    b.search(&[("q", "cooling")]).await;
    assert_eq!(
        s.searxng_hits(),
        after_a,
        "B skipped SearXNG: it is cooling down"
    );
    assert_eq!(
        b.metric("searxng_gateway_searxng_skipped_total", &[]).await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_provider_rotation_is_fair_across_replicas() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, others) = replicas_of(
        &[Brave, Exa],
        &redis,
        1,
        &[("T1_PREMIUM_COUNT", "1"), ("SEARXNG_SLOW_SECONDS", "10")],
    )
    .await;
    let (a, b) = (&s.gateway, &others[0]);
    a.search(&[("q", "rotate on a")]).await;
    b.search(&[("q", "rotate on b")]).await;
    assert_eq!(
        s.provider_calls(),
        vec![1, 1],
        "one shared counter: B goes on where A left off rather than starting at Brave again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_whose_leader_dies_mid_fan_out_computes_the_answer_itself() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let (s, _) = replicas_of(&[], &redis, 0, &[]).await;
    let redis_url = redis.url();
    let searxng_url = s.searxng.base_url();
    // The leader is a process of its own, so it can die the hard way (SIGKILL: no lease release).
    let mut leader = GatewayProcess::start(&[
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("SEARXNG_BACKEND_URL", &searxng_url),
        ("REDIS_URL", &redis_url),
    ]);
    let leader_url = leader.url().await;
    let http = reqwest::Client::new();
    // Its start-up check of SearXNG done, so the only SearXNG call left is the search's.
    wait::until("the leader to be ready", || async {
        let ready = http.get(format!("{leader_url}/readyz")).send().await;
        ready.is_ok_and(|r| r.status().is_success()) && s.searxng.in_flight() == 0
    })
    .await;
    let hits_before = s.searxng.hits();
    s.searxng
        .set_mode(SearxngMode::Delay(Duration::from_secs(3)));
    let query = [("q", "the leader dies"), ("format", "json")];
    let leader_search = tokio::spawn(
        http.get(format!("{leader_url}/search"))
            .query(&query)
            .send(),
    );
    wait::until("the leader to ask SearXNG", || async {
        s.searxng.in_flight() == 1
    })
    .await;
    let follower = s.gateway.spawn_search(&query);
    let polls = || async {
        s.gateway
            .metric(
                "searxng_gateway_redis_operations_total",
                &[("operation", "flight_poll"), ("result", "ok")],
            )
            .await
    };
    wait::until("the other replica to follow the leader", || async {
        polls().await > 0.0
    })
    .await;

    leader.signal("KILL").await;
    let lost = leader_search.await.expect("leader search task");
    assert!(lost.is_err(), "the killed leader answered: {lost:?}");
    let reply = wait::guarded("the follower's answer", follower)
        .await
        .expect("follower search task");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.cache, "miss");
    assert!(!reply.json["results"].as_array().is_none_or(Vec::is_empty));
    assert_eq!(
        s.searxng.hits() - hits_before,
        2,
        "the dead leader's call, then the follower's own"
    );
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_shared_coalesced_total", &[])
            .await,
        0.0,
        "nobody answered the follower but itself"
    );
}
