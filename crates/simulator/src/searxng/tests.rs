//! The simulated SearXNG through its HTTP surface on a loopback port (real sockets, real time), and its
//! timing and scripted windows through [`Instance::plan_search`] directly, on tokio's paused clock.

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use reqwest::redirect::Policy;
use serde_json::{json, Value};

use super::instance::{lock, Instance, Plan};
use super::params::{Params, UiLanguage};
use super::*;
use crate::script::{Latency, Spell};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn get(searxng: &SimulatedSearxng, params: &[(&str, &str)]) -> reqwest::Response {
    client()
        .get(format!("{}/search", searxng.base_url()))
        .query(params)
        .send()
        .await
        .unwrap()
}

async fn search_json(searxng: &SimulatedSearxng, params: &[(&str, &str)]) -> Value {
    let response = get(searxng, params).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn engines_of(result: &Value) -> Vec<String> {
    result["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|engine| engine.as_str().unwrap().to_owned())
        .collect()
}

fn engines_in_results(body: &Value) -> Vec<String> {
    let mut engines: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(engines_of)
        .collect();
    engines.sort();
    engines.dedup();
    engines
}

#[tokio::test]
async fn answers_a_search_with_every_searxng_key_and_one_unknown_key() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();

    let response = get(&searxng, &[("q", "Rust async"), ("format", "json")]).await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    let timing = response.headers()["server-timing"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(timing.contains("total_0_alpha;dur=") && timing.contains("total_0_beta;dur="));
    let body: Value = response.json().await.unwrap();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "query",
            "number_of_results",
            "results",
            "answers",
            "corrections",
            "infoboxes",
            "suggestions",
            "unresponsive_engines",
            "sim_extra"
        ]
    );
    assert_eq!(body["query"], "Rust async");
    let results = body["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for result in results {
        for field in [
            "url",
            "title",
            "content",
            "engine",
            "engines",
            "positions",
            "score",
            "category",
            "template",
            "parsed_url",
            "publishedDate",
            "thumbnail",
        ] {
            assert!(result.get(field).is_some(), "{field} missing in {result}");
        }
        assert!(["author", "length", "metadata"]
            .iter()
            .any(|extra| result.get(extra).is_some()));
    }
    assert_eq!(body["unresponsive_engines"], json!([]));
}

#[tokio::test]
async fn leaves_number_of_results_out_like_newer_searxng() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_number_of_results(None);

    let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert!(body.get("number_of_results").is_none());
    assert!(body.get("results").is_some());
}

#[tokio::test]
async fn serves_healthz_and_a_config_describing_every_engine() {
    let searxng = SimulatedSearxng::start(&["alpha", "alphabet", "beta"])
        .await
        .unwrap();
    searxng.set_engine_categories("beta", &["news", "general"]);

    let health = client()
        .get(format!("{}/healthz", searxng.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "OK");

    let config: Value = client()
        .get(format!("{}/config", searxng.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(config["version"], SIMULATED_VERSION);
    assert_eq!(config["categories"], json!(["general", "news"]));
    let engines = config["engines"].as_array().unwrap();
    let names: Vec<&str> = engines
        .iter()
        .map(|engine| engine["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "alphabet", "beta"]);
    let shortcuts: Vec<&str> = engines
        .iter()
        .map(|engine| engine["shortcut"].as_str().unwrap())
        .collect();
    assert_eq!(shortcuts, ["al", "alp", "be"]);
    assert_eq!(engines[2]["categories"], json!(["news", "general"]));
    assert_eq!(engines[0]["enabled"], true);
    assert_eq!(engines[0]["paging"], true);
    assert_eq!(engines[0]["timeout"], 3.0);
    assert_eq!(searxng.config_hits(), 1);
    assert_eq!(searxng.hits(), 0);
}

#[tokio::test]
async fn queries_only_the_known_engines_named_in_engines() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
        .await
        .unwrap();

    let body = search_json(
        &searxng,
        &[
            ("q", "rust"),
            ("format", "json"),
            ("engines", "alpha, nope"),
        ],
    )
    .await;

    assert_eq!(engines_in_results(&body), ["alpha"]);
    assert_eq!(searxng.engine_hits("alpha"), 1);
    assert_eq!(searxng.engine_hits("beta"), 0);
    assert_eq!(searxng.engine_hits("gamma"), 0);
}

#[tokio::test]
async fn queries_every_default_engine_when_no_named_engine_is_known() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
        .await
        .unwrap();

    let body = search_json(
        &searxng,
        &[
            ("q", "rust"),
            ("format", "json"),
            ("engines", "nope,missing"),
        ],
    )
    .await;

    assert_eq!(engines_in_results(&body), ["alpha", "beta", "gamma"]);
}

#[tokio::test]
async fn unites_categories_with_named_engines_and_defaults_to_general() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
        .await
        .unwrap();
    searxng.set_engine_categories("gamma", &["news"]);

    let united = search_json(
        &searxng,
        &[
            ("q", "rust"),
            ("format", "json"),
            ("engines", "alpha"),
            ("categories", "news"),
        ],
    )
    .await;
    let by_default = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert_eq!(engines_in_results(&united), ["alpha", "gamma"]);
    assert_eq!(engines_in_results(&by_default), ["alpha", "beta"]);
    assert_eq!(searxng.engine_hits("gamma"), 1);
}

#[tokio::test]
async fn leaves_a_disabled_engine_out_unless_it_is_named() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
    searxng.set_engine_enabled("beta", false);

    let by_category = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;
    let by_name = search_json(
        &searxng,
        &[("q", "rust"), ("format", "json"), ("engines", "beta")],
    )
    .await;

    assert_eq!(engines_in_results(&by_category), ["alpha"]);
    assert_eq!(engines_in_results(&by_name), ["beta"]);
}

#[tokio::test]
async fn selects_the_engine_named_by_a_bang_in_the_query() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();

    let body = search_json(
        &searxng,
        &[("q", "!be rust"), ("format", "json"), ("engines", "alpha")],
    )
    .await;

    assert_eq!(body["query"], "rust");
    assert_eq!(engines_in_results(&body), ["beta"]);
}

#[tokio::test]
async fn merges_a_url_found_by_two_engines_into_one_higher_scored_result() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();

    let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

    let results = body["results"].as_array().unwrap();
    let mut urls: Vec<&str> = results
        .iter()
        .map(|result| result["url"].as_str().unwrap())
        .collect();
    let total = urls.len();
    urls.sort_unstable();
    urls.dedup();
    assert_eq!(urls.len(), total, "every URL appears once");
    assert_eq!(total, 2 * DEFAULT_RESULTS_PER_ENGINE - 1);
    let shared = &results[0];
    assert_eq!(engines_of(shared), ["alpha", "beta"]);
    assert_eq!(shared["positions"], json!([3, 2]));
    let top_single_score = results[1..]
        .iter()
        .map(|result| result["score"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(shared["score"].as_f64().unwrap() > top_single_score);
}

#[tokio::test]
async fn gives_the_same_urls_for_the_same_query_and_new_ones_on_the_next_page() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    let urls = |body: &Value| -> Vec<String> {
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|result| result["url"].as_str().unwrap().to_owned())
            .collect()
    };

    let first = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;
    let again = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;
    let page_two = search_json(
        &searxng,
        &[("q", "rust"), ("format", "json"), ("pageno", "2")],
    )
    .await;

    assert_eq!(urls(&first), urls(&again));
    assert_eq!(urls(&page_two).len(), DEFAULT_RESULTS_PER_ENGINE);
    assert!(urls(&page_two)
        .iter()
        .all(|url| !urls(&first).contains(url)));
}

#[tokio::test]
async fn reports_failing_engines_in_unresponsive_engines_sorted_by_name() {
    let searxng = SimulatedSearxng::start(&["gamma", "alpha", "beta"])
        .await
        .unwrap();
    searxng.set_engine(
        "gamma",
        EngineBehaviour::Fails(EngineFailure::TooManyRequests),
    );
    searxng.set_engine(
        "beta",
        EngineBehaviour::Fails(EngineFailure::Suspended(Box::new(EngineFailure::Captcha))),
    );

    let body = search_json(
        &searxng,
        &[("q", "rust"), ("format", "json"), ("locale", "en")],
    )
    .await;

    assert_eq!(
        body["unresponsive_engines"],
        json!([
            ["beta", "Suspended: CAPTCHA"],
            ["gamma", "too many requests"]
        ])
    );
    assert_eq!(engines_in_results(&body), ["alpha"]);
}

#[tokio::test]
async fn translates_failure_messages_into_the_requested_locale() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_engine("alpha", EngineBehaviour::Fails(EngineFailure::Timeout));

    let german = search_json(
        &searxng,
        &[("q", "rust"), ("format", "json"), ("locale", "de")],
    )
    .await;

    assert_eq!(
        german["unresponsive_engines"],
        json!([["alpha", "Zeitüberschreitung"]])
    );
    assert_eq!(EngineFailure::Timeout.message(), "timeout");
}

#[tokio::test]
async fn answers_200_without_results_when_every_engine_fails() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
    searxng.set_engine("alpha", EngineBehaviour::Fails(EngineFailure::AccessDenied));
    searxng.set_engine("beta", EngineBehaviour::Fails(EngineFailure::HttpError));

    let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert_eq!(body["results"], json!([]));
    assert_eq!(
        body["unresponsive_engines"],
        json!([["alpha", "access denied"], ["beta", "HTTP error"]])
    );
}

#[tokio::test]
async fn leaves_an_empty_or_skipped_engine_out_of_both_results_and_failures() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
        .await
        .unwrap();
    searxng.set_engine("alpha", EngineBehaviour::Empty);
    searxng.set_engine_paging("beta", false);

    let body = search_json(
        &searxng,
        &[("q", "rust"), ("format", "json"), ("pageno", "2")],
    )
    .await;

    assert_eq!(engines_in_results(&body), ["gamma"]);
    assert_eq!(body["unresponsive_engines"], json!([]));
    assert_eq!(searxng.engine_hits("alpha"), 1);
    assert_eq!(searxng.engine_hits("beta"), 0);
}

#[tokio::test]
async fn redirects_an_external_bang_with_302_even_when_json_is_asked() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();

    let response = get(&searxng, &[("q", "!!g rust lang"), ("format", "json")]).await;

    assert_eq!(response.status(), 302);
    assert_eq!(
        response.headers()[header::LOCATION],
        "https://www.google.com/search?q=rust+lang"
    );
    assert!(response.text().await.unwrap().contains("Redirecting"));
    assert_eq!(searxng.engine_hits("alpha"), 0);
}

#[tokio::test]
async fn answers_403_html_when_json_is_disabled() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_mode(SearxngMode::JsonDisabled);

    let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert_eq!(response.status(), 403);
    assert!(response.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("<title>403 Forbidden</title>"));
    assert_eq!(get(&searxng, &[("q", "rust")]).await.status(), 200);
}

#[tokio::test]
async fn rejects_a_missing_query_and_invalid_parameters_with_400() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    let cases: [(&[(&str, &str)], &str); 6] = [
        (&[("format", "json")], "No query"),
        (&[("q", ""), ("format", "json")], "No query"),
        (
            &[("q", "rust"), ("format", "json"), ("pageno", "0")],
            "Invalid value \"0\" for parameter pageno",
        ),
        (
            &[("q", "rust"), ("format", "json"), ("safesearch", "3")],
            "Invalid value \"3\" for parameter safesearch",
        ),
        (
            &[("q", "rust"), ("format", "json"), ("time_range", "decade")],
            "Invalid value \"decade\" for parameter time_range",
        ),
        (
            &[("q", "rust"), ("format", "json"), ("language", "English")],
            "Invalid value \"English\" for parameter language",
        ),
    ];

    for (params, message) in cases {
        let response = get(&searxng, params).await;
        assert_eq!(response.status(), 400, "{params:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body, json!({ "error": message }));
    }
    assert_eq!(searxng.engine_hits("alpha"), 0);
}

#[tokio::test]
async fn records_the_parameters_of_get_and_post_searches_in_order() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();

    get(
        &searxng,
        &[("q", "Rust"), ("format", "json"), ("locale", "en")],
    )
    .await;
    client()
        .post(format!(
            "{}/search?format=json&q=ignored",
            searxng.base_url()
        ))
        .form(&[("q", "posted query"), ("pageno", "2")])
        .send()
        .await
        .unwrap();

    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    };
    assert_eq!(
        searxng.requests(),
        [
            pairs(&[("q", "Rust"), ("format", "json"), ("locale", "en")]),
            pairs(&[("q", "posted query"), ("pageno", "2"), ("format", "json")]),
        ]
    );
    assert_eq!(
        searxng.last_request(),
        Some(pairs(&[
            ("q", "posted query"),
            ("pageno", "2"),
            ("format", "json")
        ]))
    );
    assert_eq!(searxng.hits(), 2);
}

#[tokio::test]
async fn fails_the_next_searches_then_answers_normally() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_mode(SearxngMode::FailTimes {
        count: 2,
        status: 500,
    });
    let params = [("q", "rust"), ("format", "json")];

    let first = get(&searxng, &params).await;
    assert_eq!(first.status(), 500);
    assert_eq!(
        first.json::<Value>().await.unwrap(),
        json!({"error": "search error"})
    );
    assert_eq!(get(&searxng, &params).await.status(), 500);
    assert_eq!(get(&searxng, &params).await.status(), 200);
    assert_eq!(searxng.hits(), 3);
}

#[tokio::test]
async fn answers_each_status_as_the_part_of_the_stack_that_would_send_it() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    let params = [("q", "rust"), ("format", "json")];

    searxng.set_mode(SearxngMode::Status(429));
    let limited = get(&searxng, &params).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.text().await.unwrap(), "Too Many Requests");

    searxng.set_mode(SearxngMode::Status(502));
    let bad_gateway = get(&searxng, &params).await;
    assert_eq!(bad_gateway.status(), 502);
    assert!(bad_gateway
        .text()
        .await
        .unwrap()
        .contains("502 Bad Gateway"));
}

#[tokio::test]
async fn answers_garbage_with_status_200() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_mode(SearxngMode::Garbage);

    let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert_eq!(response.status(), 200);
    let body = response.bytes().await.unwrap();
    assert!(serde_json::from_slice::<Value>(&body).is_err());
}

#[tokio::test]
async fn streams_valid_json_over_eight_mib_without_a_length_when_huge() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_mode(SearxngMode::Huge);

    let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.content_length(), None);
    let body = response.bytes().await.unwrap();
    assert!(body.len() > 8 * 1024 * 1024);
    let parsed: Value = serde_json::from_slice(&body).unwrap();
    assert!(!parsed["results"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn sends_less_than_the_declared_length_when_truncated() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_mode(SearxngMode::Truncated);

    let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert_eq!(response.status(), 200);
    let declared = usize::try_from(response.content_length().unwrap()).unwrap();
    let mut response = response;
    let mut received = 0;
    let error = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received += chunk.len(),
            Ok(None) => panic!("the body ended cleanly after {received} bytes"),
            Err(error) => break error,
        }
    };
    assert!(error.is_body() || error.is_decode(), "{error:?}");
    assert!(
        received > 0 && received < declared,
        "{received} of {declared}"
    );
}

#[tokio::test]
async fn answers_normally_after_the_delay() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    let delay = Duration::from_millis(150);
    searxng.set_mode(SearxngMode::Delay(delay));
    let started = Instant::now();

    let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

    assert!(started.elapsed() >= delay);
    assert_eq!(engines_in_results(&body), ["alpha"]);
}

#[tokio::test]
async fn closes_a_hanging_request_when_dropped() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_mode(SearxngMode::Hang);
    let url = format!("{}/search?q=rust&format=json", searxng.base_url());
    let pending = tokio::spawn(async move { client().get(url).send().await?.bytes().await });

    searxng.wait_for_hits(1).await;
    drop(searxng);

    let error = pending.await.unwrap().unwrap_err();
    assert!(!error.is_timeout(), "{error:?}");
}

fn unresponsive(body: &Value) -> Value {
    body["unresponsive_engines"].clone()
}

#[tokio::test]
async fn a_captcha_spell_blocks_one_engine_for_its_searches_then_lifts() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
    searxng.set_engine_script(
        "beta",
        Script::new()
            .spell(Spell::failing(EngineBehaviour::Fails(EngineFailure::Captcha)).for_requests(2)),
    );
    let params = [("q", "rust"), ("format", "json"), ("locale", "en")];

    for _ in 0..2 {
        let body = search_json(&searxng, &params).await;
        assert_eq!(unresponsive(&body), json!([["beta", "CAPTCHA"]]));
        assert_eq!(engines_in_results(&body), ["alpha"]);
    }
    let recovered = search_json(&searxng, &params).await;

    assert_eq!(unresponsive(&recovered), json!([]));
    assert_eq!(engines_in_results(&recovered), ["alpha", "beta"]);
    assert_eq!(searxng.engine_hits("beta"), 3);
}

/// One search as the instance plans it, with no socket in between: how long the handler would wait before
/// answering, and the answer.
struct Planned {
    delay: Duration,
    status: StatusCode,
    body: Vec<u8>,
}

impl Planned {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

async fn plan(instance: &Mutex<Instance>, query_string: &str) -> Planned {
    let params = Params::from_request(Some(query_string), b"");
    let plan = lock(instance).plan_search(params, UiLanguage::English);
    let (delay, reply) = match plan {
        Plan::Now(reply) => (Duration::ZERO, reply),
        Plan::After(delay, reply) => (delay, reply),
        Plan::Never => panic!("the search was planned never to be answered"),
        Plan::Fault(fault) => panic!("the search was planned as the fault {}", fault.name()),
    };
    let response = reply.into_response();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Planned {
        delay,
        status,
        body,
    }
}

/// Installs a script the way [`SimulatedSearxng::set_engine_script`] does.
fn script_engine(instance: &Mutex<Instance>, engine: &str, mut script: Script<EngineBehaviour>) {
    script.arm();
    lock(instance).engine_mut(engine).script = Some(script);
}

/// Installs a script the way [`SimulatedSearxng::set_script`] does.
fn script_instance(instance: &Mutex<Instance>, mut script: Script<SearxngMode>) {
    script.arm();
    lock(instance).script = Some(script);
}

#[tokio::test]
async fn an_engine_scripted_slower_than_its_timeout_is_reported_as_timeout_after_it() {
    let instance = Mutex::new(Instance::new(&["alpha", "beta"]));
    script_engine(
        &instance,
        "alpha",
        Script::new().latency(Latency::Fixed(Duration::from_secs(60))),
    );
    script_engine(
        &instance,
        "beta",
        Script::new().latency(Latency::Fixed(Duration::from_millis(800))),
    );

    let planned = plan(&instance, "q=rust&format=json").await;

    assert_eq!(
        planned.delay, ENGINE_TIMEOUT,
        "the slowest engine is cut at its timeout"
    );
    assert_eq!(planned.status, StatusCode::OK);
    let body = planned.json();
    assert_eq!(unresponsive(&body), json!([["alpha", "timeout"]]));
    assert_eq!(engines_in_results(&body), ["beta"]);
}

#[tokio::test(start_paused = true)]
async fn an_instance_spell_fails_searches_for_its_window_then_answers() {
    let instance = Mutex::new(Instance::new(&["alpha"]));
    script_instance(
        &instance,
        Script::new()
            .spell(Spell::failing(SearxngMode::Status(503)).for_time(Duration::from_secs(30))),
    );
    let query = "q=rust&format=json";

    let first = plan(&instance, query).await.status;
    tokio::time::advance(Duration::from_secs(29)).await;
    let just_before = plan(&instance, query).await.status;
    tokio::time::advance(Duration::from_secs(1)).await;
    let after = plan(&instance, query).await.status;

    assert_eq!(
        [first, just_before, after].map(|status| status.as_u16()),
        [503, 503, 200]
    );
    assert_eq!(lock(&instance).hits, 3);
}

#[tokio::test]
async fn instance_latency_delays_answers_and_failures_alike() {
    let instance = Mutex::new(Instance::new(&["alpha"]));
    script_instance(
        &instance,
        Script::new()
            .latency(Latency::Fixed(Duration::from_millis(250)))
            .quota(1, SearxngMode::Status(429)),
    );
    let query = "q=rust&format=json";

    let answered = plan(&instance, query).await;
    let limited = plan(&instance, query).await;

    assert_eq!(
        (answered.status.as_u16(), answered.delay),
        (200, Duration::from_millis(250))
    );
    assert_eq!(
        (limited.status.as_u16(), limited.delay),
        (429, Duration::from_millis(250))
    );
    assert_eq!(limited.body, b"Too Many Requests");
}

#[tokio::test]
async fn reports_how_many_results_its_last_answer_held() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
    let params = [("q", "rust"), ("format", "json")];
    assert_eq!(searxng.last_result_count(), None);

    let found = search_json(&searxng, &params).await;
    assert_eq!(
        searxng.last_result_count(),
        Some(found["results"].as_array().unwrap().len())
    );
    assert_eq!(
        searxng.last_result_count(),
        Some(2 * DEFAULT_RESULTS_PER_ENGINE - 1)
    );

    searxng.set_engine("alpha", EngineBehaviour::Empty);
    searxng.set_engine("beta", EngineBehaviour::Empty);
    search_json(&searxng, &params).await;
    assert_eq!(searxng.last_result_count(), Some(0));

    searxng.set_mode(SearxngMode::Status(500));
    assert_eq!(get(&searxng, &params).await.status(), 500);
    assert_eq!(searxng.last_result_count(), None);
}

#[tokio::test]
async fn clearing_scripts_restores_the_scripted_behaviour_set_directly() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    searxng.set_engine("alpha", EngineBehaviour::Empty);
    searxng.set_engine_script(
        "alpha",
        Script::new().spell(Spell::failing(EngineBehaviour::Ok { results: 2 })),
    );
    let params = [("q", "rust"), ("format", "json")];

    let scripted = search_json(&searxng, &params).await;
    searxng.clear_scripts();
    let plain = search_json(&searxng, &params).await;

    assert_eq!(scripted["results"].as_array().unwrap().len(), 2);
    assert_eq!(plain["results"], json!([]));
}

#[test]
#[should_panic(expected = "no engine named \"nope\"")]
fn refuses_to_script_an_engine_it_does_not_have() {
    let instance = Mutex::new(Instance::new(&["alpha"]));
    lock(&instance).engine_mut("nope");
}

#[tokio::test]
async fn a_capacity_limit_serves_one_search_per_worker_at_a_time() {
    let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
    let capacity = Capacity {
        workers: 1,
        service_time: Duration::from_secs(1),
    };
    assert!((capacity.searches_per_second() - 1.0).abs() < 1e-9);
    searxng.set_capacity(Some(capacity));
    let first = tokio::spawn(search_json_owned(searxng.base_url(), "first".into()));
    let second = tokio::spawn(search_json_owned(searxng.base_url(), "second".into()));
    wait_until(|| searxng.in_flight() == 2).await;
    let mut answered = futures::future::select_all([first, second]).await;
    assert!(answered.0.unwrap()["results"].is_array());
    assert_eq!(
        searxng.in_flight(),
        1,
        "the other search still waits for the one worker"
    );
    let rest = answered.2.pop().unwrap().await.unwrap();
    assert!(rest["results"].is_array());
    assert_eq!(searxng.hits(), 2);

    searxng.set_capacity(None);
    let hold = Capacity {
        workers: 2,
        service_time: Duration::from_secs(600),
    };
    searxng.set_capacity(Some(hold));
    let held: Vec<_> = (0..3)
        .map(|i| tokio::spawn(search_json_owned(searxng.base_url(), format!("held {i}"))))
        .collect();
    wait_until(|| searxng.in_flight() == 3).await;
    assert_eq!(
        searxng.hits(),
        2,
        "two searches occupy both workers; the third is not planned yet"
    );
    for task in held {
        task.abort();
    }
}

async fn search_json_owned(base: String, query: String) -> Value {
    client()
        .get(format!("{base}/search"))
        .query(&[("q", query.as_str()), ("format", "json")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn wait_until(condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "condition never held");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn scores_each_search_against_what_its_engines_were_doing_then() {
    let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
        .await
        .unwrap();
    searxng.set_engine_script(
        "beta",
        Script::new().spell(Spell::failing(EngineBehaviour::Fails(
            EngineFailure::Captcha,
        ))),
    );
    // Every engine, beta blocked: one call into a blocked engine.
    search_json(&searxng, &[("q", "x"), ("format", "json")]).await;
    // beta left out while blocked: no healthy engine excluded.
    search_json(
        &searxng,
        &[("q", "x"), ("format", "json"), ("engines", "alpha,gamma")],
    )
    .await;
    // gamma left out while healthy.
    search_json(
        &searxng,
        &[("q", "x"), ("format", "json"), ("engines", "alpha")],
    )
    .await;
    // A client's probe of the blocked beta: a call into a blocked engine, but no search leaving
    // out the healthy alpha and gamma.
    let probe = client()
        .get(format!("{}/search", searxng.base_url()))
        .query(&[("q", "x"), ("format", "json"), ("engines", "beta")])
        .header(PROBE_HEADER, "beta")
        .send()
        .await
        .unwrap();
    assert_eq!(probe.status(), 200);
    assert_eq!(
        searxng.engine_observations(),
        EngineObservations {
            calls_into_blocked: 2,
            searches_excluding_healthy: 1,
            explicit_searches: 2,
            probes: 1,
        }
    );
}
