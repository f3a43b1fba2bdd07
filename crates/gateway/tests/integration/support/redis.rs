//! A real `redis-server` (the Debian package; `scripts/test.sh` installs it) started by the
//! test itself on a kernel-chosen loopback port, without persistence, and driven like an operator
//! would: killed, restarted on the same port, stopped with SIGSTOP (accepts connections, never
//! answers) and continued.
//!
//! `redis-server` cannot bind port 0 and say which port it got (`--port 0` turns TCP off), so the
//! port is one the kernel just handed out; should another process take it before Redis binds it,
//! Redis exits at once and the start is tried again on another port.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::ports::unused_loopback_port;
use super::wait;

/// A running `redis-server`; killed when dropped.
pub struct RedisServer {
    port: u16,
    /// Its working directory, its own: `--save ""` stops Redis writing a dump, not reading one at
    /// start, and a replica's full sync writes one — in a shared directory a server would start
    /// with another test's (or an earlier run's) data.
    dir: tempfile::TempDir,
    /// Arguments after the port and the defaults (a Cluster node's, a replica's).
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a fresh server on a free loopback port and waits until it answers `PING`.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// [`RedisServer::start`] with more arguments; `{port}` in one stands for the server's port.
    pub async fn start_with(extra: &[&str]) -> Self {
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let port = unused_loopback_port();
            let mut server = Self {
                port,
                dir: tempfile::tempdir().expect("a directory for redis-server"),
                extra: extra
                    .iter()
                    .map(|a| a.replace("{port}", &port.to_string()))
                    .collect(),
                child: None,
            };
            match server.launch().await {
                Ok(()) => return server,
                Err(status) if attempt < ATTEMPTS => {
                    eprintln!("redis-server exited at start ({status}): the port was taken; again");
                }
                Err(status) => panic!("redis-server exited at start {ATTEMPTS} times: {status}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// `redis://127.0.0.1:PORT/0`, for `REDIS_URL`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether it runs (it was not killed).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// A synchronous connection, for the test's own commands.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to redis-server")
    }

    /// Kills the server (SIGKILL): connections drop, nothing is saved.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = signal(&child, "CONT");
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: no persistence) and waits for `PING`.
    pub async fn restart(&mut self) {
        self.kill();
        if let Err(status) = self.launch().await {
            panic!(
                "redis-server exited at restart on port {}: {status}",
                self.port
            );
        }
    }

    /// Spawns `redis-server` on `self.port` and waits until it answers `PING`, or exits (its
    /// status: the port was taken).
    async fn launch(&mut self) -> Result<(), std::process::ExitStatus> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "no", "--loglevel", "warning"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("start redis-server ({e}): install the Debian package redis-server (scripts/test.sh does)")
            });
        self.child = Some(child);
        let port = self.port;
        let mut exited = None;
        wait::until("redis-server to answer PING (or exit)", || {
            exited = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten());
            let done = exited.is_some();
            async move {
                done || tokio::task::spawn_blocking(move || ping(port))
                    .await
                    .unwrap_or(false)
            }
        })
        .await;
        match exited {
            Some(status) => {
                self.child = None;
                Err(status)
            }
            None => Ok(()),
        }
    }

    /// SIGSTOP: the kernel still accepts connections, the server never answers.
    pub fn freeze(&self) {
        if let Some(child) = &self.child {
            signal(child, "STOP").expect("SIGSTOP redis-server");
        }
    }

    /// SIGCONT after [`RedisServer::freeze`].
    pub fn thaw(&self) {
        if let Some(child) = &self.child {
            signal(child, "CONT").expect("SIGCONT redis-server");
        }
    }

    /// Overwrites every stored answer with `blob` (as another version of the gateway might
    /// have written it), keeping its expiry.
    pub fn rewrite_answers(&self, blob: &[u8]) {
        let mut connection = self.connection();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("*:answer")
            .query(&mut connection)
            .expect("KEYS");
        assert!(!keys.is_empty(), "an answer was stored");
        for key in keys {
            redis::cmd("SET")
                .arg(&key)
                .arg(blob)
                .arg("KEEPTTL")
                .exec(&mut connection)
                .expect("SET");
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn signal(child: &Child, name: &str) -> std::io::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("kill -{name} failed")))
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 16];
    matches!(stream.read(&mut reply), Ok(n) if reply[..n].starts_with(b"+PONG"))
}
