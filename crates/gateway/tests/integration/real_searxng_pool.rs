//! The gateway in front of a pool of two or three REAL SearXNG instances, each with its own loopback
//! engine upstream (so one instance's `alpha` can be blocked while another's is fine). What each
//! upstream received tells which instance served a search; `/status` and the metrics tell what the
//! gateway understood. Every search runs with the cache off, so each one reaches SearXNG.

use crate::support::external::needs;
use std::time::Duration;

use crate::support::engine_upstream::{EngineBehaviour, EngineUpstream};
use crate::support::gateway::{metric_value, Reply, TestGateway};
use crate::support::searxng::{SearxngInstance, SearxngOptions};
use crate::support::wait;

/// One SearXNG instance and the upstream behind its engines.
struct Member {
    upstream: EngineUpstream,
    searxng: SearxngInstance,
}

impl Member {
    /// The instance's name in `/status` and the `instance` label: `host:port`.
    fn name(&self) -> String {
        self.searxng
            .base_url()
            .trim_start_matches("http://")
            .to_owned()
    }

    /// Searches this instance served: every search reaches `beta`, which no test blocks.
    fn searches(&self) -> usize {
        self.upstream.hits("beta")
    }
}

struct Pool {
    members: Vec<Member>,
    gateway: TestGateway,
}

async fn pool(size: usize, vars: &[(&str, &str)]) -> Pool {
    let mut members = Vec::new();
    for _ in 0..size {
        let upstream = EngineUpstream::start().await;
        let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
        // SearXNG's first search is slow (engines warm up); the gateway's first latency sample of
        // each instance should be a normal one.
        let warm_up = reqwest::get(format!(
            "{}/search?q=warm+up&format=json",
            searxng.base_url()
        ))
        .await
        .expect("SearXNG answers directly");
        assert!(warm_up.status().is_success());
        members.push(Member { upstream, searxng });
    }
    let urls: Vec<String> = members.iter().map(|m| m.searxng.base_url()).collect();
    let urls = urls.join(",");
    let mut env: Vec<(&str, &str)> = vec![
        ("SEARXNG_BACKEND_URL", urls.as_str()),
        ("FALLBACK_TIMEOUT_SECONDS", "10"),
        ("SEARXNG_TIMEOUT_SECONDS", "5"),
        ("CACHE_SIZE", "0"),
    ];
    env.extend_from_slice(vars);
    let gateway = TestGateway::start(&env).await;
    gateway.wait_for_catalog().await;
    Pool { members, gateway }
}

impl Pool {
    fn searches(&self) -> Vec<usize> {
        self.members.iter().map(Member::searches).collect()
    }

    /// `/status`'s entry for `member`.
    async fn instance_status(&self, member: usize) -> serde_json::Value {
        let name = self.members[member].name();
        let status = self.gateway.status().await;
        status["searxng"]["instances"]
            .as_array()
            .and_then(|all| all.iter().find(|i| i["name"] == name.as_str()))
            .cloned()
            .unwrap_or_else(|| panic!("no instance {name} in /status: {status}"))
    }

    async fn wait_for_state(&self, member: usize, state: &str) {
        wait::until(
            &format!("instance {member} to turn {state}"),
            || async move { self.instance_status(member).await["state"] == state },
        )
        .await;
    }
}

/// `searches` searches from `clients` concurrent clients, each on its own query; every reply.
async fn load(gateway: &TestGateway, clients: usize, searches: usize, tag: &str) -> Vec<Reply> {
    let per_client = searches.div_ceil(clients);
    let tasks = (0..clients).map(|client| async move {
        let mut replies = Vec::new();
        for i in 0..per_client {
            let query = format!("{tag} {client} {i}");
            replies.push(gateway.search(&[("q", query.as_str())]).await);
        }
        replies
    });
    futures::future::join_all(tasks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

fn assert_all_answered_by_searxng(replies: &[Reply]) {
    for reply in replies {
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.outcome, "searxng_ok", "{}", reply.text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_captcha_on_one_instances_engine_excludes_it_on_that_instance_only() {
    needs!(Searxng);
    let p = pool(2, &[("BREAKER_OPEN_SECONDS", "600")]).await;
    let (a, b) = (&p.members[0], &p.members[1]);
    let (a_alpha, b_alpha) = (a.upstream.hits("alpha"), b.upstream.hits("alpha"));
    a.upstream.set("alpha", EngineBehaviour::Captcha);
    // Instances never sent a search go first: A, then B.
    for i in 0..2 {
        let reply = p.gateway.search(&[("q", &format!("warm {i}"))]).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(
        (
            a.upstream.hits("alpha") - a_alpha,
            b.upstream.hits("alpha") - b_alpha
        ),
        (1, 1),
        "each instance searched alpha once"
    );
    let a_status = p.instance_status(0).await;
    assert_eq!(a_status["excluded_engines"], serde_json::json!(["alpha"]));
    let b_status = p.instance_status(1).await;
    assert_eq!(b_status["excluded_engines"], serde_json::json!([]));
    assert!(b_status["latency_seconds"].as_f64().is_some(), "{b_status}");

    let (a_before, b_before) = (a.searches(), b.searches());
    let replies = load(&p.gateway, 1, 8, "after the captcha").await;
    assert_all_answered_by_searxng(&replies);
    let (to_a, to_b) = (a.searches() - a_before, b.searches() - b_before);
    assert_eq!(to_a + to_b, 8, "each search went to one instance");
    assert_eq!(
        a.upstream.hits("alpha") - a_alpha,
        1,
        "alpha stays excluded on A"
    );
    assert_eq!(
        b.upstream.hits("alpha") - b_alpha - 1,
        to_b,
        "alpha is searched on B with every search B serves"
    );
    assert!(
        to_b > to_a,
        "the instance whose alpha is not excluded is preferred ({to_b} vs {to_a})"
    );

    let metrics = p.gateway.metrics_text().await;
    let breaker = |member: &Member| {
        metric_value(
            &metrics,
            "searxng_gateway_circuit_breaker_state",
            &[
                ("engine", "alpha"),
                ("kind", "engine"),
                ("searxng_instance", &member.name()),
            ],
        )
    };
    assert_eq!(
        (breaker(a), breaker(b)),
        (2.0, 0.0),
        "open on A, closed on B"
    );
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_engine_unresponsive_total",
            &[
                ("engine", "alpha"),
                ("reason", "captcha"),
                ("searxng_instance", &a.name())
            ]
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instance_killed_mid_load_costs_no_failed_request() {
    needs!(Searxng);
    let mut p = pool(3, &[("SEARXNG_FAIL_THRESHOLD", "2")]).await;
    let before = p.searches();
    let gateway = &p.gateway;
    let members = &mut p.members;
    let killer = async {
        // Mid-load: once the pool has served a part of it, the instance that served the most so far
        // (the one the balancer favours now) dies.
        wait::until("the pool to serve part of the load", || {
            let members = &*members;
            let before = &before;
            async move {
                let served: usize = members.iter().map(Member::searches).sum();
                served >= before.iter().sum::<usize>() + 20
            }
        })
        .await;
        let busiest = (0..members.len())
            .max_by_key(|&m| members[m].searches() - before[m])
            .unwrap_or(0);
        members[busiest].searxng.kill();
        busiest
    };
    let (replies, victim) = tokio::join!(load(gateway, 4, 120, "under load"), killer);
    assert_eq!(replies.len(), 120);
    assert_all_answered_by_searxng(&replies);
    let killed = p.members[victim].name();

    let metrics = p.gateway.metrics_text().await;
    let failed_attempts: f64 = ["connect", "truncated", "timeout"]
        .iter()
        .map(|class| {
            (1..=3)
                .map(|attempt| {
                    metric_value(
                        &metrics,
                        "searxng_gateway_retry_attempts_total",
                        &[
                            ("attempt", &attempt.to_string()),
                            ("outcome", "failure"),
                            ("error_class", class),
                            ("searxng_instance", &killed),
                        ],
                    )
                })
                .sum::<f64>()
        })
        .sum();
    assert!(
        failed_attempts >= 1.0,
        "searches reached the killed instance after the kill, and were retried elsewhere"
    );
    // Every further search is answered while the dead instance is ejected (each failed call on it
    // counts; it gets a trickle of attempts until the threshold).
    let mut i = 0;
    wait::until("the killed instance to be ejected", || {
        i += 1;
        let query = format!("after the kill {i}");
        let p = &p;
        async move {
            let reply = p.gateway.search(&[("q", query.as_str())]).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            assert_eq!(reply.outcome, "searxng_ok");
            p.instance_status(victim).await["state"] == "open"
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recovered_instance_gets_traffic_again_after_exactly_one_probe() {
    needs!(Searxng);
    let mut p = pool(
        2,
        &[
            ("SEARXNG_FAIL_THRESHOLD", "1"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "2"),
            ("SEARXNG_MAX_COOLDOWN_SECONDS", "2"),
        ],
    )
    .await;
    p.members[0].searxng.kill();
    let mut i = 0;
    wait::until("the killed instance to be ejected", || {
        i += 1;
        let query = format!("while A is down {i}");
        let p = &p;
        async move {
            let reply = p.gateway.search(&[("q", query.as_str())]).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            p.instance_status(0).await["state"] == "open"
        }
    })
    .await;
    p.members[0].searxng.restart().await;
    // The probe is held at A's engine upstream while more searches are decided.
    let a = &p.members[0];
    let a_before = a.searches();
    a.upstream
        .set("beta", EngineBehaviour::Slow(Duration::from_millis(1500)));
    p.wait_for_state(0, "half_open").await;
    let probe = p.gateway.spawn_search(&[("q", "the probe")]);
    wait::until("the probe to reach instance A", || async move {
        a.searches() == a_before + 1
    })
    .await;
    let others = load(&p.gateway, 5, 5, "while probing").await;
    assert_all_answered_by_searxng(&others);
    assert_eq!(
        a.searches(),
        a_before + 1,
        "exactly one search probed the half-open instance"
    );
    let probe = probe.await.expect("the probe's task");
    assert_eq!(probe.status, 200, "{}", probe.text);
    p.wait_for_state(0, "closed").await;

    a.upstream.set("beta", EngineBehaviour::default());
    let after_probe = a.searches();
    let mut i = 0;
    wait::until("instance A to serve searches again", || {
        i += 1;
        let query = format!("after the recovery {i}");
        let p = &p;
        async move {
            let reply = p.gateway.search(&[("q", query.as_str())]).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            p.members[0].searches() > after_probe
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn load_over_three_healthy_instances_is_spread_fairly() {
    needs!(Searxng);
    let p = pool(3, &[]).await;
    let before = p.searches();
    let replies = load(&p.gateway, 6, 90, "spread").await;
    assert_all_answered_by_searxng(&replies);
    let served: Vec<usize> = p
        .searches()
        .iter()
        .zip(&before)
        .map(|(now, then)| now - then)
        .collect();
    assert_eq!(served.iter().sum::<usize>(), 90, "{served:?}");
    let fair = 90 / 3;
    for (member, count) in served.iter().enumerate() {
        assert!(
            *count <= 2 * fair,
            "instance {member} served {count} of 90 searches (fair share {fair}): {served:?}"
        );
    }
    let metrics = p.gateway.metrics_text().await;
    for (member, count) in served.iter().enumerate() {
        assert_eq!(
            metric_value(
                &metrics,
                "searxng_gateway_searxng_requests_total",
                &[
                    ("result", "ok"),
                    ("searxng_instance", &p.members[member].name())
                ]
            ) as usize,
            *count,
            "the instance label counts what each instance served"
        );
    }
}
