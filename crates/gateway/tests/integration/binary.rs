//! The `searxng-gateway` binary itself: `--help` and `--config-table`, configuration errors (exit 2, one
//! line naming the variable, nothing bound), `LOG_LEVEL` honoured, keys never printed, SIGTERM handled —
//! and the live exposition accepted by `promtool check metrics`.

use crate::support::external::needs;
use std::path::Path;
use std::process::Stdio;

use simulator::premium::ProviderBehaviour;
use simulator::searxng::{EngineBehaviour, EngineFailure, SimulatedSearxng};
use simulator::Provider::Brave;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::support::ports::unused_loopback_port;
use crate::support::process::{self, GatewayProcess};
use crate::support::stack::{SimStack, ENGINES};
use crate::support::wait;

/// `(variable, default)` of every row of `--config-table`.
fn config_table_rows(table: &str) -> Vec<(String, String)> {
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            (
                cells[1].trim_matches('`').to_owned(),
                cells[2].trim_matches('`').to_owned(),
            )
        })
        .collect()
}

/// Waits until a gateway started on a port the test chose (its start line not read) serves
/// `/healthz` at `url`.
async fn serving_healthz(client: &reqwest::Client, url: &str) {
    let healthz = format!("{url}/healthz");
    let healthz = healthz.as_str();
    wait::until(
        "the gateway to serve /healthz (if it exited, the probed port was taken meanwhile)",
        || async move {
            client
                .get(healthz)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        },
    )
    .await;
}

fn stdout_of(args: &[&str]) -> String {
    let out = process::command(&[]).args(args).output().expect("runs");
    assert!(out.status.success(), "{args:?}: {}", out.status);
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn help_lists_every_variable_of_the_config_table_with_its_default() {
    let rows = config_table_rows(&stdout_of(&["--config-table"]));
    assert!(
        rows.len() > 20,
        "--config-table lists the variables: {rows:?}"
    );
    let help = stdout_of(&["--help"]);
    for (name, default) in rows {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing from --help:\n{help}"));
        assert!(
            line.contains(&default),
            "{name} without {default:?}: {line}"
        );
    }
}

#[test]
fn the_book_documents_exactly_the_config_table_the_binary_prints() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/configuration.md"),
    )
    .expect("read docs/src/configuration.md");
    let documented = page
        .split_once("<!-- config-table:start -->")
        .and_then(|(_, rest)| rest.split_once("<!-- config-table:end -->"))
        .map(|(table, _)| table.trim().to_owned())
        .expect("docs/src/configuration.md has the config-table markers");
    assert_eq!(documented, stdout_of(&["--config-table"]).trim());
}

#[test]
fn a_bad_value_stops_the_process_with_exit_code_2_naming_the_variable() {
    for (name, value) in [
        ("CACHE_SIZE", "lots"),
        ("FALLBACK_PROVIDERS", "brave,google"),
        ("LOG_LEVEL", "chatty"),
        ("METRICS_PATH", "/healthz"),
        ("FALLBACK_TIMEOUT_SECONDS", "-3"),
        ("TOKENIZER_ENCODING", "p50k_base"),
    ] {
        let out = process::command(&[
            (name, value),
            ("LISTEN_ADDR", "127.0.0.1:0"),
            ("BRAVE_API_KEY", "very-secret-key"),
        ])
        .output()
        .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{name}={value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(name), "{stderr}");
        assert!(!stderr.contains("very-secret-key"));
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}

/// SearXNG's search URL with a query (copied from a browser's address bar) stops start-up naming the variable
/// and the base URL to set instead.
#[test]
fn a_searxng_url_with_a_query_stops_start_up_naming_the_base_url_to_set() {
    let out = process::command(&[
        (
            "SEARXNG_BACKEND_URL",
            "http://127.0.0.1:8888/search?q=hello&format=json",
        ),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ])
    .output()
    .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("SEARXNG_BACKEND_URL"), "{stderr}");
    assert!(
        stderr.contains("give SearXNG's base URL instead, http://127.0.0.1:8888 "),
        "the fix is named: {stderr}"
    );
}

/// `SEARXNG_BACKEND_URL=…/search` (the search URL where the base belongs): the gateway starts on the base URL,
/// warns once naming the variable and both URLs, and searches reach SearXNG's `/search` — not `/search/search`,
/// a 404 that made every search fail.
#[tokio::test(flavor = "multi_thread")]
async fn a_searxng_search_url_is_corrected_to_the_base_with_one_warning() {
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulator");
    let base = searxng.base_url();
    let given = format!("{}/search", base.trim_end_matches('/'));
    let mut gateway = GatewayProcess::start(&[
        ("SEARXNG_BACKEND_URL", given.as_str()),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ]);
    let url = gateway.url().await;
    let reply = reqwest::get(format!("{url}/search?q=corrected&format=json"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 200, "SearXNG answers at the base URL");
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;
    let warnings: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("SEARXNG_BACKEND_URL"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning:\n{output}");
    assert!(
        warnings[0].contains(&given) && warnings[0].contains("base URL"),
        "it names the URL given and the fix: {}",
        warnings[0]
    );
}

/// A SearXNG that answers an unexpected status (a wrong path prefix: its 404): the log line of the failed search
/// says `http_status 404`, not `http_status` alone.
#[tokio::test(flavor = "multi_thread")]
async fn an_http_status_failure_is_logged_with_its_status() {
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulator");
    let wrong_prefix = format!("{}/not-searxng", searxng.base_url().trim_end_matches('/'));
    let mut gateway = GatewayProcess::start(&[
        ("SEARXNG_BACKEND_URL", wrong_prefix.as_str()),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ]);
    let url = gateway.url().await;
    let reply = reqwest::get(format!("{url}/search?q=wrong+prefix&format=json"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 502);
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;
    let failed = output
        .lines()
        .find(|l| l.contains("every upstream failed"))
        .unwrap_or_else(|| panic!("the failed search is logged:\n{output}"));
    assert!(failed.contains("searxng: http_status 404"), "{failed}");
}

/// A simulated SearXNG whose engines all fail, so every search goes to Brave, and a Brave fake that
/// expects another key than `key`: each search makes the gateway log a Brave `auth` failure.
async fn brave_refusing(key: &str) -> (SimStack, Vec<(String, String)>) {
    let s = SimStack::start(&[Brave], &[]).await;
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::results(2, "https://b.example/"));
    for engine in ENGINES {
        s.searxng
            .set_engine(engine, EngineBehaviour::Fails(EngineFailure::Captcha));
    }
    let env = vec![
        ("SEARXNG_BACKEND_URL".to_owned(), s.searxng.base_url()),
        ("BRAVE_BASE_URL".to_owned(), s.provider(Brave).base_url()),
        ("BRAVE_API_KEY".to_owned(), key.to_owned()),
    ];
    (s, env)
}

/// A simulated SearXNG with one engine, and the gateway in front of it on a free port with `extra`
/// variables besides.
async fn gateway_before_alpha(extra: &[(&str, &str)]) -> (SimulatedSearxng, GatewayProcess) {
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulator");
    let base_url = searxng.base_url();
    let mut vars = vec![
        ("SEARXNG_BACKEND_URL", base_url.as_str()),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ];
    vars.extend_from_slice(extra);
    let gateway = GatewayProcess::start(&vars);
    (searxng, gateway)
}

fn borrowed(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_logging_names_the_failure_class_but_never_the_key() {
    let secret = "brave-key-that-must-not-leak";
    let (_stack, env) = brave_refusing(secret).await;
    let mut vars = borrowed(&env);
    vars.extend([("LOG_LEVEL", "trace"), ("LISTEN_ADDR", "127.0.0.1:0")]);
    let mut gateway = GatewayProcess::start(&vars);
    let url = gateway.url().await;

    let reply = reqwest::get(format!("{url}/search?q=logged"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 502, "Brave rejects the unknown key");
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;

    assert!(
        output.contains("auth"),
        "the failure class is logged:\n{output}"
    );
    assert!(!output.contains(secret), "the key never appears:\n{output}");
}

/// Proxy variables in the gateway's environment (meant for something else in its container) are
/// not used for upstream calls: SearXNG and Brave are reached directly, although every proxy
/// variable points at a port where nothing listens.
#[tokio::test(flavor = "multi_thread")]
async fn proxy_variables_in_the_environment_do_not_divert_upstream_calls() {
    let (stack, env) = brave_refusing(simulator::premium::SIM_KEY).await;
    let nowhere = format!("http://127.0.0.1:{}", unused_loopback_port());
    let mut vars = borrowed(&env);
    vars.push(("LISTEN_ADDR", "127.0.0.1:0"));
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        vars.push((name, nowhere.as_str()));
    }
    let mut gateway = GatewayProcess::start(&vars);
    let url = gateway.url().await;

    let reply = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .get(format!("{url}/search?q=direct&format=json"))
        .send()
        .await
        .expect("answer");
    assert_eq!(reply.status(), 200, "Brave answered through no proxy");
    assert!(
        stack.provider(Brave).calls() >= 1,
        "Brave was called directly"
    );
    assert!(
        stack.searxng.hits() >= 1,
        "SearXNG was called directly before the fallback"
    );
    assert_eq!(gateway.terminate().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_level_prints_warnings_and_suppresses_info_lines() {
    let (_stack, env) = brave_refusing("another-key").await;
    // At warn the start line (info) is not printed, so the test chooses the port itself.
    let listen = format!("127.0.0.1:{}", unused_loopback_port());
    let mut vars = borrowed(&env);
    vars.extend([("LOG_LEVEL", "warn"), ("LISTEN_ADDR", listen.as_str())]);
    let mut gateway = GatewayProcess::start(&vars);
    let url = format!("http://{listen}");
    let client = reqwest::Client::new();
    serving_healthz(&client, &url).await;

    let reply = client
        .get(format!("{url}/search?q=quiet"))
        .send()
        .await
        .expect("answer");
    assert_eq!(reply.status(), 502, "Brave rejects the unknown key");
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;

    assert!(
        output.contains("provider call failed"),
        "the warning about Brave is printed:\n{output}"
    );
    for info in ["listening", "shutdown requested", "stopped"] {
        assert!(
            !output.contains(info),
            "the info line {info:?} is suppressed at warn:\n{output}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_gateway_cleanly() {
    let (_searxng, mut gateway) = gateway_before_alpha(&[]).await;
    let url = gateway.url().await;
    let reply = reqwest::get(format!("{url}/healthz"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 200);

    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;
    assert!(output.contains("stopped"), "{output}");
}

/// Keyless mode: a compose file that lists providers and asks for a T1 call before any key is
/// added starts, warns once naming the variable, and runs on SearXNG alone; `/status` shows the
/// value in effect.
#[tokio::test(flavor = "multi_thread")]
async fn a_t1_count_beyond_the_keys_given_starts_keyless_with_one_warning() {
    let (_searxng, mut gateway) = gateway_before_alpha(&[
        ("FALLBACK_PROVIDERS", "brave,exa"),
        ("T1_PREMIUM_COUNT", "1"),
    ])
    .await;
    let url = gateway.url().await;
    let status: serde_json::Value = reqwest::get(format!("{url}/status"))
        .await
        .expect("answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        status["t1_premium_count"],
        serde_json::json!({"effective": 0, "configured": 1})
    );
    let reply = reqwest::get(format!("{url}/search?q=keyless"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 200, "SearXNG alone answers");
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;
    let warnings: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("T1_PREMIUM_COUNT"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning naming the variable:\n{output}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_live_exposition_passes_promtool_check_metrics() {
    needs!(Promtool);
    let s = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1")]).await;
    s.searxng.set_engine(
        "beta",
        EngineBehaviour::Fails(EngineFailure::TooManyRequests),
    );
    s.gateway.search(&[("q", "exposition")]).await;
    s.gateway.search(&[("q", "exposition")]).await;
    let text = s.gateway.metrics_text().await;

    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("promtool is installed (Debian package prometheus; scripts/test.sh installs it)");
    let mut stdin = promtool.stdin.take().expect("stdin");
    stdin
        .write_all(text.as_bytes())
        .await
        .expect("write exposition");
    drop(stdin);
    let out = wait::guarded("promtool check metrics", promtool.wait_with_output())
        .await
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for family in [
        "searxng_gateway_requests_total",
        "searxng_gateway_request_duration_seconds",
        "searxng_gateway_results_count",
        "searxng_gateway_engines_count",
        "searxng_gateway_cache_size",
        "searxng_gateway_retry_attempts_total",
        "searxng_gateway_engine_results_total",
        "searxng_gateway_engine_unresponsive_total",
        "searxng_gateway_engine_status",
        "searxng_gateway_provider_calls_total",
        "searxng_gateway_brave_rate_limit_remaining",
        "searxng_gateway_circuit_breaker_state",
        "searxng_gateway_circuit_breaker_trips_total",
    ] {
        assert!(text.contains(&format!("\n{family}")), "{family} is exposed");
    }
}

/// A stdout nobody reads (a log shipper that stopped) never holds up a search: lines wait in the
/// writer's queue (`LOG_QUEUE_LINES`), what does not fit is dropped and counted in
/// `log_lines_dropped_total`, and every search is still answered. Written straight to the pipe, the
/// gateway would block on the first full pipe buffer and these searches would hang.
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_stdout_drops_log_lines_and_counts_them_but_never_holds_up_a_search() {
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulator");
    let listen = format!("127.0.0.1:{}", unused_loopback_port());
    let base_url = searxng.base_url();
    let mut stalled = Command::from(process::command(&[
        ("SEARXNG_BACKEND_URL", base_url.as_str()),
        ("LISTEN_ADDR", listen.as_str()),
        ("LOG_LEVEL", "debug"),
        ("LOG_QUEUE_LINES", "8"),
    ]))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .kill_on_drop(true)
    .spawn()
    .expect("the gateway binary starts");
    // Held, never read: once the pipe's buffer (64 KiB) is full, every write to it would block.
    let _unread = stalled.stdout.take().expect("stdout is piped");
    let url = format!("http://{listen}");
    let client = reqwest::Client::new();
    serving_healthz(&client, &url).await;

    // Each miss logs several debug lines of a few hundred bytes: far more than the pipe holds.
    let searches = 400;
    let answered = wait::guarded("400 searches with a stalled stdout", async {
        let mut answered = 0;
        for n in 0..searches {
            let reply = client
                .get(format!("{url}/search?q=stalled+stdout+{n}&format=json"))
                .send()
                .await
                .expect("answer");
            answered += usize::from(reply.status() == 200);
        }
        answered
    })
    .await;
    assert_eq!(answered, searches, "every search is answered");

    let metrics = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("answer")
        .text()
        .await
        .expect("text");
    let dropped = crate::support::gateway::metric_value(
        &metrics,
        "searxng_gateway_log_lines_dropped_total",
        &[],
    );
    assert!(
        dropped > 0.0,
        "the lines that did not fit are counted:\n{metrics}"
    );
    stalled.start_kill().expect("kill the gateway");
}

/// `RUNTIME=thread-per-core`: each worker accepts on a listener of its own bound to the same
/// port, and the kernel spreads connections over them. Fresh connections, each one search, are
/// all answered; every worker has accepted some (`http_connections_accepted_total{worker}`); the
/// searches a worker took went to SearXNG and came back; SIGTERM stops every worker cleanly.
#[tokio::test(flavor = "multi_thread")]
async fn thread_per_core_serves_on_every_worker_and_stops_cleanly() {
    let (_searxng, mut gateway) =
        gateway_before_alpha(&[("RUNTIME", "thread-per-core"), ("WORKER_THREADS", "3")]).await;
    let url = gateway.url().await;
    let started = gateway.wait_for_line("searxng-gateway listening").await;
    assert!(started.contains("runtime=thread-per-core"), "{started}");
    assert!(started.contains("threads=3"), "{started}");
    assert!(started.contains("instances=1"), "{started}");

    // 60 connections over 3 listeners: the chance that one gets none is 3 × (2/3)^60 ≈ 10^-10.
    let connections = 60;
    for n in 0..connections {
        let fresh = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("client");
        let reply = fresh
            .get(format!("{url}/search?q=worker+{n}&format=json"))
            .send()
            .await
            .expect("answer");
        assert_eq!(reply.status(), 200);
        let body: serde_json::Value = reply.json().await.expect("JSON");
        assert!(
            !body["results"].as_array().expect("results").is_empty(),
            "{body}"
        );
    }
    let metrics = reqwest::get(format!("{url}/metrics"))
        .await
        .expect("answer")
        .text()
        .await
        .expect("text");
    let mut accepted = 0.0;
    for worker in ["0", "1", "2"] {
        let on_worker = crate::support::gateway::metric_value(
            &metrics,
            "searxng_gateway_http_connections_accepted_total",
            &[("worker", worker)],
        );
        assert!(on_worker > 0.0, "worker {worker} accepted none:\n{metrics}");
        accepted += on_worker;
    }
    assert!(accepted >= f64::from(connections), "{metrics}");

    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;
    assert!(output.contains("stopped"), "{output}");
}
