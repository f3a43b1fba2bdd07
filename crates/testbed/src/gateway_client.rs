//! The demo's HTTP client of its own gateway, asking what any client or operator can ask: `/search` (what
//! the client got), `/metrics` (a [`Scrape`]) and `/status` (the breakers and what the gateway learned from
//! SearXNG's `/config`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::scrape::Scrape;

/// What one search through the gateway returned.
#[derive(Debug)]
pub(crate) struct Observed {
    /// HTTP status.
    pub(crate) status: u16,
    /// `X-Gateway-Outcome`.
    pub(crate) outcome: String,
    /// `X-Cache` (`hit` or `miss`).
    pub(crate) cache: String,
    /// Results in the answer.
    pub(crate) results: usize,
    /// Every source named in the results' `engines`, sorted, once each.
    pub(crate) sources: Vec<String>,
    /// From sending the request to reading the body.
    pub(crate) elapsed: Duration,
}

/// One breaker as `/status` shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BreakerView {
    /// `closed`, `open` or `half_open`.
    pub(crate) state: String,
    /// How long it stays open, while it is open.
    pub(crate) open_for: Option<Duration>,
}

impl BreakerView {
    /// Whether calls are rejected now.
    pub(crate) fn is_open(&self) -> bool {
        self.state == "open"
    }
}

/// The gateway at one address.
pub(crate) struct GatewayClient {
    http: reqwest::Client,
    base: String,
}

impl GatewayClient {
    /// A client of the gateway listening on `listen`.
    pub(crate) fn new(listen: SocketAddr) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Self {
            http,
            base: format!("http://{listen}"),
        }
    }

    /// `http://HOST:PORT`.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// `GET /search?q=…&format=json`.
    pub(crate) async fn search(&self, query: &str) -> Result<Observed, reqwest::Error> {
        let started = Instant::now();
        let response = self
            .http
            .get(format!("{}/search", self.base))
            .query(&[("q", query), ("format", "json")])
            .send()
            .await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        let (status, outcome, cache) = (
            response.status().as_u16(),
            header("x-gateway-outcome"),
            header("x-cache"),
        );
        let body: Value = response.json().await?;
        let elapsed = started.elapsed();
        let results = body["results"].as_array().map_or(&[][..], Vec::as_slice);
        let mut sources: Vec<String> = results
            .iter()
            .filter_map(|result| result["engines"].as_array())
            .flatten()
            .filter_map(|engine| engine.as_str().map(str::to_owned))
            .collect();
        sources.sort();
        sources.dedup();
        Ok(Observed {
            status,
            outcome,
            cache,
            results: results.len(),
            sources,
            elapsed,
        })
    }

    /// `GET /metrics`; an empty scrape if the gateway does not answer.
    pub(crate) async fn scrape(&self) -> Scrape {
        let url = format!("{}/metrics", self.base);
        match self.http.get(url).send().await {
            Ok(response) => Scrape::parse(&response.text().await.unwrap_or_default()),
            Err(_) => Scrape::default(),
        }
    }

    /// `GET /status` as JSON.
    pub(crate) async fn status(&self) -> Option<Value> {
        let response = self
            .http
            .get(format!("{}/status", self.base))
            .send()
            .await
            .ok()?;
        response.json().await.ok()
    }

    /// How many SearXNG engines the gateway learned from SearXNG's `/config` (0 until it has read it).
    pub(crate) async fn engines_known(&self) -> u64 {
        self.status()
            .await
            .and_then(|status| status["searxng"]["engines_known"].as_u64())
            .unwrap_or(0)
    }

    /// Every breaker `/status` lists, by (namespace, name); namespaces are `engine` and `provider`. A
    /// breaker is listed once it was first consulted.
    pub(crate) async fn breakers(&self) -> BTreeMap<(String, String), BreakerView> {
        let Some(status) = self.status().await else {
            return BTreeMap::new();
        };
        let listed = status["breakers"].as_array().map_or(&[][..], Vec::as_slice);
        listed
            .iter()
            .filter_map(|breaker| {
                let namespace = breaker["namespace"].as_str()?.to_owned();
                let name = breaker["name"].as_str()?.to_owned();
                let view = BreakerView {
                    state: breaker["state"].as_str().unwrap_or("unknown").to_owned(),
                    open_for: breaker["open_for_seconds"]
                        .as_f64()
                        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok()),
                };
                Some(((namespace, name), view))
            })
            .collect()
    }

    /// One breaker from `/status`; `None` before it was first consulted.
    pub(crate) async fn breaker(&self, namespace: &str, name: &str) -> Option<BreakerView> {
        self.breakers()
            .await
            .remove(&(namespace.to_owned(), name.to_owned()))
    }
}
