//! The Grafana dashboard against a real Prometheus: scripted traffic through the simulated SearXNG and
//! premium APIs makes every panel's series exist, Prometheus scrapes the gateway every second, and then
//! every query of every panel is evaluated through Prometheus' HTTP API. A query that errors, or returns
//! no series, names its panel in the failure.
//!
//! The row of per-SearXNG-instance panels only has data for a pool (`SEARXNG_BACKEND_URL` with several URLs):
//! the first test checks every other panel with one instance, the second that row with a pool of two.
//!
//! The same Prometheus loads `examples/prometheus/alerts.yml`, so a rule file Prometheus cannot load
//! fails start-up, and a rule that errors when evaluated against the gateway's real series fails the test.
//!
//! Needs the `prometheus` binary (Debian package `prometheus`; `scripts/test.sh` installs it).

use crate::support::external::needs;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::Value;
use simulator::premium::{ProviderBehaviour, SimError, SimulatedProvider, SIM_KEY};
use simulator::readers::{Reader, SimulatedReader};
use simulator::searxng::{
    EngineBehaviour, EngineFailure, SearxngMode, SimulatedSearxng, DEFAULT_RESULTS_PER_ENGINE,
};
use simulator::site::{Page, SimulatedSite};
use simulator::Provider;
use tempfile::TempDir;

use crate::support::gateway::{metric_value, Reply, TestGateway};
use crate::support::wait;

/// Panels that legitimately show nothing after the scripted traffic: (title, why). Keep it empty if you can.
const PANELS_WITHOUT_DATA: &[(&str, &str)] = &[];

/// A non-default metrics path, so the scrape proves `METRICS_PATH` is honoured.
const METRICS_PATH: &str = "/internal/metrics";

#[tokio::test(flavor = "multi_thread")]
async fn every_dashboard_panel_shows_data_from_a_real_prometheus_scrape() {
    needs!(Prometheus);
    let started = Instant::now();
    let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
        .await
        .expect("start the simulated SearXNG");
    let brave = SimulatedProvider::start(Provider::Brave)
        .await
        .expect("start the simulated Brave API");
    let exa = SimulatedProvider::start(Provider::Exa)
        .await
        .expect("start the simulated Exa API");
    let site = SimulatedSite::start()
        .await
        .expect("start the site pages are read from");
    let jina = SimulatedReader::start(Reader::Jina)
        .await
        .expect("start the simulated Jina Reader");
    let searxng_url = searxng.base_url();
    let brave_url = brave.base_url();
    let exa_url = exa.base_url();
    let jina_url = jina.base_url();
    let gateway = TestGateway::start(&[
        ("READ_PROVIDERS", "jina"),
        ("JINA_READER_BASE_URL", &jina_url),
        ("JINA_API_KEY", SIM_KEY),
        ("FETCH_ALLOW_PRIVATE", "127.0.0.0/8"),
        ("SEARXNG_BACKEND_URL", &searxng_url),
        ("FALLBACK_PROVIDERS", "brave,exa"),
        ("BRAVE_API_KEY", SIM_KEY),
        ("BRAVE_BASE_URL", &brave_url),
        ("EXA_API_KEY", SIM_KEY),
        ("EXA_BASE_URL", &exa_url),
        ("T1_PREMIUM_COUNT", "1"),
        ("BREAKER_OPEN_SECONDS", "2"),
        ("BREAKER_MAX_OPEN_SECONDS", "4"),
        ("SEARXNG_FAIL_THRESHOLD", "2"),
        ("SEARXNG_FAIL_COOLDOWN_SECONDS", "60"),
        ("FALLBACK_TIMEOUT_SECONDS", "5"),
        ("SEARXNG_TIMEOUT_SECONDS", "2"),
        ("PROVIDER_TIMEOUT_SECONDS", "2"),
        ("CACHE_SIZE", "100"),
        ("CACHE_TTL_SECONDS", "600"),
        ("METRICS_PATH", METRICS_PATH),
    ])
    .await;
    gateway.wait_for_catalog().await;
    let target = gateway.url.trim_start_matches("http://").to_owned();
    let prometheus = Prometheus::start(&target, METRICS_PATH, &repo_path(ALERTS)).await;
    prometheus.assert_rule_groups_loaded().await;
    // Prometheus applies new scrape targets only every few seconds: counters that move before its
    // first scrape would show no rate at all.
    prometheus.wait_for_first_scrape().await;

    drive_every_panel(&gateway, &searxng, &brave, &exa).await;
    read_pages(&gateway, &site, &jina).await;

    let queries: Vec<PanelQuery> = load_dashboard()
        .into_iter()
        .filter(|q| !q.pool_row)
        .collect();
    let failures = prometheus.wait_for_every_panel(&queries).await;
    assert!(
        failures.is_empty(),
        "{} dashboard quer{} without data after {:?}:\n  {}\n{}\nPrometheus log:\n{}",
        failures.len(),
        if failures.len() == 1 { "y" } else { "ies" },
        wait::HANG_GUARD,
        failures.join("\n  "),
        prometheus.scrape_health().await,
        prometheus.log(),
    );
    prometheus.assert_rules_evaluate().await;
    eprintln!(
        "dashboard: every panel has data ({:.1}s)",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_per_instance_panel_shows_data_for_a_pool() {
    needs!(Prometheus);
    let searxng = [
        SimulatedSearxng::start(&["alpha", "beta"])
            .await
            .expect("start the first simulated SearXNG"),
        SimulatedSearxng::start(&["alpha", "beta"])
            .await
            .expect("start the second simulated SearXNG"),
    ];
    let urls = format!("{},{}", searxng[0].base_url(), searxng[1].base_url());
    let gateway = TestGateway::start(&[
        ("SEARXNG_BACKEND_URL", &urls),
        ("SEARXNG_FAIL_THRESHOLD", "1"),
        ("SEARXNG_FAIL_COOLDOWN_SECONDS", "600"),
        ("CACHE_SIZE", "0"),
        ("METRICS_PATH", METRICS_PATH),
    ])
    .await;
    gateway.wait_for_catalog().await;
    let target = gateway.url.trim_start_matches("http://").to_owned();
    let prometheus = Prometheus::start(&target, METRICS_PATH, &repo_path(ALERTS)).await;
    prometheus.wait_for_first_scrape().await;

    // Both instances serve ("Calls per SearXNG instance", "Latency p95 per SearXNG instance"; the breaker and
    // cooldown series exist from the first search); then the first fails with 500s: its failed attempts are
    // retried on the second ("Failed attempts per SearXNG instance") and it is ejected ("Cooldown per SearXNG
    // instance").
    for i in 0..6 {
        let reply = search(&gateway, &format!("pool healthy {i}")).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    searxng[0].set_mode(SearxngMode::Status(500));
    let failing = searxng[0].address().to_string();
    let mut i = 0;
    wait::until("the failing instance to be ejected", || {
        i += 1;
        let query = format!("pool failover {i}");
        let (gateway, failing) = (&gateway, &failing);
        async move {
            let reply = search(gateway, &query).await;
            assert_eq!(reply.outcome, "searxng_ok", "{}", reply.text);
            gateway
                .metric(
                    "searxng_gateway_searxng_cooldown_active",
                    &[("searxng_instance", failing)],
                )
                .await
                == 1.0
        }
    })
    .await;

    let queries: Vec<PanelQuery> = load_dashboard()
        .into_iter()
        .filter(|q| q.pool_row)
        .collect();
    assert!(!queries.is_empty(), "the dashboard has a per-instance row");
    let failures = prometheus.wait_for_every_panel(&queries).await;
    assert!(
        failures.is_empty(),
        "per-instance panels without data after {:?}:\n  {}\n{}",
        wait::HANG_GUARD,
        failures.join("\n  "),
        prometheus.scrape_health().await,
    );
}

/// The traffic, in phases; each comment names the panels whose series the phase creates.
/// "Reading pages": one page read directly, one blocked (a Cloudflare challenge) and read by the
/// premium reader instead, and the first again from the page cache.
async fn read_pages(gateway: &TestGateway, site: &SimulatedSite, jina: &SimulatedReader) {
    site.set(
        "/article",
        Page::ok(
            "text/plain",
            "An article of plain text, read directly by the gateway.",
        ),
    );
    site.set("/walled", Page::cloudflare_challenge());
    for urls in [
        vec![site.url("/article"), site.url("/walled")],
        vec![site.url("/article")],
    ] {
        let response = gateway
            .http
            .post(format!("{}/tavily/extract", gateway.url))
            .bearer_auth("dashboard")
            .json(&serde_json::json!({ "urls": urls }))
            .send()
            .await
            .expect("extract answers");
        let reply = TestGateway::reply(response).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(
            reply.json["results"].as_array().map(Vec::len),
            Some(urls.len()),
            "{}",
            reply.text
        );
    }
    assert_eq!(
        jina.calls(),
        1,
        "the blocked page went to the premium reader"
    );
}

async fn drive_every_panel(
    gateway: &TestGateway,
    searxng: &SimulatedSearxng,
    brave: &SimulatedProvider,
    exa: &SimulatedProvider,
) {
    // Healthy: SearXNG answers with every engine, the T1 pass alternates brave and exa. "Requests by
    // outcome", "Request/Upstream latency", "Results per SearXNG engine", "Results per premium provider",
    // "Premium calls", "Reported premium spend" (Exa reports costDollars), "Brave …" (X-RateLimit-*).
    for query in ["healthy one", "healthy two", "healthy three"] {
        let reply = search(gateway, query).await;
        assert_eq!(reply.status, 200, "{query}: {}", reply.text);
        assert_eq!(reply.cache, "miss", "{query}");
    }
    assert!(
        brave.calls() >= 1 && exa.calls() >= 1,
        "T1 alternates providers"
    );
    // "Cache hit rate": the same query again.
    let again = search(gateway, "healthy one").await;
    assert_eq!(again.outcome, "cache_hit");
    // "Requests by surface": the same searches through the Tavily API and the MCP tool.
    search_through_tavily_and_mcp(gateway, "healthy two").await;

    // An engine blocked (429 behind SearXNG) trips its breaker at once: "Unresponsive SearXNG engines",
    // "Breaker trips by reason", "Circuit breaker state", "Open breakers". Exa rate-limits the gateway:
    // "Premium provider failures" and a provider trip.
    searxng.set_engine(
        "alpha",
        EngineBehaviour::Fails(EngineFailure::TooManyRequests),
    );
    exa.set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
        retry_after_secs: 1,
    }));
    for query in ["blocked one", "blocked two"] {
        let reply = search(gateway, query).await;
        assert_eq!(reply.status, 200, "{query}: {}", reply.text);
    }
    let metrics = gateway.metrics_text().await;
    let trips = metric_value(
        &metrics,
        "searxng_gateway_circuit_breaker_trips_total",
        &[
            ("engine", "alpha"),
            ("kind", "engine"),
            ("reason", "rate_limited"),
        ],
    );
    assert!(trips >= 1.0, "alpha's breaker tripped on too many requests");
    // While alpha is open the next searches leave it out: "Breaker rejections".
    let reply = search(gateway, "blocked three").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let rejected = gateway
        .metric(
            "searxng_gateway_circuit_breaker_rejections_total",
            &[("engine", "alpha"), ("kind", "engine")],
        )
        .await;
    assert!(rejected >= 1.0, "alpha was excluded while open");

    // Healed: once the open period (2 s) ends, the gateway's own probe of alpha closes it: "Breaker
    // recoveries" (the recovery and the probe's outcome).
    searxng.set_engine(
        "alpha",
        EngineBehaviour::Ok {
            results: DEFAULT_RESULTS_PER_ENGINE,
        },
    );
    exa.set_behaviour(ProviderBehaviour::results(5, "https://exa.example/"));
    let mut probe = 0;
    wait::until("alpha's breaker to recover", || {
        probe += 1;
        let query = format!("recovery {probe}");
        async move {
            let reply = search(gateway, &query).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            gateway
                .metric(
                    "searxng_gateway_circuit_breaker_recovery_total",
                    &[("engine", "alpha"), ("kind", "engine")],
                )
                .await
                >= 1.0
        }
    })
    .await;

    // Everything failing: SearXNG answers 500 (retried, then exhausted) and both providers fail, so the
    // answer is a 502: "Requests by outcome" (fallback_fail), "SearXNG retries exhausted", "SearXNG calls by
    // result". Two failed SearXNG calls start the cooldown and the third search skips SearXNG: "SearXNG
    // cooldown", "skipped (cooldown)".
    searxng.set_mode(SearxngMode::Status(500));
    brave.set_behaviour(ProviderBehaviour::Error(SimError::Server));
    exa.set_behaviour(ProviderBehaviour::Error(SimError::Server));
    for query in ["outage one", "outage two", "outage three"] {
        let reply = search(gateway, query).await;
        assert_eq!(reply.status, 502, "{query}: {}", reply.text);
        assert_eq!(reply.outcome, "fallback_fail", "{query}");
    }
    let metrics = gateway.metrics_text().await;
    assert_eq!(
        metric_value(&metrics, "searxng_gateway_searxng_cooldown_active", &[]),
        1.0,
        "two failed SearXNG calls started the cooldown"
    );
    assert!(metric_value(&metrics, "searxng_gateway_searxng_skipped_total", &[]) >= 1.0);
}

/// One search through the Tavily-compatible API and one through the MCP tool (Streamable HTTP).
async fn search_through_tavily_and_mcp(gateway: &TestGateway, query: &str) {
    let tavily = gateway
        .http
        .post(format!("{}/tavily/search", gateway.url))
        .bearer_auth("tvly-dashboard")
        .json(&serde_json::json!({ "query": query }))
        .send()
        .await
        .expect("the Tavily API answers");
    assert_eq!(tavily.status(), 200);
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp", gateway.url));
    let client = ().serve(transport).await.expect("the MCP client connects");
    let arguments = serde_json::json!({ "query": query })
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("web_search").with_arguments(arguments))
        .await
        .expect("web_search answers");
    assert_eq!(result.is_error, Some(false));
    client.cancel().await.expect("the MCP client disconnects");
}

async fn search(gateway: &TestGateway, query: &str) -> Reply {
    gateway.search(&[("q", query), ("format", "json")]).await
}

/// The dashboard, relative to the repository root.
const DASHBOARD: &str = "examples/grafana/searxng-gateway-dashboard.json";

/// The alert rules, relative to the repository root.
const ALERTS: &str = "examples/prometheus/alerts.yml";

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// One query of one panel.
#[derive(Debug)]
struct PanelQuery {
    title: String,
    ref_id: String,
    expr: String,
    /// Labels the legend shows (`{{engine}}`): each must be on the series the query returns.
    legend_labels: Vec<String>,
    /// In the row of per-SearXNG-instance panels, which has data only for a pool.
    pool_row: bool,
}

/// The title of the row whose panels show one series per SearXNG instance of a pool.
const POOL_ROW: &str = "SearXNG instances (pool)";

/// Every target of every non-row panel (rows' own nested panels included), with Grafana's
/// `$__rate_interval` replaced by the 5m the check script also uses.
fn load_dashboard() -> Vec<PanelQuery> {
    let path = repo_path(DASHBOARD);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    let dashboard: Value = serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()));
    let mut queries = Vec::new();
    collect_queries(&dashboard["panels"], false, &mut queries);
    assert!(!queries.is_empty(), "{DASHBOARD} has no panel queries");
    for (title, _) in PANELS_WITHOUT_DATA {
        assert!(
            queries.iter().any(|q| q.title == *title),
            "PANELS_WITHOUT_DATA names {title:?}, which the dashboard no longer has"
        );
    }
    queries
}

fn collect_queries(panels: &Value, pool_row: bool, queries: &mut Vec<PanelQuery>) {
    for panel in panels.as_array().into_iter().flatten() {
        collect_queries(
            &panel["panels"],
            pool_row || panel["title"] == POOL_ROW,
            queries,
        );
        if panel["type"] == "row" {
            continue;
        }
        let title = panel["title"].as_str().unwrap_or("(untitled)").to_owned();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or("").trim();
            assert!(
                !expr.is_empty(),
                "panel {title:?} has a target without expr"
            );
            queries.push(PanelQuery {
                title: title.clone(),
                ref_id: target["refId"].as_str().unwrap_or("?").to_owned(),
                expr: expr.replace("$__rate_interval", "5m"),
                legend_labels: legend_labels(target["legendFormat"].as_str().unwrap_or("")),
                pool_row,
            });
        }
    }
}

/// The label names a Grafana legend interpolates: `{{kind}}: {{engine}}` → `kind`, `engine`.
fn legend_labels(legend: &str) -> Vec<String> {
    legend
        .split("{{")
        .skip(1)
        .filter_map(|rest| rest.split_once("}}"))
        .map(|(name, _)| name.trim().to_owned())
        .collect()
}

/// A Prometheus server on a free loopback port with its own storage; killed when dropped.
struct Prometheus {
    child: Child,
    url: String,
    http: reqwest::Client,
    /// Config, TSDB and log; removed after `Drop` has killed the process.
    dir: TempDir,
}

impl Prometheus {
    /// Writes a config scraping `target` (`host:port`) at `metrics_path` every second with `rules`
    /// loaded, starts `prometheus` and waits until it is ready.
    async fn start(target: &str, metrics_path: &str, rules: &Path) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("prometheus-")
            .tempdir()
            .expect("create a temporary directory for Prometheus");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, config_yaml(target, metrics_path, rules))
            .expect("write prometheus.yml");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("build the Prometheus client");
        // Port 0: Prometheus binds a port the kernel chooses and logs it ("Listening on").
        let mut child = spawn(dir.path(), &config);
        let port = listening_port(dir.path(), &mut child).await;
        let url = format!("http://127.0.0.1:{port}");
        if let Err(why) = wait_ready(&http, &url, &mut child).await {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "Prometheus on port {port} {why}; its log:\n{}",
                read_log(dir.path())
            );
        }
        Prometheus {
            child,
            url,
            http,
            dir,
        }
    }

    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, String> {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .query(query)
            .send()
            .await
            .map_err(|err| format!("{path}: {err}"))?;
        let body: Value = response
            .json()
            .await
            .map_err(|err| format!("{path}: not JSON: {err}"))?;
        if body["status"] == "success" {
            Ok(body["data"].clone())
        } else {
            Err(format!("{}: {}", body["errorType"], body["error"]))
        }
    }

    /// Checks that Prometheus loaded the alert rule file: the group is there with rules in it.
    async fn assert_rule_groups_loaded(&self) {
        let data = self
            .api("/api/v1/rules", &[])
            .await
            .expect("GET /api/v1/rules");
        let groups = data["groups"].as_array().cloned().unwrap_or_default();
        assert!(
            groups.iter().any(|group| group["name"] == "searxng-gateway"
                && group["rules"].as_array().is_some_and(|r| !r.is_empty())),
            "Prometheus did not load the searxng-gateway rule group from {ALERTS}: {data}"
        );
    }

    /// Checks that every rule has been evaluated against the scraped series without an error.
    async fn assert_rules_evaluate(&self) {
        let data = self
            .api("/api/v1/rules", &[])
            .await
            .expect("GET /api/v1/rules");
        let broken: Vec<String> = data["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
            .filter(|rule| rule["health"] == "err")
            .map(|rule| format!("{}: {}", rule["name"], rule["lastError"]))
            .collect();
        assert!(
            broken.is_empty(),
            "alert rules failing to evaluate: {broken:?}"
        );
    }

    /// Waits until Prometheus has scraped the gateway once (`up` is 1).
    async fn wait_for_first_scrape(&self) {
        wait::until("Prometheus to scrape the gateway once", || async {
            self.api(
                "/api/v1/query",
                &[("query", "up{job=\"searxng-gateway\"} == 1")],
            )
            .await
            .is_ok_and(|data| data["result"].as_array().is_some_and(|r| !r.is_empty()))
        })
        .await;
    }

    /// Evaluates every query until each returns data, or the hang guard passes; returns the
    /// queries still without data, one line each.
    async fn wait_for_every_panel(&self, queries: &[PanelQuery]) -> Vec<String> {
        wait::settle(|| async {
            let mut failures = Vec::new();
            for query in queries {
                if PANELS_WITHOUT_DATA.iter().any(|(t, _)| *t == query.title) {
                    continue;
                }
                if let Err(why) = self.has_data(query).await {
                    failures.push(format!(
                        "{:?} [{}] `{}`: {why}",
                        query.title, query.ref_id, query.expr
                    ));
                }
            }
            failures
        })
        .await
    }

    /// An instant query at "now" that returns at least one series (or a scalar) with a number — a
    /// value of 0 is data, NaN (0/0, a quantile of empty buckets) is not — carrying every label
    /// the panel's legend shows.
    async fn has_data(&self, query: &PanelQuery) -> Result<(), String> {
        let data = self.api("/api/v1/query", &[("query", &query.expr)]).await?;
        let series: Vec<(&Value, &Value)> = match data["resultType"].as_str() {
            Some("vector") => data["result"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|series| (&series["metric"], &series["value"][1]))
                .collect(),
            Some("scalar") => vec![(&Value::Null, &data["result"][1])],
            other => return Err(format!("unexpected result type {other:?}")),
        };
        if series.is_empty() {
            return Err("no series".to_owned());
        }
        let numbers = series
            .iter()
            .filter_map(|(_, value)| value.as_str()?.parse::<f64>().ok())
            .filter(|value| !value.is_nan())
            .count();
        if numbers == 0 {
            return Err(format!("{} series, all NaN", series.len()));
        }
        let missing: Vec<&str> = query
            .legend_labels
            .iter()
            .filter(|label| {
                !series
                    .iter()
                    .all(|(metric, _)| metric.get(label.as_str()).is_some())
            })
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the legend shows {missing:?}, which the series do not carry: {}",
                data["result"]
            ));
        }
        Ok(())
    }

    /// Everything Prometheus logged so far, for failure messages.
    fn log(&self) -> String {
        read_log(self.dir.path())
    }

    /// What Prometheus says about its scrape of the gateway, for failure messages.
    async fn scrape_health(&self) -> String {
        match self.api("/api/v1/targets", &[]).await {
            Ok(data) => data["activeTargets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    format!(
                        "scrape {}: health {}, last error {}",
                        t["scrapeUrl"], t["health"], t["lastError"]
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(err) => format!("/api/v1/targets: {err}"),
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config_yaml(target: &str, metrics_path: &str, rules: &Path) -> String {
    // JSON strings are valid YAML scalars, whatever the path contains.
    let quote = |text: &str| Value::from(text).to_string();
    format!(
        "global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
scrape_configs:
  - job_name: searxng-gateway
    metrics_path: {path}
    static_configs:
      - targets: [{target}]
",
        rules = quote(&rules.to_string_lossy()),
        path = quote(metrics_path),
        target = quote(target),
    )
}

/// The port a Prometheus started on port 0 logged it listens on (`msg="Listening on"
/// address=127.0.0.1:PORT`); panics with the log if it exits first.
async fn listening_port(dir: &Path, child: &mut Child) -> u16 {
    let mut port = None;
    wait::until("Prometheus to log the port it listens on", || {
        let log = read_log(dir);
        port = log
            .lines()
            .filter(|line| line.contains("msg=\"Listening on\""))
            .find_map(|line| {
                line.rsplit("address=127.0.0.1:")
                    .next()?
                    .trim()
                    .parse()
                    .ok()
            });
        let exited = child.try_wait().ok().flatten();
        assert!(
            exited.is_none(),
            "Prometheus exited ({exited:?}); its log:\n{log}"
        );
        std::future::ready(port.is_some())
    })
    .await;
    port.unwrap_or_default()
}

fn spawn(dir: &Path, config: &Path) -> Child {
    let log = File::create(dir.join("prometheus.log")).expect("create Prometheus' log file");
    Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg("--web.listen-address=127.0.0.1:0")
        .arg("--log.level=info")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("share Prometheus' log file"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|err| {
            panic!(
                "cannot start `prometheus` ({err}): install it with `apt-get install prometheus` \
                 (scripts/test.sh does)"
            )
        })
}

async fn wait_ready(http: &reqwest::Client, url: &str, child: &mut Child) -> Result<(), String> {
    let mut exited = None;
    wait::until("Prometheus to be ready", || {
        exited = child.try_wait().ok().flatten();
        let done = exited.is_some();
        async move {
            done || http
                .get(format!("{url}/-/ready"))
                .send()
                .await
                .is_ok_and(|response| response.status().is_success())
        }
    })
    .await;
    match exited {
        Some(status) => Err(format!("exited during start-up ({status})")),
        None => Ok(()),
    }
}

fn read_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
}
