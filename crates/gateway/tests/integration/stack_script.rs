//! `scripts/stack.sh`, the one command that runs the real stack: started as a user would, offline with the engines
//! file the repository ships (`examples/offline-engines.yml`), it answers a search through the gateway in front of
//! real SearXNG instances, SIGINT (Ctrl-C) stops everything it started, and the logs it pointed at are still there
//! afterwards, in the directory it prints.

use crate::support::external::needs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::engine_upstream::EngineUpstream;
use crate::support::ports::unused_loopback_port;
use crate::support::process::BIN;
use crate::support::wait;

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn refuses_connections(url: &str) -> bool {
    reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .send()
        .await
        .is_err_and(|err| err.is_connect())
}

/// `scripts/stack.sh` running offline on the shipped engines file, with its state (its logs) under `state`.
struct Stack {
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
    /// The gateway's address.
    listen: String,
    /// Each SearXNG instance's URL, as printed.
    searxng_urls: Vec<String>,
    /// `XDG_STATE_HOME`, under which the script keeps its logs.
    state: PathBuf,
}

impl Stack {
    /// Starts the script with `instances` SearXNG instances and `extra` arguments, and waits until it prints
    /// the URL to query.
    async fn start(instances: u32, extra: &[String], state: &Path) -> Self {
        let listen = format!("127.0.0.1:{}", unused_loopback_port());
        // SIGINT at its default action, as in a terminal: a test run started in the background of a
        // shell without job control inherits SIGINT ignored, and a shell cannot trap a signal
        // ignored on entry (its Ctrl-C trap would never run).
        let mut child = Command::new("env")
            .args(["--default-signal=INT", "bash"])
            .arg(repo().join("scripts/stack.sh"))
            .args(["--instances", &instances.to_string(), "--listen", &listen])
            .args(["--gateway", BIN])
            .arg("--engines-from")
            .arg(repo().join("examples/offline-engines.yml"))
            .args(extra)
            .env("SEARXNG_VENV", crate::support::external::searxng_venv())
            .env("XDG_STATE_HOME", state)
            .env("LOG_LEVEL", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("env runs bash with scripts/stack.sh");
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
        Self {
            child,
            stdout,
            listen,
            searxng_urls,
            state: state.to_owned(),
        }
    }

    /// A search through the gateway, as JSON.
    async fn search(&self, query: &str) -> serde_json::Value {
        reqwest::get(format!(
            "http://{}/search?q={query}&format=json",
            self.listen
        ))
        .await
        .expect("the gateway answers")
        .json()
        .await
        .expect("JSON")
    }

    /// Ctrl-C: waits for the script to exit 0 and for everything it started to stop, and returns the directory
    /// it said it kept the logs in.
    async fn interrupt(mut self) -> PathBuf {
        let pid = self.child.id().expect("the script is running");
        let sent = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .await
            .expect("run kill");
        assert!(sent.success());
        let exit = match tokio::time::timeout(wait::HANG_GUARD, self.child.wait()).await {
            Ok(exit) => exit.expect("wait for stack.sh"),
            Err(_) => panic!(
                "stack.sh did not stop within {:?} after SIGINT\n{}",
                wait::HANG_GUARD,
                self.what_is_still_running().await
            ),
        };
        assert!(exit.success(), "stack.sh exits 0 after Ctrl-C: {exit}");
        assert!(
            refuses_connections(&format!("http://{}", self.listen)).await,
            "the gateway stopped"
        );
        for url in &self.searxng_urls {
            assert!(refuses_connections(url).await, "SearXNG at {url} stopped");
        }
        let mut kept = None;
        while let Ok(Some(line)) = self.stdout.next_line().await {
            eprintln!("stack.sh: {line}");
            if let Some((_, dir)) = line.split_once("logs kept in ") {
                kept = Some(PathBuf::from(dir.trim()));
            }
        }
        kept.expect("stack.sh says where it kept the logs when it stops")
    }

    /// What a stop that hangs leaves to read: what the script printed since the URL to query, the
    /// processes still running, and the end of every log it keeps.
    async fn what_is_still_running(&mut self) -> String {
        let mut report = String::from("stack.sh printed:\n");
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(std::time::Duration::from_secs(1), self.stdout.next_line()).await
        {
            report.push_str(&format!("  {line}\n"));
        }
        if let Ok(ps) = Command::new("ps")
            .args(["-eo", "pid,ppid,pgid,stat,etime,args", "--forest"])
            .output()
            .await
        {
            report.push_str("processes:\n");
            report.push_str(&String::from_utf8_lossy(&ps.stdout));
        }
        let mut logs = vec![self.state.clone()];
        while let Some(dir) = logs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    logs.push(path);
                } else if path.extension().is_some_and(|ext| ext == "log") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().collect();
                    let tail = &lines[lines.len().saturating_sub(30)..];
                    report.push_str(&format!("{}:\n  {}\n", path.display(), tail.join("\n  ")));
                }
            }
        }
        report
    }
}

/// Two instances in front of the test's own fake upstream (`--engine-upstream`, so the test sees the searches
/// reach the engines): a search is answered, the gateway serves the pool, Ctrl-C stops it all, and the gateway's
/// and each instance's logs are where the script said, under `XDG_STATE_HOME`.
#[tokio::test(flavor = "multi_thread")]
async fn the_stack_script_serves_a_search_through_a_pool_and_keeps_its_logs_after_sigint() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let state = tempfile::tempdir().expect("a temporary directory");
    let stack = Stack::start(
        2,
        &[
            "--engine-upstream".to_owned(),
            format!("127.0.0.1:{}", upstream.port()),
        ],
        state.path(),
    )
    .await;
    assert_eq!(
        stack.searxng_urls.len(),
        2,
        "two SearXNG instances: {:?}",
        stack.searxng_urls
    );

    let reply = stack.search("through+the+stack").await;
    let results = reply["results"].as_array().expect("results");
    assert!(!results.is_empty(), "{reply}");
    assert!(
        upstream.hits("alpha") >= 1,
        "the search reached the engines"
    );
    let status: serde_json::Value = reqwest::get(format!("http://{}/status", stack.listen))
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

    let kept = stack.interrupt().await;
    assert!(
        kept.starts_with(state.path().join("searxng-gateway")),
        "under XDG_STATE_HOME: {}",
        kept.display()
    );
    for log in [
        "gateway.log",
        "searxng-1/searxng.log",
        "searxng-2/searxng.log",
    ] {
        assert!(kept.join(log).is_file(), "{log} kept in {}", kept.display());
    }
}

/// The shipped engines file alone, as README's "Run it" says to run it without internet: the script starts its
/// own loopback fake for the engines, and the answer holds the fake's results from both engines.
#[tokio::test(flavor = "multi_thread")]
async fn the_stack_script_runs_offline_on_the_shipped_engines_file_alone() {
    needs!(Searxng);
    let state = tempfile::tempdir().expect("a temporary directory");
    let stack = Stack::start(1, &[], state.path()).await;

    let reply = stack.search("offline+first+run").await;
    let urls: Vec<&str> = reply["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["url"].as_str())
        .collect();
    for engine in ["alpha", "beta"] {
        assert!(
            urls.iter()
                .any(|u| u.starts_with(&format!("https://{engine}.example.test/"))),
            "{engine}'s fake results: {reply}"
        );
    }

    let kept = stack.interrupt().await;
    let fake_log =
        std::fs::read_to_string(kept.join("offline-engine.log")).expect("the fake's log is kept");
    assert!(fake_log.contains("GET /alpha/search"), "{fake_log}");
}
