//! Spawns the real gateway (the same `serve` the binary uses) on 127.0.0.1:0 with a given environment,
//! plus small helpers to query it and read its metrics and `/status`.

use std::collections::HashMap;

use searxng_gateway::Config;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::wait;

/// A running gateway. Stops (gracefully) when dropped.
pub struct TestGateway {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// `METRICS_PATH` in force.
    pub metrics_path: String,
    /// A client that does not follow redirects and gives up on a reply only after the hang guard.
    pub http: reqwest::Client,
    /// The key [`TestGateway::status`] presents, from the test-only variable `TEST_CLIENT_KEY`
    /// (for gateways started with `API_KEYS_FILE`).
    pub status_key: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// One search's reply.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `X-Cache`.
    pub cache: String,
    /// `X-Cache-Tier` on a hit: `local` or `redis`.
    pub tier: String,
    /// `X-Gateway-Outcome`.
    pub outcome: String,
    /// `Content-Type`.
    pub content_type: String,
    /// The body as JSON (`Value::Null` when it is not JSON).
    pub json: Value,
    /// The raw body.
    pub text: String,
}

impl TestGateway {
    /// Starts a gateway configured by `vars` (on top of an empty environment).
    pub async fn start(vars: &[(&str, &str)]) -> Self {
        let mut map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        map.insert("LISTEN_ADDR".into(), "127.0.0.1:0".into());
        // No local browser unless a test asks for one: the other tests' pages stay read as they
        // were, whether a Chromium is installed or not.
        map.entry("BROWSER".into()).or_insert_with(|| "off".into());
        // Pages are parsed in worker processes, as the binary does: the binary is the worker.
        map.entry("PARSE_WORKER_PROGRAM".into())
            .or_insert_with(|| super::process::BIN.into());
        let config = Config::from_lookup(&move |name| map.get(name).cloned())
            .expect("test configuration is valid");
        let listener = tokio::net::TcpListener::bind(config.listen_addr())
            .await
            .expect("bind port 0");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let metrics_path = config.metrics_path().to_owned();
        let status_key = vars
            .iter()
            .find(|(k, _)| *k == "TEST_CLIENT_KEY")
            .map(|(_, v)| (*v).to_owned());
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop_rx.await;
            };
            let _ = searxng_gateway::serve(listener, config, shutdown).await;
        });
        Self {
            url,
            metrics_path,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(wait::HANG_GUARD)
                .build()
                .expect("client"),
            status_key,
            stop: Some(stop_tx),
            task: Some(task),
        }
    }

    /// Tells the server to shut down gracefully (it stops accepting, in-flight requests finish) without
    /// waiting for it; [`TestGateway::stop`] waits.
    pub fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Stops the server gracefully and waits (bounded by the hang guard) until it has.
    pub async fn stop(mut self) {
        self.signal_stop();
        if let Some(task) = self.task.take() {
            let _ = wait::guarded("the gateway to shut down", task).await;
        }
    }

    /// `GET /search` with these parameters.
    pub async fn search(&self, params: &[(&str, &str)]) -> Reply {
        let response = self
            .http
            .get(format!("{}/search", self.url))
            .query(params)
            .send()
            .await
            .expect("gateway answers");
        Self::reply(response).await
    }

    /// `GET /search` in a task of its own, for a test that acts while the request is in flight (and may
    /// abort the task to hang up).
    pub fn spawn_search(&self, params: &[(&str, &str)]) -> JoinHandle<Reply> {
        let request = self.http.get(format!("{}/search", self.url)).query(params);
        tokio::spawn(async move {
            let response = request.send().await.expect("gateway answers");
            Self::reply(response).await
        })
    }

    /// MCP's `web_fetch` with `arguments`, as one JSON-RPC call to `/mcp`: the JSON-RPC answer.
    pub async fn web_fetch(&self, arguments: Value) -> Value {
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "web_fetch", "arguments": arguments}});
        self.http
            .post(format!("{}/mcp", self.url))
            .header("accept", "application/json, text/event-stream")
            .json(&call)
            .send()
            .await
            .expect("the gateway answers")
            .json()
            .await
            .expect("a JSON-RPC answer")
    }

    /// `GET` any path.
    pub async fn get(&self, path: &str) -> Reply {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .expect("gateway answers");
        Self::reply(response).await
    }

    /// Turns a response into a [`Reply`].
    pub async fn reply(response: reqwest::Response) -> Reply {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let cache = header("x-cache");
        let tier = header("x-cache-tier");
        let outcome = header("x-gateway-outcome");
        let content_type = header("content-type");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            cache,
            tier,
            outcome,
            content_type,
            json,
            text,
        }
    }

    /// The metrics exposition as text.
    pub async fn metrics_text(&self) -> String {
        let path = self.metrics_path.clone();
        self.get(&path).await.text
    }

    /// The value of one series (`name` with exactly these labels, in any order); 0 when absent.
    pub async fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric_value(&self.metrics_text().await, name, labels)
    }

    /// `GET /status` as JSON.
    pub async fn status(&self) -> Value {
        let mut request = self.http.get(format!("{}/status", self.url));
        if let Some(key) = &self.status_key {
            request = request.header("x-api-key", key);
        }
        Self::reply(request.send().await.expect("gateway answers"))
            .await
            .json
    }

    /// One circuit breaker's entry in `/status` (`namespace` is `provider` or `engine`).
    pub async fn breaker(&self, namespace: &str, name: &str) -> Value {
        let status = self.status().await;
        status["breakers"]
            .as_array()
            .and_then(|breakers| {
                breakers
                    .iter()
                    .find(|b| b["namespace"] == namespace && b["name"] == name)
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {namespace} breaker {name:?} in /status: {status}"))
    }

    /// The breaker name of `provider`'s first key (`brave:1a2b3c4d`), as `/status` lists it.
    pub async fn key_name(&self, provider: &str) -> String {
        let status = self.status().await;
        let fingerprint = status["providers"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["name"] == provider))
            .and_then(|p| p["keys"][0]["key"].as_str())
            .unwrap_or_else(|| panic!("no key of {provider} in /status: {status}"))
            .to_owned();
        format!("{provider}:{fingerprint}")
    }

    /// Waits until the breaker's open period has elapsed: `/status` shows it half-open.
    pub async fn wait_until_half_open(&self, namespace: &str, name: &str) {
        wait::until(
            &format!("the {namespace} breaker {name:?} to turn half-open"),
            || async move { self.breaker(namespace, name).await["state"] == "half_open" },
        )
        .await;
    }

    /// Waits until the gateway has read SearXNG's `/config`.
    pub async fn wait_for_catalog(&self) {
        wait::until("the gateway to read SearXNG's /config", || async move {
            self.status().await["searxng"]["engines_known"]
                .as_u64()
                .unwrap_or(0)
                > 0
        })
        .await;
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Reads one series from a Prometheus text exposition; 0 when absent.
pub fn metric_value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (series_name, series_labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if series_name != name {
            continue;
        }
        let mut found: Vec<(String, String)> = series_labels
            .split("\",")
            .filter(|s| !s.is_empty())
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                Some((k.trim().to_owned(), v.trim_matches('"').to_owned()))
            })
            .collect();
        found.sort();
        let mut wanted: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        wanted.sort();
        if found == wanted {
            return value.parse().unwrap_or(0.0);
        }
    }
    0.0
}
