//! Each rule of the fan-out, driven by events and instants: no sockets, no clock.

#![allow(clippy::unwrap_used)]

use hyper::StatusCode;
use serde_json::{json, Value};

use std::time::Duration;

use tokio::time::Instant;

use super::rules::{answer_keep, FanOut, Step, SHORT_TTL};
use crate::search::calls::{Event, Pass, DEADLINE_MARGIN};
use crate::search::failing_engines::InstanceEngines;
use crate::search::outcome::Outcome;
use crate::search::record::FallbackReason;
use gateway_core::cache::Keep;
use gateway_core::upstream::ErrorClass;
use gateway_core::upstream::UpstreamError;
use gateway_upstreams::providers::{PremiumHit, ProviderAnswer, ProviderKind};
use gateway_upstreams::searxng::{EngineReason, SearxngAnswer, Unresponsive};

const SLOW: Duration = Duration::from_secs(2);
const BUDGET: Duration = Duration::from_secs(10);

struct Rig {
    fan: FanOut,
    start: Instant,
}

impl Rig {
    fn new(target: usize) -> Self {
        let start = Instant::now();
        Self {
            fan: FanOut::new(target, start + SLOW, start + BUDGET),
            start,
        }
    }

    fn step(&mut self, at: Duration, in_flight: usize) -> Step {
        self.fan.next_step(self.start + at, in_flight)
    }
}

fn searxng(urls: &[&str]) -> Event {
    let results = urls
        .iter()
        .map(|u| {
            gateway_core::search_result::SearchResult::from_json(
                &json!({"url": u, "title": "t", "engines": ["alpha"]}),
            )
            .unwrap()
        })
        .collect();
    Event::Searxng(Ok(SearxngAnswer {
        results,
        ..SearxngAnswer::default()
    }))
}

fn degraded() -> Event {
    Event::Searxng(Ok(SearxngAnswer {
        unresponsive: vec![Unresponsive {
            engine: "alpha".into(),
            reason: EngineReason::Captcha,
            suspended: false,
        }],
        ..SearxngAnswer::default()
    }))
}

fn provider(kind: ProviderKind, pass: Pass, urls: &[&str]) -> Event {
    let hits = urls
        .iter()
        .map(|u| PremiumHit {
            url: (*u).to_owned(),
            title: "t".into(),
            content: String::new(),
            published_date: None,
        })
        .collect();
    Event::Provider {
        kind,
        pass,
        result: Ok(ProviderAnswer {
            hits,
            ..ProviderAnswer::default()
        }),
    }
}

fn failed(kind: ProviderKind, pass: Pass, class: ErrorClass) -> Event {
    Event::Provider {
        kind,
        pass,
        result: Err(UpstreamError::new(class)),
    }
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[test]
fn a_searxng_answer_meeting_the_target_goes_out_once_nothing_else_is_in_flight() {
    let mut rig = Rig::new(2);
    assert_eq!(rig.step(ms(0), 1), Step::Wait { slow_timer: true });
    rig.fan.on_event(searxng(&["https://a", "https://b"]));
    assert_eq!(rig.step(ms(50), 0), Step::Finish);
    let (answer, ttl) = rig.fan.finish("q", BUDGET, ms(50));
    assert_eq!(answer.outcome, Outcome::SearxngOk);
    assert_eq!(
        ttl,
        Keep::Complete(BUDGET),
        "a complete answer is cached for the configured TTL"
    );
}

#[test]
fn a_t1_call_still_out_gets_until_the_slow_threshold_then_the_answer_goes_out() {
    let mut rig = Rig::new(1);
    rig.fan.on_event(searxng(&["https://a"]));
    assert_eq!(
        rig.step(ms(10), 1),
        Step::Wait { slow_timer: true },
        "T1 was paid for: wait for it"
    );
    assert_eq!(
        rig.step(SLOW, 1),
        Step::Finish,
        "past the threshold nothing is waited for"
    );
}

#[test]
fn below_the_target_the_fallback_calls_one_provider_at_a_time() {
    let mut rig = Rig::new(3);
    rig.fan.on_event(searxng(&["https://a"]));
    assert_eq!(rig.step(ms(10), 0), Step::CallFallback);
    rig.fan.fallback_started();
    assert_eq!(
        rig.step(ms(10), 1),
        Step::Wait { slow_timer: false },
        "one at a time"
    );
    rig.fan.on_event(provider(
        ProviderKind::Brave,
        Pass::Fallback,
        &["https://b"],
    ));
    assert_eq!(
        rig.step(ms(20), 0),
        Step::CallFallback,
        "still below the target"
    );
    rig.fan.fallback_started();
    rig.fan.on_event(provider(
        ProviderKind::Exa,
        Pass::Fallback,
        &["https://c", "https://a"],
    ));
    assert_eq!(
        rig.step(ms(30), 0),
        Step::Finish,
        "three distinct URLs meet the target"
    );
    let (answer, _) = rig.fan.finish("q", BUDGET, ms(30));
    assert_eq!(answer.outcome, Outcome::SearxngPlusPremiumOk);
    assert_eq!(answer.result_count, 3);
}

#[test]
fn with_no_provider_left_the_answer_goes_out_below_the_target_and_is_cached_briefly() {
    let mut rig = Rig::new(5);
    rig.fan.on_event(searxng(&["https://a"]));
    assert_eq!(rig.step(ms(10), 0), Step::CallFallback);
    rig.fan.providers_exhausted();
    assert_eq!(rig.step(ms(10), 0), Step::Finish);
    let (answer, ttl) = rig.fan.finish("q", Duration::from_secs(3600), ms(10));
    assert_eq!(answer.outcome, Outcome::SearxngOk);
    assert_eq!(ttl, Keep::Partial(SHORT_TTL));
}

#[test]
fn a_degraded_searxng_answer_is_a_failure_and_sends_the_request_to_the_fallback() {
    let mut rig = Rig::new(1);
    rig.fan.on_event(degraded());
    assert_eq!(rig.step(ms(10), 0), Step::CallFallback);
    rig.fan.fallback_started();
    rig.fan.on_event(provider(
        ProviderKind::Tavily,
        Pass::Fallback,
        &["https://t"],
    ));
    assert_eq!(rig.step(ms(20), 0), Step::Finish);
    let (answer, ttl) = rig.fan.finish("q", Duration::from_secs(3600), ms(20));
    assert_eq!(answer.outcome, Outcome::PremiumOk);
    assert_eq!(ttl, Keep::Partial(SHORT_TTL), "degraded: not complete");
}

#[test]
fn a_silent_searxng_gets_the_fallback_alongside_it_at_the_slow_threshold() {
    let mut rig = Rig::new(1);
    assert_eq!(rig.step(ms(10), 1), Step::Wait { slow_timer: true });
    rig.fan.on_slow_threshold();
    assert_eq!(
        rig.step(SLOW, 1),
        Step::CallFallback,
        "SearXNG is still in flight"
    );
    rig.fan.fallback_started();
    assert_eq!(rig.step(SLOW, 2), Step::Wait { slow_timer: false });
    rig.fan.on_event(provider(
        ProviderKind::Brave,
        Pass::Fallback,
        &["https://b"],
    ));
    assert_eq!(
        rig.step(SLOW + ms(5), 1),
        Step::Finish,
        "the target is met: SearXNG is not waited for"
    );
}

#[test]
fn a_hedged_fan_out_calls_the_fallback_at_once_and_answers_without_waiting_for_searxng() {
    let mut waits = Rig::new(2);
    assert_eq!(
        waits.step(Duration::ZERO, 1),
        Step::Wait { slow_timer: true },
        "not hedged: SearXNG gets until the slow threshold"
    );
    let mut rig = Rig::new(2);
    rig.fan.hedge();
    assert_eq!(rig.step(Duration::ZERO, 1), Step::CallFallback);
    rig.fan.fallback_started();
    assert_eq!(
        rig.step(Duration::ZERO, 2),
        Step::Wait { slow_timer: false },
        "one fallback call at a time, and no slow timer left to wait for"
    );
    rig.fan.on_event(provider(
        ProviderKind::Brave,
        Pass::Fallback,
        &["https://a.example/1", "https://a.example/2"],
    ));
    assert_eq!(
        rig.step(ms(200), 1),
        Step::Finish,
        "the target is met: SearXNG is not waited for"
    );
    assert_eq!(rig.fan.fallback_reason(), FallbackReason::SearxngHedged);
}

#[test]
fn no_fallback_call_starts_in_the_margin_before_the_deadline() {
    let mut rig = Rig::new(1);
    rig.fan.on_event(searxng(&[]));
    assert_eq!(rig.step(BUDGET - DEADLINE_MARGIN, 0), Step::Finish);
}

#[test]
fn the_deadline_reports_a_searxng_still_running() {
    let mut rig = Rig::new(1);
    rig.fan.on_deadline();
    let (answer, ttl) = rig.fan.finish("q", BUDGET, BUDGET);
    assert_eq!(answer.outcome, Outcome::FallbackFail);
    assert_eq!(ttl, Keep::Never, "failures are never cached");
    let body: Value = serde_json::from_slice(&answer.json).unwrap();
    assert_eq!(
        body["upstreams"],
        json!([{"name": "searxng", "error_class": "deadline"}])
    );
}

/// #45: an empty answer is SearXNG's "nothing found" only when the engines that answer were asked.
/// With engines left out by their breakers, the empty hand is theirs: served, never cached.
#[test]
fn an_empty_answer_with_engines_left_out_is_not_cached() {
    let mut rig = Rig::new(1);
    rig.fan.on_event(searxng(&[]));
    rig.fan.providers_exhausted();
    rig.fan.record_mut().engines_excluded = vec!["alpha".into()];
    let (answer, ttl) = rig.fan.finish("q", BUDGET, ms(5));
    assert_eq!(
        (answer.status, answer.outcome),
        (StatusCode::OK, Outcome::SearxngOk)
    );
    assert_eq!(ttl, Keep::Never);
    let mut asked_all = Rig::new(1);
    asked_all.fan.on_event(searxng(&[]));
    asked_all.fan.providers_exhausted();
    let (_, ttl) = asked_all.fan.finish("q", BUDGET, ms(5));
    assert_eq!(
        ttl,
        Keep::Partial(BUDGET.min(SHORT_TTL)),
        "every engine asked: nothing found"
    );
}

/// #45: a failed answer names each instance's failing engines by SearXNG's reason and the hint.
#[test]
fn a_failure_names_the_failing_engines_and_the_hint() {
    let mut rig = Rig::new(1);
    rig.fan.on_event(degraded());
    rig.fan.providers_exhausted();
    assert!(rig.fan.all_failed());
    let alpha = gateway_upstreams::searxng::EngineName::checked("alpha").unwrap();
    rig.fan.engines_failing(
        InstanceEngines::group("searxng:8888", vec![(alpha, EngineReason::Captcha)])
            .into_iter()
            .collect(),
    );
    let (answer, ttl) = rig.fan.finish("q", BUDGET, ms(5));
    assert_eq!((answer.status, ttl), (StatusCode::BAD_GATEWAY, Keep::Never));
    let body: Value = serde_json::from_slice(&answer.json).unwrap();
    assert_eq!(
        body["searxng"],
        json!([{"instance": "searxng:8888", "engines": {"captcha": ["alpha"]}}])
    );
    assert!(body["hint"]
        .as_str()
        .unwrap()
        .starts_with("every engine is blocking this IP"));
    assert_eq!(answer.record.hint.as_deref(), body["hint"].as_str());
}

#[test]
fn a_healthy_nothing_found_is_a_200_searxng_ok_not_a_failure() {
    let mut rig = Rig::new(1);
    rig.fan.on_event(searxng(&[]));
    rig.fan.providers_exhausted();
    assert_eq!(rig.step(ms(5), 0), Step::Finish);
    let (answer, _) = rig.fan.finish("q", BUDGET, ms(5));
    assert_eq!(
        (answer.status, answer.outcome),
        (StatusCode::OK, Outcome::SearxngOk)
    );
}

#[test]
fn every_failure_is_named_in_the_502() {
    let mut rig = Rig::new(1);
    rig.fan.searxng_skipped();
    rig.fan.on_event(failed(
        ProviderKind::Brave,
        Pass::Speculative,
        ErrorClass::RateLimited,
    ));
    let (answer, _) = rig.fan.finish("q", BUDGET, ms(5));
    let body: Value = serde_json::from_slice(&answer.json).unwrap();
    assert_eq!(
        body["upstreams"],
        json!([
            {"name": "searxng", "error_class": "cooldown"},
            {"name": "brave", "error_class": "rate_limited"},
        ])
    );
}

#[test]
fn degraded_or_short_answers_are_cached_briefly() {
    let hour = Duration::from_secs(3600);
    assert_eq!(answer_keep(true, hour), Keep::Complete(hour));
    assert_eq!(answer_keep(false, hour), Keep::Partial(SHORT_TTL));
    assert_eq!(
        answer_keep(false, Duration::from_secs(5)),
        Keep::Partial(Duration::from_secs(5))
    );
}

/// SearXNG's body as the client decodes it.
fn searxng_body(body: &str) -> Event {
    let answer =
        gateway_upstreams::searxng::decode_answer(bytes::Bytes::copy_from_slice(body.as_bytes()))
            .unwrap();
    Event::Searxng(Ok(answer))
}

const SEARXNG_BODY: &str = r#"{"query": "q", "number_of_results": 2, "results": [
    {"url": "https://a.example/", "title": "A", "engines": ["alpha"], "score": 1.5},
    {"url": "https://b.example/", "title": "B", "engines": ["beta"], "score": 0.5}],
    "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}"#;

#[test]
fn searxngs_results_alone_go_out_as_searxng_sent_them() {
    let mut rig = Rig::new(2);
    rig.fan.on_event(searxng_body(SEARXNG_BODY));
    let (answer, _) = rig.fan.finish("q", BUDGET, ms(10));
    assert_eq!(
        &answer.json[..],
        SEARXNG_BODY.as_bytes(),
        "forwarded as sent"
    );
    assert_eq!((answer.result_count, answer.engine_count), (2, 2));
}

#[test]
fn an_answer_that_differs_from_searxngs_is_rendered() {
    // A provider's result merged in.
    let mut rig = Rig::new(2);
    rig.fan.on_event(searxng_body(SEARXNG_BODY));
    rig.fan.on_event(provider(
        ProviderKind::Brave,
        Pass::Speculative,
        &["https://c.example/"],
    ));
    let (answer, _) = rig.fan.finish("q", BUDGET, ms(10));
    let doc: serde_json::Value = serde_json::from_slice(&answer.json).unwrap();
    assert_eq!(doc["results"].as_array().unwrap().len(), 3);
    assert_eq!(doc["number_of_results"], 3, "never fewer than returned");

    // A repeated URL dropped, a result without a title dropped, a key missing: each is rendered.
    for body in [
        r#"{"query": "q", "results": [{"url": "https://a.example/", "title": "A"}, {"url": "https://www.a.example", "title": "A"}], "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}"#,
        r#"{"query": "q", "results": [{"url": "https://a.example/", "title": "A"}, {"url": "https://b.example/"}], "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}"#,
        r#"{"query": "q", "results": [{"url": "https://a.example/", "title": "A"}]}"#,
    ] {
        let mut rig = Rig::new(1);
        rig.fan.on_event(searxng_body(body));
        let (answer, _) = rig.fan.finish("q", BUDGET, ms(10));
        assert_ne!(&answer.json[..], body.as_bytes(), "{body}");
        let doc: serde_json::Value = serde_json::from_slice(&answer.json).unwrap();
        assert_eq!(doc["results"].as_array().unwrap().len(), 1, "{body}");
        assert!(doc.get("unresponsive_engines").is_some(), "{body}");
    }
}

#[test]
fn an_under_reported_number_of_results_is_corrected_around_searxngs_own_values() {
    // Real SearXNG often reports 0: the answer is rendered from SearXNG's values as it wrote them,
    // with only the number changed.
    let body = SEARXNG_BODY.replace(r#""number_of_results": 2"#, r#""number_of_results": 0"#);
    let mut rig = Rig::new(2);
    rig.fan.on_event(searxng_body(&body));
    let (answer, _) = rig.fan.finish("q", BUDGET, ms(10));
    let doc: Value = serde_json::from_slice(&answer.json).unwrap();
    let mut expected: Value = serde_json::from_str(&body).unwrap();
    expected["number_of_results"] = json!(2);
    assert_eq!(doc, expected, "the same document, the number corrected");
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    let sent: Vec<&String> = expected.as_object().unwrap().keys().collect();
    assert_eq!(keys, sent, "in SearXNG's order");
    let text = std::str::from_utf8(&answer.json).unwrap();
    assert!(
        text.contains(
            r#"{"url": "https://a.example/", "title": "A", "engines": ["alpha"], "score": 1.5}"#
        ),
        "each result as SearXNG wrote it: {text}"
    );
}
