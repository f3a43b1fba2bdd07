//! The reranker step (`RERANK_URL`, #41): the lexical ranking's best [`CANDIDATES`] passages sent
//! to the reranker, and their order taken from its answer (`select::Ranking::reranked`), within its
//! timeout and through its own breaker (`reranker`). Every way it can go wrong — the breaker open,
//! a failure, a timeout, garbage — leaves the lexical order in place ([`RankedBy::Fallback`]),
//! counted in `passage_reranks_total{outcome}`; a door's `explain` says which ranked.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::Ranked;
use crate::breaker_signals;
use gateway_core::breaker::{Breaker, BreakerKind, BreakerMetrics, BreakerPolicy, Signal};
use gateway_core::metrics::{label_value_as_str, InstanceLabel, Registry};
use gateway_core::upstream::ErrorClass;
use gateway_upstreams::reranker::{Reranker, Scored};

/// The passages the reranker is asked about: the lexical ranking's best. Enough that the answer
/// is among them when the page says it in other words than the query's; few enough that a small
/// cross-encoder answers well within its timeout (each is at most a passage's length).
pub const CANDIDATES: usize = 24;

/// The reranker's breaker's name (namespace `reranker`).
pub(crate) const BREAKER_NAME: &str = "reranker";

/// Which ranking ordered the passages a door chose from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankedBy {
    /// The lexical ranking (no reranker configured, or nothing to rerank).
    Lexical,
    /// The reranker, over the lexical ranking's best candidates.
    Reranker,
    /// The lexical ranking, because the reranker could not be used.
    Fallback(Fallback),
}

impl RankedBy {
    /// As `explain` says it: `lexical`, `reranker` or `lexical_fallback`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lexical => "lexical",
            Self::Reranker => "reranker",
            Self::Fallback(_) => "lexical_fallback",
        }
    }

    /// Why the reranker was not used, for a fallback.
    pub fn fallback(self) -> Option<Fallback> {
        match self {
            Self::Fallback(why) => Some(why),
            Self::Lexical | Self::Reranker => None,
        }
    }
}

/// Why a reranker configured was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fallback {
    /// Its breaker is open.
    BreakerOpen,
    /// The request's budget ran out before it answered (or before it could be asked): nothing
    /// against the reranker.
    Budget,
    /// The call failed (`timeout`, `malformed` for garbage, ...).
    Failed(ErrorClass),
}

impl Fallback {
    /// The `outcome` label value, and what `explain` says.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BreakerOpen => "breaker_open",
            Self::Budget => "budget",
            Self::Failed(class) => class.as_str(),
        }
    }
}

/// How one rerank went: the `outcome` of `passage_reranks_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RerankOutcome {
    /// The reranker's order was used.
    Reranked,
    /// The lexical order was used instead.
    Fallback(Fallback),
}

label_value_as_str!(RerankOutcome);

impl RerankOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Reranked => "reranked",
            Self::Fallback(why) => why.as_str(),
        }
    }
}

/// `{outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct RerankLabels {
    pub(crate) outcome: RerankOutcome,
}

/// `passage_reranks_total{outcome}`. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct RerankMetrics {
    pub(crate) reranks: Family<RerankLabels, Counter>,
}

impl RerankMetrics {
    /// The family, registered on `r`.
    pub(crate) fn new(r: &mut Registry) -> Self {
        let m = Self::default();
        let _ = m.reranks.get_or_create(&RerankLabels {
            outcome: RerankOutcome::Reranked,
        });
        r.register(
            "passage_reranks",
            "Passage rankings sent to the reranker (RERANK_URL), by outcome: reranked, or why the lexical order was used instead (breaker_open, budget, timeout, malformed, server_error, ...)",
            m.reranks.clone(),
        );
        m
    }
}

/// The reranker, its breaker and its counter. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Reranking {
    reranker: Arc<Reranker>,
    breaker: Arc<Breaker>,
    metrics: RerankMetrics,
}

impl Reranking {
    /// The step around `reranker`, its breaker under `policy` with a series in `breakers`.
    pub(crate) fn new(
        reranker: Reranker,
        policy: BreakerPolicy,
        breakers: &BreakerMetrics,
        metrics: RerankMetrics,
    ) -> Self {
        Self {
            reranker: Arc::new(reranker),
            breaker: Arc::new(Breaker::new(
                BreakerKind::Reranker,
                BREAKER_NAME,
                InstanceLabel::single(),
                policy,
                breakers,
            )),
            metrics,
        }
    }

    /// Its breaker (`/status`, the admin's switch, the metrics' refresh).
    pub(crate) fn breaker(&self) -> &Arc<Breaker> {
        &self.breaker
    }

    /// `ranked` reordered by the reranker for `query` within `limit` (and its own timeout), or
    /// left in its lexical order with the reason; nothing asked when fewer than two passages
    /// could change places.
    pub(crate) async fn rerank(&self, ranked: &mut Ranked, query: &str, limit: Duration) {
        let candidates: Vec<usize> = ranked.ranking.best(CANDIDATES).to_vec();
        if candidates.len() < 2 {
            return;
        }
        let documents: Vec<&str> = candidates
            .iter()
            .map(|i| ranked.passages[*i].text.as_str())
            .collect();
        match self.score(query, &documents, limit).await {
            Ok(scored) => {
                let order: Vec<usize> = scored.iter().map(|s| s.index).collect();
                ranked.ranking = ranked.ranking.reranked(&candidates, &order);
                ranked.by = RankedBy::Reranker;
            }
            Err(why) => ranked.by = RankedBy::Fallback(why),
        }
    }

    /// The reranker's scores of `documents` for `query`, the best first, through its breaker
    /// and within `limit` — what is left of the request's budget — and its own timeout; counted
    /// in `passage_reranks_total` either way. A call the request's budget cut short tells its
    /// breaker nothing (the reranker was not given its time).
    pub(crate) async fn score(
        &self,
        query: &str,
        documents: &[&str],
        limit: Duration,
    ) -> Result<Vec<Scored>, Fallback> {
        if limit.is_zero() {
            self.count(RerankOutcome::Fallback(Fallback::Budget));
            return Err(Fallback::Budget);
        }
        let Some(permit) = self.breaker.admit() else {
            self.count(RerankOutcome::Fallback(Fallback::BreakerOpen));
            return Err(Fallback::BreakerOpen);
        };
        let cut_short = limit < self.reranker.timeout();
        match self.reranker.rerank(query, documents, limit).await {
            Err(err) if err.class == ErrorClass::Timeout && cut_short => {
                // Dropped unrecorded: a probe's slot is freed for the next call.
                drop(permit);
                self.count(RerankOutcome::Fallback(Fallback::Budget));
                Err(Fallback::Budget)
            }
            Ok(scored) => {
                permit.record(Signal::Success);
                self.count(RerankOutcome::Reranked);
                Ok(scored)
            }
            Err(err) => {
                permit.record(breaker_signals::for_reranker(&err));
                tracing::warn!(
                    class = err.class.as_str(),
                    status = err.status.map(|s| s.as_u16()),
                    documents = documents.len(),
                    "reranker failed: the lexical order is used"
                );
                let why = Fallback::Failed(err.class);
                self.count(RerankOutcome::Fallback(why));
                Err(why)
            }
        }
    }

    fn count(&self, outcome: RerankOutcome) {
        self.metrics
            .reranks
            .get_or_create(&RerankLabels { outcome })
            .inc();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! Against the simulator's fake reranker on loopback: the calls in real time with short
    //! deadlines (a real socket: a paused clock would run ahead of it), the breaker's open period
    //! skipped on tokio's paused clock between them; nothing asserts how long anything took.

    use simulator::reranker::{RerankerBehaviour, SimulatedReranker};

    use super::*;
    use crate::read::passages::{Merge, PassageOrder, PassageSelector, Selection};
    use crate::settings::TokenizerEncoding;
    use gateway_core::breaker::BreakerState;
    use gateway_core::env::Env;
    use gateway_core::upstream::UpstreamHttp;
    use gateway_upstreams::reranker::RerankerSettings;

    /// Lexically, the keeper's passage answers best (three words of the query); the zebra's has
    /// one word of it.
    const PAGE: &str = "# Coast guide\n\n## Keeper\n\nThe lighthouse keeper climbs to the \
        lighthouse lamp every evening and lights the lamp.\n\n## Dusk\n\nA zebra grazes by the \
        lighthouse at dusk.\n\n## Ferries\n\nFerries cross the bay twice a day.";
    const QUERY: &str = "lighthouse lamp";

    const ONE: Selection = Selection {
        max_chars: 500,
        max_passages: Some(1),
        budget: None,
        order: PassageOrder::Page,
        relevant_only: false,
        merge: Merge::Adjacent,
    };

    struct Fixture {
        fake: SimulatedReranker,
        reranking: Reranking,
        registry: Registry,
    }

    impl Fixture {
        async fn new(vars: &[(&str, &str)], threshold: u32) -> Self {
            let fake = SimulatedReranker::start().await.unwrap();
            let mut vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            vars.push(("RERANK_URL".to_owned(), fake.url()));
            let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let settings = RerankerSettings::read(&Env::new(&lookup)).unwrap().unwrap();
            let mut registry = Registry::new();
            let breakers = BreakerMetrics::new(&mut registry);
            let metrics = RerankMetrics::new(&mut registry);
            let policy = BreakerPolicy {
                open_base: Duration::from_secs(300),
                open_max: Duration::from_secs(3600),
                failure_threshold: threshold,
                jitter: 0.0,
                healthy_interval: Duration::from_secs(300),
                quota_park: Duration::from_secs(3600),
            };
            let reranker = Reranker::new(&settings, UpstreamHttp::new(1).unwrap());
            Self {
                fake,
                reranking: Reranking::new(reranker, policy, &breakers, metrics),
                registry,
            }
        }

        /// The page ranked for the query, reranked as the fake answers.
        async fn ranked(&self) -> Ranked {
            let mut ranked = lexical();
            self.reranking
                .rerank(&mut ranked, QUERY, Duration::MAX)
                .await;
            ranked
        }

        fn counted(&self, outcome: &str) -> f64 {
            self.registry
                .sample("passage_reranks_total", &[("outcome", outcome)])
                .unwrap_or(0.0)
        }
    }

    fn lexical() -> Ranked {
        PassageSelector::new(TokenizerEncoding::O200kBase).rank(
            &[(PAGE, Some("Coast"))],
            QUERY,
            500,
        )
    }

    fn best(ranked: &Ranked) -> String {
        ranked.choose(&ONE)[0].text.clone()
    }

    #[tokio::test]
    async fn the_rerankers_order_decides_which_passages_are_chosen() {
        let f = Fixture::new(
            &[
                ("RERANK_MODEL", "bge-reranker-v2-m3"),
                ("RERANK_API_KEY", "rk-secret"),
            ],
            5,
        )
        .await;
        f.fake.expect_key(Some("rk-secret"));
        f.fake
            .set_behaviour(RerankerBehaviour::Favour(vec!["zebra".to_owned()]));
        assert!(
            best(&lexical()).contains("keeper"),
            "lexically the keeper's"
        );
        let ranked = f.ranked().await;
        assert_eq!(ranked.ranked_by(), RankedBy::Reranker);
        assert!(best(&ranked).contains("zebra"), "{ranked:?}");
        let sent = f.fake.requests();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].auth.as_deref(), Some("Bearer rk-secret"));
        assert_eq!(sent[0].body["model"], "bge-reranker-v2-m3");
        assert_eq!(sent[0].body["query"], QUERY);
        let documents = sent[0].documents();
        assert!(
            documents[0].contains("keeper"),
            "the lexical best first: {documents:?}"
        );
        assert_eq!(sent[0].body["top_n"], documents.len());
        assert_eq!(f.counted("reranked"), 1.0);
    }

    #[tokio::test]
    async fn a_failing_reranker_leaves_the_lexical_order_and_trips_its_breaker() {
        let f = Fixture::new(&[], 3).await;
        f.fake.set_behaviour(RerankerBehaviour::ServerError);
        for _ in 0..3 {
            let ranked = f.ranked().await;
            assert_eq!(
                ranked.ranked_by(),
                RankedBy::Fallback(Fallback::Failed(ErrorClass::Server))
            );
            assert!(best(&ranked).contains("keeper"));
        }
        assert_eq!(f.reranking.breaker().state(), BreakerState::Open);
        let ranked = f.ranked().await;
        assert_eq!(
            ranked.ranked_by(),
            RankedBy::Fallback(Fallback::BreakerOpen)
        );
        assert!(best(&ranked).contains("keeper"));
        assert_eq!(f.fake.calls(), 3, "the open breaker sends nothing");
        assert_eq!(f.counted("server_error"), 3.0);
        assert_eq!(f.counted("breaker_open"), 1.0);
        assert_eq!(f.counted("reranked"), 0.0);
        assert_eq!(
            f.registry.sample(
                "circuit_breaker_state",
                &[("kind", "reranker"), ("engine", "reranker")]
            ),
            Some(f64::from(BreakerState::Open.as_gauge() as i32))
        );
    }

    /// The open period is skipped on tokio's paused clock (the breaker's time), the calls made
    /// in real time around it.
    #[tokio::test]
    async fn after_its_open_period_one_probe_goes_to_the_reranker_and_a_sound_answer_closes_it() {
        let f = Fixture::new(&[], 1).await;
        f.fake.set_behaviour(RerankerBehaviour::ServerError);
        assert_eq!(
            f.ranked().await.ranked_by(),
            RankedBy::Fallback(Fallback::Failed(ErrorClass::Server))
        );
        assert_eq!(
            f.ranked().await.ranked_by(),
            RankedBy::Fallback(Fallback::BreakerOpen)
        );
        tokio::time::pause();
        tokio::time::advance(Duration::from_secs(299)).await;
        assert_eq!(f.reranking.breaker().state(), BreakerState::Open);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(f.reranking.breaker().state(), BreakerState::HalfOpen);
        tokio::time::resume();
        f.fake
            .set_behaviour(RerankerBehaviour::Favour(vec!["zebra".to_owned()]));
        let ranked = f.ranked().await;
        assert_eq!(ranked.ranked_by(), RankedBy::Reranker);
        assert!(best(&ranked).contains("zebra"));
        assert_eq!(f.reranking.breaker().state(), BreakerState::Closed);
        assert_eq!(f.fake.calls(), 2, "the failure and the probe");
    }

    #[tokio::test]
    async fn a_reranker_that_does_not_answer_in_time_leaves_the_lexical_order() {
        let f = Fixture::new(&[("RERANK_TIMEOUT_SECONDS", "0.2")], 5).await;
        f.fake.set_behaviour(RerankerBehaviour::Slow(
            Duration::from_secs(60),
            Box::new(RerankerBehaviour::Favour(vec!["zebra".to_owned()])),
        ));
        let ranked = f.ranked().await;
        assert_eq!(
            ranked.ranked_by(),
            RankedBy::Fallback(Fallback::Failed(ErrorClass::Timeout))
        );
        assert!(best(&ranked).contains("keeper"));
        assert_eq!(f.counted("timeout"), 1.0);
    }

    #[tokio::test]
    async fn a_request_out_of_budget_falls_back_without_a_mark_against_the_reranker() {
        let f = Fixture::new(&[], 1).await;
        f.fake.set_behaviour(RerankerBehaviour::Slow(
            Duration::from_secs(60),
            Box::new(RerankerBehaviour::Favour(vec!["zebra".to_owned()])),
        ));
        let mut ranked = lexical();
        f.reranking
            .rerank(&mut ranked, QUERY, Duration::from_millis(200))
            .await;
        assert_eq!(ranked.ranked_by(), RankedBy::Fallback(Fallback::Budget));
        assert!(best(&ranked).contains("keeper"));
        assert_eq!(
            f.reranking.breaker().state(),
            BreakerState::Closed,
            "cut short by the request, not failed: a threshold of one is not reached"
        );
        let mut ranked = lexical();
        f.reranking.rerank(&mut ranked, QUERY, Duration::ZERO).await;
        assert_eq!(ranked.ranked_by(), RankedBy::Fallback(Fallback::Budget));
        assert_eq!(f.fake.calls(), 1, "no time left: nothing sent");
        assert_eq!(f.counted("budget"), 2.0);
        assert_eq!(f.counted("timeout"), 0.0);
    }

    #[tokio::test]
    async fn garbage_from_the_reranker_is_malformed_and_leaves_the_lexical_order() {
        let f = Fixture::new(&[], 100).await;
        for garbage in [
            RerankerBehaviour::IndexOutOfRange,
            RerankerBehaviour::DuplicateIndex,
            RerankerBehaviour::ScoreNotANumber,
            RerankerBehaviour::NotJson,
        ] {
            f.fake.set_behaviour(garbage.clone());
            let ranked = f.ranked().await;
            assert_eq!(
                ranked.ranked_by(),
                RankedBy::Fallback(Fallback::Failed(ErrorClass::Malformed)),
                "{garbage:?}"
            );
            assert!(best(&ranked).contains("keeper"), "{garbage:?}");
        }
        assert_eq!(f.counted("malformed"), 4.0);
    }

    #[tokio::test]
    async fn a_page_of_one_passage_is_not_sent() {
        let f = Fixture::new(&[], 5).await;
        let mut ranked = PassageSelector::new(TokenizerEncoding::O200kBase).rank(
            &[("One short paragraph about a lighthouse.", None)],
            QUERY,
            500,
        );
        f.reranking.rerank(&mut ranked, QUERY, Duration::MAX).await;
        assert_eq!(ranked.ranked_by(), RankedBy::Lexical);
        assert_eq!(f.fake.calls(), 0);
    }
}
