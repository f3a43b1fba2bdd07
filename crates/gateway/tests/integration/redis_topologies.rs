//! The shared tier on the topologies teams run Redis as: a real Redis Cluster (three primaries,
//! a replica each; `REDIS_URL=redis+cluster://…`) and a real Sentinel setup (a master, its
//! replica, three Sentinels; `REDIS_URL=redis+sentinel://…/mymaster/0`), each shared by three
//! gateway replicas. On both, a client's rate and premium budget hold for the fleet, and killing
//! the Redis that holds a client's keys — a Cluster primary, the Sentinel master — mid-load fails
//! no search, and sharing resumes once the replica took over.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::future::join_all;
use simulator::Provider::Brave;
use tokio::task::JoinHandle;

use crate::fleet_limits::{clients_file, fleet_at, search_as, KEY, WATCHER_KEY};
use crate::support::external::needs;
use crate::support::gateway::TestGateway;
use crate::support::redis_cluster::RedisCluster;
use crate::support::redis_sentinel::RedisSentinels;
use crate::support::wait;

const BUDGET_KEY: &str = "fleet-budget-key-0123456789";

/// Rate, budget and a failover mid-load, on the Redis at `url`; `fail_over` kills what holds the
/// rate client's keys and returns once the replica took over.
async fn limits_hold_and_a_failover_fails_no_search<F, Fut>(url: &str, fail_over: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    // `fleet`: 60 a minute. `budget`: any rate, 5 premium calls a day. Every miss calls Brave
    // once beside SearXNG.
    let keys = clients_file(&[("fleet", KEY, ":60"), ("budget", BUDGET_KEY, ":0:5")]);
    let (s, others) = fleet_at(url, &keys, &[("T1_PREMIUM_COUNT", "1")]).await;
    let replicas: Vec<&TestGateway> = std::iter::once(&s.gateway).chain(&others).collect();

    let started = Instant::now();
    let mut admitted = 0;
    for i in 0..200 {
        match search_as(replicas[i % 3], KEY, "fleet rate").await {
            200 => admitted += 1,
            429 => {}
            other => panic!("search {i}: status {other}"),
        }
    }
    // A minute's burst, then one a second: the bound grows with the time the searches took.
    let refilled = started.elapsed().as_secs() + 1;
    assert!(
        (60..=60 + refilled).contains(&admitted),
        "{admitted} of 200 admitted over three replicas (60 a minute fleet-wide, + {refilled} \
         refilled; each replica alone would admit 60: 180)"
    );

    let before = s.provider(Brave).calls();
    for i in 0..9 {
        let status = search_as(replicas[i % 3], BUDGET_KEY, &format!("fleet budget {i}")).await;
        assert_eq!(status, 200, "a spent budget answers from SearXNG alone");
    }
    assert_eq!(
        s.provider(Brave).calls() - before,
        5,
        "5 premium calls a day fleet-wide (one request at a time: no overshoot; each replica \
         alone would make 5: 9)"
    );

    // Load (the unlimited watcher, fresh queries: each one reads and writes the shared tier)
    // before, across and after the failover.
    let load = |tag: &'static str| {
        join_all(
            (0..30)
                .map(|i| spawn_search(replicas[i % 3], format!("{tag} {i}")))
                .collect::<Vec<_>>(),
        )
    };
    let before = load("before");
    let killed = fail_over();
    let during = load("during");
    let ((), replies) = wait::guarded("searches across the failover", async {
        let (done, mut replies) = tokio::join!(killed, before);
        replies.extend(load("after failover").await);
        replies.extend(during.await);
        (done, replies)
    })
    .await;
    for reply in replies {
        let (status, _) = reply.expect("search task");
        assert_eq!(status, 200, "no search fails");
    }

    // Sharing resumes: every replica reaches Redis again, and an answer one computes is a hit
    // from Redis on another.
    for g in &replicas {
        wait::until("the replica to reach Redis after the failover", || async {
            g.status().await["redis"]["connected"] == true
        })
        .await;
    }
    let mut tries = 0;
    wait::until(
        "an answer computed by one replica to be a Redis hit on another",
        || {
            tries += 1;
            let query = format!("shared after failover {tries}");
            let (a, b) = (replicas[0], replicas[1]);
            async move {
                let (status, _) = spawn_search(a, query.clone()).await.expect("search task");
                // The write may land while the client still learns the new topology.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let (_, tier) = spawn_search(b, query).await.expect("search task");
                status == 200 && tier == "redis"
            }
        },
    )
    .await;
}

/// One search for `query` as the unlimited watcher: its status and `X-Cache-Tier`.
fn spawn_search(g: &TestGateway, query: String) -> JoinHandle<(u16, String)> {
    let request = g
        .http
        .get(format!("{}/search", g.url))
        .query(&[("q", query.as_str()), ("format", "json")])
        .bearer_auth(WATCHER_KEY);
    tokio::spawn(async move {
        let response = request.send().await.expect("the gateway answers");
        let tier = response
            .headers()
            .get("x-cache-tier")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (response.status().as_u16(), tier)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_redis_cluster_limits_hold_and_a_primary_failover_fails_no_search() {
    needs!(RedisServer);
    let mut cluster = RedisCluster::start().await;
    let url = cluster.url();
    let cluster = &mut cluster;
    limits_hold_and_a_failover_fails_no_search(&url, || async move {
        // The primary of the rate client's slot (its GCRA key lives there).
        let key = cluster.kill_primary_holding("*{c:*}:rate");
        eprintln!("killed the primary holding {key}");
        cluster.wait_for_failover().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_sentinel_limits_hold_and_a_master_failover_fails_no_search() {
    needs!(RedisServer, RedisSentinel);
    let mut sentinels = RedisSentinels::start().await;
    let url = sentinels.url();
    let sentinels = &mut sentinels;
    limits_hold_and_a_failover_fails_no_search(&url, || async move {
        let old = sentinels.kill_master();
        sentinels.wait_for_failover(old).await;
    })
    .await;
}
