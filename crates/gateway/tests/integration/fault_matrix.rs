//! The fault matrix (TESTING.md): SearXNG and each premium provider × every fault of
//! [`Fault::MATRIX`], each cell its own gateway binary at `LOG_LEVEL=debug` in front of the
//! simulators, all cells at once. For every cell: valid JSON from a healthy other upstream (a 200),
//! the right error class in the metrics, no panic, and neither the key nor any upstream body in the
//! reply or the process output. Where the fault holds a call open (a hang, a trickle), the faulty
//! fake's own clock shows the gateway closed every such connection within the upstream's timeout
//! plus [`SLACK`] — measured where the connection ends, not by timing the client, so a loaded machine
//! delays the test, not its verdict.
//!
//! A SearXNG cell has Brave healthy in the T1 pass; a provider cell has SearXNG healthy and calls the
//! faulty provider in the T1 pass. `SEARXNG_SLOW_SECONDS` waits past every upstream timeout, so each
//! faulty call ends by itself — and is counted — before the answer goes out.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use simulator::fault::{Fault, BODY_MARKER};
use simulator::premium::{ProviderBehaviour, SimulatedProvider};
use simulator::searxng::{SearxngMode, SimulatedSearxng};
use simulator::Provider;

use crate::support::gateway::metric_value;
use crate::support::ports::refusing_port;
use crate::support::process::GatewayProcess;
use crate::support::wait;

/// The request budget of every cell (`FALLBACK_TIMEOUT_SECONDS`). SearXNG's three attempts of
/// `SEARXNG_TIMEOUT_SECONDS` (1 s) and backoff, and a provider's `PROVIDER_TIMEOUT_SECONDS` (2 s), end
/// before `SEARXNG_SLOW_SECONDS` (5 s), which ends before the budget.
const BUDGET: Duration = Duration::from_secs(6);
/// Cells running at once: enough to finish in a few budgets, few enough that the healthy
/// upstreams of a loaded 2-core machine still answer within their timeouts.
const CELLS_AT_ONCE: usize = 20;
/// How long past an upstream's timeout the gateway may keep a hanging connection open: a bound for a
/// loaded 2-core machine running 20 gateways at once, not a latency measurement. Only a gateway that
/// never gives up on the call fails it.
const SLACK: Duration = Duration::from_secs(2);
/// `SEARXNG_TIMEOUT_SECONDS` of every cell.
const SEARXNG_TIMEOUT: Duration = Duration::from_secs(1);
/// `PROVIDER_TIMEOUT_SECONDS` of every cell.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(2);

/// Which upstream misbehaves in a cell.
#[derive(Debug, Clone, Copy)]
enum Faulty {
    Searxng,
    Provider(Provider),
}

impl Faulty {
    fn name(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Provider(kind) => kind.as_str(),
        }
    }
}

/// The error class the gateway must report for `fault` at `upstream`.
fn expected_class(upstream: Faulty, fault: Fault) -> &'static str {
    match fault {
        // The fault's 403 is a firewall's HTML page: a block for SearXNG (JSON disabled, a
        // firewall) and for a premium API alike (an HTML page where JSON should be is a challenge
        // or a block, not a refused key).
        Fault::Forbidden => "blocked",
        Fault::RateLimited { .. } => "rate_limited",
        Fault::ServerError | Fault::BadGatewayHtml => "server_error",
        Fault::RefuseConnections => "connect",
        Fault::ResetMidBody | Fault::TruncatedBody => "truncated",
        Fault::AcceptThenHang | Fault::Trickle { .. } => "timeout",
        Fault::Garbage => "malformed",
        // An HTML page with a 200: SearXNG's is unreadable output, a premium API's a bot challenge.
        Fault::HtmlPage => match upstream {
            Faulty::Searxng => "malformed",
            Faulty::Provider(_) => "blocked",
        },
        Fault::HugeBody { .. } => "too_large",
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_upstream_times_every_fault_still_gets_the_client_a_json_answer_in_time() {
    let upstreams: Vec<Faulty> = std::iter::once(Faulty::Searxng)
        .chain(Provider::ALL.map(Faulty::Provider))
        .collect();
    let cells: Vec<_> = upstreams
        .iter()
        .flat_map(|upstream| Fault::MATRIX.iter().map(move |fault| (*upstream, *fault)))
        .collect();
    let count = cells.len();
    let results: Vec<_> = futures::stream::iter(cells)
        .map(|(upstream, fault)| tokio::spawn(cell(upstream, fault)))
        .buffer_unordered(CELLS_AT_ONCE)
        .collect()
        .await;
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(problems) => failures.extend(problems),
            Err(panic) => failures.push(format!("a cell panicked: {panic}")),
        }
    }
    assert_eq!(count, (1 + Provider::ALL.len()) * Fault::MATRIX.len());
    assert!(
        failures.is_empty(),
        "{} problem(s) in the fault matrix:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// One cell; the problems found (empty when it passed).
async fn cell(upstream: Faulty, fault: Fault) -> Vec<String> {
    let label = format!("{} × {}", upstream.name(), fault.name());
    let key = format!("matrix-key-{}-{}", upstream.name(), fault.name());
    let searxng = SimulatedSearxng::start(&["alpha", "beta"])
        .await
        .expect("simulated SearXNG");
    let provider_kind = match upstream {
        Faulty::Searxng => Provider::Brave,
        Faulty::Provider(kind) => kind,
    };
    let provider = SimulatedProvider::start(provider_kind)
        .await
        .expect("simulated provider");
    provider.set_expected_key(&key);
    // A true refusal: nothing listens on the port. Every other fault is served by the fake.
    let (_held, refused_port) = refusing_port();
    let refused = format!("http://127.0.0.1:{refused_port}");
    let mut searxng_url = searxng.base_url();
    let mut provider_url = provider.base_url();
    match (upstream, fault) {
        (Faulty::Searxng, Fault::RefuseConnections) => searxng_url = refused,
        (Faulty::Searxng, _) => searxng.set_mode(SearxngMode::Fault(fault)),
        (Faulty::Provider(_), Fault::RefuseConnections) => provider_url = refused,
        (Faulty::Provider(_), _) => provider.set_behaviour(ProviderBehaviour::Fault(fault)),
    }
    let prefix = provider_kind.env_prefix();
    let (key_var, url_var) = (format!("{prefix}_API_KEY"), format!("{prefix}_BASE_URL"));
    let budget = BUDGET.as_secs().to_string();
    let vars = [
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("LOG_LEVEL", "debug"),
        ("SEARXNG_BACKEND_URL", searxng_url.as_str()),
        ("FALLBACK_PROVIDERS", provider_kind.as_str()),
        (key_var.as_str(), key.as_str()),
        (url_var.as_str(), provider_url.as_str()),
        ("T1_PREMIUM_COUNT", "1"),
        ("FALLBACK_TIMEOUT_SECONDS", budget.as_str()),
        (
            "SEARXNG_TIMEOUT_SECONDS",
            &SEARXNG_TIMEOUT.as_secs().to_string(),
        ),
        (
            "PROVIDER_TIMEOUT_SECONDS",
            &PROVIDER_TIMEOUT.as_secs().to_string(),
        ),
        ("SEARXNG_SLOW_SECONDS", "5"),
    ];
    let mut gateway = GatewayProcess::start(&vars);
    let url = gateway.url().await;
    let client = reqwest::Client::builder()
        .timeout(wait::HANG_GUARD)
        .build()
        .expect("client");

    let mut problems = Vec::new();
    let reply = client
        .get(format!("{url}/search"))
        .query(&[("q", "fault matrix")])
        .send()
        .await;
    let (status, text) = match reply {
        Ok(reply) => (
            reply.status().as_u16(),
            reply.text().await.unwrap_or_default(),
        ),
        Err(err) => (0, format!("no answer: {err}")),
    };
    let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if status != 200 || !json["results"].is_array() {
        problems.push(format!("{label}: status {status}, body {text}"));
    } else if json["results"].as_array().is_none_or(Vec::is_empty) {
        problems.push(format!(
            "{label}: the healthy upstream's results are missing: {text}"
        ));
    }
    if matches!(fault, Fault::AcceptThenHang | Fault::Trickle { .. }) {
        let timeout = match upstream {
            Faulty::Searxng => SEARXNG_TIMEOUT,
            Faulty::Provider(_) => PROVIDER_TIMEOUT,
        };
        // SearXNG's: the search calls', apart from the gateway's own background `/config` reads
        // (which trickle too, under their own longer timeout).
        let lifetimes = || match upstream {
            Faulty::Searxng => searxng.connection_lifetimes_of("/search"),
            Faulty::Provider(_) => provider.connection_lifetimes(),
        };
        // The fake sees the close a moment after the gateway makes it.
        wait::until("the gateway to close the held connection", || async {
            lifetimes().closed > 0
        })
        .await;
        let lifetimes = lifetimes();
        if lifetimes.longest > timeout + SLACK {
            problems.push(format!(
                "{label}: the gateway held a connection {:?} (fake's clock), past the timeout {timeout:?} + {SLACK:?}",
                lifetimes.longest
            ));
        }
    }

    let metrics = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .unwrap_or_default();
    let class = expected_class(upstream, fault);
    let counted = match upstream {
        Faulty::Searxng => metric_value(
            &metrics,
            "searxng_gateway_searxng_requests_total",
            &[("result", class)],
        ),
        Faulty::Provider(kind) => metric_value(
            &metrics,
            "searxng_gateway_provider_calls_total",
            &[("provider", kind.as_str()), ("outcome", class)],
        ),
    };
    if counted < 1.0 {
        let seen: Vec<&str> = metrics
            .lines()
            .filter(|l| {
                l.starts_with("searxng_gateway_searxng_requests_total")
                    || l.starts_with("searxng_gateway_provider_calls_total")
            })
            .filter(|l| !l.ends_with(" 0"))
            .collect();
        problems.push(format!("{label}: no {class} counted; counted: {seen:?}"));
    }

    eprintln!(
        "fault matrix: {label}: {status}, {class} counted; connections the gateway closed: SearXNG searches {:?}, provider {:?}",
        searxng.connection_lifetimes_of("/search"),
        provider.connection_lifetimes()
    );
    let exit = gateway.terminate().await;
    let output = gateway.output().await;
    if exit.code() != Some(0) {
        problems.push(format!("{label}: the gateway exited with {exit:?}"));
    }
    for (what, text) in [("reply", text.as_str()), ("output", output.as_str())] {
        if text.contains("panicked") {
            problems.push(format!("{label}: a panic in the {what}"));
        }
        if text.contains(&key) {
            problems.push(format!("{label}: the key leaked into the {what}"));
        }
        if text.contains(BODY_MARKER) {
            problems.push(format!("{label}: an upstream body leaked into the {what}"));
        }
    }
    problems
}
