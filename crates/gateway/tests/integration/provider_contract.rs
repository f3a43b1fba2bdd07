//! Contract tests: the same scenarios against every provider, through the real
//! [`ProviderClient`] speaking HTTP to the strict [`SimulatedProvider`]. A scenario passes only if
//! the adapter sends what the real API expects (method, path, auth header, parameters) and reads
//! each of the provider's answers into the right outcome and metric.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use url::Url;

use super::{PremiumHit, ProviderClient, Provider};
use crate::config::{ApiKey, ProviderConfig};
use crate::metrics::Metrics;
use crate::request::{SearchRequest, TimeRange};
use crate::simulator::premium::{
    BraveWindows, ProviderBehaviour, SimError, SimHit, SimulatedProvider, SIM_KEY,
};
use crate::upstream::ErrorClass;

/// A fake provider and a client configured against it.
struct Rig {
    sim: SimulatedProvider,
    client: ProviderClient,
    metrics: Metrics,
}

impl Rig {
    async fn new(kind: Provider) -> Self {
        Self::with(kind, SIM_KEY, Duration::from_secs(5)).await
    }

    async fn with(kind: Provider, key: &str, timeout: Duration) -> Self {
        let sim = SimulatedProvider::start(kind).await.unwrap();
        let cfg = ProviderConfig {
            kind,
            key: Some(ApiKey::new(key)),
            base_url: Url::parse(&sim.base_url()).unwrap(),
            timeout,
        };
        let metrics = Metrics::new();
        let client = ProviderClient::new(&cfg, reqwest::Client::new(), metrics.clone()).unwrap();
        Self {
            sim,
            client,
            metrics,
        }
    }

    fn calls_with_outcome(&self, outcome: &str) -> u64 {
        self.metrics
            .provider_calls
            .with_label_values(&[self.client.kind().as_str(), outcome])
            .get()
    }

    /// Serves `behaviour` to one plain search and returns the class of the failure it must cause.
    async fn failure(&self, behaviour: ProviderBehaviour) -> crate::upstream::UpstreamError {
        self.sim.set_behaviour(behaviour);
        let err = self
            .client
            .search(&SearchRequest::simple("rust async"))
            .await
            .unwrap_err();
        assert_eq!(
            self.calls_with_outcome(err.class.as_str()),
            1,
            "{:?}: provider_calls_total{{outcome={:?}}}",
            self.client.kind(),
            err.class.as_str()
        );
        err
    }
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
        Provider::Tavily => Expected {
            method: "POST",
            path: "/search",
            auth_header: "authorization",
            auth_value: bearer,
        },
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

#[tokio::test]
async fn every_provider_maps_results_and_sends_its_real_request_shape() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        rig.sim
            .set_behaviour(ProviderBehaviour::Results(vec![hit(1), hit(2)]));
        let answer = rig
            .client
            .search(&SearchRequest::simple("Rust Async"))
            .await
            .unwrap();

        assert_eq!(
            answer.hits,
            [1, 2]
                .map(|i| PremiumHit {
                    url: format!("https://example.org/async/{i}"),
                    title: format!("Async Rust primer {i}"),
                    content: format!("A short primer, part {i}."),
                    published_date: Some("2026-11-27T10:00:00".to_owned()),
                })
                .to_vec(),
            "{kind:?}"
        );
        assert_eq!(answer.park, None, "{kind:?}");

        let want = expected(kind);
        let seen = rig.sim.requests();
        assert_eq!(seen.len(), 1, "{kind:?}: exactly one call");
        let seen = &seen[0];
        assert_eq!(seen.method, want.method, "{kind:?}");
        assert_eq!(seen.path, want.path, "{kind:?}");
        assert_eq!(
            seen.header(want.auth_header),
            Some(want.auth_value.as_str()),
            "{kind:?}"
        );
        let query_sent = match kind {
            Provider::Brave => seen.query_param("q").map(str::to_owned),
            Provider::Jina => seen.json().and_then(|b| b["q"].as_str().map(str::to_owned)),
            Provider::Exa | Provider::Tavily => seen
                .json()
                .and_then(|b| b["query"].as_str().map(str::to_owned)),
        };
        assert_eq!(
            query_sent.as_deref(),
            Some("Rust Async"),
            "{kind:?}: case kept"
        );

        assert_eq!(rig.calls_with_outcome("ok"), 1, "{kind:?}");
        assert_eq!(
            rig.metrics
                .provider_results
                .with_label_values(&[kind.as_str()])
                .get(),
            2,
            "{kind:?}"
        );
        assert_eq!(
            rig.metrics
                .provider_duration
                .with_label_values(&[kind.as_str()])
                .get_sample_count(),
            1,
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn provider_specific_extras_reach_the_wire() {
    let brave = Rig::new(Provider::Brave).await;
    brave
        .client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    let seen = brave.sim.last_request().unwrap();
    assert_eq!(seen.header("accept"), Some("application/json"));
    assert_eq!(seen.query_param("text_decorations"), Some("false"));

    let exa = Rig::new(Provider::Exa).await;
    exa.client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    let body = exa.sim.last_request().unwrap().json().unwrap();
    assert_eq!(body["contents"]["highlights"], true);

    let jina = Rig::new(Provider::Jina).await;
    jina.client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    let seen = jina.sim.last_request().unwrap();
    assert_eq!(seen.header("accept"), Some("application/json"));
    assert_eq!(seen.header("x-respond-with"), Some("no-content"));

    let tavily = Rig::new(Provider::Tavily).await;
    tavily
        .client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    let body = tavily.sim.last_request().unwrap().json().unwrap();
    assert_eq!(body["search_depth"], "basic");
}

#[tokio::test]
async fn searxng_parameters_pass_the_strict_fakes_validation() {
    let req = SearchRequest {
        pageno: 2,
        language: Some("de-DE".into()),
        time_range: Some(TimeRange::Week),
        safesearch: Some(crate::request::SafeSearch::Moderate),
        ..SearchRequest::simple("rust")
    };
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let answer = rig.client.search(&req).await;
        assert!(answer.is_ok(), "{kind:?}: {answer:?}");
    }
    let brave = Rig::new(Provider::Brave).await;
    brave.client.search(&req).await.unwrap();
    let seen = brave.sim.last_request().unwrap();
    assert_eq!(seen.query_param("freshness"), Some("pw"));
    assert_eq!(seen.query_param("offset"), Some("1"));
    assert_eq!(seen.query_param("search_lang"), Some("de"));
    assert_eq!(seen.query_param("ui_lang"), Some("de-DE"));
    assert_eq!(seen.query_param("safesearch"), Some("moderate"));
}

#[tokio::test]
async fn every_provider_reports_zero_results_as_empty_not_failure() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        rig.sim.set_behaviour(ProviderBehaviour::Empty);
        let answer = rig
            .client
            .search(&SearchRequest::simple("zxqv"))
            .await
            .unwrap();
        assert!(answer.hits.is_empty(), "{kind:?}");
        assert_eq!(rig.calls_with_outcome("empty"), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn every_provider_reports_a_revoked_key_as_auth() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let err = rig.failure(ProviderBehaviour::Error(SimError::Auth)).await;
        assert_eq!(err.class, ErrorClass::Auth, "{kind:?}");
    }
}

#[tokio::test]
async fn a_wrong_key_is_auth_for_every_provider() {
    for kind in Provider::ALL {
        let rig = Rig::with(kind, "not-the-key", Duration::from_secs(5)).await;
        let err = rig
            .client
            .search(&SearchRequest::simple("x"))
            .await
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Auth, "{kind:?}");
        assert_eq!(rig.calls_with_outcome("auth"), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn every_provider_reports_exhausted_credits_as_quota() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let err = rig.failure(ProviderBehaviour::Error(SimError::Quota)).await;
        assert_eq!(err.class, ErrorClass::Quota, "{kind:?}");
        if kind == Provider::Brave {
            assert_eq!(
                err.retry_after,
                Some(Duration::from_secs(
                    BraveWindows::default().month_reset_secs
                )),
                "Brave parks until the monthly window resets"
            );
        }
    }
}

#[tokio::test]
async fn every_provider_reports_rate_limits_with_the_servers_retry_hint() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let err = rig
            .failure(ProviderBehaviour::Error(SimError::RateLimited {
                retry_after_secs: 7,
            }))
            .await;
        assert_eq!(err.class, ErrorClass::RateLimited, "{kind:?}");
        assert_eq!(err.retry_after, Some(Duration::from_secs(7)), "{kind:?}");
    }
}

#[tokio::test]
async fn every_provider_reports_our_malformed_request_as_bad_request() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let err = rig
            .failure(ProviderBehaviour::Error(SimError::BadRequest))
            .await;
        assert_eq!(err.class, ErrorClass::BadRequest, "{kind:?}");
    }
}

#[tokio::test]
async fn every_provider_reports_a_5xx_as_server_error() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let err = rig
            .failure(ProviderBehaviour::Error(SimError::Server))
            .await;
        assert_eq!(err.class, ErrorClass::Server, "{kind:?}");
        assert!(err.class.is_transient());
    }
}

#[tokio::test]
async fn every_provider_times_out_when_the_answer_is_slower_than_its_timeout() {
    for kind in Provider::ALL {
        let rig = Rig::with(kind, SIM_KEY, Duration::from_millis(200)).await;
        let started = Instant::now();
        let err = rig
            .failure(ProviderBehaviour::slow(
                Duration::from_secs(5),
                ProviderBehaviour::results(3, "https://a.example/"),
            ))
            .await;
        assert_eq!(err.class, ErrorClass::Timeout, "{kind:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{kind:?}: gave up after {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_slow_answer_within_the_timeout_still_counts() {
    let rig = Rig::with(Provider::Tavily, SIM_KEY, Duration::from_secs(5)).await;
    rig.sim.set_behaviour(ProviderBehaviour::slow(
        Duration::from_millis(50),
        ProviderBehaviour::results(2, "https://a.example/"),
    ));
    let answer = rig
        .client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    assert_eq!(answer.hits.len(), 2);
}

#[tokio::test]
async fn every_provider_times_out_against_a_hanging_server() {
    for kind in Provider::ALL {
        let rig = Rig::with(kind, SIM_KEY, Duration::from_millis(200)).await;
        let err = rig.failure(ProviderBehaviour::Hang).await;
        assert_eq!(err.class, ErrorClass::Timeout, "{kind:?}");
    }
}

#[tokio::test]
async fn every_provider_reports_garbled_or_wrong_shape_json_as_malformed() {
    for kind in Provider::ALL {
        let rig = Rig::new(kind).await;
        let err = rig.failure(ProviderBehaviour::Garbled).await;
        assert_eq!(err.class, ErrorClass::Malformed, "{kind:?}: garbled");

        let rig = Rig::new(kind).await;
        let err = rig.failure(ProviderBehaviour::WrongShape).await;
        assert_eq!(err.class, ErrorClass::Malformed, "{kind:?}: wrong shape");
    }
}

#[tokio::test]
async fn a_body_over_the_cap_is_too_large() {
    let rig = Rig::new(Provider::Tavily).await;
    let huge = SimHit {
        content: "x".repeat(crate::upstream::BODY_CAP + 1),
        ..hit(1)
    };
    let err = rig.failure(ProviderBehaviour::Results(vec![huge])).await;
    assert_eq!(err.class, ErrorClass::TooLarge);
}

#[tokio::test]
async fn a_provider_that_is_not_listening_is_a_connect_failure() {
    // A port that was just free: nothing accepts on it once the listener is gone.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let cfg = ProviderConfig {
        kind: Provider::Exa,
        key: Some(ApiKey::new(SIM_KEY)),
        base_url: Url::parse(&format!("http://{addr}")).unwrap(),
        timeout: Duration::from_secs(5),
    };
    let metrics = Metrics::new();
    let client = ProviderClient::new(&cfg, reqwest::Client::new(), metrics.clone()).unwrap();
    let err = client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Connect);
    assert!(err.class.is_transient());
    let counted = metrics
        .provider_calls
        .with_label_values(&["exa", "connect"])
        .get();
    assert_eq!(counted, 1);
}

#[tokio::test]
async fn brave_with_an_empty_window_answers_but_asks_to_be_parked() {
    let rig = Rig::new(Provider::Brave).await;
    rig.sim.set_brave_windows(BraveWindows {
        per_second_limit: 1,
        per_second_remaining: 0,
        ..BraveWindows::default()
    });
    let answer = rig
        .client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    assert!(!answer.hits.is_empty());
    let park = answer.park.unwrap();
    assert_eq!(park.class, ErrorClass::RateLimited);
    assert_eq!(park.retry_after, Some(Duration::from_secs(1)));

    let remaining = rig
        .metrics
        .brave_rate_limit_remaining
        .with_label_values(&["1s"])
        .get();
    assert_eq!(remaining, 0.0);
    let month = rig
        .metrics
        .brave_rate_limit_limit
        .with_label_values(&["month"])
        .get();
    assert_eq!(month, 15_000.0);
}

#[tokio::test]
async fn exa_reports_its_cost_as_a_counter() {
    let rig = Rig::new(Provider::Exa).await;
    rig.client
        .search(&SearchRequest::simple("x"))
        .await
        .unwrap();
    rig.client
        .search(&SearchRequest::simple("y"))
        .await
        .unwrap();
    let cost = rig.metrics.provider_cost.with_label_values(&["exa"]).get();
    assert!((cost - 0.014).abs() < 1e-9, "{cost}");
}

/// Collects formatted log output for one test.
#[derive(Clone, Default)]
struct CapturedLogs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn logs_name_the_provider_and_class_but_never_the_key_query_or_body() {
    let logs = CapturedLogs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let key = "sekrit-key-4711";
    let rig = Rig::with(Provider::Brave, key, Duration::from_secs(5)).await;
    rig.sim.set_expected_key(key);
    let req = SearchRequest::simple("private medical question");
    rig.client.search(&req).await.unwrap();
    rig.sim
        .set_behaviour(ProviderBehaviour::Error(SimError::BadRequest));
    rig.client.search(&req).await.unwrap_err();
    rig.sim
        .set_behaviour(ProviderBehaviour::Error(SimError::Quota));
    rig.client.search(&req).await.unwrap_err();

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("brave"), "{text}");
    assert!(text.contains("our request is wrong"), "{text}");
    assert!(text.contains("quota"), "{text}");
    // The whole output, the HTTP stack's own lines included.
    for secret in [
        key,
        "private medical question",
        "VALIDATION",
        "QUOTA_LIMITED",
    ] {
        assert!(
            !text.contains(secret),
            "{secret:?} leaked into logs:\n{text}"
        );
    }
}
