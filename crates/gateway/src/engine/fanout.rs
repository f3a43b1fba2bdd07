//! One fan-out (GATEWAY.md §3 steps 3–8): SearXNG and the T1 providers start together, T1
//! providers concurrently with each other; if the merged count stays below the target — or SearXNG
//! is still silent after the slow threshold — the fallback calls the remaining providers one at a
//! time. The budget is hard: at the deadline every call still in flight is dropped (cancelled) and
//! the answer goes out with what was merged.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::answer::{Answer, UpstreamFailure};
use super::engines::EnginePlan;
use super::outcome::Outcome;
use super::roster::{Admitted, Roster};
use super::{Gateway, Inner, SHORT_TTL};
use crate::breaker::{Signal, TripReason};
use crate::cache::Computed;
use crate::merge::{merge_owned, DistinctUrls, SourceResults};
use crate::providers::{ProviderAnswer, ProviderKind};
use crate::request::SearchRequest;
use crate::searxng::SearxngAnswer;
use crate::upstream::{ErrorClass, UpstreamError};

/// Upstream calls end this much before the request deadline, so their own timeouts are recorded
/// as timeouts rather than vanishing in the cancellation.
const DEADLINE_MARGIN: Duration = Duration::from_millis(5);

enum Event {
    Searxng(Result<SearxngAnswer, UpstreamError>),
    Provider {
        kind: ProviderKind,
        from_fallback: bool,
        result: Result<ProviderAnswer, UpstreamError>,
    },
}

enum SearxngState {
    Skipped,
    Pending,
    Answered { degraded: bool },
    Failed,
}

/// Runs one fan-out and returns the answer with its cache lifetime.
pub(crate) async fn run(inner: Arc<Inner>, req: SearchRequest) -> Computed<Arc<Answer>> {
    let started = Instant::now();
    let budget = inner.config.request_budget;
    let deadline = started + budget;
    let target = inner.config.sufficient_min_results;
    let mut calls: FuturesUnordered<BoxFuture<'static, Event>> = FuturesUnordered::new();
    let mut failures: Vec<UpstreamFailure> = Vec::new();

    // Step 3–4: SearXNG (unless cooling down) and the T1 pass start together.
    let mut searxng = match inner.cooldown.admit() {
        Some(permit) => {
            calls.push(Box::pin(searxng_call(
                Arc::clone(&inner),
                req.clone(),
                deadline,
                permit,
            )));
            SearxngState::Pending
        }
        None => {
            inner.metrics.searxng_skipped.inc();
            failures.push(UpstreamFailure {
                name: "searxng",
                error_class: "cooldown",
            });
            SearxngState::Skipped
        }
    };
    let mut roster = Roster::new(&inner.providers, &inner.breakers, &inner.rotation);
    for _ in 0..inner.config.t1_premium_count {
        let Some(admitted) = roster.next_admitted(&mut failures) else {
            break;
        };
        calls.push(Box::pin(provider_call(
            admitted,
            req.clone(),
            deadline,
            false,
        )));
    }
    let slow_at = started
        + inner
            .latency
            .slow_threshold(inner.config.searxng_slow, budget);

    let mut answers: Vec<SourceResults> = Vec::new();
    let mut distinct = DistinctUrls::default();
    let mut searxng_top = None;
    let mut premium_answered = false;
    let mut fallback = false;
    let mut fallback_in_flight = false;
    // New calls are pointless once the margin before the deadline has started.
    let last_start = deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline);
    loop {
        let searxng_pending = matches!(searxng, SearxngState::Pending);
        let met = distinct.len() >= target;
        if calls.is_empty() && !fallback {
            // The speculative pass is over.
            fallback = true;
        }
        // The target is met and SearXNG has settled: the answer goes out. T1 calls still running
        // were started (and paid for) together with SearXNG, so they get until the slow
        // threshold; past it, or in the fallback, nothing is waited for.
        if met && (fallback || (!searxng_pending && Instant::now() >= slow_at)) {
            break;
        }
        if fallback && !fallback_in_flight && Instant::now() < last_start {
            if let Some(admitted) = roster.next_admitted(&mut failures) {
                tracing::debug!(provider = admitted.client.kind().as_str(), "fallback call");
                calls.push(Box::pin(provider_call(
                    admitted,
                    req.clone(),
                    deadline,
                    true,
                )));
                fallback_in_flight = true;
            }
        }
        if calls.is_empty() {
            break;
        }
        let event = tokio::select! {
            biased;
            Some(event) = calls.next() => event,
            () = tokio::time::sleep_until(slow_at), if !fallback && (searxng_pending || met) => {
                if searxng_pending {
                    tracing::debug!(waited_ms = (Instant::now() - started).as_millis() as u64, "SearXNG is slow: fallback starts alongside it");
                }
                fallback = true;
                continue;
            }
            () = tokio::time::sleep_until(deadline) => {
                if matches!(searxng, SearxngState::Pending) {
                    failures.push(UpstreamFailure { name: "searxng", error_class: "deadline" });
                }
                tracing::debug!(in_flight = calls.len(), "request budget spent: cancelling what is still in flight");
                break;
            }
        };
        match event {
            Event::Searxng(Ok(answer)) => {
                let degraded = answer.is_degraded();
                if degraded {
                    failures.push(UpstreamFailure {
                        name: "searxng",
                        error_class: ErrorClass::Degraded.as_str(),
                    });
                } else {
                    let results = SourceResults {
                        source: crate::merge::Source::Searxng,
                        results: answer.results,
                    };
                    distinct.add(&results);
                    answers.push(results);
                }
                searxng_top = Some(answer.top);
                searxng = SearxngState::Answered { degraded };
            }
            Event::Searxng(Err(err)) => {
                failures.push(UpstreamFailure {
                    name: "searxng",
                    error_class: err.class.as_str(),
                });
                searxng = SearxngState::Failed;
            }
            Event::Provider {
                kind,
                from_fallback,
                result,
            } => {
                if from_fallback {
                    fallback_in_flight = false;
                }
                match result {
                    Ok(answer) => {
                        premium_answered = true;
                        let results = SourceResults::from_premium(kind, &answer.hits);
                        distinct.add(&results);
                        answers.push(results);
                    }
                    Err(err) => failures.push(UpstreamFailure {
                        name: kind.as_str(),
                        error_class: err.class.as_str(),
                    }),
                }
            }
        }
    }
    drop(calls);

    let merged = merge_owned(answers);
    let searxng_healthy = matches!(searxng, SearxngState::Answered { degraded: false });
    let outcome = Outcome::from_contribution(
        merged.searxng_contributed(),
        merged.premium_contributed(),
        searxng_healthy,
        premium_answered,
    );
    let elapsed_ms = (Instant::now() - started).as_millis() as u64;
    if outcome == Outcome::FallbackFail {
        tracing::warn!(elapsed_ms, upstreams = ?failures, "every upstream failed");
        return (Arc::new(Answer::all_failed(&failures)), None);
    }
    let complete = merged.results.len() >= target && searxng_healthy;
    let ttl = answer_ttl(complete, inner.config.cache_ttl);
    if !failures.is_empty() {
        tracing::debug!(elapsed_ms, upstreams = ?failures, "answered despite failing upstreams");
    }
    let answer = Answer::success(outcome, &req.query, searxng_top, merged);
    (Arc::new(answer), Some(ttl))
}

/// How long an answer is cached: complete answers for the configured TTL; degraded or
/// below-target answers only briefly, so a recovering SearXNG is asked again soon. (Failures are
/// never cached: they do not get here.)
fn answer_ttl(complete: bool, configured: Duration) -> Duration {
    if complete {
        configured
    } else {
        configured.min(SHORT_TTL)
    }
}

async fn searxng_call(
    inner: Arc<Inner>,
    req: SearchRequest,
    deadline: Instant,
    permit: crate::breaker::Permit,
) -> Event {
    let catalog = inner.catalog.get();
    let plan = EnginePlan::new(catalog.as_deref(), &req, &inner.breakers, &inner.metrics);
    let call_deadline = deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline);
    let started = Instant::now();
    let mut to_send = req;
    if plan.explicit.is_some() {
        // engines= and categories= are a union at SearXNG: the explicit list must stand alone.
        to_send.categories.clear();
    }
    let result = inner
        .searxng
        .search(&to_send, plan.explicit.as_deref(), call_deadline)
        .await;
    inner.latency.record(started.elapsed());
    match &result {
        Ok(answer) => {
            if answer.is_degraded() {
                // Every engine failed: not a SearXNG success. Counted towards the cooldown, so an
                // instance whose engines are all blocked is skipped instead of costing every
                // request its latency before the fallback.
                permit.record(Signal::Transient);
            } else {
                Gateway::mark_searxng_ok(&inner);
                permit.record(Signal::Success);
            }
            if plan.settle(answer, &inner.breakers, catalog.as_deref()) {
                inner.catalog.refresh.notify_one();
            }
        }
        Err(err) => match err.class {
            // Our request or the client's query (a `!!bang`): SearXNG itself is fine.
            ErrorClass::BadRequest | ErrorClass::Redirect => permit.record(Signal::Neutral),
            _ => permit.record(Signal::Transient),
        },
    }
    Event::Searxng(result)
}

async fn provider_call(
    admitted: Admitted,
    req: SearchRequest,
    deadline: Instant,
    from_fallback: bool,
) -> Event {
    let Admitted {
        client,
        breaker,
        permit,
    } = admitted;
    let kind = client.kind();
    let call_deadline = deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline);
    let result = match tokio::time::timeout_at(call_deadline, client.search(&req)).await {
        Ok(result) => result,
        Err(_) => {
            // Cut by our budget, not by the provider's own timeout: not the provider's failure.
            drop(permit);
            return Event::Provider {
                kind,
                from_fallback,
                result: Err(UpstreamError::new(ErrorClass::Timeout)),
            };
        }
    };
    match &result {
        Ok(answer) => {
            permit.record(Signal::Success);
            if let Some(park) = &answer.park {
                // The call succeeded, but the provider said a window is spent. A spent quota trips
                // the breaker until its reset; a spent short window only pauses until it resets.
                match (park.class, park.retry_after) {
                    (ErrorClass::Quota, _) => breaker.record(Signal::from_error(park)),
                    (_, wait) => breaker.pause(
                        TripReason::RateLimited,
                        wait.unwrap_or(Duration::from_secs(1)),
                    ),
                }
            }
        }
        Err(err) => permit.record(Signal::from_error(err)),
    }
    Event::Provider {
        kind,
        from_fallback,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degraded_or_short_answers_are_cached_briefly() {
        let hour = Duration::from_secs(3600);
        assert_eq!(answer_ttl(true, hour), hour);
        assert_eq!(answer_ttl(false, hour), SHORT_TTL);
        assert_eq!(
            answer_ttl(false, Duration::from_secs(5)),
            Duration::from_secs(5)
        );
    }
}
