//! One SearXNG call of a fan-out, across the pool: up to [`MAX_ATTEMPTS`] attempts, each planned
//! with the engines of the instance it goes to, bounded by what is left of the budget; only
//! transient failures are retried. A retry goes to another instance when one may take it — at
//! once, since that instance owes nothing to the failure — and to the same instance after the
//! exponential backoff otherwise (one instance: exactly the retries the gateway always made).
//!
//! What each instance learns: its cooldown gets one signal per call that used it (the outcome of
//! its last attempt in the call), its engine breakers the answer's engine facts, its latency every
//! attempt. An answer, degraded or not, ends the call. Once the search's answer went out without
//! the call ([`CallShared::answer_sent`]), the attempt in flight is heard to its end but no other
//! is started: a retry would load SearXNG for an answer nobody waits for.
//!
//! Traced as one `searxng` span (the engines excluded on the first instance, the result) with one
//! `searxng_attempt` child per attempt (the instance, the error class).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::calls::{Event, DEADLINE_MARGIN};
use super::upstreams::SearxngSide;
use crate::searxng_pool::engine_plan::EnginePlan;
use crate::searxng_pool::{Chosen, Instance};
use gateway_core::breaker::{Permit, Signal};
use gateway_core::request::SearchRequest;
use gateway_core::trace::{self, SpanError, TARGET};
use gateway_core::upstream::{ErrorClass, UpstreamError};
use gateway_upstreams::searxng::{backoff_delay, EngineCatalog, SearxngAnswer, MAX_ATTEMPTS};

/// A retry must have at least this much of the budget left to be worth making.
const MIN_ATTEMPT: Duration = Duration::from_millis(50);

/// The attempt planned on one instance, kept while the call's attempts stay there.
struct Planned {
    index: usize,
    /// The instance's cooldown permit.
    permit: Option<Permit>,
    catalog: Option<Arc<EngineCatalog>>,
    plan: EnginePlan,
    to_send: SearchRequest,
}

impl Planned {
    fn new(side: &SearxngSide, req: &SearchRequest, chosen: Chosen) -> Self {
        let instance = side.pool.get(chosen.index);
        let catalog = instance.catalog.get();
        let plan = EnginePlan::new(
            catalog.as_deref(),
            req,
            &instance.engines,
            instance.has_answered(),
            &side.exclusion_overridden,
        );
        let mut to_send = req.clone();
        if plan.explicit.is_some() {
            // engines= and categories= are a union at SearXNG: the explicit list must stand alone.
            to_send.categories.clear();
        }
        Self {
            index: chosen.index,
            permit: chosen.permit,
            catalog,
            plan,
            to_send,
        }
    }

    /// The call is over for this instance: its cooldown learns how.
    fn record(self, signal: Signal) {
        if let Some(permit) = self.permit {
            permit.record(signal);
        }
    }
}

/// What a SearXNG call and the fan-out that started it share.
#[derive(Debug, Default)]
pub(super) struct CallShared {
    /// The engines the call left out on its first instance, for the fan-out's record.
    excluded: OnceLock<Vec<String>>,
    /// The search's answer went out without this call.
    answer_sent: AtomicBool,
}

impl CallShared {
    /// The engines left out on the first instance, once the call planned them.
    pub(super) fn excluded(&self) -> Option<Vec<String>> {
        self.excluded.get().cloned()
    }

    /// The answer went out: the call finishes the attempt in flight and starts no other.
    pub(super) fn answer_sent(&self) {
        self.answer_sent.store(true, Ordering::Relaxed);
    }

    fn is_answer_sent(&self) -> bool {
        self.answer_sent.load(Ordering::Relaxed)
    }
}

/// One SearXNG call for `req`, starting on the instance `first` chose, inside its `searxng` span;
/// what it shares with the fan-out is in `shared`.
pub(super) async fn searxng(
    side: Arc<SearxngSide>,
    req: SearchRequest,
    deadline: Instant,
    first: Chosen,
    shared: Arc<CallShared>,
) -> Event {
    let span = tracing::info_span!(
        target: TARGET,
        "searxng",
        otel.kind = "client",
        excluded_engines = Empty,
        result = Empty,
        error_class = Empty,
        otel.status_code = Empty,
    );
    let event = call(side, req, deadline, first, span.clone(), shared)
        .instrument(span.clone())
        .await;
    if let Event::Searxng(result) = &event {
        match result {
            Ok(answer) if answer.is_degraded() => {
                span.record("result", "degraded");
                trace::record_error(&span, SpanError::Upstream(ErrorClass::Degraded));
            }
            Ok(_) => {
                span.record("result", "ok");
            }
            Err(err) => trace::record_error(&span, SpanError::Upstream(err.class)),
        }
    }
    event
}

async fn call(
    side: Arc<SearxngSide>,
    req: SearchRequest,
    deadline: Instant,
    first: Chosen,
    span: Span,
    shared: Arc<CallShared>,
) -> Event {
    let call_deadline = deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline);
    let started = Instant::now();
    side.recent.note(&req.query);
    let mut tried: Vec<usize> = Vec::new();
    let mut planned = Planned::new(&side, &req, first);
    if !planned.plan.excluded.is_empty() {
        span.record("excluded_engines", planned.plan.excluded.join(",").as_str());
        // For the fan-out's record (`explain`): the engines left out on the first instance.
        let _ = shared.excluded.set(planned.plan.excluded.clone());
    }
    let mut attempt = 1;
    loop {
        let instance = side.pool.get(planned.index);
        if !tried.contains(&planned.index) {
            tried.push(planned.index);
        }
        let attempt_started = Instant::now();
        let attempt_span = tracing::info_span!(
            target: TARGET,
            "searxng_attempt",
            otel.kind = "client",
            attempt,
            instance = %instance.name,
            error_class = Empty,
            otel.status_code = Empty,
        );
        let result = {
            let _busy = instance.begin();
            instance
                .client
                .attempt(
                    &planned.to_send,
                    planned.plan.explicit.as_deref(),
                    call_deadline,
                )
                .instrument(attempt_span.clone())
                .await
        };
        if let Err(err) = &result {
            trace::record_error(&attempt_span, SpanError::Upstream(err.class));
        }
        instance.record_latency(attempt_started.elapsed(), result.is_ok());
        instance
            .client
            .count_attempt(attempt, result.as_ref().map(|_| ()).map_err(|e| e.class));
        let err = match result {
            Ok(answer) => return answered(&side, instance, planned, started, answer),
            Err(err) => err,
        };
        if !err.class.is_transient() {
            // Our request or the client's query (a `!!bang`): the instance itself is fine.
            let signal = match err.class {
                ErrorClass::BadRequest | ErrorClass::Redirect => Signal::Neutral,
                _ => Signal::TRANSIENT,
            };
            planned.record(signal);
            return failed(&side, instance, started, err, false);
        }
        if shared.is_answer_sent() {
            // Nobody waits for this call any more: what it learned is recorded, no retry follows.
            planned.record(Signal::TRANSIENT);
            return failed(&side, instance, started, err, false);
        }
        let next = (attempt < MAX_ATTEMPTS)
            .then(|| side.pool.choose(&req, &tried, Some(planned.index)))
            .flatten();
        let same_instance = next.as_ref().is_some_and(|c| c.index == planned.index);
        let delay = if same_instance {
            backoff_delay(attempt, rand::random::<f64>())
        } else {
            Duration::ZERO
        };
        let next_start = Instant::now() + delay;
        let next = next.filter(|_| next_start + MIN_ATTEMPT < call_deadline);
        let Some(next) = next else {
            tracing::debug!(
                attempts = attempt,
                error_class = err.class.as_str(),
                instance = %instance.name,
                "SearXNG retries exhausted"
            );
            planned.record(Signal::TRANSIENT);
            return failed(&side, instance, started, err, true);
        };
        tracing::debug!(
            attempt,
            error_class = err.class.as_str(),
            instance = %instance.name,
            delay_ms = delay.as_millis() as u64,
            "SearXNG attempt failed, retrying"
        );
        if same_instance {
            tokio::time::sleep_until(next_start).await;
        } else {
            planned.record(Signal::TRANSIENT);
            planned = Planned::new(&side, &req, next);
        }
        attempt += 1;
    }
}

/// The instance answered: its cooldown and engine breakers learn from the answer.
fn answered(
    side: &SearxngSide,
    instance: &Instance,
    planned: Planned,
    started: Instant,
    answer: SearxngAnswer,
) -> Event {
    let Planned {
        permit,
        catalog,
        plan,
        ..
    } = planned;
    let signal = if answer.is_degraded() {
        // Every engine failed: not a SearXNG success. Counted towards the cooldown, so an instance
        // whose engines are all blocked is skipped instead of costing every request its latency
        // before the fallback.
        Signal::TRANSIENT
    } else {
        side.mark_ok();
        Signal::Success
    };
    if let Some(permit) = permit {
        permit.record(signal);
    }
    instance.value.note(&plan.asked(), &answer);
    instance.note_engines(&answer);
    if plan.settle(&answer, &instance.engines, catalog.as_deref()) {
        instance.catalog.refresh.notify_one();
    }
    if !answer.unresponsive.is_empty() {
        // A breaker may have tripped: its prober plans the probe now, not at its next look.
        instance.probe_wake.notify_one();
    }
    let result = Ok(answer);
    instance.client.count_call(started, &result, false);
    side.latency.record(started.elapsed());
    Event::Searxng(result)
}

fn failed(
    side: &SearxngSide,
    instance: &Instance,
    started: Instant,
    err: UpstreamError,
    exhausted: bool,
) -> Event {
    let result = Err(err);
    instance.client.count_call(started, &result, exhausted);
    side.latency.record(started.elapsed());
    Event::Searxng(result)
}
