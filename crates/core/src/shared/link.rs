//! The connection to the shared tier's Redis, whatever its [`Topology`]. It owns how a pipeline
//! reaches the servers; the rest of the tier only builds pipelines and reads replies.
//!
//! - one server: redis-rs's `ConnectionManager` (one multiplexed connection, reconnects itself);
//! - a Cluster: redis-rs's cluster-aware `ClusterConnection`, created pending (it connects in the
//!   background and learns the slots; a `MOVED` makes it refresh them). A pipeline must stay in
//!   one slot there, so the few operations that read several key families at once pass their
//!   parts separately ([`Link::query_parts`]): one pipeline where that is one server, the parts
//!   side by side (one round trip each, concurrently) on a Cluster;
//! - Sentinel: redis-rs asks the Sentinels for the master (and checks its `ROLE`), and the
//!   connection to it is kept.
//!
//! A killed primary or master answers nothing — no `MOVED`, no `READONLY` — and redis-rs keeps
//! reconnecting to its address. So after a failure the tier calls [`Link::reset`] before its next
//! background ping: a Cluster connection starts over from the configured nodes (and learns the
//! slots as they are now), a Sentinel link asks the Sentinels again. That is how both follow a
//! failover, within a ping of it.
//!
//! Nothing here speaks the protocol by hand: the three connections are redis-rs's own.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{AsyncConnectionConfig, FromRedisValue, IntoConnectionInfo, Pipeline, RedisResult};

use futures::future::BoxFuture;

use super::settings::Topology;

/// A live handle to the servers. Cheap operations only: cloning a connection is an `Arc` clone.
pub(super) enum Link {
    Single(ConnectionManager),
    Cluster(ClusterLink),
    Sentinel(SentinelLink),
}

/// The Cluster client and its current connection.
pub(super) struct ClusterLink {
    client: ClusterClient,
    config: ClusterConfig,
    connection: Mutex<ClusterConnection>,
}

/// The master found through Sentinel, and the connection to it while it works.
pub(super) struct SentinelLink {
    sentinel: tokio::sync::Mutex<Sentinel>,
    master: String,
    node: SentinelNodeConnectionInfo,
    config: AsyncConnectionConfig,
    connection: Mutex<Option<MultiplexedConnection>>,
}

impl Link {
    /// The link for `topology`. Connects lazily: nothing is awaited here.
    pub(super) fn new(topology: &Topology, connect_timeout: Duration) -> RedisResult<Self> {
        Ok(match topology {
            Topology::Single(url) => {
                let client = redis::Client::open(url.as_str())?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(10))
                    .set_max_delay(Duration::from_millis(100));
                Link::Single(ConnectionManager::new_lazy_with_config(client, config)?)
            }
            Topology::Cluster { nodes } => {
                let client = ClusterClientBuilder::new(nodes.iter().map(url::Url::as_str))
                    .connection_timeout(connect_timeout)
                    .retries(1)
                    .build()?;
                let config = ClusterConfig::new().set_connection_timeout(connect_timeout);
                let connection = client.get_pending_async_connection_with_config(config.clone());
                Link::Cluster(ClusterLink {
                    client,
                    config,
                    connection: Mutex::new(connection),
                })
            }
            Topology::Sentinel {
                sentinels,
                master,
                server,
            } => {
                let info = server.as_str().into_connection_info()?;
                let mut node = SentinelNodeConnectionInfo::default()
                    .set_redis_connection_info(info.redis_settings().clone());
                if server.scheme() == "rediss" {
                    node = node.set_tls_mode(redis::TlsMode::Secure);
                }
                let sentinel = Sentinel::build(sentinels.iter().map(url::Url::as_str).collect())?;
                Link::Sentinel(SentinelLink {
                    sentinel: tokio::sync::Mutex::new(sentinel),
                    master: master.clone(),
                    node,
                    config: AsyncConnectionConfig::new()
                        .set_connection_timeout(Some(connect_timeout)),
                    connection: Mutex::new(None),
                })
            }
        })
    }

    /// Whether a pipeline must keep to one hash slot (a Cluster).
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Link::Cluster(_))
    }

    /// One pipeline, one round trip. Boxed: each topology's future is deep, and the request
    /// futures that await this one would otherwise nest all three (one allocation per round trip).
    pub(super) fn query<'a, T: FromRedisValue + Send + 'a>(
        &'a self,
        pipe: &'a Pipeline,
    ) -> BoxFuture<'a, RedisResult<T>> {
        match self {
            Link::Single(manager) => {
                let mut connection = manager.clone();
                Box::pin(async move { pipe.query_async(&mut connection).await })
            }
            Link::Cluster(cluster) => {
                let mut connection = lock(&cluster.connection).clone();
                Box::pin(async move { pipe.query_async(&mut connection).await })
            }
            Link::Sentinel(link) => Box::pin(link.query(pipe)),
        }
    }

    /// Starts over after a failure: a new Cluster connection, the Sentinels asked again (one
    /// server's `ConnectionManager` reconnects by itself).
    pub(super) fn reset(&self) {
        match self {
            Link::Single(_) => {}
            Link::Cluster(cluster) => {
                let fresh = cluster
                    .client
                    .get_pending_async_connection_with_config(cluster.config.clone());
                *lock(&cluster.connection) = fresh;
            }
            Link::Sentinel(link) => *lock(&link.connection) = None,
        }
    }

    /// The replies of `parts`, in order, as if they were one pipeline. `parts` are pipelines of
    /// one hash slot each: one server gets them as one pipeline; a Cluster gets each part on its
    /// own, all at once.
    pub(super) async fn query_parts(&self, parts: &[Pipeline]) -> RedisResult<Vec<redis::Value>> {
        if !self.is_cluster() {
            let mut joined = redis::pipe();
            for part in parts {
                for command in part.cmd_iter() {
                    joined.add_command(command.clone());
                }
            }
            return self.query(&joined).await;
        }
        let replies =
            futures::future::try_join_all(parts.iter().map(|p| self.query::<Vec<redis::Value>>(p)))
                .await?;
        Ok(replies.into_iter().flatten().collect())
    }
}

impl SentinelLink {
    async fn query<T: FromRedisValue + Send>(&self, pipe: &Pipeline) -> RedisResult<T> {
        let current = lock(&self.connection).clone();
        let mut connection = match current {
            Some(connection) => connection,
            None => self.connect().await?,
        };
        pipe.query_async(&mut connection).await
    }

    /// Asks the Sentinels for the master and connects to it.
    async fn connect(&self) -> RedisResult<MultiplexedConnection> {
        let client = self
            .sentinel
            .lock()
            .await
            .async_master_for(&self.master, Some(&self.node))
            .await?;
        let connection = client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        *lock(&self.connection) = Some(connection.clone());
        Ok(connection)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
