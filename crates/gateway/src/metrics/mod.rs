//! Every Prometheus metric of the gateway, on one explicit registry with the `searxng_gateway_`
//! prefix. Each family's labels are a type from [`labels`]; values come from closed sets or from
//! engine names SearXNG's `/config` reported, never from free error text. [`exposition`] serves the
//! registry as OpenMetrics or Prometheus text, as the scraper asks.
//!
//! SearXNG engines and premium providers never share a series: every per-upstream family carries a
//! `kind` label (`engine` for a SearXNG engine, `provider` for a premium API), so SearXNG's `brave`
//! engine and the Brave API are two series.
//!
//! To add a metric: a field here, its registration in [`Metrics::new`], a label set in [`labels`]
//! if it has labels, a row in README.md's metrics table, and a panel in the dashboard.

pub(crate) mod exposition;
pub(crate) mod labels;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::pipeline::Outcome;
use labels::{
    AttemptLabels, BreakerLabels, EngineLabels, EngineReasonLabels, ErrorClassLabels,
    OutcomeLabels, ProviderCallLabels, ProviderLabels, SearxngResultLabels, TripLabels,
    WindowLabels,
};

/// The metric name prefix.
const PREFIX: &str = "searxng_gateway";

/// A gauge holding a float.
pub(crate) type FloatGauge = Gauge<f64, AtomicU64>;
/// A family of histograms sharing one bucket layout.
pub(crate) type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// All metrics. Cheap to clone: every field is a handle onto shared atomics.
#[derive(Clone)]
pub(crate) struct Metrics {
    registry: Arc<Registry>,
    /// `requests_total{outcome}`: exactly one per answered request.
    pub(crate) requests: Family<OutcomeLabels, Counter>,
    /// `request_duration_seconds{outcome}`.
    pub(crate) request_duration: HistogramFamily<OutcomeLabels>,
    /// `results_count`: results in each answer.
    pub(crate) results_count: Histogram,
    /// `engines_count`: distinct sources (engines and providers) that contributed to each answer.
    pub(crate) engines_count: Histogram,
    /// `cache_size`: entries in the cache now.
    pub(crate) cache_size: Gauge,
    /// `cache_coalesced_total`: requests that waited on an identical in-flight miss.
    pub(crate) cache_coalesced: Counter,
    /// `retry_attempts_total{attempt,outcome,error_class}`: every SearXNG attempt.
    pub(crate) retry_attempts: Family<AttemptLabels, Counter>,
    /// `retry_exhausted_total{error_class}`: SearXNG calls that failed on their last attempt.
    pub(crate) retry_exhausted: Family<ErrorClassLabels, Counter>,
    /// `searxng_timeouts_total`: SearXNG attempts that timed out.
    pub(crate) searxng_timeouts: Counter,
    /// `searxng_requests_total{result}`: SearXNG calls by final result.
    pub(crate) searxng_requests: Family<SearxngResultLabels, Counter>,
    /// `searxng_duration_seconds`: one SearXNG call, all attempts included.
    pub(crate) searxng_duration: Histogram,
    /// `searxng_cooldown_active`: 1 while SearXNG is skipped after repeated failures.
    pub(crate) searxng_cooldown_active: Gauge,
    /// `searxng_skipped_total`: requests that did not call SearXNG because of the cooldown.
    pub(crate) searxng_skipped: Counter,
    /// `engine_results_total{engine}`: results per SearXNG engine (once per engine per result).
    pub(crate) engine_results: Family<EngineLabels, Counter>,
    /// `engine_unresponsive_total{engine,reason}`.
    pub(crate) engine_unresponsive: Family<EngineReasonLabels, Counter>,
    /// `engine_status{engine}`: 1 when the engine's last answer was healthy, 0 when unresponsive.
    pub(crate) engine_status: Family<EngineLabels, Gauge>,
    /// `engine_exclusion_overridden_total`: every requested engine was open, so all were sent.
    pub(crate) engine_exclusion_overridden: Counter,
    /// `provider_calls_total{provider,outcome}`.
    pub(crate) provider_calls: Family<ProviderCallLabels, Counter>,
    /// `provider_duration_seconds{provider}`.
    pub(crate) provider_duration: HistogramFamily<ProviderLabels>,
    /// `provider_results_total{provider}`.
    pub(crate) provider_results: Family<ProviderLabels, Counter>,
    /// `provider_cost_dollars_total{provider}`: spend the provider reported (Exa).
    pub(crate) provider_cost: Family<ProviderLabels, Counter<f64, AtomicU64>>,
    /// `brave_rate_limit_remaining{window}`.
    pub(crate) brave_rate_limit_remaining: Family<WindowLabels, FloatGauge>,
    /// `brave_rate_limit_limit{window}`.
    pub(crate) brave_rate_limit_limit: Family<WindowLabels, FloatGauge>,
    /// `brave_rate_limit_reset_seconds{window}`.
    pub(crate) brave_rate_limit_reset: Family<WindowLabels, FloatGauge>,
    /// `circuit_breaker_state{engine,kind}`: 0 closed, 1 half-open, 2 open.
    pub(crate) breaker_state: Family<BreakerLabels, Gauge>,
    /// `circuit_breaker_trips_total{engine,kind,reason}`.
    pub(crate) breaker_trips: Family<TripLabels, Counter>,
    /// `circuit_breaker_rejections_total{engine,kind}`: calls not made because it was open.
    pub(crate) breaker_rejections: Family<BreakerLabels, Counter>,
    /// `circuit_breaker_recovery_total{engine,kind}`: half-open probes that closed it.
    pub(crate) breaker_recoveries: Family<BreakerLabels, Counter>,
    /// `start_time_seconds`: when the process started (Unix seconds).
    pub(crate) start_time: FloatGauge,
}

fn latency_histogram() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0,
        30.0, 60.0,
    ])
}

fn latency_family<L: Clone + std::hash::Hash + Eq>() -> HistogramFamily<L> {
    HistogramFamily::new_with_constructor(latency_histogram as fn() -> Histogram)
}

fn count_histogram() -> Histogram {
    Histogram::new([
        0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0,
    ])
}

impl Metrics {
    /// Builds every metric on a fresh registry. Help texts end without a period: the encoder adds it.
    pub(crate) fn new() -> Self {
        let mut r = Registry::with_prefix(PREFIX);
        let m = Self {
            requests: Family::default(),
            request_duration: latency_family(),
            results_count: count_histogram(),
            engines_count: count_histogram(),
            cache_size: Gauge::default(),
            cache_coalesced: Counter::default(),
            retry_attempts: Family::default(),
            retry_exhausted: Family::default(),
            searxng_timeouts: Counter::default(),
            searxng_requests: Family::default(),
            searxng_duration: latency_histogram(),
            searxng_cooldown_active: Gauge::default(),
            searxng_skipped: Counter::default(),
            engine_results: Family::default(),
            engine_unresponsive: Family::default(),
            engine_status: Family::default(),
            engine_exclusion_overridden: Counter::default(),
            provider_calls: Family::default(),
            provider_duration: latency_family(),
            provider_results: Family::default(),
            provider_cost: Family::default(),
            brave_rate_limit_remaining: Family::default(),
            brave_rate_limit_limit: Family::default(),
            brave_rate_limit_reset: Family::default(),
            breaker_state: Family::default(),
            breaker_trips: Family::default(),
            breaker_rejections: Family::default(),
            breaker_recoveries: Family::default(),
            start_time: FloatGauge::default(),
            registry: Arc::new(Registry::default()),
        };
        r.register(
            "requests",
            "Answered search requests by outcome (exactly one outcome per request)",
            m.requests.clone(),
        );
        r.register(
            "request_duration_seconds",
            "Time to answer a search request, by outcome",
            m.request_duration.clone(),
        );
        r.register(
            "results_count",
            "Number of results in each search answer",
            m.results_count.clone(),
        );
        r.register("engines_count", "Number of distinct sources (SearXNG engines and premium providers) that contributed to each answer", m.engines_count.clone());
        r.register(
            "cache_size",
            "Entries in the answer cache now",
            m.cache_size.clone(),
        );
        r.register("cache_coalesced", "Requests that shared an identical in-flight upstream fan-out instead of starting their own", m.cache_coalesced.clone());
        r.register(
            "retry_attempts",
            "SearXNG call attempts by attempt number, outcome and error class",
            m.retry_attempts.clone(),
        );
        r.register(
            "retry_exhausted",
            "SearXNG calls that failed on their last allowed attempt, by error class",
            m.retry_exhausted.clone(),
        );
        r.register(
            "searxng_timeouts",
            "SearXNG attempts that timed out",
            m.searxng_timeouts.clone(),
        );
        r.register(
            "searxng_requests",
            "SearXNG calls by result: ok, degraded, or an error class",
            m.searxng_requests.clone(),
        );
        r.register(
            "searxng_duration_seconds",
            "Duration of one SearXNG call including retries",
            m.searxng_duration.clone(),
        );
        r.register(
            "searxng_cooldown_active",
            "1 while SearXNG is skipped after consecutive failures, else 0",
            m.searxng_cooldown_active.clone(),
        );
        r.register(
            "searxng_skipped",
            "Requests that did not call SearXNG because it was cooling down",
            m.searxng_skipped.clone(),
        );
        r.register(
            "engine_results",
            "Results returned per SearXNG engine (each engine of a result counts once)",
            m.engine_results.clone(),
        );
        r.register(
            "engine_unresponsive",
            "SearXNG engines reported unresponsive, by engine and reason class",
            m.engine_unresponsive.clone(),
        );
        r.register(
            "engine_status",
            "Last seen status of each SearXNG engine: 1 healthy, 0 unresponsive",
            m.engine_status.clone(),
        );
        r.register("engine_exclusion_overridden", "Requests where every requested SearXNG engine had an open breaker, so none was excluded", m.engine_exclusion_overridden.clone());
        r.register(
            "provider_calls",
            "Premium provider calls by provider and outcome class",
            m.provider_calls.clone(),
        );
        r.register(
            "provider_duration_seconds",
            "Duration of one premium provider call",
            m.provider_duration.clone(),
        );
        r.register(
            "provider_results",
            "Results returned by each premium provider",
            m.provider_results.clone(),
        );
        r.register(
            "provider_cost_dollars",
            "Spend reported by premium providers (Exa's costDollars.total), in US dollars",
            m.provider_cost.clone(),
        );
        r.register(
            "brave_rate_limit_remaining",
            "Requests left in each Brave API rate-limit window (X-RateLimit-Remaining)",
            m.brave_rate_limit_remaining.clone(),
        );
        r.register(
            "brave_rate_limit_limit",
            "Size of each Brave API rate-limit window (X-RateLimit-Limit)",
            m.brave_rate_limit_limit.clone(),
        );
        r.register(
            "brave_rate_limit_reset_seconds",
            "Seconds until each Brave API rate-limit window resets (X-RateLimit-Reset)",
            m.brave_rate_limit_reset.clone(),
        );
        r.register(
            "circuit_breaker_state",
            "Circuit breaker state: 0 closed, 1 half-open, 2 open",
            m.breaker_state.clone(),
        );
        r.register(
            "circuit_breaker_trips",
            "Circuit breaker trips by reason",
            m.breaker_trips.clone(),
        );
        r.register(
            "circuit_breaker_rejections",
            "Calls not made because the breaker was open",
            m.breaker_rejections.clone(),
        );
        r.register(
            "circuit_breaker_recovery",
            "Half-open probes that succeeded and closed the breaker",
            m.breaker_recoveries.clone(),
        );
        r.register(
            "start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds",
            m.start_time.clone(),
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        m.start_time.set(now);
        // Every outcome has a series from the first scrape, so `rate()` sees zeros, not gaps.
        for outcome in Outcome::ALL {
            let _ = m.requests.get_or_create(&OutcomeLabels { outcome });
        }
        Self {
            registry: Arc::new(r),
            ..m
        }
    }

    /// The exposition as OpenMetrics (`openmetrics = true`) or Prometheus text format 0.0.4.
    pub(crate) fn render(&self, openmetrics: bool) -> String {
        let mut text = String::with_capacity(16 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        if openmetrics {
            text
        } else {
            exposition::to_prometheus_text(&text)
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

#[cfg(test)]
impl Metrics {
    /// The value of one series in the Prometheus text exposition (tests).
    pub(crate) fn sample(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let text = self.render(false);
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                let (series_name, rest) = series.split_once('{').unwrap_or((series, "}"));
                if series_name != format!("{PREFIX}_{name}") {
                    return None;
                }
                let mut found: Vec<String> = rest
                    .trim_end_matches('}')
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect();
                found.sort();
                let mut wanted: Vec<String> =
                    labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
                wanted.sort();
                (found == wanted).then(|| value.parse().ok()).flatten()
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::metrics::labels::{CallResult, ProviderCallLabels};
    use crate::providers::ProviderKind;

    #[test]
    fn names_types_and_labels_are_the_contracts() {
        let m = Metrics::new();
        m.provider_calls
            .get_or_create(&ProviderCallLabels {
                provider: ProviderKind::Brave,
                outcome: CallResult::Empty,
            })
            .inc();
        m.request_duration
            .get_or_create(&OutcomeLabels {
                outcome: Outcome::CacheHit,
            })
            .observe(0.1);
        let text = m.render(false);
        assert!(text.contains("# TYPE searxng_gateway_requests_total counter\n"));
        assert!(text.contains("searxng_gateway_requests_total{outcome=\"cache_hit\"} 0\n"));
        assert!(text.contains("# TYPE searxng_gateway_request_duration_seconds histogram\n"));
        assert!(text.contains("# TYPE searxng_gateway_cache_coalesced_total counter\n"));
        assert!(text.contains("# TYPE searxng_gateway_cache_size gauge\n"));
        assert_eq!(
            m.sample(
                "provider_calls_total",
                &[("provider", "brave"), ("outcome", "empty")]
            ),
            Some(1.0)
        );
        assert!(!text.contains("# EOF"));
        assert!(m.render(true).ends_with("# EOF\n"));
    }
}
