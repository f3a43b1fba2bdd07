//! The SearXNG client: `GET /search` with every forwarded parameter and `locale=en`, up to three
//! attempts with exponential backoff and jitter (transient errors only, each attempt bounded by
//! what is left of the request budget), an 8 MiB body cap, redirects reported and never followed,
//! and per-engine accounting into the engine metrics. Decoding the answer is [`super::answer`]'s job.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use super::answer::{parse_answer, result_engines, SearxngAnswer};
use super::metrics::{
    AttemptError, AttemptLabels, AttemptResult, EngineLabels, EngineReasonLabels, ErrorClassLabels,
    ResultLabels, SearxngMetrics, SearxngResult,
};
use crate::request::{SafeSearch, SearchRequest, TimeRange};
use crate::upstream::{classify_transport, read_body_capped, ErrorClass, UpstreamError, BODY_CAP};

/// Attempts per SearXNG call, the first included.
pub(crate) const MAX_ATTEMPTS: u32 = 3;
/// The first backoff step; it doubles per attempt.
pub(crate) const BACKOFF_BASE: Duration = Duration::from_millis(100);

/// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: base × 2^(n−1),
/// scaled by `jitter` ∈ [0, 1] into the upper half ("equal jitter": never less than half).
pub(crate) fn backoff_delay(attempt: u32, jitter: f64) -> Duration {
    let full = BACKOFF_BASE * 2u32.saturating_pow(attempt.saturating_sub(1));
    full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// The SearXNG client. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct SearxngClient {
    http: reqwest::Client,
    base: Url,
    attempt_timeout: Duration,
    metrics: SearxngMetrics,
}

impl SearxngClient {
    /// A client for the instance at `base` (no trailing slash). `http` must not follow redirects.
    pub(crate) fn new(
        http: reqwest::Client,
        base: Url,
        attempt_timeout: Duration,
        metrics: SearxngMetrics,
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
    pub(crate) async fn search(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let started = Instant::now();
        let result = self.search_with_retries(req, engines, deadline).await;
        self.metrics
            .duration
            .observe(started.elapsed().as_secs_f64());
        let result_label = match &result {
            Ok(answer) if answer.is_degraded() => SearxngResult::Degraded,
            Ok(_) => SearxngResult::Ok,
            Err(err) => SearxngResult::Failed(err.class),
        };
        self.metrics
            .requests
            .get_or_create(&ResultLabels {
                result: result_label,
            })
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
            match outcome {
                Ok(answer) => {
                    self.count_attempt(attempt, AttemptResult::Success, AttemptError::None);
                    return Ok(answer);
                }
                Err(err) => {
                    self.count_attempt(
                        attempt,
                        AttemptResult::Failure,
                        AttemptError::Class(err.class),
                    );
                    if err.class == ErrorClass::Timeout {
                        self.metrics.timeouts.inc();
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
                            .exhausted
                            .get_or_create(&ErrorClassLabels {
                                error_class: err.class,
                            })
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

    fn count_attempt(&self, attempt: u32, outcome: AttemptResult, error_class: AttemptError) {
        self.metrics
            .attempts
            .get_or_create(&AttemptLabels {
                attempt,
                outcome,
                error_class,
            })
            .inc();
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
        let labels = |engine: &str| EngineLabels {
            engine: engine.to_owned(),
        };
        for result in &answer.results {
            for engine in result_engines(result) {
                self.metrics
                    .engine_results
                    .get_or_create(&labels(engine))
                    .inc();
            }
        }
        for engine in answer.engines_with_results() {
            self.metrics
                .engine_status
                .get_or_create(&labels(&engine))
                .set(1);
        }
        for u in &answer.unresponsive {
            self.metrics
                .engine_unresponsive
                .get_or_create(&EngineReasonLabels {
                    engine: u.engine.clone(),
                    reason: u.reason,
                })
                .inc();
            self.metrics
                .engine_status
                .get_or_create(&labels(&u.engine))
                .set(0);
        }
    }

    /// `GET /config`: the instance's engines and categories.
    pub(crate) async fn fetch_config(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        self.fetch_json("/config", timeout).await
    }

    /// `GET /stats/errors`: SearXNG's own record of its engines' errors (JSON).
    pub(crate) async fn fetch_engine_errors(
        &self,
        timeout: Duration,
    ) -> Result<Value, UpstreamError> {
        self.fetch_json("/stats/errors", timeout).await
    }

    async fn fetch_json(&self, path: &str, timeout: Duration) -> Result<Value, UpstreamError> {
        let response = self
            .http
            .get(self.endpoint(path))
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
    pub(crate) async fn json_enabled(&self, timeout: Duration) -> Result<bool, UpstreamError> {
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
