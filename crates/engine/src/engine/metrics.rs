//! The request-level families (outcomes, the surface each search came through, durations, answer
//! sizes, the cache, the SearXNG cooldown, engine-exclusion overrides, the start time), and
//! [`Metrics`]: every module's families on one registry (the engine probes' are
//! [`crate::searxng_pool::engine_probes`]'s own).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use crate::read::passages::rerank::RerankMetrics;
use crate::read::ReadMetrics;
use crate::search::outcome::Outcome;
use crate::searxng_pool::engine_probes::ProbeMetrics;
use gateway_core::breaker::BreakerMetrics;
use gateway_core::metrics::{
    count_histogram, label_value_as_str, latency_family, FloatGauge, HistogramFamily,
    InstanceLabel, Registry,
};
use gateway_core::request::Surface;
use gateway_core::shared::SharedMetrics;
use gateway_upstreams::providers::readers::ReaderCallMetrics;
use gateway_upstreams::providers::ProviderMetrics;
use gateway_upstreams::reader::ReaderMetrics;
use gateway_upstreams::searxng::SearxngMetrics;

label_value_as_str!(Outcome);

/// `{outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub(crate) outcome: Outcome,
}

/// `{surface}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct SurfaceLabels {
    pub(crate) surface: Surface,
}

/// The pipeline's own families. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct RequestMetrics {
    /// `requests_total{outcome}`: exactly one per answered request.
    pub(crate) requests: Family<OutcomeLabels, Counter>,
    /// `surface_requests_total{surface}`: the same requests by the surface they came through.
    pub(crate) surface_requests: Family<SurfaceLabels, Counter>,
    /// `request_duration_seconds{outcome}`.
    pub(crate) duration: HistogramFamily<OutcomeLabels>,
    /// `results_count`: results in each answer.
    pub(crate) results_count: Histogram,
    /// `engines_count`: distinct sources (engines and providers) that contributed to each answer.
    pub(crate) engines_count: Histogram,
    /// `cache_size`: entries in the cache now.
    pub(crate) cache_size: Gauge,
    /// `cache_coalesced_total`: requests that waited on an identical in-flight miss.
    pub(crate) cache_coalesced: Counter,
    /// `cache_stale_served_total`: answers served stale because every upstream failed.
    pub(crate) cache_stale_served: Counter,
    /// `cache_refreshes_total`: popular entries recomputed in the background before expiry.
    pub(crate) cache_refreshes: Counter,
    /// `searxng_cooldown_active[{searxng_instance}]`: 1 while the instance is skipped after repeated
    /// failures.
    pub(crate) searxng_cooldown_active: Family<InstanceLabel, Gauge>,
    /// `searxng_skipped_total`: requests that did not call SearXNG because of the cooldown.
    pub(crate) searxng_skipped: Counter,
    /// `requests_shed_total`: searches answered 503 `overloaded` because their fan-out found no
    /// slot within `MAX_MISS_WAIT_MS`.
    pub(crate) shed: Counter,
    /// `engine_exclusion_overridden_total`: every requested engine was open, so all were sent.
    pub(crate) engine_exclusion_overridden: Counter,
    /// `start_time_seconds`: when the process started (Unix seconds).
    pub(crate) start_time: FloatGauge,
}

impl RequestMetrics {
    fn new(r: &mut Registry) -> Self {
        let m = Self {
            requests: Family::default(),
            surface_requests: Family::default(),
            duration: latency_family(),
            results_count: count_histogram(),
            engines_count: count_histogram(),
            cache_size: Gauge::default(),
            cache_coalesced: Counter::default(),
            cache_stale_served: Counter::default(),
            cache_refreshes: Counter::default(),
            searxng_cooldown_active: Family::default(),
            searxng_skipped: Counter::default(),
            shed: Counter::default(),
            engine_exclusion_overridden: Counter::default(),
            start_time: FloatGauge::default(),
        };
        register_families!(r;
            "requests", "Answered search requests by outcome (exactly one outcome per request)" => m.requests;
            "surface_requests", "Answered search requests by the surface they came through (searxng, mcp, tavily); they sum to requests_total" => m.surface_requests;
            "request_duration_seconds", "Time to answer a search request, by outcome" => m.duration;
            "results_count", "Number of results in each search answer" => m.results_count;
            "engines_count", "Number of distinct sources (SearXNG engines and premium providers) that contributed to each answer" => m.engines_count;
            "cache_size", "Entries in the answer cache now" => m.cache_size;
            "cache_coalesced", "Requests that shared an identical in-flight upstream fan-out instead of starting their own" => m.cache_coalesced;
            "cache_stale_served", "Answers served from an expired cache entry (X-Cache: stale) because every upstream failed" => m.cache_stale_served;
            "cache_refreshes", "Popular cache entries recomputed in the background shortly before they expired" => m.cache_refreshes;
            "searxng_cooldown_active", "1 while a SearXNG instance is skipped after consecutive failures, else 0" => m.searxng_cooldown_active;
            "searxng_skipped", "Requests that did not call SearXNG because it was cooling down" => m.searxng_skipped;
            "requests_shed", "Searches answered 503 overloaded because every upstream fan-out slot stayed taken for MAX_MISS_WAIT_MS (cache hits and requests sharing a running fan-out are never shed)" => m.shed;
            "engine_exclusion_overridden", "Requests where every requested SearXNG engine had an open breaker, so none was excluded" => m.engine_exclusion_overridden;
            "start_time_seconds", "Start time of the process since the Unix epoch, in seconds" => m.start_time;
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        m.start_time.set(now);
        // Every outcome has a series from the first scrape, so `rate()` sees zeros, not gaps.
        for outcome in Outcome::ALL {
            let _ = m.requests.get_or_create(&OutcomeLabels { outcome });
        }
        for surface in Surface::ALL {
            let _ = m.surface_requests.get_or_create(&SurfaceLabels { surface });
        }
        m
    }
}

/// Every family of the gateway, on one registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub(crate) requests: RequestMetrics,
    pub(crate) searxng: SearxngMetrics,
    pub(crate) providers: ProviderMetrics,
    pub(crate) breakers: BreakerMetrics,
    pub(crate) shared: SharedMetrics,
    /// The direct reader's: bytes read, extraction time.
    pub(crate) reader: ReaderMetrics,
    /// The premium readers' calls.
    pub(crate) reader_calls: ReaderCallMetrics,
    /// Reads by outcome, their latency, the page cache, open host breakers.
    pub(crate) reads: ReadMetrics,
    /// The out-of-band engine probes by engine and outcome.
    pub(crate) probes: ProbeMetrics,
    /// The passage reranker's outcomes.
    pub(crate) reranks: RerankMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every family, registered on a fresh registry.
    pub fn new() -> Self {
        let mut registry = Registry::new();
        Self {
            requests: RequestMetrics::new(&mut registry),
            searxng: SearxngMetrics::new(&mut registry),
            providers: ProviderMetrics::new(&mut registry),
            breakers: BreakerMetrics::new(&mut registry),
            shared: SharedMetrics::new(&mut registry),
            reader: ReaderMetrics::new(&mut registry),
            reader_calls: ReaderCallMetrics::new(&mut registry),
            reads: ReadMetrics::new(&mut registry),
            probes: ProbeMetrics::new(&mut registry),
            reranks: RerankMetrics::new(&mut registry),
            registry,
        }
    }

    /// The exposition, as OpenMetrics or Prometheus text.
    pub(crate) fn render(&self, openmetrics: bool) -> String {
        self.registry.render(openmetrics)
    }

    /// The registry, for the families of the layer above the engine (the HTTP server's).
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The registry (tests read samples from it).
    #[cfg(test)]
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_and_surface_is_exposed_from_the_start_with_the_contract_names() {
        let m = Metrics::new();
        let text = m.render(false);
        for outcome in Outcome::ALL {
            assert_eq!(
                m.registry()
                    .sample("requests_total", &[("outcome", outcome.as_str())]),
                Some(0.0)
            );
        }
        for surface in Surface::ALL {
            assert_eq!(
                m.registry()
                    .sample("surface_requests_total", &[("surface", surface.as_str())]),
                Some(0.0)
            );
        }
        assert!(text.contains("# TYPE searxng_gateway_requests_total counter\n"));
        assert!(text.contains("# TYPE searxng_gateway_start_time_seconds gauge\n"));
        assert!(m
            .registry()
            .sample("start_time_seconds", &[])
            .is_some_and(|t| t > 1.7e9));
    }
}
