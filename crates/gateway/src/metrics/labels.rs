//! The label sets of every metric family, as types: a label's name is a struct field and its value
//! an enum from a closed set (or an engine name SearXNG's `/config` reported), so a series cannot be
//! written with labels in the wrong order or a value made up from error text.

use std::fmt::{self, Write as _};

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

use crate::breaker::{BreakerKind, TripReason};
use crate::pipeline::Outcome;
use crate::providers::ProviderKind;
use crate::searxng::EngineReason;
use crate::upstream::ErrorClass;

/// Label values spelled by the type's own `as_str`: the spelling is part of the metrics contract.
macro_rules! label_value_as_str {
    ($($ty:ty),* $(,)?) => {$(
        impl EncodeLabelValue for $ty {
            fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> fmt::Result {
                encoder.write_str(self.as_str())
            }
        }
    )*};
}

label_value_as_str!(
    Outcome,
    ErrorClass,
    ProviderKind,
    EngineReason,
    BreakerKind,
    TripReason,
    AttemptResult,
    SearxngResult,
    CallResult,
    AttemptError,
);

/// `requests_total{outcome}`, `request_duration_seconds{outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub(crate) outcome: Outcome,
}

/// Whether one SearXNG attempt succeeded.
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

/// The `error_class` of an attempt: a class, or `none` for a success.
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

/// `retry_attempts_total{attempt,outcome,error_class}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct AttemptLabels {
    /// 1-based attempt number (at most the client's attempt limit: a closed set).
    pub(crate) attempt: u32,
    pub(crate) outcome: AttemptResult,
    pub(crate) error_class: AttemptError,
}

/// `retry_exhausted_total{error_class}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ErrorClassLabels {
    pub(crate) error_class: ErrorClass,
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

/// `searxng_requests_total{result}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct SearxngResultLabels {
    pub(crate) result: SearxngResult,
}

/// `engine_results_total{engine}`, `engine_status{engine}`: a name SearXNG reported.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct EngineLabels {
    pub(crate) engine: String,
}

/// `engine_unresponsive_total{engine,reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct EngineReasonLabels {
    pub(crate) engine: String,
    pub(crate) reason: EngineReason,
}

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

/// `provider_calls_total{provider,outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ProviderCallLabels {
    pub(crate) provider: ProviderKind,
    pub(crate) outcome: CallResult,
}

/// `provider_duration_seconds{provider}` and the other per-provider families.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ProviderLabels {
    pub(crate) provider: ProviderKind,
}

/// `brave_rate_limit_*{window}`: `1s`, `month`, `w<seconds>` from Brave's policy header, or the
/// window's index when it sent none.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct WindowLabels {
    pub(crate) window: String,
}

/// `circuit_breaker_state{engine,kind}` and the rejection and recovery counters. The `engine` label
/// carries the breaker's name (a SearXNG engine or a provider), a name kept from the Go original.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct BreakerLabels {
    pub(crate) engine: String,
    pub(crate) kind: BreakerKind,
}

/// `circuit_breaker_trips_total{engine,kind,reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct TripLabels {
    pub(crate) engine: String,
    pub(crate) kind: BreakerKind,
    pub(crate) reason: TripReason,
}
