//! The HTTP mechanics every premium provider shares, written once: origin + path + query, headers,
//! one timeout over the whole exchange (headers and body), the shared body cap, transport-error
//! classification, metrics and logging. The adapters (`brave.rs`, `exa.rs`, …) only say what to
//! send and how to read the answer.
//!
//! Secrets stay out of logs: no line here carries the key, a URL (a query string may hold the
//! user's search) or an upstream body; only the provider, status, class and timings.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use super::{ApiRequest, Method, PremiumApi, ProviderAnswer, ProviderKind};
use crate::config::{ApiKey, ProviderConfig};
use crate::metrics::Metrics;
use crate::request::SearchRequest;
use crate::upstream::{
    classify_transport, parse_retry_after, read_body_capped, ErrorClass, UpstreamError, BODY_CAP,
};

/// A premium provider ready to be called: its adapter plus everything needed to reach it.
pub struct ProviderClient {
    api: Box<dyn PremiumApi>,
    client: reqwest::Client,
    base_url: Url,
    timeout: Duration,
    key: ApiKey,
    metrics: Metrics,
}

impl ProviderClient {
    /// A client for the provider `cfg` describes, or `None` when it has no key (inactive).
    /// `client` is the process-wide HTTP client; the timeout comes from `cfg`.
    pub fn new(cfg: &ProviderConfig, client: reqwest::Client, metrics: Metrics) -> Option<Self> {
        let key = cfg.key.clone()?;
        Some(Self {
            api: cfg.kind.api(),
            client,
            base_url: cfg.base_url.clone(),
            timeout: cfg.timeout,
            key,
            metrics,
        })
    }

    /// Which provider this client calls.
    pub fn kind(&self) -> ProviderKind {
        self.api.kind()
    }

    /// The timeout applied to one whole call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Calls the provider once for `req`: results, empty, or a classified failure. Records
    /// `provider_calls_total`, `provider_duration_seconds`, `provider_results_total` and
    /// `provider_cost_dollars_total`. Dropping the future cancels the call.
    pub async fn search(&self, req: &SearchRequest) -> Result<ProviderAnswer, UpstreamError> {
        let started = Instant::now();
        let mut status = None;
        let result = tokio::time::timeout(self.timeout, self.exchange(req, &mut status))
            .await
            .unwrap_or_else(|_| Err(UpstreamError::new(ErrorClass::Timeout)));
        self.record(&result, started.elapsed(), status);
        result
    }

    /// One request/response exchange; `status` is filled in as soon as the headers arrive so the
    /// log line can name it even when the body then fails.
    async fn exchange(
        &self,
        req: &SearchRequest,
        status: &mut Option<u16>,
    ) -> Result<ProviderAnswer, UpstreamError> {
        let api_req = self.api.request(req, self.key.expose());
        let url = self.url(&api_req);
        let headers = self.headers(&api_req)?;
        let mut builder = match api_req.method {
            Method::Get => self.client.get(url),
            Method::Post => self.client.post(url),
        }
        .headers(headers);
        if let Some(body) = &api_req.body {
            let bytes =
                serde_json::to_vec(body).map_err(|_| UpstreamError::new(ErrorClass::BadRequest))?;
            builder = builder.body(bytes);
        }
        let response = builder.send().await.map_err(transport)?;
        let code = response.status().as_u16();
        *status = Some(code);
        let response_headers = response.headers().clone();
        self.api.observe_headers(&response_headers, &self.metrics);
        let body = read_body_capped(response, BODY_CAP)
            .await
            .map_err(UpstreamError::new)?;
        self.api.interpret(code, &response_headers, &body)
    }

    /// The configured origin with the provider's own path and query.
    fn url(&self, api_req: &ApiRequest) -> Url {
        let mut url = self.base_url.clone();
        url.set_path(api_req.path);
        url.set_query(None);
        if !api_req.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(api_req.query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// The adapter's headers as a `HeaderMap`; a header carrying the key is marked sensitive so
    /// the HTTP stack never prints it.
    fn headers(&self, api_req: &ApiRequest) -> Result<HeaderMap, UpstreamError> {
        let key = self.key.expose();
        let mut map = HeaderMap::with_capacity(api_req.headers.len());
        for (name, value) in &api_req.headers {
            let carries_key = !key.is_empty() && value.contains(key);
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| UpstreamError::new(ErrorClass::BadRequest))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                // A key that cannot travel in a header will never work: treat it as a bad key.
                UpstreamError::new(if carries_key {
                    ErrorClass::Auth
                } else {
                    ErrorClass::BadRequest
                })
            })?;
            value.set_sensitive(carries_key);
            map.insert(name, value);
        }
        Ok(map)
    }

    fn record(
        &self,
        result: &Result<ProviderAnswer, UpstreamError>,
        elapsed: Duration,
        status: Option<u16>,
    ) {
        let provider = self.kind().as_str();
        let elapsed_ms = elapsed.as_millis() as u64;
        let outcome = match result {
            Ok(answer) if answer.hits.is_empty() => "empty",
            Ok(_) => "ok",
            Err(err) => err.class.as_str(),
        };
        self.metrics
            .provider_calls
            .with_label_values(&[provider, outcome])
            .inc();
        self.metrics
            .provider_duration
            .with_label_values(&[provider])
            .observe(elapsed.as_secs_f64());
        match result {
            Ok(answer) => {
                self.metrics
                    .provider_results
                    .with_label_values(&[provider])
                    .inc_by(answer.hits.len() as u64);
                if let Some(cost) = answer.cost_dollars.filter(|c| c.is_finite() && *c >= 0.0) {
                    self.metrics
                        .provider_cost
                        .with_label_values(&[provider])
                        .inc_by(cost);
                }
                tracing::debug!(
                    provider,
                    status,
                    hits = answer.hits.len(),
                    elapsed_ms,
                    "provider answered"
                );
                if let Some(park) = &answer.park {
                    tracing::info!(
                        provider,
                        class = park.class.as_str(),
                        retry_after_secs = park.retry_after.map(|d| d.as_secs()),
                        "provider answered but its rate-limit window is exhausted"
                    );
                }
            }
            Err(err) if err.class == ErrorClass::BadRequest => {
                tracing::warn!(
                    provider,
                    status,
                    class = err.class.as_str(),
                    elapsed_ms,
                    "provider rejected the request as malformed: our request is wrong (a gateway bug, not an outage)"
                );
            }
            Err(err) => {
                tracing::warn!(
                    provider,
                    status,
                    class = err.class.as_str(),
                    retry_after_secs = err.retry_after.map(|d| d.as_secs()),
                    elapsed_ms,
                    "provider call failed"
                );
            }
        }
    }
}

impl fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderClient")
            .field("kind", &self.kind())
            .field("base_url", &self.base_url.as_str())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn transport(err: reqwest::Error) -> UpstreamError {
    UpstreamError::new(classify_transport(&err))
}

/// Whether `status` is a success the adapter should decode as results.
pub(crate) fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The class a status implies when the body names nothing more specific: the part of error
/// classification every provider agrees on.
pub(crate) fn class_for_status(status: u16) -> ErrorClass {
    match status {
        400 => ErrorClass::BadRequest,
        401 | 403 => ErrorClass::Auth,
        429 => ErrorClass::RateLimited,
        500..=599 => ErrorClass::Server,
        _ => ErrorClass::HttpStatus,
    }
}

/// The response's `Retry-After` (delta-seconds or HTTP-date), if it has a readable one.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, SystemTime::now())
}

/// A failure of `class` carrying the server's `Retry-After`, when it sent one.
pub(crate) fn failure(class: ErrorClass, headers: &HeaderMap) -> UpstreamError {
    UpstreamError::with_retry_after(class, retry_after(headers))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::ProviderKind;

    fn config(kind: ProviderKind, key: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            key: key.map(ApiKey::new),
            base_url: Url::parse("http://127.0.0.1:9/").unwrap(),
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_provider_without_a_key_has_no_client() {
        let cfg = config(ProviderKind::Exa, None);
        assert!(ProviderClient::new(&cfg, reqwest::Client::new(), Metrics::new()).is_none());
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let cfg = config(ProviderKind::Brave, Some("sekrit-123"));
        let client = ProviderClient::new(&cfg, reqwest::Client::new(), Metrics::new()).unwrap();
        let shown = format!("{client:?}");
        assert!(shown.contains("Brave"));
        assert!(!shown.contains("sekrit-123"));
    }

    #[test]
    fn the_url_is_the_configured_origin_plus_the_providers_path_and_query() {
        let cfg = config(ProviderKind::Brave, Some("k"));
        let client = ProviderClient::new(&cfg, reqwest::Client::new(), Metrics::new()).unwrap();
        let api_req = client
            .api
            .request(&SearchRequest::simple("rust async"), "k");
        let url = client.url(&api_req);
        assert_eq!(url.origin(), cfg.base_url.origin());
        assert_eq!(url.path(), "/res/v1/web/search");
        assert!(url.query().unwrap().contains("q=rust+async"));
        let cfg = config(ProviderKind::Jina, Some("k"));
        let client = ProviderClient::new(&cfg, reqwest::Client::new(), Metrics::new()).unwrap();
        let api_req = client.api.request(&SearchRequest::simple("x"), "k");
        assert_eq!(client.url(&api_req).as_str(), "http://127.0.0.1:9/");
    }

    #[test]
    fn the_header_carrying_the_key_is_marked_sensitive() {
        let cfg = config(ProviderKind::Tavily, Some("k-123"));
        let client = ProviderClient::new(&cfg, reqwest::Client::new(), Metrics::new()).unwrap();
        let api_req = client.api.request(&SearchRequest::simple("x"), "k-123");
        let headers = client.headers(&api_req).unwrap();
        assert!(headers["authorization"].is_sensitive());
        assert!(!headers["content-type"].is_sensitive());
    }

    #[test]
    fn a_key_that_cannot_be_a_header_is_an_auth_failure() {
        let cfg = config(ProviderKind::Exa, Some("bad\nkey"));
        let client = ProviderClient::new(&cfg, reqwest::Client::new(), Metrics::new()).unwrap();
        let api_req = client.api.request(&SearchRequest::simple("x"), "bad\nkey");
        assert_eq!(
            client.headers(&api_req).unwrap_err().class,
            ErrorClass::Auth
        );
    }

    #[test]
    fn statuses_without_a_specific_body_fall_into_shared_classes() {
        assert_eq!(class_for_status(400), ErrorClass::BadRequest);
        assert_eq!(class_for_status(401), ErrorClass::Auth);
        assert_eq!(class_for_status(403), ErrorClass::Auth);
        assert_eq!(class_for_status(404), ErrorClass::HttpStatus);
        assert_eq!(class_for_status(429), ErrorClass::RateLimited);
        assert_eq!(class_for_status(503), ErrorClass::Server);
        assert_eq!(class_for_status(302), ErrorClass::HttpStatus);
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_a_date() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        headers.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        let got = retry_after(&headers).unwrap();
        assert!(got <= Duration::from_secs(120) && got >= Duration::from_secs(110));
    }
}
