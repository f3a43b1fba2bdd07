//! The pool in front of simulated SearXNG instances, for what the simulator scripts more cheaply than
//! a real SearXNG: an instance answering 5xx or hanging fails over within the request and is ejected;
//! the `instance` label exists for a pool and not for one instance; `/status` lists every instance.

use simulator::searxng::{SearxngMode, SimulatedSearxng};

use crate::support::gateway::{metric_value, TestGateway};
use crate::support::wait;

const ENGINES: [&str; 2] = ["alpha", "beta"];

async fn instances(count: usize) -> Vec<SimulatedSearxng> {
    let mut all = Vec::new();
    for _ in 0..count {
        all.push(
            SimulatedSearxng::start(&ENGINES)
                .await
                .expect("simulated SearXNG starts"),
        );
    }
    all
}

async fn gateway(instances: &[SimulatedSearxng], vars: &[(&str, &str)]) -> TestGateway {
    let urls: Vec<String> = instances.iter().map(SimulatedSearxng::base_url).collect();
    let urls = urls.join(",");
    let mut env: Vec<(&str, &str)> =
        vec![("SEARXNG_BACKEND_URL", urls.as_str()), ("CACHE_SIZE", "0")];
    env.extend_from_slice(vars);
    let gateway = TestGateway::start(&env).await;
    gateway.wait_for_catalog().await;
    gateway
}

fn name(instance: &SimulatedSearxng) -> String {
    instance.address().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_instance_has_no_instance_label_and_one_status_entry() {
    let searxng = instances(1).await;
    let g = gateway(&searxng, &[]).await;
    let reply = g.search(&[("q", "single")]).await;
    assert_eq!(reply.outcome, "searxng_ok");
    let metrics = g.metrics_text().await;
    assert!(
        !metrics.contains("searxng_instance="),
        "a single instance's exposition is as it always was:\n{metrics}"
    );
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_searxng_requests_total",
            &[("result", "ok")]
        ),
        1.0
    );
    let status = g.status().await;
    let listed = status["searxng"]["instances"]
        .as_array()
        .expect("instances");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], name(&searxng[0]));
    assert_eq!(listed[0]["state"], "closed");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instance_answering_5xx_fails_over_within_the_request_and_is_ejected() {
    let searxng = instances(2).await;
    let g = gateway(
        &searxng,
        &[
            ("SEARXNG_FAIL_THRESHOLD", "2"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "600"),
        ],
    )
    .await;
    searxng[0].set_mode(SearxngMode::Status(500));
    let broken = name(&searxng[0]);
    let mut i = 0;
    wait::until("the failing instance to be ejected", || {
        i += 1;
        let query = format!("failover {i}");
        let g = &g;
        let broken = &broken;
        async move {
            let reply = g.search(&[("q", query.as_str())]).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            assert_eq!(
                reply.outcome, "searxng_ok",
                "retried on the healthy instance"
            );
            let status = g.status().await;
            status["searxng"]["instances"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|i| i["name"] == broken.as_str() && i["state"] == "open")
        }
    })
    .await;
    let hits = searxng[0].hits();
    for i in 0..5 {
        let reply = g.search(&[("q", &format!("after ejection {i}"))]).await;
        assert_eq!(reply.outcome, "searxng_ok");
    }
    assert_eq!(searxng[0].hits(), hits, "an ejected instance is not called");

    let metrics = g.metrics_text().await;
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_searxng_cooldown_active",
            &[("searxng_instance", &broken)]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_searxng_cooldown_active",
            &[("searxng_instance", &name(&searxng[1]))]
        ),
        0.0
    );
    assert!(
        metric_value(
            &metrics,
            "searxng_gateway_retry_attempts_total",
            &[
                ("attempt", "1"),
                ("outcome", "failure"),
                ("error_class", "server_error"),
                ("searxng_instance", &broken)
            ]
        ) >= 2.0
    );
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_circuit_breaker_trips_total",
            &[
                ("engine", "searxng"),
                ("kind", "searxng"),
                ("reason", "transient"),
                ("searxng_instance", &broken)
            ]
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_instance_times_out_and_the_request_is_answered_by_another() {
    let searxng = instances(2).await;
    let g = gateway(
        &searxng,
        &[
            ("SEARXNG_TIMEOUT_SECONDS", "0.5"),
            ("FALLBACK_TIMEOUT_SECONDS", "20"),
        ],
    )
    .await;
    searxng[0].set_mode(SearxngMode::Hang);
    let (hanging_before, healthy_before) = (searxng[0].hits(), searxng[1].hits());
    // Instances that were never sent a search go first: the hanging one gets the first attempt.
    let reply = g.search(&[("q", "hang over")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.outcome, "searxng_ok");
    assert_eq!(
        searxng[0].hits(),
        hanging_before + 1,
        "the first attempt went to the hanging instance"
    );
    assert_eq!(
        searxng[1].hits(),
        healthy_before + 1,
        "the retry went to the other"
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_searxng_timeouts_total",
            &[("searxng_instance", &name(&searxng[0]))]
        )
        .await,
        1.0
    );
}
