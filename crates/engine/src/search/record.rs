//! The record of one fan-out, kept with its answer (and so in the cache) for `explain=1`: every
//! upstream call (who, which pass, when it started and how long it took relative to the fan-out's
//! start, its outcome or error class, how many results), the SearXNG engines excluded and why,
//! the upstreams skipped and why, why the fallback started, and how much of the budget was used.
//! Built by [`crate::search::fanout`] as the calls start and end; names and classes come from closed sets
//! (provider names, error classes, engine names `/config` reported) — never an upstream's body.

use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::calls::{Event, Pass};
use super::failing_engines::InstanceEngines;
use super::failure::{Shortfall, Upstream, UpstreamFailure};
use gateway_core::upstream::ErrorClass;

/// Why the fallback loop started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FallbackReason {
    /// SearXNG had not answered by the slow threshold.
    SearxngSlow,
    /// The instance had lately been slow to answer: the fallback started with it (the hedge).
    SearxngHedged,
    /// SearXNG failed (or was cut by the deadline).
    SearxngFailed,
    /// SearXNG answered zero results while its engines failed.
    SearxngDegraded,
    /// SearXNG was skipped (cooldown).
    SearxngSkipped,
    /// Fewer merged results than `SUFFICIENT_MIN_RESULTS`.
    BelowTarget,
}

/// Which part of the fan-out made a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CallPass {
    /// The SearXNG call.
    Searxng,
    /// A provider started with SearXNG (`T1_PREMIUM_COUNT`).
    T1,
    /// A provider started by the fallback.
    Fallback,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    /// Results.
    Ok,
    /// A provider answered with none.
    Empty,
    /// SearXNG answered with none while its engines failed.
    Degraded,
    /// It failed with this class.
    Failed(ErrorClass),
    /// It was still running when the target was met or the budget ended.
    Cancelled,
}

impl CallOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Empty => "empty",
            Self::Degraded => "degraded",
            Self::Failed(class) => class.as_str(),
            Self::Cancelled => "cancelled",
        }
    }
}

impl Serialize for CallOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Serialize for Upstream {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Serialize for Shortfall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One upstream call.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallRecord {
    /// `searxng` or the provider's name.
    pub(crate) name: Upstream,
    /// `searxng`, `t1` or `fallback`.
    pub(crate) pass: CallPass,
    /// Milliseconds from the fan-out's start to the call's start.
    pub(crate) start_ms: u64,
    /// How long it ran; `None` when it was cancelled (target met, or the budget ended).
    pub(crate) duration_ms: Option<u64>,
    /// `ok`, `empty`, `degraded`, an error class, or `cancelled`.
    pub(crate) outcome: CallOutcome,
    /// Results it returned.
    pub(crate) results: usize,
}

/// An upstream not called, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Skipped {
    pub(crate) name: Upstream,
    pub(crate) why: Shortfall,
}

/// One fan-out's record.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FanOutRecord {
    pub(crate) calls: Vec<CallRecord>,
    /// SearXNG engines left out of the `engines=` list because their breaker is open.
    pub(crate) engines_excluded: Vec<String>,
    /// When the answer failed: each instance's failing engines by SearXNG's reason (as the 502
    /// body lists them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) searxng_engines: Vec<InstanceEngines>,
    /// When the answer failed and the failures point at one fix: the 502 body's hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hint: Option<String>,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) fallback_reason: Option<FallbackReason>,
    pub(crate) budget_ms: u64,
    pub(crate) elapsed_ms: u64,
    /// Premium calls made (charged to the client whose request led the fan-out).
    pub(crate) premium_calls: u32,
    /// What they cost, in US dollars (the reported spend of each call that answered, else its
    /// provider's price; failed calls cost nothing).
    pub(crate) premium_spend_usd: f64,
    #[serde(skip)]
    origin: Option<Instant>,
}

/// The fan-out of an answer another replica computed, as it stored it with the answer.
#[derive(Debug)]
pub struct RemoteFanOut {
    /// That replica's id (its `/status` shows it as `redis.replica`).
    pub replica: String,
    /// When its fan-out finished (unix ms).
    pub computed_at_ms: u64,
    /// Its [`FanOutRecord`], as the JSON it serialized to.
    pub(crate) record: Box<serde_json::value::RawValue>,
}

/// Shown as its record: who and when go in the `cache` object.
impl Serialize for RemoteFanOut {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.record.serialize(serializer)
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl FanOutRecord {
    /// A record whose offsets count from now.
    pub(crate) fn starting_now() -> Self {
        Self {
            origin: Some(Instant::now()),
            ..Self::default()
        }
    }

    fn offset(&self) -> u64 {
        self.origin.map_or(0, |o| ms(o.elapsed()))
    }

    /// SearXNG was called.
    pub(super) fn searxng_started(&mut self) {
        let start_ms = self.offset();
        self.calls.push(CallRecord {
            name: Upstream::Searxng,
            pass: CallPass::Searxng,
            start_ms,
            duration_ms: None,
            outcome: CallOutcome::Cancelled,
            results: 0,
        });
    }

    /// A provider was called.
    pub(super) fn provider_started(&mut self, name: Upstream, pass: Pass) {
        let start_ms = self.offset();
        self.premium_calls += 1;
        self.calls.push(CallRecord {
            name,
            pass: match pass {
                Pass::Speculative => CallPass::T1,
                Pass::Fallback => CallPass::Fallback,
            },
            start_ms,
            duration_ms: None,
            outcome: CallOutcome::Cancelled,
            results: 0,
        });
    }

    /// A call ended with `event`.
    pub(super) fn ended(&mut self, event: &Event) {
        let searxng = Upstream::Searxng;
        let (name, outcome, results) = match event {
            Event::Searxng(Ok(answer)) if answer.is_degraded() => {
                (searxng, CallOutcome::Degraded, 0)
            }
            Event::Searxng(Ok(answer)) => (searxng, CallOutcome::Ok, answer.results.len()),
            Event::Searxng(Err(err)) => (searxng, CallOutcome::Failed(err.class), 0),
            Event::Provider { kind, result, .. } => {
                let provider = Upstream::Provider(*kind);
                match result {
                    Ok(answer) if answer.hits.is_empty() => (provider, CallOutcome::Empty, 0),
                    Ok(answer) => (provider, CallOutcome::Ok, answer.hits.len()),
                    Err(err) => (provider, CallOutcome::Failed(err.class), 0),
                }
            }
        };
        let now = self.offset();
        if let Some(call) = self
            .calls
            .iter_mut()
            .find(|c| c.name == name && c.duration_ms.is_none())
        {
            call.duration_ms = Some(now.saturating_sub(call.start_ms));
            call.outcome = outcome;
            call.results = results;
        }
    }

    /// The fallback started, for `reason` (only the first reason is kept).
    pub(super) fn fallback_started(&mut self, reason: FallbackReason) {
        self.fallback_reason.get_or_insert(reason);
    }

    /// The request's budget.
    pub(super) fn set_budget(&mut self, budget: Duration) {
        self.budget_ms = ms(budget);
    }

    /// The fan-out ended after `elapsed`: what was skipped, the time used.
    pub(super) fn close(&mut self, failures: &[UpstreamFailure], elapsed: Duration) {
        self.skipped = failures
            .iter()
            .filter(|f| {
                matches!(
                    f.why,
                    Shortfall::Cooldown | Shortfall::BreakerOpen | Shortfall::BudgetSpent
                )
            })
            .map(|f| Skipped {
                name: f.upstream,
                why: f.why,
            })
            .collect();
        self.elapsed_ms = ms(elapsed);
    }
}
