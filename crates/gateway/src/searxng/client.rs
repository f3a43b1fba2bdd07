//! The SearXNG client: `GET /search` with every forwarded parameter and `locale=en`, up to three
//! attempts with exponential backoff and jitter (transient errors only, each attempt bounded by
//! what is left of the request budget), an 8 MiB body cap, redirects reported and never followed,
//! and per-engine accounting into the engine metrics.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;
use url::Url;

use super::unresponsive::{parse_unresponsive, Unresponsive};
use crate::metrics::Metrics;
use crate::request::{SafeSearch, SearchRequest, TimeRange};
use crate::upstream::{classify_transport, read_body_capped, ErrorClass, UpstreamError, BODY_CAP};

/// Attempts per SearXNG call, the first included.
pub const MAX_ATTEMPTS: u32 = 3;
/// The first backoff step; it doubles per attempt.
pub const BACKOFF_BASE: Duration = Duration::from_millis(100);

/// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: base × 2^(n−1),
/// scaled by `jitter` ∈ [0, 1] into the upper half ("equal jitter": never less than half).
pub fn backoff_delay(attempt: u32, jitter: f64) -> Duration {
    let full = BACKOFF_BASE * 2u32.saturating_pow(attempt.saturating_sub(1));
    full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// One SearXNG answer, split for the merge: the top-level keys and the results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearxngAnswer {
    /// Every top-level key SearXNG returned except `results`, in SearXNG's order.
    pub top: Map<String, Value>,
    /// The results (each has at least `url` and `title`), every field kept.
    pub results: Vec<Map<String, Value>>,
    /// `unresponsive_engines`, deduplicated.
    pub unresponsive: Vec<Unresponsive>,
}

impl SearxngAnswer {
    /// HTTP 200 with zero results while engines are listed unresponsive: not "nothing found".
    pub fn is_degraded(&self) -> bool {
        self.results.is_empty() && !self.unresponsive.is_empty()
    }

    /// SearXNG engine names that returned at least one result (each engine of a result once).
    pub fn engines_with_results(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for result in &self.results {
            for engine in result_engines(result) {
                if !names.iter().any(|n| n == engine) {
                    names.push(engine.to_owned());
                }
            }
        }
        names
    }
}

/// The engines a result came from: `engines`, or `engine` when `engines` is absent — never both,
/// so a result is not counted twice for the same engine.
fn result_engines(result: &Map<String, Value>) -> Vec<&str> {
    let mut names: Vec<&str> = match result.get("engines") {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if names.is_empty() {
        if let Some(engine) = result.get("engine").and_then(Value::as_str) {
            names.push(engine);
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

/// The SearXNG client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SearxngClient {
    http: reqwest::Client,
    base: Url,
    attempt_timeout: Duration,
    metrics: Metrics,
}

impl SearxngClient {
    /// A client for the instance at `base` (no trailing slash). `http` must not follow redirects.
    pub fn new(
        http: reqwest::Client,
        base: Url,
        attempt_timeout: Duration,
        metrics: Metrics,
    ) -> Self {
        Self {
            http,
            base,
            attempt_timeout,
            metrics,
        }
    }

    fn endpoint(&self, path: &str) -> Url {
        let mut url = self.base.clone();
        let joined = format!("{}{path}", self.base.path().trim_end_matches('/'));
        url.set_path(&joined);
        url
    }

    /// Searches, retrying transient failures, never past `deadline`. `engines` overrides the
    /// client's engine selection (the breakers' explicit list).
    pub async fn search(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let started = Instant::now();
        let result = self.search_with_retries(req, engines, deadline).await;
        self.metrics
            .searxng_duration
            .observe(started.elapsed().as_secs_f64());
        let label = match &result {
            Ok(answer) if answer.is_degraded() => "degraded",
            Ok(_) => "ok",
            Err(err) => err.class.as_str(),
        };
        self.metrics
            .searxng_requests
            .with_label_values(&[label])
            .inc();
        if let Ok(answer) = &result {
            self.account_engines(answer);
        }
        result
    }

    async fn search_with_retries(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let mut attempt = 1;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let timeout = self.attempt_timeout.min(left);
            let outcome = match tokio::time::timeout(timeout, self.attempt(req, engines)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(UpstreamError::new(ErrorClass::Timeout)),
            };
            let attempt_label = attempt.to_string();
            match outcome {
                Ok(answer) => {
                    self.metrics
                        .retry_attempts
                        .with_label_values(&[&attempt_label, "success", "none"])
                        .inc();
                    return Ok(answer);
                }
                Err(err) => {
                    self.metrics
                        .retry_attempts
                        .with_label_values(&[&attempt_label, "failure", err.class.as_str()])
                        .inc();
                    if err.class == ErrorClass::Timeout {
                        self.metrics.searxng_timeouts.inc();
                    }
                    if !err.class.is_transient() {
                        return Err(err);
                    }
                    let delay = backoff_delay(attempt, rand::random::<f64>());
                    let next_start = Instant::now() + delay;
                    // Another attempt only if it would have a meaningful slice of the budget.
                    if attempt >= MAX_ATTEMPTS || next_start + Duration::from_millis(50) >= deadline
                    {
                        self.metrics
                            .retry_exhausted
                            .with_label_values(&[err.class.as_str()])
                            .inc();
                        tracing::debug!(
                            attempts = attempt,
                            error_class = err.class.as_str(),
                            "SearXNG retries exhausted"
                        );
                        return Err(err);
                    }
                    tracing::debug!(
                        attempt,
                        error_class = err.class.as_str(),
                        delay_ms = delay.as_millis() as u64,
                        "SearXNG attempt failed, retrying"
                    );
                    tokio::time::sleep_until(next_start).await;
                    attempt += 1;
                }
            }
        }
    }

    fn query_pairs<'a>(
        req: &'a SearchRequest,
        engines: Option<&'a [String]>,
    ) -> Vec<(&'static str, String)> {
        let mut pairs: Vec<(&'static str, String)> = vec![
            ("q", req.query.clone()),
            ("format", "json".into()),
            // unresponsive_engines messages are translated into the UI language otherwise.
            ("locale", "en".into()),
        ];
        if req.pageno != 1 {
            pairs.push(("pageno", req.pageno.to_string()));
        }
        if !req.categories.is_empty() {
            pairs.push(("categories", req.categories.join(",")));
        }
        match engines {
            Some(list) => pairs.push(("engines", list.join(","))),
            None if !req.engines.is_empty() => pairs.push(("engines", req.engines.join(","))),
            None => {}
        }
        if let Some(language) = &req.language {
            pairs.push(("language", language.clone()));
        }
        if let Some(range) = req.time_range {
            pairs.push(("time_range", TimeRange::as_str(range).into()));
        }
        if let Some(safe) = req.safesearch {
            pairs.push(("safesearch", SafeSearch::as_str(safe).into()));
        }
        pairs
    }

    async fn attempt(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let response = self
            .http
            .get(self.endpoint("/search"))
            .query(&Self::query_pairs(req, engines))
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| UpstreamError::new(classify_transport(&e)))?;
        let status = response.status();
        if status.is_redirection() {
            // An external `!!bang`: SearXNG redirects even with format=json. Never followed.
            return Err(UpstreamError::new(ErrorClass::Redirect));
        }
        if !status.is_success() {
            let class = match status.as_u16() {
                403 => {
                    tracing::warn!("SearXNG answered 403: JSON output is probably disabled; add `json` to `search.formats` in its settings.yml");
                    ErrorClass::Blocked
                }
                429 => ErrorClass::RateLimited,
                400 | 422 => ErrorClass::BadRequest,
                s if s >= 500 => ErrorClass::Server,
                _ => ErrorClass::HttpStatus,
            };
            return Err(UpstreamError::new(class));
        }
        let body = read_body_capped(response, BODY_CAP)
            .await
            .map_err(UpstreamError::new)?;
        parse_answer(&body).ok_or_else(|| UpstreamError::new(ErrorClass::Malformed))
    }

    fn account_engines(&self, answer: &SearxngAnswer) {
        for result in &answer.results {
            for engine in result_engines(result) {
                self.metrics
                    .engine_results
                    .with_label_values(&[engine])
                    .inc();
            }
        }
        for engine in answer.engines_with_results() {
            self.metrics
                .engine_status
                .with_label_values(&[&engine])
                .set(1);
        }
        for u in &answer.unresponsive {
            self.metrics
                .engine_unresponsive
                .with_label_values(&[&u.engine, u.reason.as_str()])
                .inc();
            self.metrics
                .engine_status
                .with_label_values(&[&u.engine])
                .set(0);
        }
    }

    /// `GET /config`: the instance's engines and categories.
    pub async fn fetch_config(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        let response = self
            .http
            .get(self.endpoint("/config"))
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| UpstreamError::new(classify_transport(&e)))?;
        if !response.status().is_success() {
            return Err(UpstreamError::new(if response.status().is_server_error() {
                ErrorClass::Server
            } else {
                ErrorClass::HttpStatus
            }));
        }
        let body = read_body_capped(response, BODY_CAP)
            .await
            .map_err(UpstreamError::new)?;
        serde_json::from_slice(&body).map_err(|_| UpstreamError::new(ErrorClass::Malformed))
    }

    /// Checks that JSON output is enabled without running a search: `GET /search?format=json`
    /// without `q` is refused with 400 when JSON is on, and with a 403 page when it is off.
    pub async fn json_enabled(&self, timeout: Duration) -> Result<bool, UpstreamError> {
        let response = self
            .http
            .get(self.endpoint("/search"))
            .query(&[("format", "json")])
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| UpstreamError::new(classify_transport(&e)))?;
        Ok(response.status().as_u16() != 403)
    }
}

/// Parses SearXNG's JSON; `None` when it is not an object with a `results` array.
pub fn parse_answer(body: &[u8]) -> Option<SearxngAnswer> {
    let Value::Object(mut top) = serde_json::from_slice::<Value>(body).ok()? else {
        return None;
    };
    // Take the results out but keep the key's position: the merged list goes back there.
    let Some(Value::Array(raw_results)) = top.get_mut("results").map(Value::take) else {
        return None;
    };
    let results = raw_results
        .into_iter()
        .filter_map(|r| match r {
            Value::Object(obj)
                if obj.get("url").is_some_and(Value::is_string)
                    && obj.get("title").is_some_and(Value::is_string) =>
            {
                Some(obj)
            }
            _ => None,
        })
        .collect();
    let unresponsive = parse_unresponsive(top.get("unresponsive_engines"));
    Some(SearxngAnswer {
        top,
        results,
        unresponsive,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_jitter_stays_in_the_upper_half() {
        assert_eq!(backoff_delay(1, 1.0), Duration::from_millis(100));
        assert_eq!(backoff_delay(2, 1.0), Duration::from_millis(200));
        assert_eq!(backoff_delay(3, 1.0), Duration::from_millis(400));
        assert_eq!(backoff_delay(1, 0.0), Duration::from_millis(50));
        for attempt in 1..=3 {
            for j in [0.0, 0.3, 0.99] {
                let d = backoff_delay(attempt, j);
                assert!(d >= backoff_delay(attempt, 0.0) && d <= backoff_delay(attempt, 1.0));
            }
        }
    }

    #[test]
    fn every_top_level_key_and_result_field_is_kept() {
        let body = br#"{"query":"q","number_of_results":0,"results":[
            {"url":"https://a","title":"A","engine":"alpha","engines":["alpha"],"author":"x","thumbnail":null},
            {"title":"no url"}],"answers":[],"infoboxes":[],"suggestions":["s"],"corrections":[],
            "unresponsive_engines":[],"new_key":{"x":1}}"#;
        let answer = parse_answer(body).unwrap();
        let keys: Vec<&str> = answer.top.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "query",
                "number_of_results",
                "results",
                "answers",
                "infoboxes",
                "suggestions",
                "corrections",
                "unresponsive_engines",
                "new_key"
            ]
        );
        assert_eq!(answer.results.len(), 1, "a result without url is dropped");
        assert_eq!(answer.results[0]["author"], "x");
    }

    #[test]
    fn zero_results_with_unresponsive_engines_is_degraded() {
        let degraded =
            parse_answer(br#"{"results":[],"unresponsive_engines":[["alpha","timeout"]]}"#)
                .unwrap();
        assert!(degraded.is_degraded());
        let nothing = parse_answer(br#"{"results":[],"unresponsive_engines":[]}"#).unwrap();
        assert!(!nothing.is_degraded());
    }

    #[test]
    fn not_searxng_json_is_malformed() {
        assert!(parse_answer(b"<html>").is_none());
        assert!(parse_answer(br#"{"error":"search error"}"#).is_none());
        assert!(parse_answer(b"[]").is_none());
    }

    #[test]
    fn engines_are_counted_once_per_result() {
        let answer = parse_answer(
            br#"{"results":[
            {"url":"u1","title":"t","engine":"alpha","engines":["alpha","beta","alpha"]},
            {"url":"u2","title":"t","engine":"gamma"}]}"#,
        )
        .unwrap();
        assert_eq!(result_engines(&answer.results[0]), ["alpha", "beta"]);
        assert_eq!(result_engines(&answer.results[1]), ["gamma"]);
        assert_eq!(answer.engines_with_results(), ["alpha", "beta", "gamma"]);
    }

    #[test]
    fn forwarded_parameters_and_locale_are_sent() {
        let req = SearchRequest {
            pageno: 2,
            categories: vec!["news".into()],
            engines: vec!["alpha".into()],
            language: Some("de".into()),
            time_range: Some(TimeRange::Week),
            safesearch: Some(SafeSearch::Strict),
            ..SearchRequest::simple("Rust Async")
        };
        let pairs = SearxngClient::query_pairs(&req, None);
        let get = |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("q"), Some("Rust Async"));
        assert_eq!(get("locale"), Some("en"));
        assert_eq!(get("pageno"), Some("2"));
        assert_eq!(get("categories"), Some("news"));
        assert_eq!(get("engines"), Some("alpha"));
        assert_eq!(get("language"), Some("de"));
        assert_eq!(get("time_range"), Some("week"));
        assert_eq!(get("safesearch"), Some("2"));
        let overridden = SearxngClient::query_pairs(&req, Some(&["beta".to_owned()]));
        assert!(overridden.contains(&("engines", "beta".to_owned())));
    }
}
