//! A real SearXNG for integration tests, run by granian from the virtualenv that `.ci/install-searxng.sh` builds.
//!
//! Each [`SearxngInstance`] gets its own temporary directory (settings, `TMPDIR` for SearXNG's sqlite caches, the
//! process log) and a free loopback port. Its only engines are `json_engine`s aimed at an
//! [`EngineUpstream`](super::engine_upstream::EngineUpstream):
//!
//! | engine  | shortcut | category  |
//! |---------|----------|-----------|
//! | `alpha` | `al`     | `general` |
//! | `beta`  | `be`     | `general` |
//! | `gamma` | `ga`     | `news`    |
//!
//! Every engine requests `/<engine>/search?q=…&pageno=…&lang=…[&time_range=…][&safesearch=…]`, so a test reads
//! from `EngineUpstream::requests` which parameters SearXNG forwarded:
//!
//! - `pageno` is always sent (`1` when the search did not ask for a page);
//! - `lang` is the first two letters of the search language (`de-DE` → `de`), or `all` when none was chosen;
//! - `time_range` (`day`, `week`, `month`, `year`) is absent when the search had none;
//! - `safesearch` (`1`, `2`) is absent for `0`, SearXNG's default: `json_engine` only substitutes a non-zero level.
//!
//! SearXNG skips an engine, silently, for `pageno > 1` unless it declares paging and for a `time_range` unless it
//! declares time-range support. All three engines declare both unless listed in
//! [`SearxngOptions::engines_without_paging_or_time_range`].
//!
//! The process is started in its own process group and the whole group is killed on drop: granian serves from a
//! worker process that would outlive its parent otherwise.

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use super::ports::unused_loopback_port;
use super::wait;

/// The SearXNG engines in category `general`, in SearXNG's order.
pub const GENERAL_ENGINES: [&str; 2] = ["alpha", "beta"];

/// The SearXNG engines in category `news`.
pub const NEWS_ENGINES: [&str; 1] = ["gamma"];

/// How long SearXNG waits for an engine's upstream before reporting it as `timeout`, unless
/// [`SearxngOptions::engine_timeout`] says otherwise.
pub const ENGINE_TIMEOUT: Duration = Duration::from_secs(2);

const START_ATTEMPTS: usize = 3;

/// `json_engine`'s placeholders, each as its own query parameter; `{time_range}` and `{safe_search}` expand to
/// `&time_range=…` and `&safesearch=…` (see `time_range_url` and `safe_search_map` below), or to nothing.
const SEARCH_PARAMETERS: &str = "q={query}&pageno={pageno}&lang={lang}{time_range}{safe_search}";

/// (name, shortcut, category) of every engine in the generated settings.
const ENGINES: [(&str, &str, &str); 3] = [
    ("alpha", "al", "general"),
    ("beta", "be", "general"),
    ("gamma", "ga", "news"),
];

/// How to configure a [`SearxngInstance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearxngOptions {
    /// Port of the `EngineUpstream` on 127.0.0.1 that every engine calls.
    pub upstream_port: u16,
    /// Keep SearXNG's stock suspension windows (5 s after errors, 180 s after 403/429, 3600 s after a CAPTCHA)
    /// instead of zeroing them, so that failed engines come back as `Suspended: …` without being called.
    pub stock_suspension: bool,
    /// Engines that declare neither paging nor time-range support, so SearXNG leaves them out of searches with
    /// `pageno > 1` or a `time_range`.
    pub engines_without_paging_or_time_range: Vec<&'static str>,
    /// How long SearXNG waits for an engine's upstream before reporting it as `timeout`.
    pub engine_timeout: Duration,
}

impl SearxngOptions {
    /// SearXNG's own suspension off, every engine supporting paging and time ranges, [`ENGINE_TIMEOUT`].
    pub fn new(upstream_port: u16) -> Self {
        SearxngOptions {
            upstream_port,
            stock_suspension: false,
            engines_without_paging_or_time_range: Vec::new(),
            engine_timeout: ENGINE_TIMEOUT,
        }
    }
}

/// A running SearXNG on `127.0.0.1:<free port>`; dropping it kills the process group and deletes its directory.
#[derive(Debug)]
pub struct SearxngInstance {
    child: Child,
    /// False between [`SearxngInstance::kill`] and [`SearxngInstance::restart`]: the child is reaped, and its
    /// process group id must not be signalled again (it may belong to someone else by now).
    running: bool,
    port: u16,
    /// Holds settings, log and `TMPDIR`; deleted only after `Drop` has killed the process.
    dir: TempDir,
}

impl SearxngInstance {
    /// Writes the settings, starts granian and waits until `/healthz` answers.
    ///
    /// Panics with the process log when SearXNG does not come up within 20 s, and with a pointer to
    /// `.ci/install-searxng.sh` when the virtualenv is missing.
    pub async fn start(opts: SearxngOptions) -> Self {
        let venv = venv_dir();
        let granian = venv.join("bin").join("granian");
        assert!(
            granian.is_file(),
            "no SearXNG virtualenv at {} (missing {}): run `bash .ci/install-searxng.sh` \
             or point SEARXNG_VENV at one",
            venv.display(),
            granian.display(),
        );

        let dir = tempfile::Builder::new()
            .prefix("searxng-")
            .tempdir()
            .expect("create a temporary directory for SearXNG");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).expect("create SearXNG's TMPDIR");

        for attempt in 1..=START_ATTEMPTS {
            let port = unused_loopback_port();
            std::fs::write(dir.path().join("settings.yml"), settings_yaml(&opts, port))
                .expect("write SearXNG's settings.yml");
            let mut child = spawn_granian(&granian, dir.path(), &tmp, port);
            let startup = wait_until_healthy(&child, port).await;
            if startup == Startup::Ready {
                return SearxngInstance {
                    child,
                    running: true,
                    port,
                    dir,
                };
            }
            let status = stop(&mut child);
            // An early exit is most likely another process taking the port between our probe and granian's bind.
            if attempt < START_ATTEMPTS {
                continue;
            }
            let status = status.map_or_else(|| "unknown".to_owned(), |status| status.to_string());
            panic!(
                "SearXNG on port {port} exited during start-up ({status}); its log:\n{}",
                read_log(dir.path()),
            );
        }
        unreachable!("the last start attempt either returns or panics")
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kills the process (granian and its worker) as a crash would: connections in flight break, new ones are
    /// refused. [`SearxngInstance::restart`] brings it back on the same port.
    pub fn kill(&mut self) {
        if std::mem::replace(&mut self.running, false) {
            stop(&mut self.child);
        }
    }

    /// Starts SearXNG again on the same port with the same settings (after [`SearxngInstance::kill`]) and waits
    /// until `/healthz` answers; panics with the log when it does not come up.
    pub async fn restart(&mut self) {
        let granian = venv_dir().join("bin").join("granian");
        let tmp = self.dir.path().join("tmp");
        assert!(!self.running, "restart() follows kill()");
        self.child = spawn_granian(&granian, self.dir.path(), &tmp, self.port);
        self.running = true;
        let startup = wait_until_healthy(&self.child, self.port).await;
        assert!(
            startup == Startup::Ready,
            "SearXNG did not come back on port {} ({startup:?}); its log:\n{}",
            self.port,
            self.log()
        );
    }

    /// Everything granian and SearXNG printed so far (engine errors are logged as warnings), for failure messages.
    pub fn log(&self) -> String {
        read_log(self.dir.path())
    }
}

impl Drop for SearxngInstance {
    fn drop(&mut self) {
        self.kill();
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Startup {
    Ready,
    Exited,
}

/// Waits until SearXNG answers `/healthz`, or its process exits (the hang guard bounds the wait).
async fn wait_until_healthy(child: &Child, port: u16) -> Startup {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .expect("build the health-check client");
    let healthz = format!("http://127.0.0.1:{port}/healthz");
    let mut exited = false;
    wait::until("SearXNG to answer /healthz (or exit)", || {
        exited = has_exited(child.id());
        let (client, healthz, exited) = (&client, &healthz, exited);
        async move {
            exited
                || client
                    .get(healthz)
                    .send()
                    .await
                    .is_ok_and(|response| response.status().is_success())
        }
    })
    .await;
    if exited {
        Startup::Exited
    } else {
        Startup::Ready
    }
}

/// Whether `pid` has exited, read from Linux's `/proc` so as not to reap it: as long as it is a zombie, its PID
/// (and so its process group id) cannot be reused, which keeps [`stop`] from signalling a stranger's group.
fn has_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself contain spaces or parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// Kills granian and its worker (the whole process group), then reaps granian.
fn stop(child: &mut Child) -> Option<ExitStatus> {
    if !kill_group(child.id()) {
        let _ = child.kill();
    }
    child.wait().ok()
}

fn read_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("searxng.log")).unwrap_or_default()
}

fn venv_dir() -> PathBuf {
    super::external::searxng_venv()
}

fn spawn_granian(granian: &Path, dir: &Path, tmp: &Path, port: u16) -> Child {
    let log = File::create(dir.join("searxng.log")).expect("create SearXNG's log file");
    let mut command = Command::new(granian);
    // Settings from the caller's environment (SEARXNG_PORT, GRANIAN_WORKERS, …) would override ours.
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("SEARXNG_") || name_text.starts_with("GRANIAN_") {
            command.env_remove(&name);
        }
    }
    command
        .args(["--interface", "wsgi", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args([
            "--workers",
            "1",
            "--blocking-threads",
            "4",
            "--no-access-log",
        ])
        .arg("searx.webapp:app")
        .current_dir(dir)
        .env("SEARXNG_SETTINGS_PATH", dir.join("settings.yml"))
        .env("TMPDIR", tmp)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("share SearXNG's log file"))
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|error| panic!("start {}: {error}", granian.display()))
}

/// SIGKILLs the process group led by `pid` (granian was started as its leader); false when `kill` failed.
fn kill_group(pid: u32) -> bool {
    Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn settings_yaml(opts: &SearxngOptions, port: u16) -> String {
    let suspension = if opts.stock_suspension {
        ""
    } else {
        "  ban_time_on_fail: 0
  max_ban_time_on_fail: 0
  suspended_times: {SearxEngineAccessDenied: 0, SearxEngineCaptcha: 0, SearxEngineTooManyRequests: 0,
                    cf_SearxEngineCaptcha: 0, cf_SearxEngineAccessDenied: 0, recaptcha_SearxEngineCaptcha: 0}
"
    };
    let timeout = opts.engine_timeout.as_secs_f64();
    let engines: String = ENGINES
        .iter()
        .map(|(name, shortcut, category)| {
            let full_support = !opts.engines_without_paging_or_time_range.contains(name);
            engine_yaml(name, shortcut, category, full_support, opts)
        })
        .collect();
    format!(
        "# Written by tests/integration/support/searxng.rs for one test.
use_default_settings:
  engines:
    keep_only: []
search:
  formats: [html, json]
  default_lang: \"all\"
{suspension}server:
  bind_address: \"127.0.0.1\"
  port: {port}
  secret_key: \"loopback-test-only\"
  limiter: false
  public_instance: false
valkey:
  url: false
plugins:
  searx.plugins.hash_plugin.SXNGPlugin: {{active: true}}
outgoing:
  request_timeout: {timeout:.1}
  max_request_timeout: {max_timeout:.1}
engines:
{engines}",
        max_timeout = timeout * 2.0,
    )
}

fn engine_yaml(
    name: &str,
    shortcut: &str,
    category: &str,
    full_support: bool,
    opts: &SearxngOptions,
) -> String {
    let timeout = opts.engine_timeout.as_secs_f64();
    let upstream_port = opts.upstream_port;
    format!(
        "  - name: {name}
    engine: json_engine
    shortcut: {shortcut}
    categories: [{category}]
    enable_http: true
    timeout: {timeout:.1}
    paging: {full_support}
    time_range_support: {full_support}
    safesearch: true
    search_url: \"http://127.0.0.1:{upstream_port}/{name}/search?{SEARCH_PARAMETERS}\"
    lang_all: all
    time_range_url: \"&time_range={{time_range_val}}\"
    time_range_map: {{day: day, week: week, month: month, year: year}}
    safe_search_map: {{1: \"&safesearch=1\", 2: \"&safesearch=2\"}}
    results_query: items
    url_query: link
    title_query: name
    content_query: snippet
"
    )
}
