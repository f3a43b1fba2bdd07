//! Every Prometheus metric of the gateway, on an explicit registry, with the `searxng_gateway_`
//! prefix. Label values come from closed sets (enums' `as_str`) or from names SearXNG's `/config`
//! reported; never from free error text.
//!
//! SearXNG engines and premium providers never share a series: every per-upstream family carries
//! a `kind` label (`engine` for a SearXNG engine, `provider` for a premium API), so SearXNG's `brave`
//! engine and the Brave API are two series.

use prometheus::{
    Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, Opts, Registry, TextEncoder,
};

/// The metric name prefix (Prometheus "namespace").
pub const NAMESPACE: &str = "searxng_gateway";

/// All metrics. Cheap to clone: every field is a handle onto shared atomics.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// `requests_total{outcome}`: exactly one per answered request.
    pub requests: IntCounterVec,
    /// `request_duration_seconds{outcome}`.
    pub request_duration: HistogramVec,
    /// `results_count`: results in each answer.
    pub results_count: Histogram,
    /// `engines_count`: distinct sources (engines and providers) that contributed to each answer.
    pub engines_count: Histogram,
    /// `cache_size`: entries in the cache now.
    pub cache_size: IntGauge,
    /// `cache_coalesced_total`: requests that waited on an identical in-flight miss.
    pub cache_coalesced: IntCounter,
    /// `retry_attempts_total{attempt,outcome,error_class}`: every SearXNG attempt.
    pub retry_attempts: IntCounterVec,
    /// `retry_exhausted_total{error_class}`: SearXNG calls that failed on every attempt.
    pub retry_exhausted: IntCounterVec,
    /// `searxng_timeouts_total`: SearXNG attempts that timed out.
    pub searxng_timeouts: IntCounter,
    /// `searxng_requests_total{result}`: SearXNG calls by final result (ok, degraded, error class).
    pub searxng_requests: IntCounterVec,
    /// `searxng_duration_seconds`: one SearXNG call, all attempts included.
    pub searxng_duration: Histogram,
    /// `searxng_cooldown_active`: 1 while SearXNG is skipped after repeated failures.
    pub searxng_cooldown_active: IntGauge,
    /// `searxng_skipped_total`: requests that did not call SearXNG because of the cooldown.
    pub searxng_skipped: IntCounter,
    /// `engine_results_total{engine}`: results each SearXNG engine returned (once per engine per result).
    pub engine_results: IntCounterVec,
    /// `engine_unresponsive_total{engine,reason}`.
    pub engine_unresponsive: IntCounterVec,
    /// `engine_status{engine}`: 1 when the engine's last answer was healthy, 0 when unresponsive.
    pub engine_status: prometheus::IntGaugeVec,
    /// `engine_exclusion_overridden_total`: requests where every requested engine was open, so all were sent.
    pub engine_exclusion_overridden: IntCounter,
    /// `provider_calls_total{provider,outcome}`: premium calls by outcome class.
    pub provider_calls: IntCounterVec,
    /// `provider_duration_seconds{provider}`.
    pub provider_duration: HistogramVec,
    /// `provider_results_total{provider}`.
    pub provider_results: IntCounterVec,
    /// `provider_cost_dollars_total{provider}`: spend the provider reported (Exa's `costDollars`).
    pub provider_cost: prometheus::CounterVec,
    /// `brave_rate_limit_remaining{window}`.
    pub brave_rate_limit_remaining: GaugeVec,
    /// `brave_rate_limit_limit{window}`.
    pub brave_rate_limit_limit: GaugeVec,
    /// `brave_rate_limit_reset_seconds{window}`.
    pub brave_rate_limit_reset: GaugeVec,
    /// `circuit_breaker_state{engine,kind}`: 0 closed, 1 half-open, 2 open.
    pub breaker_state: prometheus::IntGaugeVec,
    /// `circuit_breaker_trips_total{engine,kind,reason}`.
    pub breaker_trips: IntCounterVec,
    /// `circuit_breaker_rejections_total{engine,kind}`: calls not made because the breaker was open.
    pub breaker_rejections: IntCounterVec,
    /// `circuit_breaker_recovery_total{engine,kind}`.
    pub breaker_recoveries: IntCounterVec,
    /// `start_time_seconds`: start time of the process (Unix seconds).
    pub start_time: Gauge,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help).namespace(NAMESPACE), labels)
        .expect("metric definition is valid");
    registry
        .register(Box::new(c.clone()))
        .expect("metric registered once");
    c
}

fn plain_counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let c = IntCounter::with_opts(Opts::new(name, help).namespace(NAMESPACE))
        .expect("metric definition is valid");
    registry
        .register(Box::new(c.clone()))
        .expect("metric registered once");
    c
}

fn int_gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let g = IntGauge::with_opts(Opts::new(name, help).namespace(NAMESPACE))
        .expect("metric definition is valid");
    registry
        .register(Box::new(g.clone()))
        .expect("metric registered once");
    g
}

fn int_gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::IntGaugeVec {
    let g = prometheus::IntGaugeVec::new(Opts::new(name, help).namespace(NAMESPACE), labels)
        .expect("metric definition is valid");
    registry
        .register(Box::new(g.clone()))
        .expect("metric registered once");
    g
}

fn gauge_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    let g = GaugeVec::new(Opts::new(name, help).namespace(NAMESPACE), labels)
        .expect("metric definition is valid");
    registry
        .register(Box::new(g.clone()))
        .expect("metric registered once");
    g
}

fn histogram(registry: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    let h = Histogram::with_opts(
        HistogramOpts::new(name, help)
            .namespace(NAMESPACE)
            .buckets(buckets),
    )
    .expect("metric definition is valid");
    registry
        .register(Box::new(h.clone()))
        .expect("metric registered once");
    h
}

fn histogram_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: Vec<f64>,
) -> HistogramVec {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help)
            .namespace(NAMESPACE)
            .buckets(buckets),
        labels,
    )
    .expect("metric definition is valid");
    registry
        .register(Box::new(h.clone()))
        .expect("metric registered once");
    h
}

fn latency_buckets() -> Vec<f64> {
    vec![
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0,
        30.0, 60.0,
    ]
}

fn count_buckets() -> Vec<f64> {
    vec![
        0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0,
    ]
}

impl Metrics {
    /// Builds every metric on a fresh registry.
    pub fn new() -> Self {
        let r = Registry::new();
        let m = Self {
            requests: counter(&r, "requests_total", "Answered search requests by outcome (exactly one outcome per request).", &["outcome"]),
            request_duration: histogram_vec(&r, "request_duration_seconds", "Time to answer a search request, by outcome.", &["outcome"], latency_buckets()),
            results_count: histogram(&r, "results_count", "Number of results in each search answer.", count_buckets()),
            engines_count: histogram(&r, "engines_count", "Number of distinct sources (SearXNG engines and premium providers) that contributed to each answer.", count_buckets()),
            cache_size: int_gauge(&r, "cache_size", "Entries in the answer cache now."),
            cache_coalesced: plain_counter(&r, "cache_coalesced_total", "Requests that shared an identical in-flight upstream fan-out instead of starting their own."),
            retry_attempts: counter(&r, "retry_attempts_total", "SearXNG call attempts by attempt number, outcome and error class.", &["attempt", "outcome", "error_class"]),
            retry_exhausted: counter(&r, "retry_exhausted_total", "SearXNG calls that failed on their last allowed attempt, by error class.", &["error_class"]),
            searxng_timeouts: plain_counter(&r, "searxng_timeouts_total", "SearXNG attempts that timed out."),
            searxng_requests: counter(&r, "searxng_requests_total", "SearXNG calls by result: ok, degraded, or an error class.", &["result"]),
            searxng_duration: histogram(&r, "searxng_duration_seconds", "Duration of one SearXNG call including retries.", latency_buckets()),
            searxng_cooldown_active: int_gauge(&r, "searxng_cooldown_active", "1 while SearXNG is skipped after consecutive failures, else 0."),
            searxng_skipped: plain_counter(&r, "searxng_skipped_total", "Requests that did not call SearXNG because it was cooling down."),
            engine_results: counter(&r, "engine_results_total", "Results returned per SearXNG engine (each engine of a result counts once).", &["engine"]),
            engine_unresponsive: counter(&r, "engine_unresponsive_total", "SearXNG engines reported unresponsive, by engine and reason class.", &["engine", "reason"]),
            engine_status: int_gauge_vec(&r, "engine_status", "Last seen status of each SearXNG engine: 1 healthy, 0 unresponsive.", &["engine"]),
            engine_exclusion_overridden: plain_counter(&r, "engine_exclusion_overridden_total", "Requests where every requested SearXNG engine had an open breaker, so none was excluded."),
            provider_calls: counter(&r, "provider_calls_total", "Premium provider calls by provider and outcome class.", &["provider", "outcome"]),
            provider_duration: histogram_vec(&r, "provider_duration_seconds", "Duration of one premium provider call.", &["provider"], latency_buckets()),
            provider_results: counter(&r, "provider_results_total", "Results returned by each premium provider.", &["provider"]),
            provider_cost: {
                let c = prometheus::CounterVec::new(Opts::new("provider_cost_dollars_total", "Spend reported by premium providers (Exa's costDollars.total), in US dollars.").namespace(NAMESPACE), &["provider"]).expect("metric definition is valid");
                r.register(Box::new(c.clone())).expect("metric registered once");
                c
            },
            brave_rate_limit_remaining: gauge_vec(&r, "brave_rate_limit_remaining", "Requests left in each Brave API rate-limit window (X-RateLimit-Remaining).", &["window"]),
            brave_rate_limit_limit: gauge_vec(&r, "brave_rate_limit_limit", "Size of each Brave API rate-limit window (X-RateLimit-Limit).", &["window"]),
            brave_rate_limit_reset: gauge_vec(&r, "brave_rate_limit_reset_seconds", "Seconds until each Brave API rate-limit window resets (X-RateLimit-Reset).", &["window"]),
            breaker_state: int_gauge_vec(&r, "circuit_breaker_state", "Circuit breaker state: 0 closed, 1 half-open, 2 open.", &["engine", "kind"]),
            breaker_trips: counter(&r, "circuit_breaker_trips_total", "Circuit breaker trips by reason.", &["engine", "kind", "reason"]),
            breaker_rejections: counter(&r, "circuit_breaker_rejections_total", "Calls not made because the breaker was open.", &["engine", "kind"]),
            breaker_recoveries: counter(&r, "circuit_breaker_recovery_total", "Half-open probes that succeeded and closed the breaker.", &["engine", "kind"]),
            start_time: {
                let g = Gauge::with_opts(Opts::new("start_time_seconds", "Start time of the process since the Unix epoch, in seconds.").namespace(NAMESPACE)).expect("metric definition is valid");
                r.register(Box::new(g.clone())).expect("metric registered once");
                g
            },
            registry: r,
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        m.start_time.set(now);
        m
    }

    /// Pre-creates the outcome series so dashboards and `rate()` see zeros instead of gaps.
    pub fn init_outcomes(&self, outcomes: &[&str]) {
        for outcome in outcomes {
            self.requests.with_label_values(&[outcome]);
        }
    }

    /// Renders the Prometheus text exposition.
    pub fn render(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(16 * 1024);
        let families = self.registry.gather();
        // Encoding into a Vec cannot fail for well-formed families.
        let _ = TextEncoder::new().encode(&families, &mut buf);
        buf
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}
