//! A real Redis Cluster on loopback: three primaries and a replica of each (six `redis-server`s in
//! cluster mode, each with its node file in a temporary directory), joined by
//! `redis-cli --cluster create` as an operator would, with a one-second node timeout so that a
//! killed primary's replica takes its slots over within a few seconds.

use std::process::Command;

use super::redis::RedisServer;
use super::wait;

/// A running cluster; every node is killed when dropped.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    /// Starts six nodes, creates the cluster (3 primaries, 1 replica each) and waits until every
    /// node says `cluster_state:ok` and every replica has synced.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("a directory for the node files");
        let path = dir.path().to_str().expect("utf-8 path").to_owned();
        let mut nodes = Vec::new();
        for _ in 0..6 {
            nodes.push(
                RedisServer::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &format!("{path}/nodes-{{port}}.conf"),
                    "--cluster-node-timeout",
                    "1000",
                    "--dir",
                    &path,
                ])
                .await,
            );
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli (Debian's redis-tools, installed with redis-server)");
        assert!(
            output.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        let cluster = Self { nodes, _dir: dir };
        cluster.wait_until_healthy().await;
        cluster
    }

    /// `redis+cluster://` with every node, for `REDIS_URL`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Waits until every running node reports the cluster healthy and every running replica's
    /// link to its primary is up.
    pub async fn wait_until_healthy(&self) {
        wait::until("every cluster node to report cluster_state:ok", || async {
            self.running()
                .all(|n| info(n, "CLUSTER", "INFO").contains("cluster_state:ok"))
        })
        .await;
        wait::until("every cluster replica to sync", || async {
            self.running().all(|n| {
                let replication = info(n, "INFO", "replication");
                replication.contains("role:master") || replication.contains("master_link_status:up")
            })
        })
        .await;
    }

    /// Waits until three running nodes are primaries again (a killed primary's replica took its
    /// slots over) and the cluster is healthy.
    pub async fn wait_for_failover(&self) {
        wait::until(
            "a replica to take the killed primary's slots over",
            || async {
                self.running()
                    .filter(|n| info(n, "INFO", "replication").contains("role:master"))
                    .count()
                    == 3
            },
        )
        .await;
        self.wait_until_healthy().await;
    }

    fn running(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(|n| n.is_running())
    }

    /// Kills (SIGKILL) the primary holding a key that matches `pattern` (`KEYS`), returning the
    /// key; panics when no primary holds one.
    pub fn kill_primary_holding(&mut self, pattern: &str) -> String {
        for node in self.nodes.iter_mut().filter(|n| n.is_running()) {
            if !info(node, "INFO", "replication").contains("role:master") {
                continue;
            }
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(pattern)
                .query(&mut node.connection())
                .expect("KEYS");
            if let Some(key) = keys.into_iter().next() {
                node.kill();
                return key;
            }
        }
        panic!("no primary holds a key matching {pattern}")
    }
}

/// A two-word command's text reply (`CLUSTER INFO`, `INFO replication`); empty when the node does
/// not answer.
fn info(node: &RedisServer, command: &str, argument: &str) -> String {
    let Ok(mut connection) = redis::Client::open(node.url()).and_then(|c| c.get_connection())
    else {
        return String::new();
    };
    redis::cmd(command)
        .arg(argument)
        .query(&mut connection)
        .unwrap_or_default()
}
