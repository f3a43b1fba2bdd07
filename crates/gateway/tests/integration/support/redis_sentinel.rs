//! A real Sentinel setup on loopback: a master and its replica (`redis-server`), and three
//! Sentinels (Debian's `redis-sentinel`) watching the master as `mymaster` with a quorum of two,
//! a one-second down-after and a short failover timeout — so that killing the master makes the
//! Sentinels promote the replica within a few seconds, as in production, only faster.
//!
//! Sentinels rewrite their configuration file as they learn the topology, so each gets its own in
//! a temporary directory. Like `redis-server`, a Sentinel cannot report a port-0 bind: its port
//! is one the kernel just handed out, and a start that loses the port is tried again.

use std::process::{Child, Command, Stdio};

use super::ports::unused_loopback_port;
use super::redis::RedisServer;
use super::wait;

/// The master's name in the Sentinels' configuration.
pub const MASTER: &str = "mymaster";

/// A running master, replica and three Sentinels; all killed when dropped.
pub struct RedisSentinels {
    servers: Vec<RedisServer>,
    sentinels: Vec<(u16, Child)>,
    _dir: tempfile::TempDir,
}

impl RedisSentinels {
    /// Starts the master, its replica and three Sentinels, and waits until every Sentinel knows
    /// the replica and the other two (what a failover needs).
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("a directory for the Sentinels' files");
        let master = RedisServer::start().await;
        let port = master.port().to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]).await;
        let mut sentinels = Vec::new();
        for i in 0..3 {
            sentinels.push(start_sentinel(dir.path(), i, master.port()).await);
        }
        let setup = Self {
            servers: vec![master, replica],
            sentinels,
            _dir: dir,
        };
        wait::until(
            "every Sentinel to know the replica and the others",
            || async {
                setup.sentinels.iter().all(|(port, _)| {
                    let Some(mut c) = connect(*port) else {
                        return false;
                    };
                    let replicas: Vec<redis::Value> = redis::cmd("SENTINEL")
                        .arg("replicas")
                        .arg(MASTER)
                        .query(&mut c)
                        .unwrap_or_default();
                    let others: Vec<redis::Value> = redis::cmd("SENTINEL")
                        .arg("sentinels")
                        .arg(MASTER)
                        .query(&mut c)
                        .unwrap_or_default();
                    replicas.len() == 1 && others.len() == 2
                })
            },
        )
        .await;
        setup
    }

    /// `redis+sentinel://` with the three Sentinels and the master's name, for `REDIS_URL`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|(port, _)| format!("127.0.0.1:{port}"))
            .collect();
        format!("redis+sentinel://{}/{MASTER}/0", hosts.join(","))
    }

    /// The master's port as the first Sentinel reports it.
    pub fn master_port(&self) -> Option<u16> {
        let mut c = connect(self.sentinels[0].0)?;
        let (_, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(MASTER)
            .query(&mut c)
            .ok()?;
        Some(port)
    }

    /// Kills (SIGKILL) the current master; returns its port.
    pub fn kill_master(&mut self) -> u16 {
        let port = self.master_port().expect("the Sentinels name a master");
        let master = self
            .servers
            .iter_mut()
            .find(|s| s.port() == port)
            .expect("the master is one of ours");
        master.kill();
        port
    }

    /// Waits until the Sentinels name another master than `old` and it answers as one.
    pub async fn wait_for_failover(&self, old: u16) {
        wait::until("the Sentinels to promote the replica", || async {
            let Some(port) = self.master_port().filter(|p| *p != old) else {
                return false;
            };
            connect(port).is_some_and(|mut c| {
                redis::cmd("INFO")
                    .arg("replication")
                    .query::<String>(&mut c)
                    .is_ok_and(|i| i.contains("role:master"))
            })
        })
        .await;
    }
}

impl Drop for RedisSentinels {
    fn drop(&mut self) {
        for (_, child) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn connect(port: u16) -> Option<redis::Connection> {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_millis(500)))
        .ok()
}

/// Starts Sentinel number `i` watching the master on `master_port`, retrying on a lost port.
async fn start_sentinel(dir: &std::path::Path, i: usize, master_port: u16) -> (u16, Child) {
    const ATTEMPTS: usize = 3;
    for attempt in 1..=ATTEMPTS {
        let port = unused_loopback_port();
        let file = dir.join(format!("sentinel-{i}.conf"));
        let config = format!(
            "port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {dir}\nloglevel warning\n\
             sentinel monitor {MASTER} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {MASTER} 1000\n\
             sentinel failover-timeout {MASTER} 3000\n\
             sentinel parallel-syncs {MASTER} 1\n",
            dir = dir.display()
        );
        std::fs::write(&file, config).expect("write the Sentinel's configuration");
        let mut child = Command::new("redis-sentinel")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("start redis-sentinel ({e}): install the Debian package redis-sentinel (scripts/test.sh does)")
            });
        let mut exited = None;
        wait::until("redis-sentinel to answer (or exit)", || {
            exited = child.try_wait().ok().flatten();
            let done = exited.is_some();
            async move { done || connect(port).is_some() }
        })
        .await;
        match exited {
            None => return (port, child),
            Some(status) if attempt < ATTEMPTS => {
                eprintln!("redis-sentinel exited at start ({status}): the port was taken; again");
            }
            Some(status) => panic!("redis-sentinel exited at start {ATTEMPTS} times: {status}"),
        }
    }
    unreachable!("the last attempt returns or panics")
}
