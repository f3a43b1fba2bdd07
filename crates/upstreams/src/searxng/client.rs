//! The client of one SearXNG instance: one `GET /search` attempt with every forwarded parameter
//! and `locale=en`, bounded by the attempt timeout and what is left of the request budget, an
//! 8 MiB body cap, redirects reported and never followed; and the accounting of attempts, calls
//! and engines into the SearXNG metrics under the instance's label. Which instance an attempt goes
//! to, and whether a failed attempt is retried (up to [`MAX_ATTEMPTS`], with [`backoff_delay`]), is
//! the pipeline's decision (the engine's `search::searxng_call`). Decoding the answer is [`super::answer`]'s
//! job.

use std::time::Duration;

use base64::Engine as _;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Uri;
use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use super::answer::{decode_answer, SearxngAnswer};
use super::metrics::{
    AttemptError, AttemptLabels, AttemptResult, EngineLabels, EngineReasonLabels, ErrorClassLabels,
    ResultLabels, SearxngMetrics, SearxngResult,
};
use gateway_core::metrics::InstanceLabel;
use gateway_core::request::{SafeSearch, SearchRequest, TimeRange};
use gateway_core::upstream::{read_body_capped, ErrorClass, UpstreamError, UpstreamHttp, BODY_CAP};

/// Attempts per SearXNG call, the first included.
pub const MAX_ATTEMPTS: u32 = 3;
/// The first backoff step; it doubles per attempt.
pub(crate) const BACKOFF_BASE: Duration = Duration::from_millis(100);

/// The header on the gateway's own probe of an engine: its value is the engine.
pub(crate) const PROBE_HEADER: HeaderName = HeaderName::from_static("x-searxng-gateway-probe");

/// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: base × 2^(n−1),
/// scaled by `jitter` ∈ [0, 1] into the upper half ("equal jitter": never less than half).
pub fn backoff_delay(attempt: u32, jitter: f64) -> Duration {
    let full = BACKOFF_BASE * 2u32.saturating_pow(attempt.saturating_sub(1));
    full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// `path` under `base`'s path.
fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}{path}", base.path().trim_end_matches('/'));
    url.set_path(&joined);
    url
}

/// The `Authorization: Basic` header for the credentials in `base` (`http://user:pass@host`), if
/// any, and `base` without them: SearXNG behind a proxy with basic auth, as the URL says.
fn credentials(base: &Url) -> (Option<HeaderValue>, Url) {
    if base.username().is_empty() && base.password().is_none() {
        return (None, base.clone());
    }
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!(
        "{}:{}",
        decode(base.username()),
        decode(base.password().unwrap_or(""))
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let header = HeaderValue::try_from(format!("Basic {encoded}"))
        .ok()
        .map(|mut value| {
            value.set_sensitive(true);
            value
        });
    let mut bare = base.clone();
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    (header, bare)
}

/// `url` as the request target of a call; an unusable one (never, for a URL the configuration
/// accepted) is [`ErrorClass::BadRequest`].
fn target(url: String) -> Result<Uri, UpstreamError> {
    Uri::try_from(url).map_err(|_| UpstreamError::new(ErrorClass::BadRequest))
}

/// A query string written straight into the request target: `name=value` pairs, form-encoded
/// (as SearXNG reads them), a list's items joined by an encoded comma — no string in between.
struct Query<'a> {
    out: &'a mut String,
    separator: char,
}

impl Query<'_> {
    fn pair<'v>(&mut self, name: &str, values: impl IntoIterator<Item = &'v str>) -> &mut Self {
        self.out.push(self.separator);
        self.separator = '&';
        self.out.push_str(name);
        self.out.push('=');
        for (i, value) in values.into_iter().enumerate() {
            if i > 0 {
                self.out.push_str("%2C");
            }
            self.out
                .extend(url::form_urlencoded::byte_serialize(value.as_bytes()));
        }
        self
    }
}

/// The client of one SearXNG instance. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SearxngClient {
    http: UpstreamHttp,
    /// The instance's URL without credentials.
    base: Url,
    /// `Authorization` for the credentials the instance's URL had, if any.
    authorization: Option<HeaderValue>,
    /// `base` + `/search`, made once: every search's target starts with it.
    search: String,
    attempt_timeout: Duration,
    metrics: SearxngMetrics,
    instance: InstanceLabel,
}

impl SearxngClient {
    /// A client for the instance at `base` (no trailing slash), counted under `instance`. `http`
    /// must not follow redirects.
    pub fn new(
        http: UpstreamHttp,
        base: Url,
        attempt_timeout: Duration,
        metrics: SearxngMetrics,
        instance: InstanceLabel,
    ) -> Self {
        // The unlabelled families of a single instance are there from the first scrape, as plain
        // metrics would be; a pool member's series likewise.
        let _ = metrics.timeouts.get_or_create(&instance);
        let _ = metrics.duration.get_or_create(&instance);
        let (authorization, base) = credentials(&base);
        let search = endpoint(&base, "/search").into();
        Self {
            http,
            base,
            authorization,
            search,
            attempt_timeout,
            metrics,
            instance,
        }
    }

    /// The instance's label.
    pub fn instance(&self) -> &InstanceLabel {
        &self.instance
    }

    /// One search attempt, cut at the attempt timeout or `deadline`, whichever comes first.
    /// `engines` overrides the request's engine selection (the breakers' explicit list).
    pub async fn attempt(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = self.attempt_timeout.min(left);
        let outcome = match tokio::time::timeout(timeout, self.send(req, engines, None)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(UpstreamError::new(ErrorClass::Timeout)),
        };
        if let Err(err) = &outcome {
            if err.class == ErrorClass::Timeout {
                self.metrics.timeouts.get_or_create(&self.instance).inc();
            }
        }
        outcome
    }

    /// The gateway's own probe of `engine` (a search for `query` with `engines=<engine>` alone,
    /// marked with [`PROBE_HEADER`] so SearXNG's logs, a proxy or a benchmark can tell it from a
    /// client's search), answered by `deadline`. Not a call of a client: no call metric counts it.
    pub async fn probe(
        &self,
        engine: &str,
        query: &str,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let engines = [engine.to_owned()];
        let req = SearchRequest::simple(query);
        let send = self.send(&req, Some(&engines), Some(engine));
        tokio::time::timeout(left, send)
            .await
            .unwrap_or_else(|_| Err(UpstreamError::new(ErrorClass::Timeout)))
    }

    /// Counts attempt number `attempt` of a call (`retry_attempts_total`).
    pub fn count_attempt(&self, attempt: u32, outcome: Result<(), ErrorClass>) {
        let (outcome, error_class) = match outcome {
            Ok(()) => (AttemptResult::Success, AttemptError::None),
            Err(class) => (AttemptResult::Failure, AttemptError::Class(class)),
        };
        self.metrics
            .attempts
            .get_or_create(&AttemptLabels {
                attempt,
                outcome,
                error_class,
                instance: self.instance.clone(),
            })
            .inc();
    }

    /// Counts a whole call whose last attempt went to this instance: its duration (`started` is
    /// when the first attempt began), its result and, on an answer, every engine's share. `exhausted`:
    /// the call failed on its last allowed attempt.
    pub fn count_call(
        &self,
        started: Instant,
        result: &Result<SearxngAnswer, UpstreamError>,
        exhausted: bool,
    ) {
        self.metrics
            .duration
            .get_or_create(&self.instance)
            .observe(started.elapsed().as_secs_f64());
        let result_label = match result {
            Ok(answer) if answer.is_degraded() => SearxngResult::Degraded,
            Ok(_) => SearxngResult::Ok,
            Err(err) => SearxngResult::Failed(err.class),
        };
        self.metrics
            .requests
            .get_or_create(&ResultLabels {
                result: result_label,
                instance: self.instance.clone(),
            })
            .inc();
        match result {
            Ok(answer) => self.account_engines(answer),
            Err(err) if exhausted => {
                self.metrics
                    .exhausted
                    .get_or_create(&ErrorClassLabels {
                        error_class: err.class,
                        instance: self.instance.clone(),
                    })
                    .inc();
            }
            Err(_) => {}
        }
    }

    /// The header that carries the instance URL's credentials, if it had any.
    fn authorization(&self) -> impl Iterator<Item = (HeaderName, HeaderValue)> {
        self.authorization
            .clone()
            .map(|value| (hyper::header::AUTHORIZATION, value))
            .into_iter()
    }

    /// The target of one search: the instance's `/search` (made once, at start) with every
    /// forwarded parameter and `locale=en` written straight after it.
    fn search_uri(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
    ) -> Result<Uri, UpstreamError> {
        let mut url = String::with_capacity(self.search.len() + 96 + req.query.len() * 3);
        url.push_str(&self.search);
        let separator = if self.search.contains('?') { '&' } else { '?' };
        let mut query = Query {
            out: &mut url,
            separator,
        };
        query
            .pair("q", [&*req.query_with_site()])
            .pair("format", ["json"])
            // unresponsive_engines messages are translated into the UI language otherwise.
            .pair("locale", ["en"]);
        if req.pageno != 1 {
            query.pair("pageno", [itoa::Buffer::new().format(req.pageno)]);
        }
        if !req.categories.is_empty() {
            query.pair("categories", req.categories.iter().map(String::as_str));
        }
        match engines {
            Some(list) => {
                query.pair("engines", list.iter().map(String::as_str));
            }
            None if !req.engines.is_empty() => {
                query.pair("engines", req.engines.iter().map(String::as_str));
            }
            None => {}
        }
        if let Some(language) = &req.language {
            query.pair("language", [language.as_str()]);
        }
        if let Some(range) = req.time_range {
            query.pair("time_range", [TimeRange::as_str(range)]);
        }
        if let Some(safe) = req.safesearch {
            query.pair("safesearch", [SafeSearch::as_str(safe)]);
        }
        target(url)
    }

    /// One search; `probe`: the engine this is the gateway's own probe of ([`PROBE_HEADER`]).
    async fn send(
        &self,
        req: &SearchRequest,
        engines: Option<&[String]>,
        probe: Option<&str>,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let probe = match probe {
            Some(engine) => Some((
                PROBE_HEADER,
                HeaderValue::from_str(engine)
                    .map_err(|_| UpstreamError::new(ErrorClass::BadRequest))?,
            )),
            None => None,
        };
        let response = self
            .http
            .searxng()
            .get(
                self.search_uri(req, engines)?,
                self.authorization().chain(probe),
            )
            .await
            .map_err(UpstreamError::new)?;
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
            return Err(UpstreamError::new(class).at_status(status));
        }
        let body = read_body_capped(response, BODY_CAP)
            .await
            .map_err(UpstreamError::new)?;
        decode_answer(body).ok_or_else(|| UpstreamError::new(ErrorClass::Malformed))
    }

    fn account_engines(&self, answer: &SearxngAnswer) {
        let names = &self.metrics.engine_labels;
        let labels = |engine: &str| EngineLabels {
            engine: names.value(engine),
            instance: self.instance.clone(),
        };
        // Counted per engine first: one metric lookup (labels built and hashed) per engine, not
        // one per result and engine.
        for (engine, count) in answer.results_per_engine() {
            let labels = labels(engine);
            self.metrics
                .engine_results
                .get_or_create(&labels)
                .inc_by(count);
            self.metrics.engine_status.get_or_create(&labels).set(1);
        }
        for u in &answer.unresponsive {
            self.metrics
                .engine_unresponsive
                .get_or_create(&EngineReasonLabels {
                    engine: names.value(&u.engine),
                    reason: u.reason,
                    instance: self.instance.clone(),
                })
                .inc();
            self.metrics
                .engine_status
                .get_or_create(&labels(&u.engine))
                .set(0);
        }
    }

    /// `GET /config`: the instance's engines and categories.
    pub async fn fetch_config(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        self.fetch_json("/config", timeout).await
    }

    /// `GET /stats/errors`: SearXNG's own record of its engines' errors (JSON).
    pub async fn fetch_engine_errors(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        self.fetch_json("/stats/errors", timeout).await
    }

    async fn fetch_json(&self, path: &str, timeout: Duration) -> Result<Value, UpstreamError> {
        let uri = target(endpoint(&self.base, path).into())?;
        let fetch = async {
            let response = self
                .http
                .searxng()
                .get(uri, self.authorization())
                .await
                .map_err(UpstreamError::new)?;
            let status = response.status();
            if !status.is_success() {
                let class = if status.is_server_error() {
                    ErrorClass::Server
                } else {
                    ErrorClass::HttpStatus
                };
                return Err(UpstreamError::new(class).at_status(status));
            }
            read_body_capped(response, BODY_CAP)
                .await
                .map_err(UpstreamError::new)
        };
        let body = tokio::time::timeout(timeout, fetch)
            .await
            .unwrap_or_else(|_| Err(UpstreamError::new(ErrorClass::Timeout)))?;
        serde_json::from_slice(&body).map_err(|_| UpstreamError::new(ErrorClass::Malformed))
    }

    /// Checks that JSON output is enabled without running a search: `GET /search?format=json`
    /// without `q` is refused with 400 when JSON is on, and with a 403 page when it is off.
    pub async fn json_enabled(&self, timeout: Duration) -> Result<bool, UpstreamError> {
        let mut url = self.search.clone();
        url.push_str(if url.contains('?') { "&" } else { "?" });
        url.push_str("format=json");
        let check = self.http.searxng().get(target(url)?, self.authorization());
        let response = tokio::time::timeout(timeout, check)
            .await
            .unwrap_or(Err(ErrorClass::Timeout))
            .map_err(UpstreamError::new)?;
        Ok(response.status().as_u16() != 403)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Answers one request on `listener` with `{}` and returns the request's head as sent (hyper
    /// writes header names in lower case).
    async fn one_request_head(listener: tokio::net::TcpListener) -> String {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        socket
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            )
            .await
            .unwrap();
        String::from_utf8(head).unwrap()
    }

    /// Answers one request on `listener` with `status` and an empty body.
    async fn answer_one_with(listener: tokio::net::TcpListener, status: &str) {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let reply = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        socket.write_all(reply.as_bytes()).await.unwrap();
    }

    /// A search answered with a status the client has no class for (a URL that is not SearXNG's
    /// base: `…/search/search` is a 404) fails as `http_status` with that status, typed, for the
    /// log line and the 502 body; a 5xx keeps its status too.
    #[tokio::test]
    async fn a_search_answered_with_an_unexpected_status_carries_the_status() {
        for (reply, class, code) in [
            ("404 Not Found", ErrorClass::HttpStatus, 404),
            ("503 Service Unavailable", ErrorClass::Server, 503),
        ] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(answer_one_with(listener, reply));
            let client = SearxngClient::new(
                UpstreamHttp::new(1).unwrap(),
                Url::parse(&format!("http://{addr}")).unwrap(),
                Duration::from_secs(5),
                SearxngMetrics::new(&mut gateway_core::metrics::Registry::new()),
                InstanceLabel::single(),
            );
            let deadline = Instant::now() + Duration::from_secs(30);
            let err = client
                .attempt(&SearchRequest::simple("q"), None, deadline)
                .await
                .unwrap_err();
            server.await.unwrap();
            assert_eq!(err.class, class, "{reply}");
            assert_eq!(err.status, Some(hyper::StatusCode::from_u16(code).unwrap()));
        }
    }

    /// Credentials in the instance's URL (SearXNG behind a proxy with basic auth) are sent as
    /// `Authorization: Basic`, decoded from the URL's percent-encoding, and never in the target.
    #[tokio::test]
    async fn credentials_in_the_instance_url_are_sent_as_basic_auth() {
        for (userinfo, expected) in [("us%40er:p%3Ass@", Some("dXNAZXI6cDpzcw==")), ("", None)] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(one_request_head(listener));
            let client = SearxngClient::new(
                UpstreamHttp::new(1).unwrap(),
                Url::parse(&format!("http://{userinfo}{addr}/searx")).unwrap(),
                Duration::from_secs(5),
                SearxngMetrics::new(&mut gateway_core::metrics::Registry::new()),
                InstanceLabel::single(),
            );
            let config = client.fetch_config(Duration::from_secs(30)).await.unwrap();
            assert_eq!(config, serde_json::json!({}));
            let head = server.await.unwrap();
            assert!(head.starts_with("GET /searx/config HTTP/1.1\r\n"), "{head}");
            assert!(head.contains(&format!("\r\nhost: {addr}\r\n")), "{head}");
            let sent = head
                .lines()
                .find_map(|line| line.strip_prefix("authorization: Basic "));
            assert_eq!(sent, expected, "{head}");
        }
    }

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
            categories: vec!["news".into(), "it".into()],
            engines: vec!["alpha".into()],
            language: Some("de".into()),
            time_range: Some(TimeRange::Week),
            safesearch: Some(SafeSearch::Strict),
            ..SearchRequest::simple("Rust Async & 100% \"tokio\"/é")
        };
        let client = SearxngClient::new(
            UpstreamHttp::new(1).unwrap(),
            Url::parse("http://127.0.0.1:8888/searx").unwrap(),
            Duration::from_secs(1),
            SearxngMetrics::new(&mut gateway_core::metrics::Registry::new()),
            InstanceLabel::single(),
        );
        let url = |uri: Uri| Url::parse(&uri.to_string()).unwrap();
        let url = url(client.search_uri(&req, None).unwrap());
        assert_eq!(url.path(), "/searx/search");
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("q"), Some("Rust Async & 100% \"tokio\"/é"));
        assert_eq!(get("locale"), Some("en"));
        assert_eq!(get("pageno"), Some("2"));
        assert_eq!(get("categories"), Some("news,it"), "a list, comma-joined");
        assert_eq!(get("engines"), Some("alpha"));
        assert_eq!(get("language"), Some("de"));
        assert_eq!(get("time_range"), Some("week"));
        assert_eq!(get("safesearch"), Some("2"));
        let overridden = Url::parse(
            &client
                .search_uri(&req, Some(&["beta".to_owned()]))
                .unwrap()
                .to_string(),
        )
        .unwrap();
        assert!(overridden
            .query_pairs()
            .any(|(name, value)| name == "engines" && value == "beta"));
    }
}
