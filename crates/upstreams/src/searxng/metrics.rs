//! The SearXNG families: every attempt, calls by result, timeouts, durations, and per-engine
//! results, status and unresponsive reasons. Every family carries the optional `searxng_instance` label
//! ([`InstanceLabel`]): present for a pool member, absent when there is one instance.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use super::catalog::EngineName;
use super::EngineReason;
use gateway_core::metrics::{
    label_value_as_str, latency_family, HistogramFamily, InstanceLabel, Registry,
};
use gateway_core::upstream::ErrorClass;

label_value_as_str!(EngineReason, AttemptResult, AttemptError, SearxngResult);

/// Whether one attempt succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AttemptResult {
    Success,
    Failure,
}

impl AttemptResult {
    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
        }
    }
}

/// An attempt's `error_class`: a class, or `none` for a success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AttemptError {
    None,
    Class(ErrorClass),
}

impl AttemptError {
    fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Class(class) => class.as_str(),
        }
    }
}

/// `{attempt, outcome, error_class}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct AttemptLabels {
    /// 1-based attempt number, at most the client's attempt limit: a closed set.
    pub(crate) attempt: u32,
    pub(crate) outcome: AttemptResult,
    pub(crate) error_class: AttemptError,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// `{error_class}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ErrorClassLabels {
    pub(crate) error_class: ErrorClass,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// What one SearXNG call came to: `ok`, `degraded`, or an error class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SearxngResult {
    Ok,
    Degraded,
    Failed(ErrorClass),
}

impl SearxngResult {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Degraded => "degraded",
            Self::Failed(class) => class.as_str(),
        }
    }
}

/// `{result}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ResultLabels {
    pub(crate) result: SearxngResult,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// Engine names seen as label values, bounded: a name that fails [`EngineName::checked`], or one
/// beyond the first [`MAX_ENGINE_LABELS`] distinct names, is counted as `other` — so whatever
/// SearXNG sends, the engine families stay a bounded set of series. (SearXNG ships about 250
/// engines; an instance enables a few dozen.)
#[derive(Debug, Clone, Default)]
pub(crate) struct EngineLabelSet {
    seen: Arc<Mutex<HashSet<Arc<str>>>>,
}

/// Distinct engine label values kept per process.
pub(crate) const MAX_ENGINE_LABELS: usize = 512;

/// The label value of names beyond the bound.
const OTHER: &str = "other";

impl EngineLabelSet {
    /// The label value for `name`.
    pub(crate) fn value(&self, name: &str) -> String {
        if EngineName::checked(name).is_none() {
            return OTHER.to_owned();
        }
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.contains(name) {
            return name.to_owned();
        }
        if seen.len() < MAX_ENGINE_LABELS {
            seen.insert(Arc::from(name));
            return name.to_owned();
        }
        OTHER.to_owned()
    }
}

/// `{engine}`: a name SearXNG reported, bounded ([`EngineLabelSet`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct EngineLabels {
    pub(crate) engine: String,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// `{engine, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct EngineReasonLabels {
    pub(crate) engine: String,
    pub(crate) reason: EngineReason,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// Every SearXNG family. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SearxngMetrics {
    /// `retry_attempts_total{attempt,outcome,error_class}`: every attempt.
    pub(crate) attempts: Family<AttemptLabels, Counter>,
    /// `retry_exhausted_total{error_class}`: calls that failed on their last attempt.
    pub(crate) exhausted: Family<ErrorClassLabels, Counter>,
    /// `searxng_timeouts_total`: attempts that timed out.
    pub(crate) timeouts: Family<InstanceLabel, Counter>,
    /// `searxng_requests_total{result}`: calls by final result.
    pub(crate) requests: Family<ResultLabels, Counter>,
    /// `searxng_duration_seconds`: one call, all attempts included.
    pub(crate) duration: HistogramFamily<InstanceLabel>,
    /// `engine_results_total{engine}`: results per engine (once per engine per result).
    pub(crate) engine_results: Family<EngineLabels, Counter>,
    /// `engine_unresponsive_total{engine,reason}`.
    pub(crate) engine_unresponsive: Family<EngineReasonLabels, Counter>,
    /// `engine_status{engine}`: 1 when its last answer was healthy, 0 when unresponsive.
    pub(crate) engine_status: Family<EngineLabels, Gauge>,
    /// The engine label values in use (shared by every instance's client).
    pub(crate) engine_labels: EngineLabelSet,
}

impl SearxngMetrics {
    /// The families, registered on `r`.
    pub fn new(r: &mut Registry) -> Self {
        Self {
            attempts: r.registered(
                "retry_attempts",
                "SearXNG call attempts by attempt number, outcome and error class",
                Family::default(),
            ),
            exhausted: r.registered(
                "retry_exhausted",
                "SearXNG calls that failed on their last allowed attempt, by error class",
                Family::default(),
            ),
            timeouts: r.registered(
                "searxng_timeouts",
                "SearXNG attempts that timed out",
                Family::default(),
            ),
            requests: r.registered(
                "searxng_requests",
                "SearXNG calls by result: ok, degraded, or an error class",
                Family::default(),
            ),
            duration: r.registered(
                "searxng_duration_seconds",
                "Duration of one SearXNG call including retries",
                latency_family(),
            ),
            engine_results: r.registered(
                "engine_results",
                "Results returned per SearXNG engine (each engine of a result counts once)",
                Family::default(),
            ),
            engine_unresponsive: r.registered(
                "engine_unresponsive",
                "SearXNG engines reported unresponsive, by engine and reason class",
                Family::default(),
            ),
            engine_status: r.registered(
                "engine_status",
                "Last seen status of each SearXNG engine: 1 healthy, 0 unresponsive",
                Family::default(),
            ),
            engine_labels: EngineLabelSet::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_label_values_are_checked_names_up_to_a_bound_then_other() {
        let labels = EngineLabelSet::default();
        assert_eq!(labels.value("google images"), "google images");
        assert_eq!(labels.value("<script>"), "other");
        assert_eq!(labels.value(&"x".repeat(65)), "other");
        for i in 1..MAX_ENGINE_LABELS {
            assert_eq!(labels.value(&format!("engine{i}")), format!("engine{i}"));
        }
        assert_eq!(labels.value("one too many"), "other");
        assert_eq!(
            labels.value("google images"),
            "google images",
            "a name seen stays"
        );
    }
}
