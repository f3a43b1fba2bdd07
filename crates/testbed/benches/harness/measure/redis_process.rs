//! A `redis-server` for the measurements that share a Redis tier (j., l.): started on a free
//! loopback port without persistence, asked for `INFO` by hand (one inline command), killed when
//! dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::loadgen::BoxError;

/// A `redis-server` on a free loopback port, no persistence; killed when dropped.
pub(super) struct RedisProcess {
    child: Child,
    port: u16,
}

impl RedisProcess {
    /// `None` when `redis-server` is not installed.
    pub(super) fn start(log_dir: &std::path::Path) -> Result<Option<Self>, BoxError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        std::fs::create_dir_all(log_dir)?;
        let log = std::fs::File::create(log_dir.join("redis-server.log"))?;
        let child = match Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::from(log))
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let redis = Self { child, port };
        for _ in 0..500 {
            if redis.command("PING").is_ok_and(|r| r.starts_with("+PONG")) {
                return Ok(Some(redis));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err("redis-server did not answer PING within 5 s".into())
    }

    /// Kills it (SIGKILL): the replicas find Redis away.
    pub(super) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub(super) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// An inline command's whole reply, as text.
    fn command(&self, command: &str) -> Result<String, BoxError> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(format!("{command}\r\nQUIT\r\n").as_bytes())?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply)
    }

    /// `used_memory` from `INFO memory`.
    pub(super) fn used_memory(&self) -> Result<u64, BoxError> {
        let info = self.command("INFO memory")?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| "INFO memory has no used_memory".into())
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
