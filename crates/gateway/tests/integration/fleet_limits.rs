//! Client limits that hold for a fleet: three gateway replicas sharing one real `redis-server`,
//! one client's requests spread over them. Its rate (`REQUESTS_PER_MINUTE`) and its premium budget
//! (`PREMIUM_CALLS_PER_DAY`) are counted once for all three — each replica alone would let the
//! client through three times over — and while Redis is away each replica holds the client to its
//! share, `1/N` of the limit, `N` being the replicas it last saw; once Redis is back they count
//! together again.

use std::time::Instant;

use simulator::Provider::Brave;

use crate::support::external::needs;
use crate::support::gateway::TestGateway;
use crate::support::redis::RedisServer;
use crate::support::stack::SimStack;
use crate::support::wait;

pub(crate) const KEY: &str = "fleet-client-key-0123456789";
/// The replicas' `ADMIN_TOKEN` where a test reads `/admin/status`.
const ADMIN_TOKEN: &str = "fleet-admin-token-0123456789";
/// The key the test's own `/status` reads (and [`TestGateway::spawn_search`]) go with: another
/// client, unlimited, so that watching the replicas takes nothing from `fleet`'s limits.
pub(crate) const WATCHER_KEY: &str = "fleet-watcher-key-0123456789";

/// A keys file naming client `fleet` with `limits` (`:RPM[:CALLS_PER_DAY]`), and the watcher.
fn keys_file(limits: &str) -> tempfile::NamedTempFile {
    clients_file(&[("fleet", KEY, limits)])
}

/// A keys file naming each of `clients` (name, key, limits) and the watcher.
pub(crate) fn clients_file(clients: &[(&str, &str, &str)]) -> tempfile::NamedTempFile {
    let mut lines = clients.to_vec();
    lines.push(("watcher", WATCHER_KEY, ""));
    crate::support::keys::keys_file(&lines)
}

/// Three replicas sharing `redis`, client `fleet` limited by `limits`, each replica having seen
/// all three in Redis (so each knows its share).
async fn fleet(
    redis: &RedisServer,
    keys: &tempfile::NamedTempFile,
    vars: &[(&str, &str)],
) -> (SimStack, Vec<TestGateway>) {
    fleet_at(&redis.url(), keys, vars).await
}

/// [`fleet`] sharing the Redis at `url` (any `REDIS_URL` form).
pub(crate) async fn fleet_at(
    url: &str,
    keys: &tempfile::NamedTempFile,
    vars: &[(&str, &str)],
) -> (SimStack, Vec<TestGateway>) {
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let mut env = vec![
        ("REDIS_URL", url),
        // These tests are about sharing the limits, not about Redis's latency: on a loaded machine
        // (the whole suite running beside) a round trip can take more than the default 50 ms, and
        // a replica that times out falls back to its local share — 8 of 30 admitted instead of 6.
        // A test that wants the fallback sets its own.
        ("REDIS_TIMEOUT_MS", "1000"),
        ("API_KEYS_FILE", path.as_str()),
        ("TEST_CLIENT_KEY", WATCHER_KEY),
    ];
    env.extend_from_slice(vars);
    let mut stack = SimStack::start(&[Brave], &env).await;
    let others = vec![stack.replica().await, stack.replica().await];
    for g in std::iter::once(&stack.gateway).chain(&others) {
        wait::until("every replica to count three replicas", || async move {
            g.status().await["redis"]["replicas"] == 3
        })
        .await;
    }
    (stack, others)
}

/// One search as client `fleet`; its status.
async fn search(g: &TestGateway, query: &str) -> u16 {
    search_as(g, KEY, query).await
}

/// One search with client key `key`; its status.
pub(crate) async fn search_as(g: &TestGateway, key: &str, query: &str) -> u16 {
    g.http
        .get(format!("{}/search", g.url))
        .query(&[("q", query), ("format", "json")])
        .bearer_auth(key)
        .send()
        .await
        .expect("the gateway answers")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clients_rate_holds_for_the_whole_fleet() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    // 6 a minute: a burst of 6, then one every 10 s.
    let keys = keys_file(":6");
    let (s, others) = fleet(&redis, &keys, &[]).await;
    let replicas: Vec<&TestGateway> = std::iter::once(&s.gateway).chain(&others).collect();

    let started = Instant::now();
    let mut admitted = 0;
    for i in 0..30 {
        match search(replicas[i % 3], "fleet rate").await {
            200 => admitted += 1,
            429 => {}
            other => panic!("search {i}: status {other}"),
        }
    }
    // A token comes back every 10 s: the bound grows with the time the searches took.
    let refilled = started.elapsed().as_secs() / 10;
    assert!(
        (6..=6 + refilled).contains(&admitted),
        "{admitted} of 30 admitted over three replicas (6 a minute fleet-wide; each replica alone \
         would admit 6: 18)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clients_premium_budget_holds_for_the_whole_fleet() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    // Unlimited rate, 3 premium calls a day; every miss calls Brave once beside SearXNG.
    let keys = keys_file(":0:3");
    let (s, others) = fleet(
        &redis,
        &keys,
        &[("T1_PREMIUM_COUNT", "1"), ("ADMIN_TOKEN", ADMIN_TOKEN)],
    )
    .await;
    let replicas: Vec<&TestGateway> = std::iter::once(&s.gateway).chain(&others).collect();
    for i in 0..9 {
        assert_eq!(
            search(replicas[i % 3], &format!("fleet budget {i}")).await,
            200
        );
    }
    // One request at a time: no overshoot at all (the bound is one request's calls).
    assert_eq!(
        s.provider(Brave).calls(),
        3,
        "3 premium calls a day fleet-wide (each replica alone would make 3: 9)"
    );
    // Every replica's /admin/status shows the fleet's count, not its own share of it.
    for g in &replicas {
        let admin: serde_json::Value = g
            .http
            .get(format!("{}/admin/status", g.url))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("the gateway answers")
            .json()
            .await
            .expect("JSON");
        let row = admin["clients"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["client"] == "fleet"))
            .expect("client fleet is listed");
        assert_eq!(
            (
                &row["premium_calls_last_24h"],
                &row["counted"],
                &row["premium_allowed"]
            ),
            (&3.into(), &"fleet".into(), &false.into()),
            "{row}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_redis_away_each_replica_holds_its_share_and_sharing_resumes_when_it_returns() {
    needs!(RedisServer);
    let mut redis = RedisServer::start().await;
    let keys = keys_file(":6");
    let (s, others) = fleet(&redis, &keys, &[("REDIS_TIMEOUT_MS", "50")]).await;
    redis.kill();
    let a = &s.gateway;
    for g in std::iter::once(a).chain(&others) {
        wait::until("the replica to find Redis away", || async move {
            g.status().await["redis"]["connected"] == false
        })
        .await;
    }
    let started = Instant::now();
    let mut admitted = 0;
    for _ in 0..6 {
        if search(&others[0], "share").await == 200 {
            admitted += 1;
        }
    }
    // This replica's share of 6 a minute over 3 replicas: 2 a minute, a token every 30 s.
    let refilled = started.elapsed().as_secs() / 30;
    assert!(
        (2..=2 + refilled).contains(&admitted),
        "{admitted} of 6 admitted by one replica while Redis is away (its share: 2 of 6)"
    );

    redis.restart().await;
    wait::until("the replica to use Redis again", || async {
        a.status().await["redis"]["connected"] == true
    })
    .await;
    let mut admitted = 0;
    for _ in 0..6 {
        if search(a, "shared again").await == 200 {
            admitted += 1;
        }
    }
    assert_eq!(
        admitted, 6,
        "the fleet's rate in Redis again (a fresh Redis: a full minute's worth), not a replica's \
         share of 2"
    );
}
