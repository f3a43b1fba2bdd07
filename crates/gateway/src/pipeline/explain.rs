//! The record of one fan-out, kept with its answer (and so in the cache) for `explain=1`: every
//! upstream call (who, which pass, when it started and how long it took relative to the fan-out's
//! start, its outcome or error class, how many results), the SearXNG engines excluded and why,
//! the upstreams skipped and why, why the fallback started, and how much of the budget was used.
//! Built by [`super::fanout`] as the calls start and end; names and classes come from closed sets
//! (provider names, error classes, engine names `/config` reported) — never an upstream's body.

use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::calls::{Event, Pass};
use super::failure::{Shortfall, UpstreamFailure};

/// Why the fallback loop started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FallbackReason {
    /// SearXNG had not answered by the slow threshold.
    SearxngSlow,
    /// SearXNG failed (or was cut by the deadline).
    SearxngFailed,
    /// SearXNG answered zero results while its engines failed.
    SearxngDegraded,
    /// SearXNG was skipped (cooldown).
    SearxngSkipped,
    /// Fewer merged results than `SUFFICIENT_MIN_RESULTS`.
    BelowTarget,
}

/// One upstream call.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallRecord {
    /// `searxng` or the provider's name.
    pub(crate) name: &'static str,
    /// `searxng`, `t1` or `fallback`.
    pub(crate) pass: &'static str,
    /// Milliseconds from the fan-out's start to the call's start.
    pub(crate) start_ms: u64,
    /// How long it ran; `None` when it was cancelled (target met, or the budget ended).
    pub(crate) duration_ms: Option<u64>,
    /// `ok`, `empty`, `degraded`, an error class, or `cancelled`.
    pub(crate) outcome: &'static str,
    /// Results it returned.
    pub(crate) results: usize,
}

/// An upstream not called, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Skipped {
    pub(crate) name: &'static str,
    pub(crate) why: &'static str,
}

/// One fan-out's record.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct FanOutRecord {
    pub(crate) calls: Vec<CallRecord>,
    /// SearXNG engines left out of the `engines=` list because their breaker is open.
    pub(crate) engines_excluded: Vec<String>,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) fallback_reason: Option<FallbackReason>,
    pub(crate) budget_ms: u64,
    pub(crate) elapsed_ms: u64,
    /// Premium calls made (charged to the client whose request led the fan-out).
    pub(crate) premium_calls: u32,
    #[serde(skip)]
    origin: Option<Instant>,
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
            name: "searxng",
            pass: "searxng",
            start_ms,
            duration_ms: None,
            outcome: "cancelled",
            results: 0,
        });
    }

    /// A provider was called.
    pub(super) fn provider_started(&mut self, name: &'static str, pass: Pass) {
        let start_ms = self.offset();
        self.premium_calls += 1;
        self.calls.push(CallRecord {
            name,
            pass: match pass {
                Pass::Speculative => "t1",
                Pass::Fallback => "fallback",
            },
            start_ms,
            duration_ms: None,
            outcome: "cancelled",
            results: 0,
        });
    }

    /// A call ended with `event`.
    pub(super) fn ended(&mut self, event: &Event) {
        let (name, outcome, results) = match event {
            Event::Searxng(Ok(answer)) if answer.is_degraded() => ("searxng", "degraded", 0),
            Event::Searxng(Ok(answer)) => ("searxng", "ok", answer.results.len()),
            Event::Searxng(Err(err)) => ("searxng", err.class.as_str(), 0),
            Event::Provider { kind, result, .. } => match result {
                Ok(answer) if answer.hits.is_empty() => (kind.as_str(), "empty", 0),
                Ok(answer) => (kind.as_str(), "ok", answer.hits.len()),
                Err(err) => (kind.as_str(), err.class.as_str(), 0),
            },
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
                name: f.upstream.as_str(),
                why: f.why.as_str(),
            })
            .collect();
        self.elapsed_ms = ms(elapsed);
    }
}
