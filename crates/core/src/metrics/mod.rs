//! The metrics plumbing every module shares, and nothing domain-specific: one explicit registry
//! with the `searxng_gateway_` prefix, the histogram layouts, the label-value macro, and the
//! exposition in the format the scraper asks for ([`exposition`]).
//!
//! Each module owns the families it sets, with typed label sets, in its own `metrics.rs`
//! (`pipeline`, `searxng`, `providers`, `breaker`); the engine's `engine::metrics::Metrics` registers them
//! all. Label values come from closed sets (enums with an `as_str` spelled by the contract) or from
//! engine names SearXNG's `/config` reported, never from free error text.
//!
//! To add a metric: a field in the owning module's metrics struct, its registration in that
//! struct's `new`, a row in the book's metrics page (`docs/src/operations/metrics.md`), and a dashboard panel.

pub mod exposition;
pub mod log_drops;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Metric;

/// The metric name prefix.
const PREFIX: &str = "searxng_gateway";

/// A gauge holding a float.
pub type FloatGauge = Gauge<f64, AtomicU64>;
/// A family of histograms sharing one bucket layout.
pub type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Buckets for durations, 0.5 ms to 60 s.
pub(crate) fn latency_histogram() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0,
        30.0, 60.0,
    ])
}

/// A family of duration histograms.
pub fn latency_family<L: Clone + std::hash::Hash + Eq>() -> HistogramFamily<L> {
    HistogramFamily::new_with_constructor(latency_histogram as fn() -> Histogram)
}

/// Buckets for counts (results, engines), 0 to 200.
pub fn count_histogram() -> Histogram {
    Histogram::new([
        0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0,
    ])
}

/// Implements `EncodeLabelValue` through the type's own `as_str`: the spelling is part of the
/// metrics contract, so it is written once, next to the type.
#[macro_export]
macro_rules! label_value_as_str {
    ($($ty:ty),* $(,)?) => {$(
        impl prometheus_client::encoding::EncodeLabelValue for $ty {
            fn encode(
                &self,
                encoder: &mut prometheus_client::encoding::LabelValueEncoder<'_>,
            ) -> std::fmt::Result {
                std::fmt::Write::write_str(encoder, self.as_str())
            }
        }
    )*};
}
pub use label_value_as_str;

/// The optional `searxng_instance` label: which SearXNG instance of a pool a series is about, by the
/// name `config` gave it (a closed set: the configured list). Empty for a gateway with one instance,
/// whose exposition then carries no such label at all. Not called `instance`: Prometheus sets that
/// label on every scraped series to the scrape target and would rename ours `exported_instance`.
/// Put it in a label set with `#[prometheus(flatten)]`, or use it alone as a family's label set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InstanceLabel(Option<Arc<str>>);

impl InstanceLabel {
    /// The label of a pool member named `name`.
    pub fn pooled(name: &str) -> Self {
        Self(Some(Arc::from(name)))
    }

    /// No label: the only instance.
    pub fn single() -> Self {
        Self(None)
    }

    /// The instance's name, when it has the label.
    pub fn name(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// The label's name.
const LABEL: &str = "searxng_instance";

impl EncodeLabelSet for InstanceLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(name) => [(LABEL, name.as_ref())].encode(encoder),
            None => Ok(()),
        }
    }
}

/// The registry every family is registered on.
#[derive(Debug)]
pub struct Registry(prometheus_client::registry::Registry);

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry with the gateway's prefix.
    pub fn new() -> Self {
        let mut registry = prometheus_client::registry::Registry::with_prefix(PREFIX);
        registry.register_collector(Box::new(log_drops::LogDrops));
        Self(registry)
    }

    /// Registers `metric` as `searxng_gateway_<name>` (counters get `_total` in the exposition).
    /// `help` ends without a period: the encoder adds it.
    pub fn register(&mut self, name: &str, help: &str, metric: impl Metric) {
        self.0.register(name, help, metric);
    }

    /// Registers `metric` as [`Registry::register`] does and hands it back, so a set of families
    /// is built and registered field by field.
    pub fn registered<M: Metric + Clone>(&mut self, name: &str, help: &str, metric: M) -> M {
        self.register(name, help, metric.clone());
        metric
    }

    /// The exposition as OpenMetrics (`openmetrics = true`) or Prometheus text format 0.0.4.
    pub fn render(&self, openmetrics: bool) -> String {
        let mut text = String::with_capacity(16 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.0);
        if openmetrics {
            text
        } else {
            exposition::to_prometheus_text(&text)
        }
    }

    /// The value of one series (full name, e.g. `searxng_gateway_requests_total`, without the
    /// prefix; labels in any order), if it exists. For tests.
    #[cfg(any(test, feature = "testing"))]
    pub fn sample(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let text = self.render(false);
        let full = format!("{PREFIX}_{name}");
        let mut wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        wanted.sort();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                let (series_name, rest) = series.split_once('{').unwrap_or((series, "}"));
                if series_name != full {
                    return None;
                }
                let mut found: Vec<String> = rest
                    .trim_end_matches('}')
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect();
                found.sort();
                (found == wanted).then(|| value.parse().ok()).flatten()
            })
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;

    use super::*;

    #[test]
    fn the_instance_label_appears_only_for_a_pool_member() {
        let mut r = Registry::new();
        let counters: Family<InstanceLabel, Counter> = Family::default();
        let histograms: HistogramFamily<InstanceLabel> = latency_family();
        r.register("calls", "Calls", counters.clone());
        r.register("call_duration_seconds", "Durations", histograms.clone());
        counters.get_or_create(&InstanceLabel::single()).inc();
        histograms
            .get_or_create(&InstanceLabel::single())
            .observe(0.2);
        let single = r.render(false);
        assert!(
            single.contains("\nsearxng_gateway_calls_total 1\n"),
            "{single}"
        );
        assert!(
            single.contains("\nsearxng_gateway_call_duration_seconds_bucket{le=\"0.25\"} 1\n"),
            "{single}"
        );
        assert!(!single.contains("instance"), "{single}");
        counters.get_or_create(&InstanceLabel::pooled("a:1")).inc();
        assert_eq!(
            r.sample("calls_total", &[("searxng_instance", "a:1")]),
            Some(1.0)
        );
    }

    #[test]
    fn counters_are_exposed_with_total_in_prometheus_text_and_eof_only_in_openmetrics() {
        let mut r = Registry::new();
        let c = Counter::<u64>::default();
        r.register("cache_coalesced", "Shared fan-outs", c.clone());
        c.inc();
        let text = r.render(false);
        assert!(text.contains("# TYPE searxng_gateway_cache_coalesced_total counter\n"));
        assert_eq!(r.sample("cache_coalesced_total", &[]), Some(1.0));
        assert!(!text.contains("# EOF"));
        assert!(r.render(true).ends_with("# EOF\n"));
    }
}
