//! Which SearXNG engines one request may use: the engines SearXNG would search (from the catalog
//! `/config` reported), minus those whose breaker is open. When something is excluded the gateway
//! sends an explicit `engines=` list — only names `/config` reported, never an empty list. An
//! engine is included only while its breaker is closed: a half-open engine's probe is the
//! gateway's own search ([`crate::searxng_pool::engine_probes`]), never a client's, and the engine comes back
//! into clients' searches once that probe succeeded.
//!
//! **Never an empty SearXNG by our own hand** (#45). An exclusion must leave every requested group
//! (each category, the requested engines) at least one *usable* engine: closed, heard from on this
//! instance before (it answered or failed in a search, so it takes part in searches like this one
//! and SearXNG reports what becomes of it — until the instance answered a first search, nothing
//! is known against an engine and this is not asked), and run by SearXNG for this request (`pageno > 1` and
//! `time_range` skip engines that lack them, silently). A closed engine that never answers — a
//! dictionary or currency engine that only runs for queries of its own shape — is not one: an
//! explicit list of such engines made SearXNG search nothing and answer a healthy-looking empty
//! 200, a total failure turned into "nothing exists" and cached. When a group would be left
//! without a usable engine, the request goes to SearXNG **unrestricted**, as the client asked (no
//! `engines=` list), and the override is counted. Unrestricted rather than "the least-bad open
//! engine": SearXNG then tries every engine and reports each one's fate in
//! `unresponsive_engines` — the honest, current reason (`HTTP connection error`, `CAPTCHA`) the
//! failure body shows — or its results if an engine came back; guessing which open engine is least
//! bad would send it alone, hide the others' state and still fail. The cost, calls into engines
//! that are failing anyway, is bounded by the instance's cooldown: an instance whose searches keep
//! coming back degraded is skipped, with one probe per period.

use std::sync::{Arc, RwLock};

use tokio::sync::Notify;

use crate::breaker_signals;
use gateway_core::breaker::{BreakerBoard, Permit, Signal};
use gateway_core::request::SearchRequest;
use gateway_upstreams::searxng::{EngineCatalog, EngineName, SearxngAnswer};
use prometheus_client::metrics::counter::Counter;

/// The latest catalog, shared with the task that refreshes it.
#[derive(Debug, Default)]
pub(crate) struct CatalogHandle {
    current: RwLock<Option<Arc<EngineCatalog>>>,
    /// Wakes the refresher early (an engine name the catalog does not know was seen).
    pub(crate) refresh: Notify,
}

impl CatalogHandle {
    /// The catalog now, if `/config` has answered yet.
    pub(crate) fn get(&self) -> Option<Arc<EngineCatalog>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the catalog.
    pub(crate) fn set(&self, catalog: EngineCatalog) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(catalog));
    }
}

/// One request's engine plan.
#[derive(Debug, Default)]
pub(crate) struct EnginePlan {
    /// `Some(list)`: send exactly these engines (and no categories). `None`: send the client's own.
    pub(crate) explicit: Option<Vec<String>>,
    /// The engines left out because their breaker is open (when `explicit` is set).
    pub(crate) excluded: Vec<String>,
    /// The engines this request includes, each with its breaker's permit (none for a name that
    /// fails [`EngineName::checked`]: it has no breaker); the answer decides each.
    permits: Vec<(String, Option<Permit>)>,
}

impl EnginePlan {
    /// Plans `req` against the catalog and the engine breakers. `searched`: the instance has
    /// answered a client's search before, so an engine never heard from is one that takes no part
    /// in searches like this; before that, nothing is known against it and it counts as usable.
    pub(crate) fn new(
        catalog: Option<&EngineCatalog>,
        req: &SearchRequest,
        board: &BreakerBoard<EngineName>,
        searched: bool,
        overridden: &Counter,
    ) -> Self {
        let Some(catalog) = catalog.filter(|c| !c.is_empty()) else {
            return Self::default();
        };
        let groups = catalog.target_groups(req);
        let targets = catalog.targets(req);
        if targets.is_empty() {
            return Self::default();
        }
        let mut permits = Vec::with_capacity(targets.len());
        let mut excluded = Vec::new();
        let mut usable: Vec<&str> = Vec::with_capacity(targets.len());
        for name in &targets {
            let Some(engine) = EngineName::checked(name) else {
                permits.push((name.clone(), None));
                continue;
            };
            let breaker = board.get(&engine);
            match breaker.admit_closed() {
                Some(permit) => {
                    if (breaker.heard() || !searched) && catalog.runs_for(name, req) {
                        usable.push(name);
                    }
                    permits.push((name.clone(), Some(permit)));
                }
                None => excluded.push(name.clone()),
            }
        }
        if excluded.is_empty() {
            return Self {
                explicit: None,
                excluded,
                permits,
            };
        }
        let emptied = groups
            .iter()
            .any(|group| !group.iter().any(|name| usable.contains(&name.as_str())));
        if emptied {
            // The exclusion would leave a requested category (or the requested engines) nothing
            // that answers: SearXNG would search something else, or nothing, and answer an empty
            // 200. Send the request as asked — SearXNG reports every engine's fate — and make the
            // override visible. The closed engines keep their permits, so what they answer now
            // is heard (and makes them usable for the next plan).
            overridden.inc();
            tracing::debug!(engines = ?targets, excluded = ?excluded, "no usable engine left in a requested group; sending the search unrestricted");
            return Self {
                explicit: None,
                excluded: Vec::new(),
                permits,
            };
        }
        let explicit = permits.iter().map(|(name, _)| name.clone()).collect();
        Self {
            explicit: Some(explicit),
            excluded,
            permits,
        }
    }

    /// The engines this plan asks SearXNG for (empty before the catalog is known).
    pub(crate) fn asked(&self) -> Vec<&str> {
        self.permits.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// Feeds SearXNG's answer to the engine breakers: an engine with results is a success, an
    /// unresponsive one (also `Suspended:`) a failure of its reason, one absent from both neutral.
    /// Returns whether the answer named an engine the catalog does not know.
    pub(crate) fn settle(
        self,
        answer: &SearxngAnswer,
        board: &BreakerBoard<EngineName>,
        catalog: Option<&EngineCatalog>,
    ) -> bool {
        let with_results = answer.engines_with_results();
        let mut permits = self.permits;
        let mut signal_for = |name: &str, signal: Signal| {
            if let Some(i) = permits.iter().position(|(n, _)| n == name) {
                if let (_, Some(permit)) = permits.swap_remove(i) {
                    permit.record(signal);
                }
            } else if !matches!(signal, Signal::Success) {
                // Not planned (no catalog yet, or an override): failures still count — for a name
                // the catalog reported when there is one (the board stays a closed set).
                let engine = match catalog {
                    Some(catalog) => catalog.engine(name),
                    None => EngineName::checked(name),
                };
                if let Some(engine) = engine {
                    board.get(&engine).record(signal);
                }
            }
        };
        for u in &answer.unresponsive {
            signal_for(&u.engine, breaker_signals::for_engine(u.reason));
        }
        for name in &with_results {
            if !answer.unresponsive.iter().any(|u| &u.engine == name) {
                signal_for(name, Signal::Success);
            }
        }
        // Remaining permits: engines that neither answered nor failed (e.g. no paging support):
        // dropping them records nothing and frees a probe slot.
        drop(permits);
        catalog.is_some_and(|c| {
            with_results
                .iter()
                .copied()
                .chain(answer.unresponsive.iter().map(|u| u.engine.as_str()))
                .any(|name| !c.knows(name))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use gateway_core::breaker::{BreakerMetrics, BreakerPolicy, BreakerState, TripReason};
    use gateway_core::metrics::Registry;
    use gateway_upstreams::searxng::catalog::EngineInfo;
    use gateway_upstreams::searxng::{EngineReason, Unresponsive};
    use prometheus_client::metrics::counter::Counter;

    fn catalog() -> EngineCatalog {
        let engine = |name: &str, cats: &[&str]| EngineInfo {
            name: name.into(),
            categories: cats.iter().map(|c| (*c).to_owned()).collect(),
            enabled: true,
            paging: true,
            time_range_support: true,
        };
        EngineCatalog::from_engines(vec![
            engine("alpha", &["general"]),
            engine("beta", &["general"]),
            engine("gamma", &["news"]),
        ])
    }

    fn board() -> BreakerBoard<EngineName> {
        BreakerBoard::new(
            BreakerPolicy {
                open_base: Duration::from_secs(10),
                open_max: Duration::from_secs(100),
                failure_threshold: 3,
                jitter: 0.0,
                healthy_interval: Duration::from_secs(100),
                quota_park: Duration::from_secs(86_400),
            },
            BreakerMetrics::new(&mut Registry::new()),
        )
    }

    fn engine(name: &str) -> EngineName {
        EngineName::checked(name).unwrap()
    }

    /// `names` answered a search: they take part in searches (usable while closed).
    fn heard(board: &BreakerBoard<EngineName>, names: &[&str]) {
        for name in names {
            board.get(&engine(name)).record(Signal::Success);
        }
    }

    fn trip(board: &BreakerBoard<EngineName>, name: &str) {
        board
            .get(&engine(name))
            .record(Signal::stop(TripReason::RateLimited));
    }

    fn answer(with_results: &[&str], failed: &[(&str, EngineReason)]) -> SearxngAnswer {
        let results = with_results
            .iter()
            .map(|e| {
                gateway_core::search_result::SearchResult::from_json(
                    &serde_json::json!({"url": format!("https://{e}.example/"), "title": "t", "engines": [e]}),
                )
                .unwrap()
            })
            .collect();
        SearxngAnswer {
            results,
            unresponsive: failed
                .iter()
                .map(|(e, r)| Unresponsive {
                    engine: (*e).into(),
                    reason: *r,
                    suspended: false,
                })
                .collect(),
            ..SearxngAnswer::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_open_sends_the_request_as_asked() {
        let overridden = Counter::default();
        let plan = EnginePlan::new(
            Some(&catalog()),
            &SearchRequest::simple("q"),
            &board(),
            true,
            &overridden,
        );
        assert_eq!(plan.explicit, None);
        assert_eq!(plan.permits.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_engine_is_left_out_of_an_explicit_list() {
        let overridden = Counter::default();
        let b = board();
        heard(&b, &["alpha", "beta", "gamma"]);
        trip(&b, "beta");
        let plan = EnginePlan::new(
            Some(&catalog()),
            &SearchRequest::simple("q"),
            &b,
            true,
            &overridden,
        );
        assert_eq!(plan.explicit, Some(vec!["alpha".to_owned()]));
    }

    #[tokio::test(start_paused = true)]
    async fn excluding_every_requested_engine_sends_them_all_and_counts_it() {
        let overridden = Counter::default();
        let b = board();
        trip(&b, "gamma");
        let req = SearchRequest {
            categories: vec!["news".into()],
            ..SearchRequest::simple("q")
        };
        let plan = EnginePlan::new(Some(&catalog()), &req, &b, true, &overridden);
        assert_eq!(plan.explicit, None, "never an empty engines= list");
        assert_eq!(overridden.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_exclusion_never_empties_one_requested_category() {
        let overridden = Counter::default();
        let b = board();
        heard(&b, &["alpha", "beta", "gamma"]);
        trip(&b, "gamma");
        let req = SearchRequest {
            categories: vec!["general".into(), "news".into()],
            ..SearchRequest::simple("q")
        };
        let plan = EnginePlan::new(Some(&catalog()), &req, &b, true, &overridden);
        assert_eq!(plan.explicit, None, "news would have no engine left");
        assert_eq!(overridden.get(), 1);
        trip(&b, "beta");
        let general_only = EnginePlan::new(
            Some(&catalog()),
            &SearchRequest::simple("q"),
            &b,
            true,
            &overridden,
        );
        assert_eq!(general_only.explicit, Some(vec!["alpha".to_owned()]));
    }

    /// #45: every engine that answers is open; what is left closed never runs for this search (a
    /// dictionary engine that answers only queries of its own shape, an engine without paging on
    /// page 2). An explicit list of those made SearXNG search nothing and answer an empty 200: the
    /// search goes unrestricted instead, so SearXNG reports every engine's failure.
    #[tokio::test(start_paused = true)]
    async fn an_exclusion_that_leaves_only_engines_that_never_answer_sends_the_search_unrestricted()
    {
        let with_dictionary = EngineCatalog::from_engines(vec![
            EngineInfo {
                name: "alpha".into(),
                categories: vec!["general".into()],
                enabled: true,
                paging: true,
                time_range_support: true,
            },
            EngineInfo {
                name: "beta".into(),
                categories: vec!["general".into()],
                enabled: true,
                paging: false,
                time_range_support: true,
            },
            EngineInfo {
                name: "dictionary".into(),
                categories: vec!["general".into()],
                enabled: true,
                paging: true,
                time_range_support: true,
            },
        ]);
        let overridden = Counter::default();
        let b = board();
        heard(&b, &["alpha", "beta"]);
        trip(&b, "alpha");
        // Page 1: beta runs and answers — it carries the search alone.
        let page_one = EnginePlan::new(
            Some(&with_dictionary),
            &SearchRequest::simple("q"),
            &b,
            true,
            &overridden,
        );
        assert_eq!(
            page_one.explicit,
            Some(vec!["beta".to_owned(), "dictionary".to_owned()])
        );
        assert_eq!(overridden.get(), 0);
        // Page 2: beta has no paging and the dictionary never answered: nothing usable is left.
        let page_two = SearchRequest {
            pageno: 2,
            ..SearchRequest::simple("q")
        };
        let plan = EnginePlan::new(Some(&with_dictionary), &page_two, &b, true, &overridden);
        assert_eq!(plan.explicit, None, "unrestricted: SearXNG reports alpha");
        assert!(plan.excluded.is_empty());
        assert_eq!(overridden.get(), 1);
        // Every engine that answers open: the same.
        trip(&b, "beta");
        let plan = EnginePlan::new(
            Some(&with_dictionary),
            &SearchRequest::simple("q"),
            &b,
            true,
            &overridden,
        );
        assert_eq!(plan.explicit, None);
        assert_eq!(overridden.get(), 2);
        assert_eq!(
            plan.asked(),
            ["dictionary"],
            "the closed engine keeps its permit: what it answers is heard"
        );
        // Before the instance answered any search, nothing is known against an engine never
        // heard from (breakers seeded at start-up): it carries the search.
        let at_start = EnginePlan::new(
            Some(&with_dictionary),
            &SearchRequest::simple("q"),
            &b,
            false,
            &overridden,
        );
        assert_eq!(at_start.explicit, Some(vec!["dictionary".to_owned()]));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_catalog_nothing_is_excluded() {
        let overridden = Counter::default();
        let b = board();
        trip(&b, "beta");
        let plan = EnginePlan::new(None, &SearchRequest::simple("q"), &b, true, &overridden);
        assert_eq!(plan.explicit, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_half_open_engine_stays_out_of_client_searches_until_its_probe_succeeded() {
        let overridden = Counter::default();
        let b = board();
        heard(&b, &["alpha"]);
        trip(&b, "beta");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(b.get(&engine("beta")).state(), BreakerState::HalfOpen);
        let plan = || {
            EnginePlan::new(
                Some(&catalog()),
                &SearchRequest::simple("q"),
                &b,
                true,
                &overridden,
            )
        };
        for _ in 0..3 {
            let client = plan();
            assert_eq!(client.explicit, Some(vec!["alpha".to_owned()]));
            assert!(client
                .permits
                .iter()
                .all(|(_, p)| p.as_ref().is_none_or(|p| !p.is_probe())));
        }
        let probe = b.get(&engine("beta")).admit();
        assert!(
            probe.as_ref().is_some_and(Permit::is_probe),
            "no client search took the probe"
        );
        assert_eq!(plan().explicit, Some(vec!["alpha".to_owned()]), "probe out");
        if let Some(probe) = probe {
            probe.record(Signal::Success);
        }
        assert_eq!(plan().explicit, None, "beta is searched again");
    }

    #[tokio::test(start_paused = true)]
    async fn settle_feeds_results_and_failures_and_flags_unknown_names() {
        let overridden = Counter::default();
        let b = board();
        let plan = EnginePlan::new(
            Some(&catalog()),
            &SearchRequest::simple("q"),
            &b,
            true,
            &overridden,
        );
        let unknown = plan.settle(
            &answer(
                &["alpha"],
                &[
                    ("beta", EngineReason::Captcha),
                    ("zeta", EngineReason::Timeout),
                ],
            ),
            &b,
            Some(&catalog()),
        );
        assert!(unknown, "zeta is not in the catalog: refresh it");
        assert_eq!(b.get(&engine("beta")).state(), BreakerState::Open);
        assert_eq!(b.get(&engine("alpha")).state(), BreakerState::Closed);
    }
}
