//! `scripts/stack.sh`, the one command that runs the real stack: started as a user would (offline, with its
//! engines pointed at the loopback fake), it answers a search through the gateway in front of two real SearXNG
//! instances, and SIGINT (Ctrl-C) stops everything it started.

use crate::support::external::needs;
use std::path::Path;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::engine_upstream::EngineUpstream;
use crate::support::ports::unused_loopback_port;
use crate::support::process::BIN;
use crate::support::wait;

fn engines_yaml(upstream_port: u16) -> String {
    ["alpha", "beta"]
        .iter()
        .map(|name| {
            format!(
                "- name: {name}
  engine: json_engine
  shortcut: {short}
  categories: [general]
  enable_http: true
  timeout: 3.0
  search_url: \"http://127.0.0.1:{upstream_port}/{name}/search?q={{query}}\"
  results_query: items
  url_query: link
  title_query: name
  content_query: snippet
",
                short = &name[..2],
            )
        })
        .collect()
}

async fn refuses_connections(url: &str) -> bool {
    reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .send()
        .await
        .is_err_and(|err| err.is_connect())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stack_script_serves_a_search_through_a_pool_and_stops_on_sigint() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let engines = dir.path().join("engines.yml");
    std::fs::write(&engines, engines_yaml(upstream.port())).expect("write the engines file");
    let listen = format!("127.0.0.1:{}", unused_loopback_port());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/stack.sh");
    let venv = crate::support::external::searxng_venv();
    let mut child = Command::new("bash")
        .arg(&script)
        .args(["--instances", "2", "--listen", &listen, "--gateway", BIN])
        .arg("--engines-from")
        .arg(&engines)
        .env("SEARXNG_VENV", venv)
        .env("LOG_LEVEL", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bash runs scripts/stack.sh");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            eprintln!("stack.sh: {line}");
        }
    });

    let mut searxng_urls = Vec::new();
    let query_line = wait::guarded("stack.sh to print the URL to query", async {
        while let Ok(Some(line)) = stdout.next_line().await {
            eprintln!("stack.sh: {line}");
            if let Some(rest) = line.strip_prefix("stack: SearXNG ") {
                if let Some(url) = rest.split_whitespace().find(|w| w.starts_with("http://")) {
                    searxng_urls.push(url.to_owned());
                }
            }
            if line.contains("query: curl") {
                return line;
            }
        }
        panic!("stack.sh ended its output without printing the URL to query");
    })
    .await;
    assert!(
        query_line.contains(&format!("http://{listen}/search")),
        "{query_line}"
    );
    assert_eq!(
        searxng_urls.len(),
        2,
        "two SearXNG instances: {searxng_urls:?}"
    );

    let reply: serde_json::Value = reqwest::get(format!(
        "http://{listen}/search?q=through+the+stack&format=json"
    ))
    .await
    .expect("the gateway answers")
    .json()
    .await
    .expect("JSON");
    let results = reply["results"].as_array().expect("results");
    assert!(!results.is_empty(), "{reply}");
    assert!(
        upstream.hits("alpha") >= 1,
        "the search reached the engines"
    );
    let status: serde_json::Value = reqwest::get(format!("http://{listen}/status"))
        .await
        .expect("the gateway answers /status")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        status["searxng"]["instances"].as_array().map(Vec::len),
        Some(2),
        "the gateway runs in front of both instances: {status}"
    );

    let pid = child.id().expect("the script is running");
    let sent = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .await
        .expect("run kill");
    assert!(sent.success());
    let exit = wait::guarded("stack.sh to stop after SIGINT", child.wait())
        .await
        .expect("wait for stack.sh");
    assert!(exit.success(), "stack.sh exits 0 after Ctrl-C: {exit}");
    assert!(
        refuses_connections(&format!("http://{listen}")).await,
        "the gateway stopped"
    );
    for url in &searxng_urls {
        assert!(refuses_connections(url).await, "SearXNG at {url} stopped");
    }
}
