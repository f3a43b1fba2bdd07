//! One fan-out (GATEWAY.md §3 steps 3–8). [`run`] drives the calls; [`FanOut`] holds the
//! request's state and every rule, one method each, so each rule can be read and tested alone:
//!
//! - SearXNG and the T1 providers start together ([`run`]); when the instance has lately been slow
//!   to answer, the fallback starts with them ([`FanOut::hedge`], `slow_threshold::hedges`).
//! - [`FanOut::on_event`]: SearXNG answered (healthy, degraded) or failed; a provider answered or
//!   failed. Results are counted by distinct canonical URL.
//! - [`FanOut::on_slow_threshold`]: SearXNG is still silent after the slow threshold, so the
//!   fallback starts alongside it.
//! - [`FanOut::next_step`]: what to do now — finish (target met and SearXNG settled, or nothing
//!   left in flight), start the next fallback call (one at a time), or wait.
//! - [`FanOut::on_deadline`]: the budget is hard; whatever is in flight is dropped (cancelled).
//! - A SearXNG call the answer did not wait for is heard to its end ([`SearxngTask`]), so the
//!   instance and its engines learn what it found.
//! - [`FanOut::finish`]: merge, outcome, the answer and how long to cache it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tracing::Instrument;

use super::answer::Answer;
use super::breaker_signals::{self, Concerns};
use super::calls::{self, Event, Pass, DEADLINE_MARGIN};
use super::explain::{FallbackReason, FanOutRecord};
use super::failing_engines::{self, EnginesFailing, Hint, InstanceEngines};
use super::failure::{Failures, Shortfall, Upstream, UpstreamFailure};
use super::outcome::{Contribution, Outcome};
use super::provider_rotation::{Breakers, Premium, ProviderWalk};
use super::upstreams::FanOutContext;
use super::SHORT_TTL;
use super::{searxng_call, slow_threshold};
use gateway_core::cache::{Computed, Keep};
use gateway_core::request::{DomainFilter, SearchRequest};
use gateway_core::upstream::ErrorClass;
use gateway_upstreams::merge::{merge_owned, DistinctUrls, Source, SourceResults};

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
    fn fallback_reason(&self) -> FallbackReason {
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
fn answer_keep(complete: bool, configured: Duration) -> Keep {
    if complete {
        Keep::Complete(configured)
    } else {
        Keep::Partial(configured.min(SHORT_TTL))
    }
}

/// Runs one fan-out within `budget` (the request budget, less what coordinating with other
/// replicas took) and returns the answer with its cache lifetime.
pub(crate) async fn run(
    ctx: FanOutContext,
    req: SearchRequest,
    budget: Duration,
    premium: Premium,
) -> Computed<Arc<Answer>> {
    let started = Instant::now();
    let deadline = started + budget;
    let slow_wait = ctx
        .searxng
        .latency
        .slow_threshold(ctx.settings.searxng_slow, budget);
    let slow_at = started + slow_wait;
    let mut fan = FanOut::new(ctx.settings.sufficient_min_results, slow_at, deadline);
    fan.filter_domains(req.domains.clone());
    fan.record_mut().set_budget(budget);
    let mut searxng_task = None;
    let mut calls: FuturesUnordered<BoxFuture<'static, Event>> = FuturesUnordered::new();

    // SearXNG (unless every instance is cooling down) and the T1 pass start together, and the
    // fallback too when the instance has lately been slow to answer.
    match ctx.searxng.pool.choose(&req, &[], None) {
        Some(chosen) => {
            fan.record_mut().searxng_started();
            let answer_time = ctx.searxng.pool.get(chosen.index).answer_time();
            let shared = Arc::new(searxng_call::CallShared::default());
            let call = searxng_call::searxng(
                Arc::clone(&ctx.searxng),
                req.clone(),
                deadline,
                chosen,
                Arc::clone(&shared),
            );
            if slow_threshold::hedges(ctx.settings.searxng_hedge, answer_time, slow_wait) {
                tracing::debug!(
                    answer_ms = answer_time.unwrap_or_default().as_millis() as u64,
                    "SearXNG has been slow to answer: the fallback starts alongside it"
                );
                fan.hedge();
            }
            let (task, event) = SearxngTask::spawn(call, shared);
            searxng_task = Some(task);
            calls.push(event);
        }
        None => {
            ctx.searxng_skipped.inc();
            fan.searxng_skipped();
        }
    }
    let side = &ctx.premium;
    let mut walk = ProviderWalk::new(
        &side.providers,
        Breakers {
            providers: &side.breakers,
            keys: &side.key_breakers,
        },
        &side.rotation,
        premium,
    );
    for _ in 0..ctx.settings.t1_premium_count {
        let Some(admitted) = walk.next_admitted(fan.failures_mut()) else {
            break;
        };
        side.spend.called(admitted.client.kind());
        fan.record_mut().provider_started(
            Upstream::Provider(admitted.client.kind()),
            Pass::Speculative,
        );
        calls.push(Box::pin(calls::provider(
            admitted,
            req.clone(),
            deadline,
            Pass::Speculative,
        )));
    }

    loop {
        let slow_timer = match fan.next_step(Instant::now(), calls.len()) {
            Step::Finish => {
                if let Some(task) = searxng_task.as_mut() {
                    task.hear_out();
                }
                break;
            }
            Step::CallFallback => {
                match walk.next_admitted(fan.failures_mut()) {
                    Some(admitted) => {
                        tracing::debug!(
                            provider = admitted.client.kind().as_str(),
                            "fallback call"
                        );
                        fan.fallback_started();
                        side.spend.called(admitted.client.kind());
                        fan.record_mut().provider_started(
                            Upstream::Provider(admitted.client.kind()),
                            Pass::Fallback,
                        );
                        calls.push(Box::pin(calls::provider(
                            admitted,
                            req.clone(),
                            deadline,
                            Pass::Fallback,
                        )));
                    }
                    None => fan.providers_exhausted(),
                }
                continue;
            }
            Step::Wait { slow_timer } => slow_timer,
        };
        tokio::select! {
            biased;
            Some(event) = calls.next() => {
                if let Event::Provider { kind, result, .. } = &event {
                    side.rotation.observe(*kind, result.is_ok());
                }
                match &event {
                    // What the call cost counts against the day's cap, whoever asked.
                    Event::Provider { kind, result: Ok(answer), .. } => side.spend.charge(*kind, answer.spend_usd),
                    // A key of a pool spent or refused: the provider may answer with another key.
                    Event::Provider { kind, result: Err(err), .. }
                        if breaker_signals::concerns(err) == Concerns::Key
                            && walk.again_with_another_key(*kind) =>
                    {
                        fan.providers_again();
                    }
                    _ => {}
                }
                fan.on_event(event)
            }
            () = tokio::time::sleep_until(slow_at), if slow_timer => {
                tracing::debug!(waited_ms = started.elapsed().as_millis() as u64, "SearXNG is slow or a T1 call is still out: the fallback takes over");
                fan.on_slow_threshold();
            }
            () = tokio::time::sleep_until(deadline) => {
                tracing::debug!(in_flight = calls.len(), "request budget spent: cancelling what is still in flight");
                fan.on_deadline();
                break;
            }
        }
    }
    drop(calls);
    if let Some(excluded) = searxng_task.as_ref().and_then(SearxngTask::excluded) {
        fan.record_mut().engines_excluded = excluded;
    }
    if fan.all_failed() {
        fan.engines_failing(failing_engines::of_pool(&ctx.searxng.pool));
    }
    fan.finish(&req.query, ctx.settings.cache_ttl, started.elapsed())
}

/// A fan-out's SearXNG call, run as its own task so that it can outlive the search. When the
/// answer goes out without it (a provider met the target first: a hedged search, or one past the
/// slow threshold), the attempt in flight is heard to its end, bounded by the same deadline: the
/// instance's answer time hears how slow it was (only that tells the hedge when SearXNG is slow,
/// and when it is fast again), and its engines' breakers hear what the answer says (a
/// slow-blocked engine's `timeout`, a CAPTCHA). A call cancelled as soon as a provider met the
/// target would teach them nothing, and it is exactly the slow calls that were cancelled. When
/// the search itself is dropped — the client hung up, or the budget ran out — the call is
/// aborted with it.
struct SearxngTask {
    abort: Option<tokio::task::AbortHandle>,
    shared: Arc<searxng_call::CallShared>,
}

impl SearxngTask {
    /// Starts `call`; the returned future is the fan-out's event for it.
    fn spawn(
        call: impl Future<Output = Event> + Send + 'static,
        shared: Arc<searxng_call::CallShared>,
    ) -> (Self, BoxFuture<'static, Event>) {
        let handle = tokio::spawn(call.in_current_span());
        let task = Self {
            abort: Some(handle.abort_handle()),
            shared,
        };
        let event = Box::pin(async move {
            match handle.await {
                Ok(event) => event,
                Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                // Only a runtime shutting down gets here: an abort comes with dropping the fan-out,
                // and this future with it.
                Err(_) => Event::Searxng(Err(gateway_core::upstream::UpstreamError::new(
                    ErrorClass::Timeout,
                ))),
            }
        });
        (task, event)
    }

    /// The answer goes out: the call is left to finish its attempt in flight, and starts no other.
    fn hear_out(&mut self) {
        self.shared.answer_sent();
        self.abort = None;
    }

    /// The engines the call left out on its first instance, once it planned them.
    fn excluded(&self) -> Option<Vec<String>> {
        self.shared.excluded()
    }
}

impl Drop for SearxngTask {
    fn drop(&mut self) {
        if let Some(abort) = self.abort.take() {
            abort.abort();
        }
    }
}

/// The CPU part of a miss with no I/O: SearXNG's decoded answer and the providers' answers fed to
/// a fan-out as its calls' events, then merged and rendered by [`FanOut::finish`] — exactly what
/// [`run`] does after its calls return. Only the in-process benchmark calls it (through
/// the crate's `bench` facade, feature `bench`).
#[cfg(feature = "bench")]
pub fn finish_answered(
    query: &str,
    target: usize,
    searxng: Option<gateway_upstreams::searxng::SearxngAnswer>,
    premium: Vec<(
        gateway_upstreams::providers::ProviderKind,
        gateway_upstreams::providers::ProviderAnswer,
    )>,
) -> Arc<Answer> {
    let now = Instant::now();
    let budget = Duration::from_secs(10);
    let mut fan = FanOut::new(target, now + budget, now + budget);
    match searxng {
        Some(answer) => fan.on_event(Event::Searxng(Ok(answer))),
        None => fan.searxng_skipped(),
    }
    for (kind, answer) in premium {
        fan.on_event(Event::Provider {
            kind,
            pass: Pass::Speculative,
            result: Ok(answer),
        });
    }
    fan.finish(query, Duration::from_secs(3600), Duration::ZERO)
        .0
}

#[cfg(test)]
mod tests;
