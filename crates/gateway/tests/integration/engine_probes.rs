//! Blocked SearXNG engines are probed by the gateway itself (#29), never inside a client's search:
//! read request by request from what the simulated SearXNG saw.

use simulator::searxng::{EngineBehaviour, EngineFailure, DEFAULT_RESULTS_PER_ENGINE};
use simulator::Provider;

use crate::support::stack::SimStack;
use crate::support::wait;

/// A request's parameter, if it was sent.
fn param<'a>(request: &'a [(String, String)], name: &str) -> Option<&'a str> {
    request
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Whether a request searched `engine` (no `engines=`: every engine, as the simulator does).
fn searched(request: &[(String, String)], engine: &str) -> bool {
    param(request, "engines").is_none_or(|list| list.split(',').any(|e| e == engine))
}

/// The gateway's probes of `engine`: requests naming it alone.
fn probes(requests: &[Vec<(String, String)>], engine: &str) -> Vec<usize> {
    requests
        .iter()
        .enumerate()
        .filter(|(_, r)| param(r, "engines") == Some(engine))
        .map(|(i, _)| i)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_engine_is_probed_alone_once_per_open_period_and_clients_get_it_back_after_the_probe(
) {
    let s = SimStack::start(
        &[Provider::Brave],
        &[
            ("BREAKER_OPEN_SECONDS", "1"),
            ("BREAKER_JITTER", "0"),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await;
    s.gateway.wait_for_catalog().await;
    s.searxng
        .set_engine("gamma", EngineBehaviour::Fails(EngineFailure::Captcha));
    let trip = s.gateway.search(&[("q", "client trips gamma")]).await;
    assert_eq!(trip.status, 200, "{}", trip.text);
    assert_eq!(s.gateway.breaker("engine", "gamma").await["state"], "open");
    let first_client = s.searxng.requests().len() - 1;

    // Clients keep searching through the first open period (1 s) and its probe, which finds gamma
    // still blocked and opens a longer one (2 s).
    let g = &s.gateway;
    let searxng = &s.searxng;
    let mut n = 0;
    wait::until("the first probe of gamma", || {
        n += 1;
        let q = format!("client {n}");
        async move {
            assert_eq!(g.search(&[("q", &q)]).await.status, 200);
            probes(&searxng.requests(), "gamma").len() == 1
        }
    })
    .await;
    wait::until("the failed probe to reopen gamma", || async {
        g.breaker("engine", "gamma").await["state"] == "open"
    })
    .await;

    // Healed; clients search on through the second period until its probe closes gamma.
    s.searxng.set_engine(
        "gamma",
        EngineBehaviour::Ok {
            results: DEFAULT_RESULTS_PER_ENGINE,
        },
    );
    wait::until("the second probe to close gamma", || {
        n += 1;
        let q = format!("client {n}");
        async move {
            assert_eq!(g.search(&[("q", &q)]).await.status, 200);
            g.breaker("engine", "gamma").await["state"] == "closed"
        }
    })
    .await;
    let after = s.gateway.search(&[("q", "client after recovery")]).await;
    assert_eq!(after.status, 200);

    let requests = s.searxng.requests();
    let probed = probes(&requests, "gamma");
    assert_eq!(probed.len(), 2, "one probe per open period: {probed:?}");
    assert_eq!(
        s.searxng.engine_observations().probes,
        2,
        "each probe is marked as one (x-searxng-gateway-probe), so SearXNG can tell it from a search"
    );
    let recovered_at = probed[1];
    for (i, request) in requests.iter().enumerate().skip(first_client + 1) {
        if probed.contains(&i) {
            assert!(
                param(request, "q").is_some_and(|q| q.starts_with("client")),
                "a probe asks a recent client query: {request:?}"
            );
        } else if i < recovered_at {
            assert!(
                !searched(request, "gamma"),
                "client request {i} carried gamma before its probe succeeded: {request:?}"
            );
        }
    }
    assert!(
        searched(&requests[requests.len() - 1], "gamma"),
        "a recovered gamma is searched again"
    );
    for (outcome, count) in [("blocked", 1.0), ("recovered", 1.0)] {
        assert_eq!(
            g.metric(
                "searxng_gateway_engine_probes_total",
                &[("engine", "gamma"), ("outcome", outcome)]
            )
            .await,
            count,
            "{outcome}"
        );
    }
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_recovery_total",
            &[("engine", "gamma"), ("kind", "engine")]
        )
        .await,
        1.0
    );
}
