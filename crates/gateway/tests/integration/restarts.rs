//! State that survives a restart without Redis (`STATE_DIR`), with the real binary: killed with
//! SIGKILL mid-run and started again on the same directory, it still knows its parked quota, its
//! open engine breaker and each client's premium calls of the last 24 h; a truncated state file is
//! a clean start with one warning; SIGTERM writes the state once more on the way out; a key
//! restored open leaves its one-key provider open as a whole from the first scrape.

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use simulator::premium::ProviderBehaviour;
use simulator::premium::SimError;
use simulator::searxng::{EngineBehaviour, EngineFailure};
use simulator::Provider::Brave;

use crate::support::gateway::metric_value;
use crate::support::process::GatewayProcess;
use crate::support::stack::SimStack;
use crate::support::wait;

const SPENDER: &str = "restart-spender-key-0123456789";
const WATCHER: &str = "restart-watcher-key-0123456789";
const ADMIN: &str = "restart-admin-token-0123456789";

/// The simulators, and the gateway's environment in front of them with `STATE_DIR=dir`: client
/// `spender` may make 3 premium calls a day, `watcher` is unlimited; every miss calls Brave
/// beside SearXNG; a tripped engine stays open for 10 minutes.
async fn setup(dir: &Path) -> (SimStack, tempfile::NamedTempFile, Vec<(String, String)>) {
    let s = SimStack::start(&[Brave], &[]).await;
    let mut keys = tempfile::NamedTempFile::new().expect("temp file");
    for (name, key, limits) in [("spender", SPENDER, ":0:3"), ("watcher", WATCHER, "")] {
        let line = searxng_gateway::clients::keys_file::hash_line(name, key).expect("valid");
        writeln!(keys, "{line}{limits}").expect("write the keys file");
    }
    let mut env = s.env();
    for (k, v) in [
        ("STATE_DIR", dir.to_str().expect("utf-8 path")),
        ("API_KEYS_FILE", keys.path().to_str().expect("utf-8 path")),
        ("ADMIN_TOKEN", ADMIN),
        ("T1_PREMIUM_COUNT", "1"),
        ("BREAKER_OPEN_SECONDS", "600"),
        ("CACHE_SIZE", "0"),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    (s, keys, env)
}

fn start(env: &[(String, String)]) -> GatewayProcess {
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    GatewayProcess::start(&vars)
}

async fn search(url: &str, key: &str, query: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{url}/search"))
        .query(&[("q", query), ("format", "json")])
        .bearer_auth(key)
        .send()
        .await
        .expect("the gateway answers")
        .status()
        .as_u16()
}

async fn admin_status(url: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{url}/admin/status"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("the gateway answers")
        .json()
        .await
        .expect("JSON")
}

/// The breaker of `namespace` whose name starts with `prefix`, from `/admin/status`'s `/status`.
fn breaker<'a>(status: &'a Value, namespace: &str, prefix: &str) -> Option<&'a Value> {
    status["status"]["breakers"].as_array()?.iter().find(|b| {
        b["namespace"] == namespace && b["name"].as_str().is_some_and(|n| n.starts_with(prefix))
    })
}

fn spender_calls(status: &Value) -> u64 {
    status["clients"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["client"] == "spender"))
        .and_then(|c| c["premium_calls_last_24h"].as_u64())
        .unwrap_or(0)
}

fn state_file(dir: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(dir.join("state.json")).ok()?).ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_and_started_again_it_keeps_parked_quotas_open_breakers_and_budgets() {
    let dir = tempfile::tempdir().expect("a state directory");
    let (s, _keys, env) = setup(dir.path()).await;
    let mut first = start(&env);
    let url = first.url().await;

    for query in ["spend one", "spend two"] {
        assert_eq!(search(&url, SPENDER, query).await, 200);
    }
    assert_eq!(s.provider(Brave).calls(), 2);
    // Brave's monthly quota is spent, and engine alpha is behind a CAPTCHA.
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::Quota));
    s.searxng
        .set_engine("alpha", EngineBehaviour::Fails(EngineFailure::Captcha));
    assert_eq!(search(&url, WATCHER, "trip them").await, 200);
    let before = admin_status(&url).await;
    assert_eq!(
        breaker(&before, "key", "brave:").map(|b| &b["reason"]),
        Some(&"quota".into())
    );
    assert_eq!(
        breaker(&before, "engine", "alpha").map(|b| &b["reason"]),
        Some(&"captcha".into())
    );
    assert_eq!(spender_calls(&before), 2);

    // Written every few seconds: wait for a state file that holds all three, then kill -9.
    wait::until(
        "the state file to hold the breakers and the spend",
        || async {
            let Some(state) = state_file(dir.path()) else {
                return false;
            };
            let reasons: Vec<&str> = state["breakers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["reason"].as_str())
                .collect();
            let spender = state["clients"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["owner"] == "spender");
            reasons.contains(&"quota") && reasons.contains(&"captcha") && spender
        },
    )
    .await;
    first.kill().await;

    // The provider is healthy again, but the gateway cannot know: its quota stays parked.
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::results(3, "https://brave.example/"));
    let mut second = start(&env);
    let url = second.url().await;
    second.wait_for_line("STATE_DIR: state restored").await;
    let after = admin_status(&url).await;
    let parked = breaker(&after, "key", "brave:").expect("Brave's key breaker is back");
    assert_eq!(
        (&parked["state"], &parked["reason"]),
        (&"open".into(), &"quota".into()),
        "{parked}"
    );
    let engine = breaker(&after, "engine", "alpha").expect("alpha's breaker is back");
    assert_eq!(
        (&engine["state"], &engine["reason"]),
        (&"open".into(), &"captcha".into()),
        "{engine}"
    );
    assert_eq!(spender_calls(&after), 2, "the client's last 24 h are back");
    let calls = s.provider(Brave).calls();
    assert_eq!(search(&url, SPENDER, "after the restart").await, 200);
    assert_eq!(
        s.provider(Brave).calls(),
        calls,
        "the parked quota is not called again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_state_file_is_a_clean_start_with_a_warning_and_sigterm_writes_the_state() {
    let dir = tempfile::tempdir().expect("a state directory");
    let (s, _keys, env) = setup(dir.path()).await;
    std::fs::write(
        dir.path().join("state.json"),
        br#"{"format":"searxng-gateway-state","version":1,"written_at_ms":17"#,
    )
    .expect("write a truncated state file");
    let mut gateway = start(&env);
    let url = gateway.url().await;
    let warning = gateway.wait_for_line("state file ignored").await;
    assert!(warning.contains("WARN"), "{warning}");
    let status = admin_status(&url).await;
    assert!(breaker(&status, "engine", "").is_none(), "{status}");

    s.searxng
        .set_engine("beta", EngineBehaviour::Fails(EngineFailure::Captcha));
    assert_eq!(search(&url, WATCHER, "trip beta").await, 200);
    // SIGTERM at once, before the periodic write: the state is written on the way out.
    std::fs::remove_file(dir.path().join("state.json")).ok();
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let state = state_file(dir.path()).expect("a state file written at shutdown");
    assert!(
        state["breakers"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|b| b["name"] == "beta" && b["reason"] == "captcha"),
        "{state}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_restored_open_shows_its_one_key_provider_open_on_metrics_before_any_search() {
    let dir = tempfile::tempdir().expect("a state directory");
    let (s, _keys, env) = setup(dir.path()).await;
    // The same key behind the stack's own gateway: the same fingerprint, so the same breaker name.
    let key = s.gateway.key_name("brave").await;
    let unix_ms = |t: SystemTime| {
        let since = t.duration_since(UNIX_EPOCH).expect("after 1970");
        u64::try_from(since.as_millis()).expect("fits")
    };
    let now = SystemTime::now();
    let state = serde_json::json!({
        "format": "searxng-gateway-state",
        "version": 1,
        "written_at_ms": unix_ms(now),
        "breakers": [{
            "board": "key",
            "name": key,
            "until_ms": unix_ms(now + Duration::from_secs(3_600)),
            "reason": "quota",
            "paused": true,
        }],
        "spend": [],
        "clients": [],
    });
    std::fs::write(dir.path().join("state.json"), state.to_string()).expect("write the state");

    let mut gateway = start(&env);
    let url = gateway.url().await;
    gateway.wait_for_line("STATE_DIR: state restored").await;
    let metrics = reqwest::get(format!("{url}/metrics"))
        .await
        .expect("the gateway answers")
        .text()
        .await
        .expect("text");

    let state = |kind, engine: &str| {
        metric_value(
            &metrics,
            "searxng_gateway_circuit_breaker_state",
            &[("engine", engine), ("kind", kind)],
        )
    };
    assert_eq!(state("key", &key), 2.0, "the key is back open");
    assert_eq!(
        state("provider", "brave"),
        2.0,
        "none of Brave's keys is usable: the provider reads open as a whole"
    );
    assert_eq!(s.provider(Brave).calls(), 0, "before any search");
}
