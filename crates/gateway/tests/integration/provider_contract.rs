//! The provider contract, end to end: one list of scenarios run against every premium provider (Brave,
//! Exa, Jina, Tavily), each behind the real gateway and in front of the strict
//! [`SimulatedProvider`]. SearXNG's engines all fail, so SearXNG's answer is degraded and every search
//! falls back to the one configured provider (`FALLBACK_PROVIDERS=<it>`, its key and its origin as
//! `<NAME>_BASE_URL`).
//!
//! A scenario passes only if the gateway sends what the real API expects (method, path, auth header
//! and value, parameters) and reads each of the provider's answers into the right class. The class is
//! observed from outside, where an operator sees it: `provider_calls_total{provider,outcome}`, the 502
//! body's `upstreams[].error_class`, the provider's breaker in `/status`, and what the fake recorded.
//! The last test runs the binary at `LOG_LEVEL=debug` and reads everything it printed.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use simulator::premium::{
    BraveWindows, ProviderBehaviour, RecordedRequest, SimError, SimHit, SimulatedProvider, SIM_KEY,
};
use simulator::Provider;

use crate::support::gateway::Reply;
use crate::support::ports::refusing_port;
use crate::support::process::GatewayProcess;
use crate::support::stack::SimStack;
use crate::support::wait::{self, UNREACHED_TIMEOUT_SECONDS};

/// The cap on an upstream body: 8 MiB (GATEWAY.md; SearXNG and providers alike).
const BODY_CAP: usize = 8 * 1024 * 1024;

/// A provider call timeout short enough to wait for in a test.
const SHORT_TIMEOUT_SECONDS: &str = "0.5";

/// One provider behind the gateway; SearXNG degraded, so every search falls back to the provider.
struct Rig {
    kind: Provider,
    stack: SimStack,
}

impl Rig {
    async fn start(kind: Provider) -> Self {
        Self::with(kind, &[]).await
    }

    /// A rig whose gateway also gets `vars` (they win over the rig's own settings).
    async fn with(kind: Provider, vars: &[(&str, &str)]) -> Self {
        let mut env = vec![
            // Every search reaches the provider, even a repeated one.
            ("CACHE_SIZE", "0"),
            // The budget never cuts a provider call short: what ends a call is the provider.
            ("FALLBACK_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
        ];
        env.extend_from_slice(vars);
        let stack = SimStack::start(&[kind], &env).await;
        stack.fail_every_engine();
        Self { kind, stack }
    }

    /// A rig whose provider call times out after [`SHORT_TIMEOUT_SECONDS`].
    async fn with_short_timeout(kind: Provider) -> Self {
        let timeout = format!("{}_TIMEOUT_SECONDS", kind.env_prefix());
        Self::with(kind, &[(timeout.as_str(), SHORT_TIMEOUT_SECONDS)]).await
    }

    fn sim(&self) -> &SimulatedProvider {
        self.stack.provider(self.kind)
    }

    fn name(&self) -> &'static str {
        self.kind.as_str()
    }

    async fn search(&self, params: &[(&str, &str)]) -> Reply {
        self.stack.gateway.search(params).await
    }

    async fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.stack.gateway.metric(name, labels).await
    }

    /// `provider_calls_total{provider=<this one>, outcome}`.
    async fn calls_with_outcome(&self, outcome: &str) -> f64 {
        self.metric(
            "searxng_gateway_provider_calls_total",
            &[("provider", self.name()), ("outcome", outcome)],
        )
        .await
    }

    /// The provider's breaker in `/status` (what concerns it as a whole).
    async fn breaker(&self) -> Value {
        self.stack.gateway.breaker("provider", self.name()).await
    }

    /// Its key's breaker in `/status` (a bad key, a spent rate or quota).
    async fn key_breaker(&self) -> Value {
        let name = self.stack.gateway.key_name(self.name()).await;
        self.stack.gateway.breaker("key", &name).await
    }

    /// Serves `behaviour` to one plain search and checks that the call failed as `class` everywhere it
    /// shows: one more `provider_calls_total{outcome=class}` and the 502 body naming the provider with it.
    async fn failure(&self, behaviour: ProviderBehaviour, class: &str) -> Reply {
        self.sim().set_behaviour(behaviour);
        self.failing_search(class).await
    }

    /// One plain search that must fail at the provider as `class` (see [`Rig::failure`]).
    async fn failing_search(&self, class: &str) -> Reply {
        let kind = self.kind;
        let before = self.calls_with_outcome(class).await;
        let reply = self.search(&[("q", "rust async")]).await;
        assert_eq!(reply.status, 502, "{kind:?}: {}", reply.text);
        assert_eq!(reply.outcome, "fallback_fail", "{kind:?}");
        let reported: Vec<&Value> = reply.json["upstreams"]
            .as_array()
            .expect("upstreams")
            .iter()
            .filter(|u| u["name"] == self.name())
            .collect();
        assert_eq!(
            reported.len(),
            1,
            "{kind:?} is named once in {}",
            reply.text
        );
        assert_eq!(
            reported[0]["error_class"], class,
            "{kind:?}: {}",
            reply.text
        );
        assert_eq!(
            self.calls_with_outcome(class).await,
            before + 1.0,
            "{kind:?}: provider_calls_total{{outcome={class:?}}}"
        );
        reply
    }

    /// The breaker is closed and counts `failures` transient failures in a row.
    async fn assert_closed_with(&self, failures: u64) {
        let breaker = self.breaker().await;
        assert_eq!(breaker["state"], "closed", "{:?}: {breaker}", self.kind);
        assert_eq!(
            breaker["consecutive_failures"], failures,
            "{:?}: {breaker}",
            self.kind
        );
    }

    /// The breaker `reason` concerns — the key's for a bad key or a spent rate or quota, the
    /// provider's otherwise — tripped at once for `reason`; returns how long it stays open, in
    /// seconds. A key's trip leaves the rig's provider (one key) open as a whole for the same
    /// reason, a provider's leaves its key closed.
    async fn assert_tripped_for(&self, reason: &str) -> f64 {
        let kind = self.kind;
        let (provider, key) = (self.breaker().await, self.key_breaker().await);
        let key_error = matches!(reason, "auth" | "quota" | "rate_limited");
        let tripped = if key_error { &key } else { &provider };
        assert_eq!(tripped["state"], "open", "{kind:?}: {tripped}");
        assert_eq!(tripped["reason"], reason, "{kind:?}: {tripped}");
        if key_error {
            assert_eq!(
                (&provider["state"], &provider["reason"]),
                (&"open".into(), &reason.into()),
                "{kind:?}: none of its keys is usable: {provider}"
            );
        } else {
            assert_eq!(key["state"], "closed", "{kind:?}: {key}");
        }
        tripped["open_for_seconds"].as_f64().unwrap_or(0.0)
    }
}

/// Runs `scenario` for every provider, all at once (each against its own gateway and fakes).
async fn for_every_provider<F, Fut>(scenario: F)
where
    F: Fn(Provider) -> Fut,
    Fut: Future<Output = ()>,
{
    futures::future::join_all(Provider::ALL.map(scenario)).await;
}

/// What each provider's real API expects on the wire.
struct Expected {
    method: &'static str,
    path: &'static str,
    auth_header: &'static str,
    auth_value: String,
}

fn expected(kind: Provider) -> Expected {
    let bearer = format!("Bearer {SIM_KEY}");
    match kind {
        Provider::Brave => Expected {
            method: "GET",
            path: "/res/v1/web/search",
            auth_header: "x-subscription-token",
            auth_value: SIM_KEY.to_owned(),
        },
        Provider::Exa => Expected {
            method: "POST",
            path: "/search",
            auth_header: "x-api-key",
            auth_value: SIM_KEY.to_owned(),
        },
        Provider::Jina => Expected {
            method: "POST",
            path: "/",
            auth_header: "authorization",
            auth_value: bearer,
        },
        Provider::Kagi => Expected {
            method: "GET",
            path: "/api/v0/search",
            auth_header: "authorization",
            auth_value: format!("Bot {SIM_KEY}"),
        },
        Provider::Linkup => Expected {
            method: "POST",
            path: "/v1/search",
            auth_header: "authorization",
            auth_value: bearer,
        },
        Provider::Perplexity | Provider::Tavily => Expected {
            method: "POST",
            path: "/search",
            auth_header: "authorization",
            auth_value: bearer,
        },
        Provider::SearchApi => Expected {
            method: "GET",
            path: "/api/v1/search",
            auth_header: "authorization",
            auth_value: bearer,
        },
        Provider::Serper => Expected {
            method: "POST",
            path: "/search",
            auth_header: "x-api-key",
            auth_value: SIM_KEY.to_owned(),
        },
    }
}

/// The query as the provider received it: a query parameter (Brave, Kagi, SearchAPI) or a JSON
/// body field.
fn query_sent(kind: Provider, seen: &RecordedRequest) -> Option<String> {
    match kind {
        Provider::Brave | Provider::Kagi | Provider::SearchApi => {
            seen.query_param("q").map(str::to_owned)
        }
        Provider::Jina | Provider::Linkup | Provider::Serper => {
            seen.json().and_then(|b| b["q"].as_str().map(str::to_owned))
        }
        Provider::Exa | Provider::Perplexity | Provider::Tavily => seen
            .json()
            .and_then(|b| b["query"].as_str().map(str::to_owned)),
    }
}

fn hit(i: usize) -> SimHit {
    SimHit {
        title: format!("Async Rust primer {i}"),
        url: format!("https://example.org/async/{i}"),
        content: format!("A short primer, part {i}."),
        published_date: Some("2026-11-27T10:00:00".to_owned()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_gets_its_real_request_shape_and_its_results_are_mapped() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.sim()
            .set_behaviour(ProviderBehaviour::Results(vec![hit(1), hit(2)]));

        let reply = rig.search(&[("q", "Rust Async")]).await;

        assert_eq!(reply.status, 200, "{kind:?}: {}", reply.text);
        assert_eq!(reply.outcome, "premium_ok", "{kind:?}");
        let results = reply.json["results"].as_array().expect("results");
        assert_eq!(results.len(), 2, "{kind:?}: {}", reply.text);
        let label = format!("{}_api", kind.as_str());
        for (i, result) in (1..=2).zip(results) {
            let want = hit(i);
            assert_eq!(result["url"], want.url.as_str(), "{kind:?}");
            assert_eq!(result["title"], want.title.as_str(), "{kind:?}");
            assert_eq!(result["content"], want.content.as_str(), "{kind:?}");
            if kind == Provider::Linkup {
                // Linkup's search results carry no date.
                assert_eq!(result["publishedDate"], serde_json::Value::Null, "{kind:?}");
            } else {
                assert_eq!(
                    result["publishedDate"],
                    want.published_date.as_deref().unwrap_or_default(),
                    "{kind:?}"
                );
            }
            assert_eq!(result["engine"], label.as_str(), "{kind:?}");
            assert_eq!(result["engines"], serde_json::json!([label]), "{kind:?}");
        }

        let want = expected(kind);
        let seen = rig.sim().requests();
        assert_eq!(seen.len(), 1, "{kind:?}: exactly one call");
        let seen = &seen[0];
        assert_eq!(seen.method, want.method, "{kind:?}");
        assert_eq!(seen.path, want.path, "{kind:?}");
        assert_eq!(
            seen.header(want.auth_header),
            Some(want.auth_value.as_str()),
            "{kind:?}"
        );
        assert_eq!(
            query_sent(kind, seen).as_deref(),
            Some("Rust Async"),
            "{kind:?}: case kept"
        );

        assert_eq!(rig.calls_with_outcome("ok").await, 1.0, "{kind:?}");
        let provider = [("provider", kind.as_str())];
        assert_eq!(
            rig.metric("searxng_gateway_provider_results_total", &provider)
                .await,
            2.0,
            "{kind:?}"
        );
        assert_eq!(
            rig.metric("searxng_gateway_provider_duration_seconds_count", &provider)
                .await,
            1.0,
            "{kind:?}"
        );
        rig.assert_closed_with(0).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_specific_extras_reach_the_wire() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        let reply = rig.search(&[("q", "x")]).await;
        assert_eq!(reply.status, 200, "{kind:?}: {}", reply.text);
        let seen = rig.sim().last_request().expect("the provider was called");
        match kind {
            Provider::Brave => {
                assert_eq!(seen.header("accept"), Some("application/json"));
                assert_eq!(seen.query_param("text_decorations"), Some("false"));
            }
            Provider::Exa => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(body["contents"]["highlights"], true, "{body}");
            }
            Provider::Jina => {
                assert_eq!(seen.header("accept"), Some("application/json"));
                assert_eq!(seen.header("x-respond-with"), Some("no-content"));
            }
            Provider::Tavily => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(body["search_depth"], "basic", "{body}");
            }
            Provider::Kagi => {
                assert_eq!(seen.query_param("limit"), Some("10"));
            }
            Provider::Linkup => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(
                    (&body["depth"], &body["outputType"]),
                    (&"standard".into(), &"searchResults".into()),
                    "{body}"
                );
            }
            Provider::Perplexity => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(body["max_results"], 10, "{body}");
            }
            Provider::SearchApi => {
                assert_eq!(seen.query_param("engine"), Some("google"));
                assert_eq!(
                    seen.query_param("api_key"),
                    None,
                    "the key is never in the URL"
                );
            }
            Provider::Serper => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(body["num"], 10, "{body}");
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn searxng_parameters_are_mapped_and_pass_every_strict_fakes_validation() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        let reply = rig
            .search(&[
                ("q", "rust"),
                ("pageno", "2"),
                ("language", "de-DE"),
                ("time_range", "week"),
                ("safesearch", "1"),
            ])
            .await;

        assert_eq!(reply.status, 200, "{kind:?}: {}", reply.text);
        assert_eq!(
            rig.calls_with_outcome("ok").await,
            1.0,
            "{kind:?}: the strict fake accepted every parameter"
        );
        let seen = rig.sim().last_request().expect("the provider was called");
        match kind {
            Provider::Brave => {
                assert_eq!(seen.query_param("freshness"), Some("pw"));
                assert_eq!(seen.query_param("offset"), Some("1"));
                assert_eq!(seen.query_param("search_lang"), Some("de"));
                assert_eq!(seen.query_param("ui_lang"), Some("de-DE"));
                assert_eq!(seen.query_param("safesearch"), Some("moderate"));
            }
            Provider::Exa => {
                let body = seen.json().expect("a JSON body");
                let start = body["startPublishedDate"].as_str().unwrap_or_default();
                assert!(
                    start.len() >= 10 && start.as_bytes()[4] == b'-' && start.as_bytes()[7] == b'-',
                    "a week back, as an ISO 8601 date: {body}"
                );
            }
            Provider::Jina => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(
                    (&body["page"], &body["hl"]),
                    (&2.into(), &"de".into()),
                    "{body}"
                );
            }
            Provider::Tavily => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(body["time_range"], "week", "{body}");
            }
            Provider::Kagi => {
                // Kagi's API takes only the query and a limit.
                assert_eq!(seen.query_param("q"), Some("rust"));
            }
            Provider::Linkup => {
                let body = seen.json().expect("a JSON body");
                let from = body["fromDate"].as_str().unwrap_or_default();
                assert!(
                    from.len() == 10 && from.as_bytes()[4] == b'-',
                    "a week back: {body}"
                );
            }
            Provider::Perplexity => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(body["search_recency_filter"], "week", "{body}");
                assert_eq!(
                    body["search_language_filter"],
                    serde_json::json!(["de"]),
                    "{body}"
                );
                assert_eq!(body["country"], "DE", "{body}");
            }
            Provider::SearchApi => {
                assert_eq!(seen.query_param("page"), Some("2"));
                assert_eq!(seen.query_param("hl"), Some("de"));
                assert_eq!(seen.query_param("gl"), Some("de"));
                assert_eq!(seen.query_param("time_period"), Some("last_week"));
                assert_eq!(seen.query_param("safe"), Some("active"));
            }
            Provider::Serper => {
                let body = seen.json().expect("a JSON body");
                assert_eq!(
                    (&body["page"], &body["hl"], &body["gl"], &body["tbs"]),
                    (&2.into(), &"de".into(), &"de".into(), &"qdr:w".into()),
                    "{body}"
                );
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_zero_results_as_empty_not_a_failure() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.sim().set_behaviour(ProviderBehaviour::Empty);

        let reply = rig.search(&[("q", "zxqv")]).await;

        assert_eq!(reply.status, 200, "{kind:?}: {}", reply.text);
        assert_eq!(reply.json["results"], serde_json::json!([]), "{kind:?}");
        assert_eq!(rig.calls_with_outcome("empty").await, 1.0, "{kind:?}");
        rig.assert_closed_with(0).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_a_revoked_key_as_auth() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.failure(ProviderBehaviour::Error(SimError::Auth), "auth")
            .await;
        rig.assert_tripped_for("auth").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_is_auth_for_every_provider() {
    for_every_provider(|kind| async move {
        let key = format!("{}_API_KEY", kind.env_prefix());
        let rig = Rig::with(kind, &[(key.as_str(), "not-the-key")]).await;
        rig.failing_search("auth").await;
        rig.assert_tripped_for("auth").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_exhausted_credits_as_quota() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.failure(ProviderBehaviour::Error(SimError::Quota), "quota")
            .await;
        let open_for = rig.assert_tripped_for("quota").await;
        if kind == Provider::Brave {
            let month_reset = BraveWindows::default().month_reset_secs as f64;
            assert!(
                open_for > month_reset - 60.0 && open_for <= month_reset,
                "Brave is parked until its monthly window resets in {month_reset} s, not {open_for} s"
            );
        } else {
            assert!(
                open_for > 3_500.0,
                "{kind:?}: without a reset it is parked for QUOTA_PARK_SECONDS, not {open_for} s"
            );
        }
        let status = rig.stack.gateway.status().await;
        let provider = status["providers"]
            .as_array()
            .and_then(|all| all.iter().find(|p| p["name"] == rig.name()))
            .cloned()
            .unwrap_or_default();
        let parked = provider["quota_parked_for_seconds"].as_f64().unwrap_or(0.0);
        assert!(parked > 3_500.0, "{kind:?}: /status shows it parked: {provider}");
        let calls = rig.sim().calls();
        rig.search(&[("q", "after the refusal")]).await;
        assert_eq!(rig.sim().calls(), calls, "{kind:?}: no call into a parked provider");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_rate_limits_with_the_servers_retry_hint() {
    for_every_provider(|kind| async move {
        // Our own open period is 1 s (+ 10 % jitter): a longer one can only be the server's hint.
        let rig = Rig::with(kind, &[("BREAKER_OPEN_SECONDS", "1")]).await;
        rig.failure(ProviderBehaviour::rate_limited(60), "rate_limited")
            .await;
        let open_for = rig.assert_tripped_for("rate_limited").await;
        assert!(
            open_for > 30.0 && open_for <= 60.0,
            "{kind:?}: left alone for the 60 s the server asked, not {open_for} s"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_our_malformed_request_as_bad_request_which_never_trips() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.failure(
            ProviderBehaviour::Error(SimError::BadRequest),
            "bad_request",
        )
        .await;
        rig.assert_closed_with(0).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_a_5xx_as_a_transient_server_error() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.failure(ProviderBehaviour::Error(SimError::Server), "server_error")
            .await;
        rig.assert_closed_with(1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_times_out_when_the_answer_is_slower_than_its_timeout() {
    for_every_provider(|kind| async move {
        let rig = Rig::with_short_timeout(kind).await;
        // Far slower than the 0.5 s timeout; the budget is out of reach, so only the provider's own
        // timeout can end the call (a call cut by the budget is not counted as the provider's timeout).
        let slower = ProviderBehaviour::slow(
            Duration::from_secs(600),
            ProviderBehaviour::results(3, "https://a.example/"),
        );
        rig.failure(slower, "timeout").await;
        rig.assert_closed_with(1).await;
        let sim = rig.sim();
        wait::until("the gateway to drop the late call", || async move {
            sim.in_flight() == 0
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_answer_within_its_timeout_still_counts_for_every_provider() {
    for_every_provider(|kind| async move {
        let timeout = format!("{}_TIMEOUT_SECONDS", kind.env_prefix());
        let rig = Rig::with(kind, &[(timeout.as_str(), UNREACHED_TIMEOUT_SECONDS)]).await;
        rig.sim().set_behaviour(ProviderBehaviour::slow(
            Duration::from_millis(300),
            ProviderBehaviour::results(2, "https://a.example/"),
        ));

        let reply = rig.search(&[("q", "x")]).await;

        assert_eq!(reply.status, 200, "{kind:?}: {}", reply.text);
        assert_eq!(
            reply.json["results"].as_array().map(Vec::len),
            Some(2),
            "{kind:?}"
        );
        assert_eq!(rig.calls_with_outcome("ok").await, 1.0, "{kind:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_times_out_against_a_hanging_server() {
    for_every_provider(|kind| async move {
        let rig = Rig::with_short_timeout(kind).await;
        rig.failure(ProviderBehaviour::Hang, "timeout").await;
        rig.assert_closed_with(1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_provider_reports_garbled_or_wrong_shape_json_as_malformed() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.failure(ProviderBehaviour::Garbled, "malformed").await;
        rig.failure(ProviderBehaviour::WrongShape, "malformed")
            .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_html_challenge_instead_of_json_is_a_block_that_opens_the_breaker_at_once() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        rig.failure(ProviderBehaviour::Challenge, "blocked").await;
        rig.assert_tripped_for("access_denied").await;
        let calls = rig.sim().calls();
        let reply = rig.search(&[("q", "again")]).await;
        assert_eq!(reply.status, 502, "{kind:?}: {}", reply.text);
        assert_eq!(
            rig.sim().calls(),
            calls,
            "{kind:?}: not called again while open"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_the_8_mib_cap_is_too_large_for_every_provider() {
    for_every_provider(|kind| async move {
        let rig = Rig::start(kind).await;
        let huge = SimHit {
            content: "x".repeat(BODY_CAP + 1),
            ..hit(1)
        };
        rig.failure(ProviderBehaviour::Results(vec![huge]), "too_large")
            .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_that_is_not_listening_is_a_transient_connect_failure() {
    for_every_provider(|kind| async move {
        let (_held, port) = refusing_port();
        let origin = format!("http://127.0.0.1:{port}");
        let base_url = format!("{}_BASE_URL", kind.env_prefix());
        let rig = Rig::with(kind, &[(base_url.as_str(), origin.as_str())]).await;
        rig.failing_search("connect").await;
        rig.assert_closed_with(1).await;
        assert_eq!(rig.sim().calls(), 0, "{kind:?}: the fake was not asked");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn brave_with_an_exhausted_rate_limit_window_answers_but_is_parked() {
    let rig = Rig::start(Provider::Brave).await;
    rig.sim().set_brave_windows(BraveWindows {
        per_second_limit: 1,
        per_second_remaining: 0,
        ..BraveWindows::default()
    });

    let reply = rig.search(&[("q", "x")]).await;

    assert_eq!((reply.status, reply.outcome.as_str()), (200, "premium_ok"));
    assert!(!reply.json["results"]
        .as_array()
        .expect("results")
        .is_empty());
    assert_eq!(rig.calls_with_outcome("ok").await, 1.0);
    let key = rig.stack.gateway.key_name("brave").await;
    let fingerprint = key.trim_start_matches("brave:").to_owned();
    let window = |name| [("window", name), ("key", fingerprint.as_str())];
    assert_eq!(
        rig.metric("searxng_gateway_brave_rate_limit_remaining", &window("1s"))
            .await,
        0.0
    );
    assert_eq!(
        rig.metric("searxng_gateway_brave_rate_limit_limit", &window("month"))
            .await,
        15_000.0
    );
    // The key is parked until the 1 s window resets; once that has passed it reads half-open until
    // the next caller goes first. Either way not closed, and not a trip.
    let breaker = rig.key_breaker().await;
    assert_eq!(breaker["reason"], "rate_limited", "{breaker}");
    match breaker["state"].as_str() {
        Some("open") => assert!(
            breaker["open_for_seconds"].as_f64().unwrap_or(f64::MAX) <= 1.0,
            "parked for the window's 1 s reset: {breaker}"
        ),
        Some("half_open") => {}
        _ => panic!("Brave is parked: {breaker}"),
    }
    assert_eq!(breaker["trips"], 0, "a pause is not a trip: {breaker}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exas_reported_cost_reaches_provider_cost_dollars_total() {
    let rig = Rig::start(Provider::Exa).await;
    for query in ["x", "y"] {
        let reply = rig.search(&[("q", query)]).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    let cost = rig
        .metric(
            "searxng_gateway_provider_cost_dollars_total",
            &[("provider", "exa")],
        )
        .await;
    assert!((cost - 0.014).abs() < 1e-9, "two calls at $0.007: {cost}");
}

/// The binary at `LOG_LEVEL=debug` with every provider, each with its own secret key, in front of a
/// degraded SearXNG; `SUFFICIENT_MIN_RESULTS` out of reach, so each search calls all of them. Searches
/// `query` three times — every provider answering, every provider refusing our request, every provider
/// out of credits — and returns everything the process printed.
async fn debug_logs_of_three_searches(query: &str) -> (String, Vec<String>) {
    let stack = SimStack::start(&Provider::ALL, &[]).await;
    stack.fail_every_engine();
    let keys: Vec<String> = Provider::ALL
        .iter()
        .map(|kind| format!("{}-secret-key-4711", kind.as_str()))
        .collect();
    let mut env = vec![
        ("SEARXNG_BACKEND_URL".to_owned(), stack.searxng.base_url()),
        (
            "FALLBACK_PROVIDERS".to_owned(),
            Provider::ALL.map(Provider::as_str).join(","),
        ),
        ("SUFFICIENT_MIN_RESULTS".to_owned(), "1000".to_owned()),
        ("CACHE_SIZE".to_owned(), "0".to_owned()),
        ("LOG_LEVEL".to_owned(), "debug".to_owned()),
        ("LISTEN_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
    ];
    for (kind, key) in Provider::ALL.iter().zip(&keys) {
        let sim = stack.provider(*kind);
        sim.set_expected_key(key);
        env.push((format!("{}_BASE_URL", kind.env_prefix()), sim.base_url()));
        env.push((format!("{}_API_KEY", kind.env_prefix()), key.clone()));
    }
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut gateway = GatewayProcess::start(&vars);
    let url = gateway.url().await;
    let client = reqwest::Client::builder()
        .timeout(wait::HANG_GUARD)
        .build()
        .expect("client");

    for (behaviour, want_status) in [
        (
            ProviderBehaviour::results(2, "https://example.org/result/"),
            200,
        ),
        (ProviderBehaviour::Error(SimError::BadRequest), 502),
        (ProviderBehaviour::Error(SimError::Quota), 502),
    ] {
        for sim in &stack.providers {
            sim.set_behaviour(behaviour.clone());
        }
        let calls_before: Vec<usize> = stack.provider_calls();
        let reply = client
            .get(format!("{url}/search"))
            .query(&[("q", query)])
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(reply.status().as_u16(), want_status, "{behaviour:?}");
        let calls_after = stack.provider_calls();
        assert!(
            calls_before
                .iter()
                .zip(&calls_after)
                .all(|(b, a)| a == &(b + 1)),
            "every provider was called once: {calls_before:?} → {calls_after:?}"
        );
    }
    assert_eq!(gateway.terminate().await.code(), Some(0));
    (gateway.output().await, keys)
}

/// Text only the fakes' bodies contain (results, error codes and messages, request ids).
const UPSTREAM_BODY_MARKERS: [&str; 26] = [
    "Simulated result",
    "Snippet of simulated result",
    "example.org/result",
    "sim-request",
    "sim-error",
    "VALIDATION",
    "QUOTA_LIMITED",
    "Request quota limit reached",
    "INVALID_REQUEST_BODY",
    "NO_MORE_CREDITS",
    "run out of credits",
    "ParamValidationError",
    "InsufficientBalanceError",
    "Account balance",
    "Invalid request parameters",
    "usage limit",
    "costDollars",
    "Not enough credits",
    "insufficient_quota",
    "INSUFFICIENT_FUNDS_CREDITS",
    "run out of searches",
    "Insufficient credit",
    "sim-search",
    "search_sim",
    "sim-kagi",
    "Field required",
];

#[tokio::test(flavor = "multi_thread")]
async fn debug_logs_name_each_provider_and_class_but_never_a_key_or_an_upstream_body() {
    let (logs, keys) = debug_logs_of_three_searches("rust async").await;

    for kind in Provider::ALL {
        assert!(logs.contains(kind.as_str()), "{kind:?} is named:\n{logs}");
    }
    assert!(logs.contains("our request is wrong"), "{logs}");
    assert!(logs.contains("quota"), "{logs}");
    for secret in keys.iter().map(String::as_str).chain(UPSTREAM_BODY_MARKERS) {
        assert!(
            !logs.contains(secret),
            "{secret:?} leaked into the logs:\n{logs}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn debug_logs_never_contain_the_users_query() {
    let query = "private medical question";
    let (logs, _) = debug_logs_of_three_searches(query).await;

    for form in [
        query,
        "private+medical+question",
        "private%20medical%20question",
    ] {
        assert!(
            !logs.contains(form),
            "{form:?} leaked into the logs:\n{logs}"
        );
    }
}
