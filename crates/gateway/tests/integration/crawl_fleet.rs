//! Crawls the fleet works on together (issue #43), with real gateway binaries and a real
//! `redis-server`: a crawl started on one replica is read by both, its status answered by either;
//! the replica that took it killed mid-crawl (SIGKILL, URLs in its hands), the other claims what
//! it held and finishes the job — every page read, each listed once; a cancel on one replica ends
//! the job for both; another client never sees the job on any replica; Tavily's crawl, which waits
//! for its job, answers from a shared job too; on a Redis Cluster, a job's keys share one slot;
//! behind Sentinel it is shared the same way. A generated site full of crawler's traps
//! (`simulator::site_graph`) crawled by three replicas, one SIGKILLed, on one Redis and on a
//! Cluster; and without Redis, a job resumed from `STATE_DIR` after a restart.

use std::io::Write as _;
use std::time::Duration;

use serde_json::{json, Value};
use simulator::searxng::SimulatedSearxng;
use simulator::site::{Page, SimulatedSite};

use crate::support::external::needs;
use crate::support::gateway::metric_value;
use crate::support::process::GatewayProcess;
use crate::support::redis::RedisServer;
use crate::support::redis_cluster::RedisCluster;
use crate::support::wait;

const ALICE: &str = "alice-fleet-crawl-key-0123456789";
const BOB: &str = "bob-fleet-crawl-key-0123456789";
const ADMIN: &str = "fleet-crawl-admin-token-0123456789";
/// Pages linked from the start page.
const PAGES: usize = 16;
/// The gateway's default `REDIS_KEY_PREFIX`.
const PREFIX: &str = "sxgw:";

fn article(title: &str, links: &[String]) -> String {
    let words = "Field notes on the river: the water, the birds on the banks, the boats that \
        pass and what they carry, written down for those who come after. "
        .repeat(5);
    let anchors: String = links
        .iter()
        .map(|href| format!(" <a href=\"{href}\">{href}</a>"))
        .collect();
    format!(
        "<html><head><title>{title}</title></head><body><article><h1>{title}</h1>\
         <p>{words}{anchors}</p><p>{words}</p></article></body></html>"
    )
}

/// A site whose start page links to [`PAGES`] pages, each sent slowly (about two seconds), so that
/// a replica killed mid-crawl holds URLs it has not handed in.
async fn slow_site() -> SimulatedSite {
    let site = SimulatedSite::start().await.expect("site starts");
    let links: Vec<String> = (1..=PAGES).map(|i| format!("/p/{i}")).collect();
    site.set("/", Page::html(article("Home", &links)));
    for i in 1..=PAGES {
        let body = article(&format!("Page {i}"), &["/".to_owned()]).into_bytes();
        let chunk = body.len() / 4 + 1;
        site.set(
            &format!("/p/{i}"),
            Page::Trickle {
                content_type: "text/html; charset=utf-8".into(),
                body,
                chunk,
                every: Duration::from_millis(500),
            },
        );
    }
    site.set(
        "/robots.txt",
        Page::ok("text/plain", "User-agent: *\nAllow: /\n"),
    );
    site
}

fn keys() -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for (name, key) in [("alice", ALICE), ("bob", BOB)] {
        let line = searxng_gateway::clients::keys_file::hash_line(name, key).expect("valid");
        writeln!(file, "{line}").expect("write");
    }
    file
}

struct Fleet {
    _searxng: SimulatedSearxng,
    _keys: tempfile::NamedTempFile,
    env: Vec<(String, String)>,
}

impl Fleet {
    async fn new(redis_url: String) -> Self {
        Self::with(redis_url, &[]).await
    }

    /// The fleet's environment with `vars` on top.
    async fn with(redis_url: String, vars: &[(&str, &str)]) -> Self {
        let searxng = SimulatedSearxng::start(&["google"])
            .await
            .expect("simulated SearXNG starts");
        let keys = keys();
        let env = vec![
            ("SEARXNG_BACKEND_URL".to_owned(), searxng.base_url()),
            ("FALLBACK_PROVIDERS".to_owned(), String::new()),
            ("READ_PROVIDERS".to_owned(), String::new()),
            ("FETCH_ALLOW_PRIVATE".to_owned(), "127.0.0.0/8".to_owned()),
            ("FETCH_TIMEOUT_SECONDS".to_owned(), "4".to_owned()),
            ("CRAWL_CONCURRENCY".to_owned(), "2".to_owned()),
            ("REDIS_URL".to_owned(), redis_url),
            ("REDIS_TIMEOUT_MS".to_owned(), "1000".to_owned()),
            (
                "API_KEYS_FILE".to_owned(),
                keys.path().to_str().expect("utf-8").to_owned(),
            ),
            ("LISTEN_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
            ("LOG_LEVEL".to_owned(), "info".to_owned()),
            ("ADMIN_TOKEN".to_owned(), ADMIN.to_owned()),
            (
                "CRAWL_WEBHOOK_SECRET".to_owned(),
                "fleet-webhook-secret-0123456789".to_owned(),
            ),
        ];
        let mut env = env;
        for (name, value) in vars {
            env.retain(|(set, _)| set != name);
            env.push(((*name).to_owned(), (*value).to_owned()));
        }
        Self {
            _searxng: searxng,
            _keys: keys,
            env,
        }
    }

    async fn replica(&self) -> (GatewayProcess, String) {
        let vars: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut process = GatewayProcess::start(&vars);
        let url = process.url().await;
        (process, url)
    }
}

/// Starts a crawl through `base`'s Firecrawl door (`path`: `/v1/crawl` or `/v2/crawl`) as `key`;
/// its ID.
async fn start_crawl(base: &str, path: &str, key: &str, body: Value) -> String {
    let (status, started) = call(
        reqwest::Method::POST,
        &format!("{base}{path}"),
        key,
        Some(body),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    started["id"].as_str().expect("id").to_owned()
}

async fn call(method: reqwest::Method, url: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the gateway answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn job(base: &str, id: &str, key: &str) -> (u16, Value) {
    call(
        reqwest::Method::GET,
        &format!("{base}/v2/crawl/{id}"),
        key,
        None,
    )
    .await
}

/// A replica's `/metrics`.
async fn metrics_text(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text")
}

/// A job's status and every page it lists, `next` followed.
async fn whole_job(base: &str, id: &str, key: &str) -> (Value, Vec<String>) {
    let (_, first) = job(base, id, key).await;
    let mut urls = Vec::new();
    let mut page = first.clone();
    loop {
        urls.extend(
            page["data"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| d["metadata"]["sourceURL"].as_str().expect("url").to_owned()),
        );
        let Some(next) = page["next"].as_str().map(str::to_owned) else {
            break;
        };
        page = call(reqwest::Method::GET, &next, key, None).await.1;
    }
    (first, urls)
}

/// The replicas holding entries of `frontier` given to them and not handed in.
fn holders(redis: &RedisServer, frontier: &str) -> usize {
    let mut connection = redis.connection();
    let summary: redis::Value = redis::cmd("XPENDING")
        .arg(frontier)
        .arg("readers")
        .query(&mut connection)
        .unwrap_or(redis::Value::Nil);
    let Ok((_, _, _, consumers)) = redis::from_redis_value::<(
        u64,
        Option<String>,
        Option<String>,
        Option<Vec<(String, String)>>,
    )>(summary) else {
        return 0;
    };
    consumers.map_or(0, |c| c.len())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crawl_survives_the_replica_that_took_it_and_reads_each_page_once() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let site = slow_site().await;
    let origin = site.origin();
    let fleet = Fleet::new(redis.url()).await;
    let (mut a, a_url) = fleet.replica().await;
    let (_b, b_url) = fleet.replica().await;

    let id = start_crawl(
        &a_url,
        "/v2/crawl",
        ALICE,
        json!({"url": format!("{origin}/"), "limit": 50, "sitemap": "skip"}),
    )
    .await;

    // Both replicas hold URLs of the job (its frontier's pending entries, per consumer).
    let frontier = format!("{PREFIX}{{j:{id}}}:frontier");
    wait::until("both replicas to hold URLs of the job", || {
        let holders = holders(&redis, &frontier);
        async move { holders >= 2 }
    })
    .await;
    let (status, on_b) = job(&b_url, &id, ALICE).await;
    assert_eq!(
        (status, on_b["status"].as_str()),
        (200, Some("scraping")),
        "{on_b}"
    );
    // Another client: no such job, on either replica.
    assert_eq!(job(&b_url, &id, BOB).await.0, 404);
    assert_eq!(job(&a_url, &id, BOB).await.0, 404);
    // A dies with URLs in its hands (SIGKILL: nothing handed in on the way out).
    a.kill().await;

    // B claims what A held once it has been silent long enough, and finishes the job: were A's
    // URLs lost, the job would never have every URL handed in (it would run to CRAWL_MAX_SECONDS).
    wait::until("the job to end on B", || {
        let (b_url, id) = (b_url.clone(), id.clone());
        async move { job(&b_url, &id, ALICE).await.1["status"] != "scraping" }
    })
    .await;
    let (_, done) = job(&b_url, &id, ALICE).await;
    assert_eq!(done["status"], "completed", "{done}");
    let mut urls: Vec<String> = done["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d["metadata"]["sourceURL"].as_str().expect("url").to_owned())
        .collect();
    let listed = urls.len();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), listed, "each page listed once: {urls:?}");
    let mut expected: Vec<String> = std::iter::once(format!("{origin}/"))
        .chain((1..=PAGES).map(|i| format!("{origin}/p/{i}")))
        .collect();
    expected.sort();
    assert_eq!(urls, expected, "every page read, none lost with A");
    assert_eq!(done["completed"], PAGES + 1);
    let text = metrics_text(&b_url).await;
    assert!(
        metric_value(
            &text,
            "searxng_gateway_redis_operations_total",
            &[("operation", "frontier"), ("result", "ok")]
        ) > 0.0,
        "B took URLs from the shared frontier"
    );
    assert!(
        metric_value(&text, "searxng_gateway_crawl_claims_total", &[]) >= 1.0,
        "B claimed what A held when it died"
    );
    assert_eq!(
        metric_value(&text, "searxng_gateway_crawl_frontier_urls", &[]),
        0.0,
        "nothing left waiting once the job ended"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_on_one_replica_ends_the_job_for_all_and_tavily_waits_on_a_shared_job() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let site = slow_site().await;
    let origin = site.origin();
    let fleet = Fleet::new(redis.url()).await;
    let (_a, a_url) = fleet.replica().await;
    let (_b, b_url) = fleet.replica().await;

    let id = start_crawl(
        &a_url,
        "/v2/crawl",
        ALICE,
        json!({"url": format!("{origin}/"), "limit": 50, "sitemap": "skip"}),
    )
    .await;
    wait::until("the job's first page", || {
        let (a_url, id) = (a_url.clone(), id.clone());
        async move { job(&a_url, &id, ALICE).await.1["completed"].as_u64() >= Some(1) }
    })
    .await;
    // The operator sees it on the other replica, as the fleet's.
    let (status, listed) = call(
        reqwest::Method::GET,
        &format!("{b_url}/admin/crawls"),
        ADMIN,
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    let shown = listed["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["id"] == id.as_str())
        .cloned()
        .expect("the job is listed on B");
    assert_eq!(
        (shown["owner"].as_str(), shown["shared"].as_bool()),
        (Some("alice"), Some(true)),
        "{shown}"
    );
    // Bob cannot cancel it; Alice can, on the other replica.
    let bob_cancel = call(
        reqwest::Method::DELETE,
        &format!("{b_url}/v2/crawl/{id}"),
        BOB,
        None,
    )
    .await;
    assert_eq!(bob_cancel.0, 404);
    let (status, cancelled) = call(
        reqwest::Method::DELETE,
        &format!("{b_url}/v2/crawl/{id}"),
        ALICE,
        None,
    )
    .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled")),
        "{cancelled}"
    );
    let hits_at_cancel = site.total_hits();
    assert!(hits_at_cancel < PAGES, "work was left: {hits_at_cancel}");
    let (_, on_a) = job(&a_url, &id, ALICE).await;
    assert_eq!(on_a["status"], "cancelled", "{on_a}");

    // Tavily's crawl waits for its job — here one the fleet shares — on another site; meanwhile
    // the cancelled job reads nothing more than what was in flight (two replicas, two each).
    let other = slow_site().await;
    let (status, answer) = call(
        reqwest::Method::POST,
        &format!("{b_url}/tavily/crawl"),
        ALICE,
        Some(json!({"url": format!("{}/", other.origin()), "max_depth": 1, "limit": 6})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 6, "{answer}");
    assert!(results.iter().all(|r| r["raw_content"]
        .as_str()
        .is_some_and(|t| t.contains("river"))));
    let hits_after = site.total_hits();
    assert!(
        hits_after <= hits_at_cancel + 4,
        "a cancelled job stops reading: {hits_at_cancel} → {hits_after}"
    );
    let (_, still) = job(&b_url, &id, ALICE).await;
    assert_eq!(still["status"], "cancelled", "{still}");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_redis_cluster_a_crawl_is_shared_by_the_replicas() {
    needs!(RedisServer);
    let cluster = RedisCluster::start().await;
    let site = slow_site().await;
    let origin = site.origin();
    let fleet = Fleet::new(cluster.url()).await;
    let (_a, a_url) = fleet.replica().await;
    let (_b, b_url) = fleet.replica().await;
    let receiver = crate::crawl_jobs::Receiver::start("127.0.0.1").await;
    let (status, started) = call(
        reqwest::Method::POST,
        &format!("{a_url}/v2/crawl"),
        ALICE,
        Some(
            json!({"url": format!("{origin}/"), "limit": 6, "sitemap": "skip",
            "webhook": {"url": receiver.url, "events": ["page", "completed"]}}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    wait::until("the job to end", || {
        let (b_url, id) = (b_url.clone(), id.clone());
        async move { job(&b_url, &id, ALICE).await.1["status"] != "scraping" }
    })
    .await;
    let (_, done) = job(&b_url, &id, ALICE).await;
    assert_eq!(
        (done["status"].as_str(), done["completed"].as_u64()),
        (Some("completed"), Some(6)),
        "{done}"
    );
    let text = metrics_text(&b_url).await;
    assert_eq!(
        metric_value(
            &text,
            "searxng_gateway_redis_operations_total",
            &[("operation", "frontier"), ("result", "error")]
        ),
        0.0,
        "no cross-slot refusal: {text}"
    );
    // Each page's event sent once, by the replica that kept it; then the end, once.
    wait::until("the webhook's seven events", || {
        let n = receiver.raw().len();
        async move { n >= 7 }
    })
    .await;
    let events = receiver.events();
    let mut pages: Vec<String> = events
        .iter()
        .filter(|(_, e)| e["type"] == "crawl.page")
        .map(|(_, e)| {
            e["data"][0]["metadata"]["sourceURL"]
                .as_str()
                .expect("url")
                .to_owned()
        })
        .collect();
    pages.sort();
    pages.dedup();
    assert_eq!(pages.len(), 6, "{events:?}");
    assert_eq!(
        events
            .iter()
            .filter(|(_, e)| e["type"] == "crawl.completed")
            .count(),
        1
    );
    assert_eq!(events.len(), 7, "no event twice: {events:?}");
}

/// Behind Sentinel (`redis+sentinel://`), as for the rest of the shared tier: a crawl started on
/// one replica is worked on by both (each takes URLs from its frontier), through the master the
/// Sentinels name, and completes.
#[tokio::test(flavor = "multi_thread")]
async fn behind_redis_sentinel_a_crawl_is_shared_by_the_replicas() {
    needs!(RedisServer);
    needs!(RedisSentinel);
    let sentinels = crate::support::redis_sentinel::RedisSentinels::start().await;
    let site = slow_site().await;
    let origin = site.origin();
    let fleet = Fleet::new(sentinels.url()).await;
    let (_a, a_url) = fleet.replica().await;
    let (_b, b_url) = fleet.replica().await;
    let id = start_crawl(
        &a_url,
        "/v2/crawl",
        ALICE,
        json!({"url": format!("{origin}/"), "limit": 50, "sitemap": "skip"}),
    )
    .await;
    wait::until("the job to end", || {
        let (b_url, id) = (b_url.clone(), id.clone());
        async move { job(&b_url, &id, ALICE).await.1["status"] != "scraping" }
    })
    .await;
    let (done, urls) = whole_job(&b_url, &id, ALICE).await;
    assert_eq!(
        (done["status"].as_str(), urls.len()),
        (Some("completed"), PAGES + 1),
        "{done}"
    );
    for replica in [&a_url, &b_url] {
        let text = metrics_text(replica).await;
        assert!(
            metric_value(
                &text,
                "searxng_gateway_redis_operations_total",
                &[("operation", "frontier"), ("result", "ok")]
            ) > 0.0,
            "{replica} took URLs from the job's shared frontier"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_redis_a_crawl_resumes_after_a_restart_from_state_dir() {
    let site = slow_site().await;
    let origin = site.origin();
    let redis_less = Fleet::new(String::new()).await;
    let state = tempfile::tempdir().expect("temp dir");
    let mut env: Vec<(String, String)> = redis_less
        .env
        .iter()
        .filter(|(k, _)| !k.starts_with("REDIS_"))
        .cloned()
        .collect();
    env.push((
        "STATE_DIR".to_owned(),
        state.path().to_str().expect("utf-8").to_owned(),
    ));
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut first = GatewayProcess::start(&vars);
    let first_url = first.url().await;
    let (status, started) = call(
        reqwest::Method::POST,
        &format!("{first_url}/v2/crawl"),
        ALICE,
        Some(json!({"url": format!("{origin}/"), "limit": 50, "sitemap": "skip"})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    wait::until("a few pages read", || {
        let (url, id) = (first_url.clone(), id.clone());
        async move { job(&url, &id, ALICE).await.1["completed"].as_u64() >= Some(3) }
    })
    .await;
    // Killed mid-crawl (nothing written on the way out), started again on the same directory.
    first.kill().await;
    let mut second = GatewayProcess::start(&vars);
    let second_url = second.url().await;
    second.wait_for_line("crawl jobs taken back").await;
    wait::until("the resumed job to end", || {
        let (url, id) = (second_url.clone(), id.clone());
        async move { job(&url, &id, ALICE).await.1["status"] != "scraping" }
    })
    .await;
    let (_, done) = job(&second_url, &id, ALICE).await;
    assert_eq!(done["status"], "completed", "{done}");
    let mut urls: Vec<String> = done["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d["metadata"]["sourceURL"].as_str().expect("url").to_owned())
        .collect();
    let listed = urls.len();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), listed, "each page listed once: {urls:?}");
    assert_eq!(
        listed,
        PAGES + 1,
        "every page, those read before the restart kept: {urls:?}"
    );
    // Another client still has no such job after the restart.
    assert_eq!(job(&second_url, &id, BOB).await.0, 404);
}

/// Point 6 of #43: a generated site of about 130 pages with a crawler's traps — `robots.txt`
/// disallowing a path every article links to, with a crawl delay; a sitemap index; a calendar of
/// 480 months; session ids in links; a page that 500s; a redirect to another host — crawled by
/// three replicas, one SIGKILLed while all three hold URLs: the job completes with every page of
/// the graph listed exactly once, no disallowed page ever requested, the calendar held to the
/// trap guard's cap, the 500 among the errors, nothing beyond the other host's landing page read.
#[tokio::test(flavor = "multi_thread")]
async fn three_replicas_crawl_a_site_full_of_traps_each_page_once_through_a_replicas_death() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let url = redis.url();
    three_replicas_through_a_death(&url, || async {
        redis::Client::open(url.as_str())
            .expect("a client")
            .get_multiplexed_async_connection()
            .await
            .expect("a connection")
    })
    .await;
}

/// The same on a Redis Cluster: the job's keys in one slot, the frontier's pending entries
/// read where the cluster keeps them.
#[tokio::test(flavor = "multi_thread")]
async fn on_a_redis_cluster_three_replicas_crawl_a_site_full_of_traps_through_a_replicas_death() {
    needs!(RedisServer);
    let cluster = RedisCluster::start().await;
    let url = cluster.url();
    let nodes: Vec<String> = url
        .trim_start_matches("redis+cluster://")
        .split(',')
        .map(|node| format!("redis://{node}"))
        .collect();
    three_replicas_through_a_death(&url, || async {
        redis::cluster::ClusterClient::new(nodes.clone())
            .expect("a cluster client")
            .get_async_connection()
            .await
            .expect("a cluster connection")
    })
    .await;
}

/// The replicas holding entries of `frontier` given to them and not handed in, over `connection`.
async fn pending_holders(
    connection: &mut impl redis::aio::ConnectionLike,
    frontier: &str,
) -> usize {
    let summary: redis::Value = redis::cmd("XPENDING")
        .arg(frontier)
        .arg("readers")
        .query_async(connection)
        .await
        .unwrap_or(redis::Value::Nil);
    let Ok((_, _, _, consumers)) = redis::from_redis_value::<(
        u64,
        Option<String>,
        Option<String>,
        Option<Vec<(String, String)>>,
    )>(summary) else {
        return 0;
    };
    consumers.map_or(0, |c| c.len())
}

async fn three_replicas_through_a_death<C, F>(redis_url: &str, connect: impl Fn() -> F)
where
    C: redis::aio::ConnectionLike,
    F: std::future::Future<Output = C>,
{
    use simulator::site_graph::{
        GraphSpec, SiteGraph, AWAY_PATH, BROKEN_PATH, CALENDAR_PREFIX, DISALLOWED_PREFIX,
    };
    let site = SimulatedSite::start().await.expect("site starts");
    let elsewhere = SimulatedSite::start().await.expect("site starts");
    let graph = SiteGraph::build(
        &site,
        &elsewhere,
        &GraphSpec {
            pace: Some(Duration::from_millis(40)),
            ..GraphSpec::default()
        },
    );
    let origin = site.origin();
    let fleet = Fleet::with(redis_url.to_owned(), &[("CRAWL_PER_HOST_CONCURRENCY", "6")]).await;
    let (mut a, a_url) = fleet.replica().await;
    let (_b, b_url) = fleet.replica().await;
    let (_c, c_url) = fleet.replica().await;

    let id = start_crawl(
        &a_url,
        "/v2/crawl",
        ALICE,
        json!({"url": format!("{origin}/"), "limit": 1000, "maxDiscoveryDepth": 40}),
    )
    .await;
    let frontier = format!("{PREFIX}{{j:{id}}}:frontier");
    let mut connection = connect().await;
    for _ in 0..3000 {
        if pending_holders(&mut connection, &frontier).await >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        pending_holders(&mut connection, &frontier).await >= 3,
        "the three replicas hold URLs of the job"
    );
    a.kill().await;

    wait::until("the job to end on C", || {
        let (c_url, id) = (c_url.clone(), id.clone());
        async move { job(&c_url, &id, ALICE).await.1["status"] != "scraping" }
    })
    .await;
    let (done, urls) = whole_job(&b_url, &id, ALICE).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["completed"],
        urls.len(),
        "the count is the pages listed"
    );
    let (_, explained) = call(
        reqwest::Method::GET,
        &format!("{b_url}/v2/crawl/{id}?explain=1"),
        ALICE,
        None,
    )
    .await;
    let why = &explained["gateway"];
    assert_eq!(why["runs"], "fleet", "{why}");
    assert_eq!(why["urls"]["read"], urls.len(), "{why}");
    assert_eq!(
        why["urls"]["robots_blocked"], 120,
        "every article's /private/ link refused by robots.txt: {why}"
    );
    let mut unique = urls.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), urls.len(), "each page listed once");
    let (calendar, rest): (Vec<&String>, Vec<&String>) =
        unique.iter().partition(|url| graph.is_calendar(url));
    let mut expected = graph.urls();
    expected.sort();
    let rest: Vec<String> = rest.into_iter().cloned().collect();
    // The redirect's page may be listed (under its own URL or where it landed); nothing else
    // beyond the graph.
    let off_site = [
        format!("{origin}{AWAY_PATH}"),
        SiteGraph::landing(&elsewhere),
    ];
    let graph_pages: Vec<String> = rest
        .iter()
        .filter(|u| !off_site.contains(u))
        .cloned()
        .collect();
    assert_eq!(
        graph_pages, expected,
        "every page of the graph (the sitemap's hidden one too), and no other"
    );
    // The trap guard counts the calendar's path shape in Redis, for the fleet: exactly its cap
    // (counted by each replica, it was up to three times that; counting links already seen, far
    // fewer).
    assert_eq!(
        calendar.len(),
        gateway_engine::crawl::scope::MAX_PER_PATTERN,
        "the calendar held to the trap guard, fleet-wide"
    );
    assert!(calendar.iter().all(|url| url.contains(CALENDAR_PREFIX)));
    // robots.txt: nothing disallowed was ever asked for, by any replica.
    let asked: usize = (0..6)
        .flat_map(|k| (0..20).map(move |j| format!("{DISALLOWED_PREFIX}{k}-{j}")))
        .map(|path| site.hits(&path))
        .sum();
    assert_eq!(asked, 0, "no disallowed page requested");
    assert_eq!(
        elsewhere.hits("/onward"),
        0,
        "the other host's links are not followed"
    );
    // Session ids: dropped from links, so one page has one URL.
    assert!(
        urls.iter().all(|url| !url.contains("sid=")),
        "session ids dropped from links: one page, one URL"
    );
    let (_, errors) = call(
        reqwest::Method::GET,
        &format!("{c_url}/v2/crawl/{id}/errors"),
        ALICE,
        None,
    )
    .await;
    let broken = format!("{origin}{BROKEN_PATH}");
    assert!(
        errors["errors"]
            .as_array()
            .is_some_and(|list| list.iter().any(|e| e["url"] == broken.as_str())),
        "the 500 is an error: {errors}"
    );
    // B and C both read pages of it; a claim took what A held.
    let (mut read_by, mut claims) = (Vec::new(), 0.0);
    for url in [&b_url, &c_url] {
        let text = metrics_text(url).await;
        read_by.push(metric_value(
            &text,
            "searxng_gateway_crawl_pages_total",
            &[("outcome", "read")],
        ));
        claims += metric_value(&text, "searxng_gateway_crawl_claims_total", &[]);
    }
    assert!(
        read_by.iter().all(|&n| n > 0.0),
        "both survivors read: {read_by:?}"
    );
    assert!(claims >= 1.0, "a survivor claimed what A held when it died");
}
