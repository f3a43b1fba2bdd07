//! [`FanOut`]: one request's state and every rule of its fan-out, one method each, so each rule
//! can be read and tested alone; [`super::run`] drives it with the calls' events.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::search::answer::Answer;
use crate::search::calls::{Event, Pass, DEADLINE_MARGIN};
use crate::search::failing_engines::{EnginesFailing, Hint, InstanceEngines};
use crate::search::failure::{Failures, Shortfall, Upstream, UpstreamFailure};
use crate::search::outcome::{Contribution, Outcome};
use crate::search::record::{FallbackReason, FanOutRecord};
use gateway_core::cache::{Computed, Keep};
use gateway_core::request::DomainFilter;
use gateway_core::upstream::ErrorClass;
use gateway_upstreams::merge::{merge_owned, DistinctUrls, Source, SourceResults};

/// Degraded or below-target answers are kept at most this long.
pub(super) const SHORT_TTL: Duration = Duration::from_secs(60);

/// Where SearXNG stands in this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SearxngProgress {
    /// Not called: every instance is cooling down.
    Skipped,
    /// Called, no answer yet.
    Pending,
    /// Answered 200 with results or a healthy "nothing found".
    Healthy,
    /// Answered 200 with zero results while its engines failed.
    Degraded,
    /// Failed, or was cut by the deadline.
    Failed,
}

/// What the driver should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The answer goes out; the provider calls still in flight are cancelled, a SearXNG call is
    /// heard to its end ([`SearxngTask`]).
    Finish,
    /// Start the next fallback provider call (or report that none is left).
    CallFallback,
    /// Wait for a call to finish, the deadline, and — when `slow_timer` — the slow threshold.
    Wait { slow_timer: bool },
}

/// One request's fan-out state.
pub(super) struct FanOut {
    target: usize,
    slow_at: Instant,
    /// New calls are pointless once the margin before the deadline has started.
    last_start: Instant,
    searxng: SearxngProgress,
    searxng_top: Option<gateway_upstreams::searxng::TopLevel>,
    /// SearXNG's body and how many results it holds, when it can be forwarded as it came.
    searxng_body: Option<(Bytes, usize)>,
    answers: Vec<SourceResults>,
    distinct: DistinctUrls,
    premium_answered: bool,
    /// The speculative pass is over (nothing left of it, or SearXNG is slow): providers are now
    /// called one at a time until the target is met.
    fallback: bool,
    fallback_in_flight: bool,
    providers_exhausted: bool,
    /// The fallback started because SearXNG was still silent at the slow threshold.
    slow_fired: bool,
    /// The fallback started with SearXNG: the instance had lately been slow to answer.
    hedged: bool,
    failures: Vec<UpstreamFailure>,
    /// Each SearXNG instance's failing engines, gathered only for an answer that failed.
    engines_failing: Vec<InstanceEngines>,
    record: FanOutRecord,
    /// The client's domain filter, applied to every source's results as they arrive (so the
    /// target counts only results the client keeps).
    domains: DomainFilter,
}

impl FanOut {
    /// A fan-out aiming for `target` distinct results before `deadline`.
    pub(super) fn new(target: usize, slow_at: Instant, deadline: Instant) -> Self {
        Self {
            target,
            slow_at,
            last_start: deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline),
            searxng: SearxngProgress::Pending,
            searxng_top: None,
            searxng_body: None,
            answers: Vec::new(),
            distinct: DistinctUrls::default(),
            premium_answered: false,
            fallback: false,
            fallback_in_flight: false,
            providers_exhausted: false,
            slow_fired: false,
            hedged: false,
            failures: Vec::new(),
            engines_failing: Vec::new(),
            record: FanOutRecord::starting_now(),
            domains: DomainFilter::default(),
        }
    }

    /// Keeps only results from the domains `domains` admits.
    pub(super) fn filter_domains(&mut self, domains: DomainFilter) {
        self.domains = domains;
    }

    /// Why the fallback is running, for the record.
    pub(super) fn fallback_reason(&self) -> FallbackReason {
        match self.searxng {
            _ if self.hedged => FallbackReason::SearxngHedged,
            _ if self.slow_fired => FallbackReason::SearxngSlow,
            SearxngProgress::Skipped => FallbackReason::SearxngSkipped,
            SearxngProgress::Failed => FallbackReason::SearxngFailed,
            SearxngProgress::Degraded => FallbackReason::SearxngDegraded,
            SearxngProgress::Pending | SearxngProgress::Healthy => FallbackReason::BelowTarget,
        }
    }

    /// The record the driver writes calls into.
    pub(super) fn record_mut(&mut self) -> &mut FanOutRecord {
        &mut self.record
    }

    /// Every SearXNG instance is cooling down: none was called.
    pub(super) fn searxng_skipped(&mut self) {
        self.searxng = SearxngProgress::Skipped;
        self.failures
            .push(UpstreamFailure::searxng(Shortfall::Cooldown));
    }

    /// Where skipped providers are noted by the provider walk.
    pub(super) fn failures_mut(&mut self) -> &mut Vec<UpstreamFailure> {
        &mut self.failures
    }

    /// A fallback call was started.
    pub(super) fn fallback_started(&mut self) {
        self.fallback_in_flight = true;
        let reason = self.fallback_reason();
        self.record.fallback_started(reason);
    }

    /// The provider walk has nobody left to offer.
    pub(super) fn providers_exhausted(&mut self) {
        self.providers_exhausted = true;
    }

    /// The provider walk has someone to offer again (a provider with another usable key).
    pub(super) fn providers_again(&mut self) {
        self.providers_exhausted = false;
    }

    /// Nothing answered: SearXNG gave no healthy answer and no provider answered — the answer
    /// will be the failure (`Outcome::FallbackFail`).
    pub(super) fn all_failed(&self) -> bool {
        self.searxng != SearxngProgress::Healthy && !self.premium_answered
    }

    /// The SearXNG instances' failing engines, for a failed answer's body and log line.
    pub(super) fn engines_failing(&mut self, engines: Vec<InstanceEngines>) {
        self.engines_failing = engines;
    }

    fn target_met(&self) -> bool {
        self.distinct.len() >= self.target
    }

    /// The rule that decides what happens next, given the time and the calls in flight.
    pub(super) fn next_step(&mut self, now: Instant, in_flight: usize) -> Step {
        let searxng_pending = self.searxng == SearxngProgress::Pending;
        if in_flight == 0 {
            // The speculative pass is over.
            self.fallback = true;
        }
        // The target is met and SearXNG has settled: the answer goes out. T1 calls still running
        // were started (and paid for) together with SearXNG, so they get until the slow
        // threshold; past it, or in the fallback, nothing is waited for.
        if self.target_met() && (self.fallback || (!searxng_pending && now >= self.slow_at)) {
            return Step::Finish;
        }
        if self.fallback
            && !self.fallback_in_flight
            && !self.providers_exhausted
            && now < self.last_start
        {
            return Step::CallFallback;
        }
        if in_flight == 0 {
            return Step::Finish;
        }
        Step::Wait {
            slow_timer: !self.fallback && (searxng_pending || self.target_met()),
        }
    }

    /// SearXNG is expected to answer late: the fallback starts now, alongside it, rather than at
    /// the slow threshold.
    pub(super) fn hedge(&mut self) {
        self.fallback = true;
        self.hedged = true;
    }

    /// The slow threshold passed: the fallback starts alongside a still-silent SearXNG.
    pub(super) fn on_slow_threshold(&mut self) {
        self.fallback = true;
        self.slow_fired = self.searxng == SearxngProgress::Pending;
    }

    /// The budget is spent: SearXNG, if still running, is reported as cut by the deadline.
    pub(super) fn on_deadline(&mut self) {
        if self.searxng == SearxngProgress::Pending {
            self.searxng = SearxngProgress::Failed;
            self.failures
                .push(UpstreamFailure::searxng(Shortfall::Deadline));
        }
    }

    /// A call finished.
    pub(super) fn on_event(&mut self, event: Event) {
        self.record.ended(&event);
        match event {
            Event::Searxng(Ok(answer)) => {
                if answer.is_degraded() {
                    self.failures.push(UpstreamFailure::searxng(Shortfall::from(
                        ErrorClass::Degraded,
                    )));
                    self.searxng = SearxngProgress::Degraded;
                } else {
                    self.searxng_body = answer.body.map(|body| (body, answer.results.len()));
                    self.add(SourceResults {
                        source: Source::Searxng,
                        results: answer.results,
                    });
                    self.searxng = SearxngProgress::Healthy;
                }
                self.searxng_top = Some(answer.top);
            }
            Event::Searxng(Err(err)) => {
                self.failures
                    .push(UpstreamFailure::searxng(Shortfall::from(err)));
                self.searxng = SearxngProgress::Failed;
            }
            Event::Provider { kind, pass, result } => {
                if pass == Pass::Fallback {
                    self.fallback_in_flight = false;
                }
                match result {
                    Ok(answer) => {
                        self.premium_answered = true;
                        self.record.premium_spend_usd += answer.spend_usd;
                        self.add(SourceResults::from_premium(kind, &answer.hits));
                    }
                    Err(err) => self.failures.push(UpstreamFailure {
                        upstream: Upstream::Provider(kind),
                        why: Shortfall::from(err),
                    }),
                }
            }
        }
    }

    fn add(&mut self, mut results: SourceResults) {
        if !self.domains.is_empty() {
            let domains = &self.domains;
            results.results.retain(|r| domains.admits_host(r.host()));
        }
        self.distinct.add(&results);
        self.answers.push(results);
    }

    /// Merges what arrived into the answer, with its outcome and cache lifetime.
    pub(super) fn finish(
        self,
        query: &str,
        cache_ttl: Duration,
        elapsed: Duration,
    ) -> Computed<Arc<Answer>> {
        let mut record = self.record;
        record.close(&self.failures, elapsed);
        let merged = merge_owned(self.answers);
        let searxng = match (merged.searxng_contributed(), self.searxng) {
            (true, _) => Contribution::Results,
            (false, SearxngProgress::Healthy) => Contribution::NothingFound,
            (false, _) => Contribution::NoAnswer,
        };
        let premium = match (merged.premium_contributed(), self.premium_answered) {
            (true, _) => Contribution::Results,
            (false, true) => Contribution::NothingFound,
            (false, false) => Contribution::NoAnswer,
        };
        let outcome = Outcome::of_fan_out(searxng, premium);
        let elapsed_ms = elapsed.as_millis() as u64;
        if outcome == Outcome::FallbackFail {
            let hint = Hint::of(&self.failures, &self.engines_failing);
            tracing::warn!(
                elapsed_ms,
                upstreams = %Failures(&self.failures),
                engines = %EnginesFailing(&self.engines_failing),
                hint = hint.map(Hint::sentence).unwrap_or_default(),
                "every upstream failed"
            );
            let mut answer = Answer::all_failed(&self.failures, &self.engines_failing, hint);
            record.searxng_engines = self.engines_failing;
            record.hint = hint.map(Hint::sentence);
            answer.record = record;
            return (Arc::new(answer), Keep::Never);
        }
        let complete =
            merged.results.len() >= self.target && self.searxng == SearxngProgress::Healthy;
        // An empty answer is SearXNG's "nothing found" only when the engines that answer were
        // asked: with engines left out (open breakers), the empty hand is theirs, not the web's —
        // served, never cached.
        let unsure_empty = merged.results.is_empty() && !record.engines_excluded.is_empty();
        if !self.failures.is_empty() {
            tracing::debug!(elapsed_ms, upstreams = %Failures(&self.failures), "answered despite failing upstreams");
        }
        // SearXNG's results alone, none dropped by the merge: its own bytes are the answer.
        let searxng_whole = self.searxng_body.filter(|(_, count)| {
            merged.contributors.len() == 1
                && merged.searxng_contributed()
                && merged.results.len() == *count
        });
        let mut answer = match (searxng_whole, self.searxng_top) {
            (Some((body, _)), Some(top)) => {
                Answer::searxng_as_sent(outcome, query, top, merged, body)
            }
            (_, top) => Answer::success(outcome, query, top, merged),
        };
        answer.record = record;
        let keep = if unsure_empty {
            Keep::Never
        } else {
            answer_keep(complete, cache_ttl)
        };
        (Arc::new(answer), keep)
    }
}

/// How an answer is cached: complete answers for the configured TTL (then kept as the stale
/// fallback); degraded or below-target answers only briefly, so a recovering SearXNG is asked
/// again soon. (Failures are never cached: they do not get here.)
pub(super) fn answer_keep(complete: bool, configured: Duration) -> Keep {
    if complete {
        Keep::Complete(configured)
    } else {
        Keep::Partial(configured.min(SHORT_TTL))
    }
}
