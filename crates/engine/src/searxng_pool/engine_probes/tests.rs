//! The prober on a paused clock against a fake instance: when it probes, how often, with what, and
//! what client searches may use meanwhile.

use std::sync::Mutex;

use super::*;
use crate::searxng_pool::engine_plan::EnginePlan;
use gateway_core::breaker::{BreakerMetrics, BreakerPolicy, Origin, SharedOpen, TripReason};
use gateway_core::metrics::Registry;
use gateway_core::request::SearchRequest;
use gateway_upstreams::searxng::catalog::EngineInfo;
use gateway_upstreams::searxng::{EngineCatalog, Unresponsive};
use prometheus_client::metrics::counter::Counter;

const OPEN: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_secs(2);
const MAX: Duration = Duration::from_secs(100);

/// How the fake instance answers a probe of an engine.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reply {
    Recovered,
    Captcha,
    /// Never answers.
    Hangs,
    /// SearXNG itself answers 500.
    SearxngDown,
}

/// One probe the fake saw: the engine, the query, when (since the test started).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    engine: String,
    query: String,
    at: Duration,
}

struct Fake {
    board: BreakerBoard<EngineName>,
    reply: Mutex<Reply>,
    seen: Mutex<Vec<Seen>>,
    started: Instant,
    /// Another replica wins every probe claim.
    loses_claims: bool,
    /// What a tripping answer would notify.
    wake: tokio::sync::Notify,
    /// What leaving an engine out costs per second (`None`: nothing known).
    loss: Mutex<Option<f64>>,
}

impl Fake {
    fn new() -> Self {
        Self {
            board: BreakerBoard::new(
                BreakerPolicy {
                    open_base: OPEN,
                    open_max: Duration::from_secs(100),
                    failure_threshold: 3,
                    jitter: 0.0,
                    healthy_interval: Duration::from_secs(1000),
                    quota_park: Duration::from_secs(86_400),
                },
                BreakerMetrics::new(&mut Registry::new()),
            ),
            reply: Mutex::new(Reply::Captcha),
            seen: Mutex::new(Vec::new()),
            started: Instant::now(),
            loses_claims: false,
            wake: tokio::sync::Notify::new(),
            loss: Mutex::new(None),
        }
    }

    fn set_loss(&self, loss: Option<f64>) {
        *self.loss.lock().unwrap() = loss;
    }

    fn set(&self, reply: Reply) {
        *self.reply.lock().unwrap() = reply;
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn at(&self) -> Vec<Duration> {
        self.seen().into_iter().map(|s| s.at).collect()
    }

    fn breaker(&self, name: &str) -> Arc<Breaker> {
        self.board.get(&EngineName::checked(name).unwrap())
    }

    /// What a client's search would ask SearXNG for now (alpha, never blocked here, has answered
    /// clients' searches: it carries one alone while beta is out).
    fn client_plan(&self) -> Option<Vec<String>> {
        self.breaker("alpha").record(Signal::Success);
        let catalog = EngineCatalog::from_engines(
            ["alpha", "beta"]
                .iter()
                .map(|name| EngineInfo {
                    name: (*name).into(),
                    categories: vec!["general".into()],
                    enabled: true,
                    paging: true,
                    time_range_support: true,
                })
                .collect(),
        );
        EnginePlan::new(
            Some(&catalog),
            &SearchRequest::simple("client"),
            &self.board,
            true,
            &Counter::default(),
        )
        .explicit
    }
}

impl ProbeTarget for &Fake {
    fn board(&self) -> &BreakerBoard<EngineName> {
        &self.board
    }

    fn reachable(&self) -> bool {
        true
    }

    async fn woken(&self) {
        self.wake.notified().await;
    }

    fn loss_per_second(&self, _engine: &str) -> Option<f64> {
        *self.loss.lock().unwrap()
    }

    async fn coordinate(&self) {
        if self.loses_claims {
            for breaker in self.board.all() {
                if breaker.state() == BreakerState::HalfOpen {
                    breaker.adopt_open(
                        SharedOpen {
                            until: Instant::now() + Duration::from_secs(31),
                            reason: TripReason::Captcha,
                            paused: false,
                        },
                        Origin::OtherReplica,
                    );
                }
            }
        }
    }

    async fn search(
        &self,
        engine: &EngineName,
        query: &str,
        _deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        self.seen.lock().unwrap().push(Seen {
            engine: engine.as_str().to_owned(),
            query: query.to_owned(),
            at: self.started.elapsed(),
        });
        let reply = *self.reply.lock().unwrap();
        match reply {
            Reply::Recovered => Ok(SearxngAnswer::default()),
            Reply::Captcha => Ok(SearxngAnswer {
                unresponsive: vec![Unresponsive {
                    engine: engine.as_str().to_owned(),
                    reason: EngineReason::Captcha,
                    suspended: false,
                }],
                ..SearxngAnswer::default()
            }),
            Reply::Hangs => std::future::pending().await,
            Reply::SearxngDown => Err(UpstreamError::new(ErrorClass::Server)),
        }
    }

    async fn publish(&self) {}
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Runs `script` beside a prober of `fake`; returns the probe counts by outcome.
async fn with_prober(
    fake: &Fake,
    queries: &RecentQueries,
    script: impl Future<Output = ()>,
) -> Registry {
    with_weighed_prober(fake, queries, 1.0, script).await
}

/// [`with_prober`] with `ENGINE_PROBE_WEIGHT` at `weight`.
async fn with_weighed_prober(
    fake: &Fake,
    queries: &RecentQueries,
    weight: f64,
    script: impl Future<Output = ()>,
) -> Registry {
    let mut registry = Registry::new();
    let prober = Prober::new(
        fake,
        ProbeSettings {
            timeout: TIMEOUT,
            retry: OPEN,
            max: MAX,
            weight,
        },
        queries,
        ProbeMetrics::new(&mut registry),
        InstanceLabel::single(),
    );
    tokio::select! {
        () = prober.run() => unreachable!("the prober runs for ever"),
        () = script => {}
    }
    registry
}

async fn until(fake: &Fake, t: f64) {
    tokio::time::sleep_until(fake.started + secs(t)).await;
}

fn probes(registry: &Registry, engine: &str, outcome: &str) -> Option<f64> {
    registry.sample(
        "engine_probes_total",
        &[("engine", engine), ("outcome", outcome)],
    )
}

#[tokio::test(start_paused = true)]
async fn exactly_one_probe_per_engine_per_open_period_and_clients_wait_for_its_success() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    let only_alpha = Some(vec!["alpha".to_owned()]);
    let registry = with_prober(&fake, &queries, async {
        until(&fake, 9.9).await;
        assert!(fake.seen().is_empty(), "no probe while open");
        // Still blocked at the end of the first period (10 s): one probe, a longer period (20 s).
        until(&fake, 10.5).await;
        assert_eq!(fake.at(), [secs(10.0)]);
        assert_eq!(
            fake.client_plan(),
            only_alpha,
            "still out after a failed probe"
        );
        fake.set(Reply::Recovered);
        until(&fake, 29.9).await;
        assert_eq!(
            fake.seen().len(),
            1,
            "nothing more during the second period"
        );
        assert_eq!(
            fake.client_plan(),
            only_alpha,
            "half-open or open: still out"
        );
        until(&fake, 30.5).await;
        assert_eq!(fake.at(), [secs(10.0), secs(30.0)]);
        assert_eq!(
            fake.client_plan(),
            None,
            "back in clients' searches once the probe succeeded"
        );
        until(&fake, 200.0).await;
        assert_eq!(fake.seen().len(), 2, "a closed engine is never probed");
    })
    .await;
    assert!(fake.seen().iter().all(|s| s.engine == "beta"));
    assert_eq!(probes(&registry, "beta", "blocked"), Some(1.0));
    assert_eq!(probes(&registry, "beta", "recovered"), Some(1.0));
    assert_eq!(fake.breaker("beta").state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_client_search_in_the_half_open_moment_leaves_the_engine_out_and_the_probe_to_the_prober()
{
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.set(Reply::Recovered);
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    tokio::time::advance(OPEN).await;
    assert_eq!(fake.breaker("beta").state(), BreakerState::HalfOpen);
    assert_eq!(fake.client_plan(), Some(vec!["alpha".to_owned()]));
    with_prober(&fake, &queries, async {
        until(&fake, 10.1).await;
    })
    .await;
    assert_eq!(fake.at(), [secs(10.0)], "the prober still had its probe");
    assert_eq!(fake.client_plan(), None);
}

#[tokio::test(start_paused = true)]
async fn a_trip_it_is_woken_for_is_probed_when_its_period_ends_not_at_the_next_look() {
    let fake = Fake {
        board: BreakerBoard::new(
            BreakerPolicy {
                open_base: Duration::from_millis(100),
                open_max: Duration::from_secs(100),
                failure_threshold: 3,
                jitter: 0.0,
                healthy_interval: Duration::from_secs(1000),
                quota_park: Duration::from_secs(86_400),
            },
            BreakerMetrics::new(&mut Registry::new()),
        ),
        ..Fake::new()
    };
    let queries = RecentQueries::default();
    fake.set(Reply::Recovered);
    with_prober(&fake, &queries, async {
        // The prober looks every 1 s (its retry is 10 s) and has just looked: the trip at 0.3 s
        // would wait for its next look at 1 s without the wake-up.
        until(&fake, 0.3).await;
        fake.breaker("beta")
            .record(Signal::stop(TripReason::Captcha));
        fake.wake.notify_one();
        until(&fake, 0.9).await;
    })
    .await;
    assert_eq!(fake.at(), [secs(0.4)]);
}

#[tokio::test(start_paused = true)]
async fn engines_blocked_together_are_probed_together_each_once() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.breaker("alpha")
        .record(Signal::stop(TripReason::Captcha));
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    with_prober(&fake, &queries, async {
        until(&fake, 15.0).await;
    })
    .await;
    let mut engines: Vec<String> = fake.seen().into_iter().map(|s| s.engine).collect();
    engines.sort();
    assert_eq!(engines, ["alpha", "beta"]);
    assert_eq!(fake.at(), [secs(10.0), secs(10.0)]);
}

#[tokio::test(start_paused = true)]
async fn a_probe_slower_than_its_timeout_fails_and_the_engine_stays_out() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.set(Reply::Hangs);
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    let registry = with_prober(&fake, &queries, async {
        until(&fake, 12.5).await;
    })
    .await;
    assert_eq!(fake.at(), [secs(10.0)]);
    assert_eq!(probes(&registry, "beta", "timeout"), Some(1.0));
    let beta = fake.breaker("beta").snapshot();
    assert_eq!(
        beta.state,
        BreakerState::Open,
        "reopened when the 2 s ran out"
    );
    assert_eq!(beta.open_for, Some(secs(19.5)), "20 s from 12 s");
}

#[tokio::test(start_paused = true)]
async fn when_searxng_itself_fails_the_probe_is_repeated_after_the_first_open_period_not_at_once() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.set(Reply::SearxngDown);
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    let registry = with_prober(&fake, &queries, async {
        until(&fake, 19.9).await;
        assert_eq!(fake.at(), [secs(10.0)]);
        fake.set(Reply::Recovered);
        until(&fake, 20.5).await;
    })
    .await;
    assert_eq!(fake.at(), [secs(10.0), secs(20.0)]);
    assert_eq!(probes(&registry, "beta", "inconclusive"), Some(1.0));
    assert_eq!(probes(&registry, "beta", "recovered"), Some(1.0));
    assert_eq!(fake.client_plan(), None);
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_lost_the_claim_does_not_probe() {
    let fake = Fake {
        loses_claims: true,
        ..Fake::new()
    };
    let queries = RecentQueries::default();
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    with_prober(&fake, &queries, async {
        until(&fake, 30.0).await;
    })
    .await;
    assert!(
        fake.seen().is_empty(),
        "another replica probes: {:?}",
        fake.seen()
    );
    assert_eq!(fake.client_plan(), Some(vec!["alpha".to_owned()]));
}

#[tokio::test(start_paused = true)]
async fn the_probe_asks_the_most_popular_recent_query_or_a_fixed_harmless_one() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    with_prober(&fake, &queries, async {
        until(&fake, 10.5).await;
        for query in ["rust", "tokio", "rust"] {
            queries.note(query);
        }
        until(&fake, 30.5).await;
    })
    .await;
    let asked: Vec<String> = fake.seen().into_iter().map(|s| s.query).collect();
    assert_eq!(asked, [FALLBACK_QUERY, "rust"]);
}

#[tokio::test(start_paused = true)]
async fn a_valuable_engine_under_heavy_traffic_is_probed_before_its_backoff_ends() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.set_loss(Some(0.8));
    fake.set(Reply::Recovered);
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    fake.wake.notify_one();
    with_prober(&fake, &queries, async {
        until(&fake, 4.9).await;
        assert!(fake.seen().is_empty());
        assert_eq!(fake.client_plan(), Some(vec!["alpha".to_owned()]));
        until(&fake, 5.1).await;
    })
    .await;
    assert_eq!(
        fake.at(),
        [secs(5.0)],
        "√(2 × 10 s / 0.8 per s), not the 10 s backoff"
    );
    assert_eq!(fake.client_plan(), None);
}

#[tokio::test(start_paused = true)]
async fn the_probe_weight_moves_the_probe_along_the_square_root_rule() {
    for (weight, due) in [(0.32, 2.83), (2.0, 7.07)] {
        let fake = Fake::new();
        let queries = RecentQueries::default();
        fake.set_loss(Some(0.8));
        fake.set(Reply::Recovered);
        fake.breaker("beta")
            .record(Signal::stop(TripReason::Captcha));
        fake.wake.notify_one();
        with_weighed_prober(&fake, &queries, weight, async {
            until(&fake, due - 0.1).await;
            assert!(
                fake.seen().is_empty(),
                "weight {weight}: not before {due} s"
            );
            until(&fake, due + 0.1).await;
        })
        .await;
        let at = fake.at();
        assert_eq!(at.len(), 1, "weight {weight}: one probe");
        assert!(
            (at[0].as_secs_f64() - due).abs() < 0.01,
            "weight {weight}: √(2 × 10 s × {weight} / 0.8 per s) = {due} s, got {:?}",
            at[0]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_engine_nobody_searches_is_probed_later_and_sooner_once_traffic_returns() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.set_loss(Some(0.0));
    fake.set(Reply::Recovered);
    fake.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    fake.wake.notify_one();
    with_prober(&fake, &queries, async {
        until(&fake, 50.0).await;
        assert!(fake.seen().is_empty(), "idle: not worth a probe at 10 s");
        assert_eq!(fake.breaker("beta").state(), BreakerState::HalfOpen);
        assert_eq!(fake.client_plan(), Some(vec!["alpha".to_owned()]));
        fake.set_loss(Some(0.8));
        until(&fake, 51.5).await;
    })
    .await;
    let at = fake.at();
    assert_eq!(at.len(), 1);
    assert!(
        at[0] >= secs(50.0) && at[0] <= secs(51.0),
        "at its next look: {at:?}"
    );

    let idle = Fake::new();
    idle.set_loss(Some(0.0));
    idle.breaker("beta")
        .record(Signal::stop(TripReason::Captcha));
    idle.wake.notify_one();
    with_prober(&idle, &queries, async {
        until(&idle, 150.0).await;
    })
    .await;
    assert_eq!(
        idle.at(),
        [MAX],
        "at most BREAKER_MAX_OPEN_SECONDS after the period began"
    );
}

#[tokio::test(start_paused = true)]
async fn a_servers_reset_hint_still_wins_over_heavy_traffic() {
    let fake = Fake::new();
    let queries = RecentQueries::default();
    fake.set_loss(Some(100.0));
    fake.set(Reply::Recovered);
    fake.breaker("beta").record(Signal::Stop {
        reason: TripReason::RateLimited,
        retry_after: Some(secs(30.0)),
    });
    fake.wake.notify_one();
    with_prober(&fake, &queries, async {
        until(&fake, 30.5).await;
    })
    .await;
    assert_eq!(fake.at(), [secs(30.0)]);
}
