//! The engine probes' family: `engine_probes_total{engine, outcome[, searxng_instance]}`, one per
//! probe, its outcome a closed set ([`ProbeOutcome`]).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use gateway_core::metrics::{label_value_as_str, InstanceLabel, Registry};

/// What one probe found: the `outcome` label of `engine_probes_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProbeOutcome {
    /// The engine answered without failing: its breaker closed.
    Recovered,
    /// SearXNG reported the engine failing again: its breaker opened for longer.
    Blocked,
    /// The engine (or the probe as a whole) took longer than the probe's timeout: a failed probe.
    Timeout,
    /// SearXNG itself failed (5xx, refused, garbled): nothing learned about the engine; probed
    /// again after the first open period.
    Inconclusive,
}

impl ProbeOutcome {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Recovered => "recovered",
            Self::Blocked => "blocked",
            Self::Timeout => "timeout",
            Self::Inconclusive => "inconclusive",
        }
    }
}

label_value_as_str!(ProbeOutcome);

/// `{engine, outcome[, searxng_instance]}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ProbeLabels {
    engine: String,
    outcome: ProbeOutcome,
    #[prometheus(flatten)]
    instance: InstanceLabel,
}

/// `engine_probes_total`. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeMetrics {
    probes: Family<ProbeLabels, Counter>,
}

impl ProbeMetrics {
    /// The family, registered on `r`.
    pub(crate) fn new(r: &mut Registry) -> Self {
        let m = Self::default();
        r.register(
            "engine_probes",
            "Out-of-band probes of blocked SearXNG engines, by engine and outcome",
            m.probes.clone(),
        );
        m
    }

    pub(super) fn count(&self, engine: &str, outcome: ProbeOutcome, instance: &InstanceLabel) {
        self.probes
            .get_or_create(&ProbeLabels {
                engine: engine.to_owned(),
                outcome,
                instance: instance.clone(),
            })
            .inc();
    }
}
