//! [`run`]: one fan-out driven to its answer — the calls started, their events fed to [`FanOut`]
//! as they come, the fallback started when its rules say, the deadline kept — and
//! [`run_admitted`], the same once the fan-out has a slot ([`crate::search::admission`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tracing::Instrument;

use super::rules::{FanOut, Step};
use crate::breaker_signals::{self, Concerns};
use crate::search::admission::Overloaded;
use crate::search::answer::Answer;
use crate::search::answer::FanOutResult;
use crate::search::calls::{self, Event, Pass};
use crate::search::failing_engines::{self};
use crate::search::failure::Upstream;
use crate::search::provider_rotation::{Breakers, Premium, ProviderWalk};
use crate::search::upstreams::FanOutContext;
use crate::search::{searxng_call, slow_threshold};
use gateway_core::cache::{Computed, Keep};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::ErrorClass;

/// Runs one fan-out once it has a slot: the shed verdict when none freed up in time.
pub(crate) async fn run_admitted(
    ctx: FanOutContext,
    req: SearchRequest,
    budget: Duration,
    premium: Premium,
) -> Computed<FanOutResult> {
    let Ok(_slot) = ctx.admission.admit().await else {
        return (Err(Overloaded), Keep::Never);
    };
    let (answer, keep) = run(ctx, req, budget, premium).await;
    (Ok(answer), keep)
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
/// `searxng-gateway`'s `bench` facade). Public in every build, hidden from the docs: a feature
/// here would make the harness build this crate and the ones above it a second time.
#[doc(hidden)]
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
