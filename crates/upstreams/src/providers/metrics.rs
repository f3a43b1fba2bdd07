//! The premium-provider families: calls by outcome (and by key of a pool), durations, results,
//! reported spend, and Brave's rate-limit windows (per key) as gauges.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::ProviderKind;
use gateway_core::metrics::{
    label_value_as_str, latency_family, FloatGauge, HistogramFamily, Registry,
};
use gateway_core::upstream::ErrorClass;

label_value_as_str!(ProviderKind, CallResult);

/// What one premium call came to: `ok`, `empty`, or an error class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CallResult {
    Ok,
    Empty,
    Failed(ErrorClass),
}

impl CallResult {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Empty => "empty",
            Self::Failed(class) => class.as_str(),
        }
    }
}

/// `{provider, outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct CallLabels {
    pub(crate) provider: ProviderKind,
    pub(crate) outcome: CallResult,
}

/// `{provider}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ProviderLabels {
    pub(crate) provider: ProviderKind,
}

/// `{window, key}`: `1s`, `month`, `w<seconds>` from Brave's policy header, or the window's
/// index; the key's fingerprint (each key of a pool has its own windows).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct WindowLabels {
    pub(crate) window: String,
    pub(crate) key: String,
}

/// `{provider, key, outcome}`: one key of a pool, by fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct KeyCallLabels {
    pub(crate) provider: ProviderKind,
    pub(crate) key: String,
    pub(crate) outcome: CallResult,
}

/// Every provider family. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProviderMetrics {
    /// `provider_calls_total{provider,outcome}`.
    pub(crate) calls: Family<CallLabels, Counter>,
    /// `provider_key_calls_total{provider,key,outcome}`.
    pub(crate) key_calls: Family<KeyCallLabels, Counter>,
    /// `provider_duration_seconds{provider}`.
    pub(crate) duration: HistogramFamily<ProviderLabels>,
    /// `provider_results_total{provider}`.
    pub(crate) results: Family<ProviderLabels, Counter>,
    /// `provider_cost_dollars_total{provider}`: spend the provider reported (Exa).
    pub(crate) cost: Family<ProviderLabels, Counter<f64, AtomicU64>>,
    /// `premium_spend_usd_total{provider}`: what calls cost (reported, else the price).
    pub(crate) spend: Family<ProviderLabels, Counter<f64, AtomicU64>>,
    /// `brave_rate_limit_remaining{window}`.
    pub(crate) brave_remaining: Family<WindowLabels, FloatGauge>,
    /// `brave_rate_limit_limit{window}`.
    pub(crate) brave_limit: Family<WindowLabels, FloatGauge>,
    /// `brave_rate_limit_reset_seconds{window}`.
    pub(crate) brave_reset: Family<WindowLabels, FloatGauge>,
}

impl ProviderMetrics {
    /// The families, registered on `r`.
    pub fn new(r: &mut Registry) -> Self {
        Self {
            calls: r.registered(
                "provider_calls",
                "Premium provider calls by provider and outcome class",
                Family::default(),
            ),
            key_calls: r.registered(
                "provider_key_calls",
                "Premium provider calls by provider, key (the first 8 hex digits of its SHA-256) and outcome class",
                Family::default(),
            ),
            duration: r.registered(
                "provider_duration_seconds",
                "Duration of one premium provider call",
                latency_family(),
            ),
            results: r.registered(
                "provider_results",
                "Results returned by each premium provider",
                Family::default(),
            ),
            cost: r.registered(
                "provider_cost_dollars",
                "Spend reported by premium providers (Exa's costDollars.total), in US dollars",
                Family::default(),
            ),
            spend: r.registered(
                "premium_spend_usd",
                "What premium search calls cost, in US dollars: the spend a provider reported for a call, else its price (PREMIUM_PRICE_<NAME>); failed calls cost nothing",
                Family::default(),
            ),
            brave_remaining: r.registered(
                "brave_rate_limit_remaining",
                "Requests left in each Brave API rate-limit window (X-RateLimit-Remaining)",
                Family::default(),
            ),
            brave_limit: r.registered(
                "brave_rate_limit_limit",
                "Size of each Brave API rate-limit window (X-RateLimit-Limit)",
                Family::default(),
            ),
            brave_reset: r.registered(
                "brave_rate_limit_reset_seconds",
                "Seconds until each Brave API rate-limit window resets (X-RateLimit-Reset)",
                Family::default(),
            ),
        }
    }
}
