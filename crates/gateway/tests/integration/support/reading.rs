//! A gateway that reads pages: a loopback site ([`SimulatedSite`]) serving pages of the
//! Readability corpus and misbehaving ones, the simulated premium readers, a simulated SearXNG
//! whose results point at the site, and the gateway in front of them with
//! `FETCH_ALLOW_PRIVATE=127.0.0.0/8` (the site is on loopback; every other private range, cloud
//! metadata included, stays refused).

use std::path::PathBuf;

use serde_json::Value;
use simulator::premium::SIM_KEY;
use simulator::readers::{Reader, SimulatedReader};
use simulator::searxng::SimulatedSearxng;
use simulator::site::SimulatedSite;

use super::gateway::{Reply, TestGateway};
use super::stack::ENGINES;

/// The site, the readers, SearXNG and the gateway.
pub struct ReadStack {
    pub site: SimulatedSite,
    /// In `READ_PROVIDERS` order.
    pub readers: Vec<SimulatedReader>,
    /// Its results point at the site.
    pub searxng: SimulatedSearxng,
    pub gateway: TestGateway,
    /// The gateway's environment, for a replica of it.
    env: Vec<(String, String)>,
}

impl ReadStack {
    /// Starts everything: `readers` (with keys, in this order) as `READ_PROVIDERS`, and `vars` on
    /// top of the defaults.
    pub async fn start(readers: &[Reader], vars: &[(&str, &str)]) -> Self {
        let site = SimulatedSite::start().await.expect("site starts");
        let searxng = SimulatedSearxng::start(&ENGINES)
            .await
            .expect("simulated SearXNG starts");
        searxng.set_result_origin(Some(&site.origin()));
        let mut sims = Vec::new();
        for kind in readers {
            sims.push(SimulatedReader::start(*kind).await.expect("reader starts"));
        }
        let mut env: Vec<(String, String)> = vec![
            ("SEARXNG_BACKEND_URL".into(), searxng.base_url()),
            ("FALLBACK_PROVIDERS".into(), String::new()),
            ("FETCH_ALLOW_PRIVATE".into(), "127.0.0.0/8".into()),
            (
                "READ_PROVIDERS".into(),
                readers
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        for sim in &sims {
            env.push((sim.kind().base_variable().into(), sim.base_url()));
            env.push((
                format!("{}_API_KEY", sim.kind().env_prefix()),
                SIM_KEY.into(),
            ));
        }
        for (k, v) in vars {
            env.retain(|(name, _)| name != k);
            env.push(((*k).to_owned(), (*v).to_owned()));
        }
        let borrowed: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let gateway = TestGateway::start(&borrowed).await;
        Self {
            site,
            readers: sims,
            searxng,
            gateway,
            env,
        }
    }

    /// Another gateway with the same environment (with `REDIS_URL`, a replica sharing its tier).
    pub async fn replica(&self) -> TestGateway {
        let borrowed: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        TestGateway::start(&borrowed).await
    }

    /// The simulator of `kind`.
    pub fn reader(&self, kind: Reader) -> &SimulatedReader {
        self.readers
            .iter()
            .find(|r| r.kind() == kind)
            .expect("reader is part of the stack")
    }

    /// `POST /tavily/extract` (with a Bearer key, as tavily-python sends) of `body`, with `query`.
    pub async fn extract(&self, body: Value, query: &str) -> Reply {
        Self::extract_on(&self.gateway, body, query).await
    }

    /// [`Self::extract`] on `gateway` (a replica).
    pub async fn extract_on(gateway: &TestGateway, body: Value, query: &str) -> Reply {
        let response = gateway
            .http
            .post(format!("{}/tavily/extract{query}", gateway.url))
            .bearer_auth("any-key")
            .json(&body)
            .send()
            .await
            .expect("extract answers");
        TestGateway::reply(response).await
    }

    /// `reads_total{outcome}` now.
    pub async fn reads(&self, outcome: &str) -> f64 {
        self.gateway
            .metric("searxng_gateway_reads_total", &[("outcome", outcome)])
            .await
    }
}

/// A page of the Readability corpus the repository carries: its source and the article a careful
/// reader keeps.
pub fn corpus(name: &str) -> (String, String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testbed/corpus/readability/pages")
        .join(name);
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|err| panic!("{}/{file}: {err}", dir.display()))
    };
    (read("source.html"), read("expected.html"))
}

/// The words of some HTML's text, lower-case (tags and entities skipped, roughly).
pub fn words(html: &str) -> Vec<String> {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 3)
        .map(str::to_lowercase)
        .collect()
}
