//! Servers under test as child processes — the release gateway binary, or this harness re-run as
//! the minimal hyper baseline — so that each one's resident memory and CPU time are its own. Also
//! the machine-wide CPU accounting that tells how much of the run other processes took.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use crate::loadgen::{self, BoxError};

/// How long a server may take to answer its first request.
const START_LIMIT: Duration = Duration::from_secs(15);

/// A server process this harness started; stopped (SIGTERM, then SIGKILL) when dropped.
pub(crate) struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it is, for messages.
    pub label: String,
    log: PathBuf,
}

impl Server {
    /// Starts the gateway binary with exactly `env` (plus `LISTEN_ADDR` on a free loopback port, and
    /// what [`extra_gateway_env`] adds for an A/B), its log lines going to `/dev/null` — at the
    /// default `LOG_LEVEL=info` it still formats and writes one line per search — and its stderr to
    /// `log_dir/<label>.log`.
    pub(crate) async fn gateway(
        binary: &Path,
        env: &[(String, String)],
        log_dir: &Path,
        label: &str,
    ) -> Result<Self, BoxError> {
        let addr = free_loopback_port()?;
        let mut command = Command::new(binary);
        command.env_clear().env("LISTEN_ADDR", addr.to_string());
        for (name, value) in env.iter().chain(&extra_gateway_env()) {
            command.env(name, value);
        }
        Self::spawn(command, addr, log_dir, label, "/healthz").await
    }

    /// Starts this harness as the minimal hyper server answering `body_file`'s bytes.
    pub(crate) async fn baseline(body_file: &Path, log_dir: &Path) -> Result<Self, BoxError> {
        let addr = free_loopback_port()?;
        let mut command = Command::new(std::env::current_exe()?);
        command
            .arg("--baseline-server")
            .arg(addr.to_string())
            .arg(body_file);
        Self::spawn(command, addr, log_dir, "baseline", "/").await
    }

    pub(crate) async fn spawn(
        mut command: Command,
        addr: SocketAddr,
        log_dir: &Path,
        label: &str,
        ready_path: &str,
    ) -> Result<Self, BoxError> {
        std::fs::create_dir_all(log_dir)?;
        let log = log_dir.join(format!("{label}.log"));
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        let child = command.spawn()?;
        let mut server = Self {
            child,
            addr,
            label: label.to_owned(),
            log,
        };
        server.wait_ready(ready_path).await?;
        Ok(server)
    }

    async fn wait_ready(&mut self, path: &str) -> Result<(), BoxError> {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                return Err(format!("{} exited at start ({status}): {log}", self.label).into());
            }
            if let Ok(answer) = loadgen::get(self.addr, path).await {
                if answer.status == 200 {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} did not answer {path} within {START_LIMIT:?}",
                    self.label
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory (`VmRSS` in `/proc/<pid>/status`), in bytes.
    pub(crate) fn rss_bytes(&self) -> Result<u64, BoxError> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        let kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|value| value.parse::<u64>().ok())
            .ok_or("no VmRSS line")?;
        Ok(kib * 1024)
    }

    /// Open file descriptors (entries of `/proc/<pid>/fd`).
    pub(crate) fn open_fds(&self) -> Result<u64, BoxError> {
        Ok(std::fs::read_dir(format!("/proc/{}/fd", self.pid()))?.count() as u64)
    }

    /// CPU time used so far (user + system), in clock ticks.
    /// Its child processes are counted too (nginx's workers).
    pub(crate) fn cpu_ticks(&self) -> u64 {
        let pid = self.pid();
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        std::iter::once(pid.to_string())
            .chain(children.split_whitespace().map(str::to_owned))
            .filter_map(|p| process_ticks(&format!("/proc/{p}/stat")))
            .sum()
    }

    /// Stops it with SIGTERM (the gateway drains in-flight requests), SIGKILL after 5 s.
    pub(crate) fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = self.pid().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A loopback port nobody listens on right now (the server binds it a moment later).
/// `HARNESS_GATEWAY_ENV="NAME=VALUE NAME=VALUE"`: variables every gateway of the run gets on top of
/// its measurement's own (an A/B of one setting, `RUNTIME=thread-per-core`); they win over the
/// measurement's. The report's details name them.
pub(crate) fn extra_gateway_env() -> Vec<(String, String)> {
    std::env::var("HARNESS_GATEWAY_ENV")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

pub(crate) fn free_loopback_port() -> std::io::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// `utime + stime` from a `/proc/.../stat` file, in clock ticks.
fn process_ticks(path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name may contain spaces: fields are counted after its closing parenthesis.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Machine-wide CPU ticks: `(busy, total)` from `/proc/stat`.
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let values: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let get = |i: usize| values.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal
    let busy = get(0) + get(1) + get(2) + get(5) + get(6) + get(7);
    (busy, busy + get(3) + get(4))
}

/// CPU use during one measurement: ours (the harness and the servers it started) versus
/// everyone's, so a report can say when other work on the machine disturbed a result.
pub(crate) struct CpuMeter {
    busy: u64,
    total: u64,
    ours: u64,
    server: u64,
}

/// What a [`CpuMeter`] saw.
pub(crate) struct CpuUse {
    /// Share of the machine's CPU capacity that processes other than ours used (0–1).
    pub foreign: f64,
    /// CPU seconds the server under test used.
    pub server_seconds: f64,
}

fn our_ticks(servers: &[&Server]) -> u64 {
    process_ticks("/proc/self/stat").unwrap_or(0)
        + servers.iter().map(|s| s.cpu_ticks()).sum::<u64>()
}

impl CpuMeter {
    /// Starts measuring. `servers` are every server of ours running now, the one under test first.
    pub(crate) fn start(servers: &[&Server]) -> Self {
        let (busy, total) = machine_ticks();
        Self {
            busy,
            total,
            ours: our_ticks(servers),
            server: servers.first().map_or(0, |s| s.cpu_ticks()),
        }
    }

    /// Ends the measurement (the same `servers` as at the start).
    pub(crate) fn finish(&self, servers: &[&Server]) -> CpuUse {
        let (busy, total) = machine_ticks();
        let ours = our_ticks(servers).saturating_sub(self.ours);
        let foreign = busy.saturating_sub(self.busy).saturating_sub(ours);
        let elapsed = total.saturating_sub(self.total).max(1);
        let server = servers.first().map_or(0, |s| s.cpu_ticks());
        CpuUse {
            foreign: foreign as f64 / elapsed as f64,
            server_seconds: server.saturating_sub(self.server) as f64 / USER_HZ,
        }
    }
}

/// Clock ticks per second in `/proc` (`USER_HZ`): 100 on every Linux architecture this runs on.
const USER_HZ: f64 = 100.0;

/// Builds the release `searxng-gateway` binary (a cargo bench builds only this package's targets)
/// and returns its path: `$CARGO_TARGET_DIR/release/searxng-gateway`, else `target/` under `repo`.
/// It is built with the `bench` profile — the release profile's settings, in the release directory
/// — and the `bench` feature the harness's own build gave the gateway's library (it only makes
/// more items public), so the library and every dependency the harness was just built with are
/// reused and only the binary is compiled. The variables `cargo bench` sets for the harness
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, …) are not passed on: ring's build script reruns when one
/// of them changes, which would rebuild the TLS stack and the gateway in both builds.
pub(crate) fn build_release_gateway(repo: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_a_target) {
            command.env_remove(name);
        }
    }
    let status = command
        .current_dir(repo)
        .args([
            "build",
            "--profile",
            "bench",
            "--locked",
            "-p",
            "searxng-gateway",
            "--features",
            "bench",
            "--bin",
            "searxng-gateway",
        ])
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "cargo build --profile bench failed: {status}"
        )));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| repo.join("target"), std::path::PathBuf::from);
    Ok(target.join("release").join("searxng-gateway"))
}

/// The variables cargo sets for a target it runs (a bench, a test), as opposed to the user's own.
fn set_by_cargo_for_a_target(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "OUT_DIR"
        )
}
