//! The `searxng-gateway` binary itself: `--help`, configuration errors (exit 2, one line naming
//! the variable, nothing bound), `LOG_LEVEL` honoured, keys never printed, SIGTERM handled — and
//! the live exposition accepted by `promtool check metrics`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use searxng_gateway::config::variables::VARIABLES;
use simulator::premium::ProviderBehaviour;
use simulator::searxng::{EngineBehaviour, EngineFailure, SimulatedSearxng};
use simulator::Provider::Brave;

use crate::support::stack::SimStack;

const BIN: &str = env!("CARGO_BIN_EXE_searxng-gateway");

fn gateway_command(vars: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear();
    if let Ok(path) = std::env::var("PATH") {
        cmd.env("PATH", path);
    }
    cmd.envs(vars.iter().copied());
    cmd
}

/// A running binary whose output lines are collected.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(vars: &[(&str, &str)]) -> Self {
        let mut child = gateway_command(vars)
            .env("LISTEN_ADDR", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary starts");
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (bounded) for a line containing `needle` and returns it.
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "no line with {needle:?}; output so far:\n{}",
            self.seen.join("\n")
        );
    }

    /// The `http://…` address from the "listening" line.
    fn url(&mut self) -> String {
        let line = self.wait_for("listening");
        let addr = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("listen="))
            .expect("listen=ADDR in the start line");
        format!("http://{addr}")
    }

    fn all_output(&mut self) -> String {
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("the gateway did not stop on SIGTERM");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn help_lists_every_variable_with_its_default_and_meaning() {
    let out = gateway_command(&[]).arg("--help").output().expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for v in VARIABLES {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(v.name))
            .unwrap_or_else(|| panic!("{} missing from --help", v.name));
        assert!(line.contains(v.default_shown()), "{line}");
    }
}

#[test]
fn a_bad_value_stops_the_process_with_exit_code_2_naming_the_variable() {
    for (name, value) in [
        ("CACHE_SIZE", "lots"),
        ("FALLBACK_PROVIDERS", "brave,google"),
        ("LOG_LEVEL", "chatty"),
        ("METRICS_PATH", "/healthz"),
        ("FALLBACK_TIMEOUT_SECONDS", "-3"),
    ] {
        let out = gateway_command(&[
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

#[tokio::test(flavor = "multi_thread")]
async fn log_level_is_honoured_and_keys_never_appear_in_logs() {
    let s = SimStack::start(&[Brave], &[]).await;
    let brave = s.provider(Brave);
    // A wrong key makes Brave fail loudly: the failure is logged, the key is not.
    let brave_url = brave.base_url();
    let searxng_url = s.searxng.base_url();
    brave.set_behaviour(ProviderBehaviour::results(2, "https://b.example/"));
    for engine in ["alpha", "beta", "gamma"] {
        s.searxng
            .set_engine(engine, EngineBehaviour::Fails(EngineFailure::Captcha));
    }

    let secret = "brave-key-that-must-not-leak";
    let common = [
        ("SEARXNG_BACKEND_URL", searxng_url.as_str()),
        ("BRAVE_BASE_URL", brave_url.as_str()),
        ("BRAVE_API_KEY", secret),
    ];
    let mut chatty = Running::start(&[&common[..], &[("LOG_LEVEL", "trace")]].concat());
    let url = chatty.url();
    let reply = reqwest::get(format!("{url}/search?q=logged"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 502, "Brave rejects the unknown key");
    chatty.wait_for("search");
    let trace_output = chatty.all_output();
    assert!(trace_output.contains("auth"), "the failure class is logged");
    assert!(
        !trace_output.contains(secret),
        "the key never appears:\n{trace_output}"
    );

    let mut quiet = Running::start(&[&common[..], &[("LOG_LEVEL", "warn")]].concat());
    // The start line is info: with warn it is not printed, so find the port another way.
    std::thread::sleep(Duration::from_millis(300));
    let quiet_output = quiet.all_output();
    assert!(
        !quiet_output.contains("listening"),
        "info lines are suppressed at warn"
    );
    assert_eq!(quiet.terminate().code(), Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_gateway_cleanly() {
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulator");
    let mut running = Running::start(&[("SEARXNG_BACKEND_URL", &searxng.base_url())]);
    let url = running.url();
    let reply = reqwest::get(format!("{url}/healthz"))
        .await
        .expect("answer");
    assert_eq!(reply.status(), 200);
    let status = running.terminate();
    assert_eq!(status.code(), Some(0));
    assert!(running.all_output().contains("stopped"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_live_exposition_passes_promtool_check_metrics() {
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
        .spawn()
        .expect("promtool is installed (Debian package prometheus; scripts/test.sh installs it)");
    promtool
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write exposition");
    let out = promtool.wait_with_output().expect("promtool runs");
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
