//! The `searxng-gateway` binary as a child process: started with exactly the environment a test gives it,
//! its stdout and stderr collected line by line, stopped with SIGTERM. Everything here is async, so a test
//! waiting for a log line or for the process to exit never blocks the runtime's threads.

use std::process::{ExitStatus, Stdio};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::wait;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_searxng-gateway");

/// A synchronous command for the binary with an empty environment plus `PATH` and `vars`, for runs that
/// end by themselves (`--help`, a configuration error).
pub fn command(vars: &[(&str, &str)]) -> std::process::Command {
    let mut command = std::process::Command::new(BIN);
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.envs(vars.iter().copied());
    command
}

/// A running gateway process; killed when dropped.
pub struct GatewayProcess {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl GatewayProcess {
    /// Starts the binary with an empty environment plus `PATH` and `vars`.
    pub fn start(vars: &[(&str, &str)]) -> Self {
        let mut command = Command::from(command(vars));
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the gateway binary starts");
        let (sender, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        tokio::spawn(forward_lines(stdout, sender.clone()));
        tokio::spawn(forward_lines(stderr, sender));
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for an output line containing `needle` and returns it (the first such line, also
    /// when an earlier wait already read past it).
    pub async fn wait_for_line(&mut self, needle: &str) -> String {
        if let Some(line) = self.seen.iter().find(|line| line.contains(needle)) {
            return line.clone();
        }
        let found = wait::guarded(&format!("an output line containing {needle:?}"), async {
            while let Some(line) = self.lines.recv().await {
                self.seen.push(line.clone());
                if line.contains(needle) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        found.unwrap_or_else(|| {
            panic!(
                "the process ended its output without a line containing {needle:?}:\n{}",
                self.seen.join("\n")
            )
        })
    }

    /// `http://ADDR` from the "listening" line (which needs `LOG_LEVEL` info or more verbose), a
    /// text line or a JSON one (`LOG_FORMAT=json`).
    pub async fn url(&mut self) -> String {
        let line = self.wait_for_line("listening").await;
        let json = serde_json::from_str::<serde_json::Value>(&line).ok();
        let addr = match &json {
            Some(json) => json["fields"]["listen"].as_str(),
            None => line
                .split_whitespace()
                .find_map(|word| word.strip_prefix("listen=")),
        }
        .unwrap_or_else(|| panic!("no listen address in the start line {line:?}"));
        format!("http://{addr}")
    }

    /// The most resident memory the process has had (`VmHWM`), in bytes; children not counted.
    pub fn peak_rss_bytes(&self) -> u64 {
        let pid = self.child.id().expect("the process is running");
        let status =
            std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .expect("a VmHWM line")
            * 1024
    }

    /// The process's ID.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the process is running")
    }

    /// Sends `signal` (`HUP`, …) to the process.
    pub async fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("the process is running");
        let sent = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .await
            .expect("run kill");
        assert!(sent.success(), "kill -{signal} {pid} failed");
    }

    /// Kills the process (SIGKILL: no shutdown work at all) and waits for it to be gone.
    pub async fn kill(&mut self) {
        self.child.start_kill().expect("SIGKILL the gateway");
        wait::guarded("the gateway to die after SIGKILL", self.child.wait())
            .await
            .expect("reap the gateway");
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub async fn terminate(&mut self) -> ExitStatus {
        let pid = self
            .child
            .id()
            .expect("the process has not been reaped yet");
        let sent = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
        wait::guarded("the gateway to exit after SIGTERM", self.child.wait())
            .await
            .expect("wait for the gateway process")
    }

    /// Every output line, stdout and stderr interleaved as they arrived, up to the end of both streams.
    /// Call it once the process has exited, so that nothing it printed is missing.
    pub async fn output(&mut self) -> String {
        wait::guarded("the end of the gateway's output", async {
            while let Some(line) = self.lines.recv().await {
                self.seen.push(line);
            }
        })
        .await;
        self.seen.join("\n")
    }
}

async fn forward_lines(stream: impl AsyncRead + Unpin, sender: mpsc::UnboundedSender<String>) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if sender.send(line).is_err() {
            return;
        }
    }
}
