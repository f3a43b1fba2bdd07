//! How a premium provider speaks, with no I/O: what to send ([`ApiRequest`], without the key) and
//! how to read the answer — for a search ([`PremiumApi`]) or for a page (the readers, which share
//! [`Wire`] and [`decode`]). The steps every provider shares are written once in [`decode`]:
//! a 5xx is `server_error`; any other non-2xx is decoded leniently as the provider's error body
//! and classified by the adapter; a 2xx is decoded as the provider's success body (a body that does
//! not decode is `malformed`: schema drift is an outage) and mapped to hits by the adapter; the
//! server's `Retry-After` travels with every failure. An HTML page where the JSON API should answer
//! (a CDN's bot challenge, a CAPTCHA wall) on a 2xx or 4xx is `blocked`: it will not pass by asking
//! again, so the breaker opens at once instead of counting it as a transient failure. An adapter keeps only what is its own: its
//! request shape, its classification of its error bodies, its mapping to results.

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use super::quota::RateWindow;
use super::{ProviderAnswer, ProviderKind};
use gateway_core::request::{Domain, SearchRequest};
use gateway_core::upstream::{retry_after, ErrorClass, UpstreamError};

/// How a provider takes its key. The HTTP client puts the key there; no adapter ever sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The key alone as the value of this header (`X-Subscription-Token`, `x-api-key`).
    Header(&'static str),
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `Authorization: <scheme> <key>` (Kagi's `Bot`).
    Scheme(&'static str),
}

/// The HTTP method of a provider request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// GET with query parameters.
    Get,
    /// POST with a JSON body.
    Post,
}

/// What a provider wants sent; the origin comes from configuration and the key from the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    /// GET or POST.
    pub(crate) method: Method,
    /// The provider's real path, e.g. `/res/v1/web/search`.
    pub(crate) path: &'static str,
    /// Query-string parameters.
    pub(crate) query: Vec<(&'static str, String)>,
    /// Headers besides the auth header (fixed values: nothing secret).
    pub(crate) headers: Vec<(&'static str, &'static str)>,
    /// JSON body for POST.
    pub(crate) body: Option<serde_json::Value>,
}

impl ApiRequest {
    /// A POST of `body` as JSON, asking for JSON back.
    pub(crate) fn json_post(path: &'static str, body: serde_json::Value) -> Self {
        Self {
            method: Method::Post,
            path,
            query: Vec::new(),
            headers: vec![
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
            body: Some(body),
        }
    }

    /// A GET with `query`, asking for JSON back.
    pub(crate) fn json_get(path: &'static str, query: Vec<(&'static str, String)>) -> Self {
        Self {
            method: Method::Get,
            path,
            query,
            headers: vec![("accept", "application/json")],
            body: None,
        }
    }
}

/// What a refused (non-2xx, non-5xx) answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A failure; without its own hint it gets the response's `Retry-After`.
    Failed(UpstreamError),
    /// Not a failure at all: the provider's way of saying "no results" (Jina's 422).
    NoResults,
}

impl From<ErrorClass> for Refusal {
    fn from(class: ErrorClass) -> Self {
        Self::Failed(UpstreamError::new(class))
    }
}

/// One provider's search protocol (its answers are read as its [`Wire`] says).
pub(crate) trait PremiumApi: Wire + Send + Sync + 'static {
    /// Which provider this is.
    const KIND: ProviderKind;
    /// Where the key goes.
    const AUTH: Auth;

    /// The request for `req`.
    fn request(&self, req: &SearchRequest) -> ApiRequest;

    /// Maps a decoded 2xx body to the answer; an `Err` is a body of the wrong shape.
    fn answer(
        &self,
        body: Self::Success,
        headers: &HeaderMap,
    ) -> Result<ProviderAnswer, ErrorClass>;

    /// The rate-limit windows the response headers report (none by default).
    fn rate_windows(&self, _headers: &HeaderMap) -> Vec<RateWindow> {
        Vec::new()
    }
}

/// The request's language as a provider takes it: the primary language, lower-case (`de` of
/// `de-CH`), or `None` for no language or `all`.
pub(crate) fn primary_language(req: &SearchRequest) -> Option<String> {
    req.language
        .as_deref()
        .filter(|l| !l.eq_ignore_ascii_case("all"))
        .and_then(|l| l.split(['-', '_']).next())
        .filter(|primary| primary.len() >= 2 && primary.chars().all(|c| c.is_ascii_alphabetic()))
        .map(str::to_ascii_lowercase)
}

/// The request's region, when its language names one: lower-case (`ch` of `de-CH`).
pub(crate) fn region(req: &SearchRequest) -> Option<String> {
    let language = req.language.as_deref()?;
    let region = language.split(['-', '_']).nth(1)?;
    (region.len() == 2 && region.chars().all(|c| c.is_ascii_alphabetic()))
        .then(|| region.to_ascii_lowercase())
}

/// The first day of `range`, as `YYYY-MM-DD`, counted back from `now` (for providers that take
/// a start date rather than a range).
pub(crate) fn start_day(
    range: gateway_core::request::TimeRange,
    now: std::time::SystemTime,
) -> String {
    let start = now - std::time::Duration::from_secs(u64::from(range.days()) * 86_400);
    humantime::format_rfc3339(start).to_string()[..10].to_owned()
}

/// Whether an error message says the account ran out of money (credits, balance, quota, billing).
pub(crate) fn mentions_money(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "credit",
        "balance",
        "quota",
        "billing",
        "insufficient fund",
        "payment",
        "usage limit",
    ]
    .iter()
    .any(|word| message.contains(word))
}

/// Domains as a provider's JSON list of names (`include_domains`, `includeDomains`).
pub(crate) fn domain_names(domains: &[Domain]) -> Vec<&str> {
    domains.iter().map(Domain::as_str).collect()
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

/// How a premium API's answers are read, whatever it is asked (a search, a page): its error
/// bodies classified, its success body decoded. [`decode`] runs the steps every answer shares.
pub(crate) trait Wire {
    /// The success body, only the parts the adapter reads.
    type Success: DeserializeOwned;
    /// The error body, only the parts the adapter reads (`None` when a body does not decode).
    type Failure: DeserializeOwned;

    /// Classifies a non-2xx, non-5xx answer from its status, its decoded error body and headers.
    fn refusal(&self, status: u16, body: Option<Self::Failure>, headers: &HeaderMap) -> Refusal;
}

/// What one complete response decodes to.
pub(crate) enum Decoded<S> {
    /// A 2xx body of the expected shape.
    Success(S),
    /// The provider's way of saying "nothing" (Jina's 422).
    Nothing,
}

/// The steps every premium answer shares: a 5xx is `server_error`; an HTML page where JSON should
/// be is `blocked`; any other non-2xx is classified by the adapter from its error body; a 2xx is
/// decoded (a body of the wrong shape is `malformed`). `Retry-After` travels with every failure.
pub(crate) fn decode<W: Wire>(
    api: &W,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Decoded<W::Success>, UpstreamError> {
    let hint = retry_after(headers);
    // A failure status travels with the failure, for the log line and the error body.
    let failed = |class| {
        let err = UpstreamError::with_retry_after(class, hint);
        match StatusCode::from_u16(status) {
            Ok(status) if !status.is_success() => err.at_status(status),
            _ => err,
        }
    };
    if (500..600).contains(&status) {
        return Err(failed(ErrorClass::Server));
    }
    if is_html_page(headers, body) {
        return Err(failed(ErrorClass::Blocked));
    }
    if !(200..300).contains(&status) {
        let decoded = serde_json::from_slice::<W::Failure>(body).ok();
        return match api.refusal(status, decoded, headers) {
            Refusal::NoResults => Ok(Decoded::Nothing),
            Refusal::Failed(err) => Err(UpstreamError {
                retry_after: err.retry_after.or(hint),
                ..failed(err.class)
            }),
        };
    }
    serde_json::from_slice(body)
        .map(Decoded::Success)
        .map_err(|_| UpstreamError::new(ErrorClass::Malformed))
}

/// Reads one complete response of provider `api`: results, empty, or a classified failure.
pub(crate) fn interpret<A: PremiumApi>(
    api: &A,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<ProviderAnswer, UpstreamError> {
    match decode(api, status, headers, body)? {
        Decoded::Nothing => Ok(ProviderAnswer::default()),
        Decoded::Success(body) => api.answer(body, headers).map_err(UpstreamError::new),
    }
}

/// Whether a response is an HTML page rather than the JSON the API speaks: declared as
/// `text/html`, or a body that opens with an HTML tag (some challenges are sent as `text/plain`).
fn is_html_page(headers: &HeaderMap, body: &[u8]) -> bool {
    let declared = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.trim_start().to_ascii_lowercase();
            v.starts_with("text/html") || v.starts_with("application/xhtml")
        });
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |at| &body[at..]);
    let head = &start[..start.len().min(15)];
    let opens_html = head.to_ascii_lowercase().starts_with(b"<!doctype html")
        || head.to_ascii_lowercase().starts_with(b"<html");
    declared || opens_html
}

/// A provider as the client holds it: the wire protocol behind a trait object.
pub trait Adapter: Send + Sync + 'static {
    /// Which provider this is.
    fn kind(&self) -> ProviderKind;
    /// Where the key goes.
    fn auth(&self) -> Auth;
    /// The request for `req`.
    fn request(&self, req: &SearchRequest) -> ApiRequest;
    /// Reads one complete response.
    fn interpret(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<ProviderAnswer, UpstreamError>;
    /// The rate-limit windows the response headers report.
    fn rate_windows(&self, headers: &HeaderMap) -> Vec<RateWindow>;
}

impl<A: PremiumApi> Adapter for A {
    fn kind(&self) -> ProviderKind {
        A::KIND
    }

    fn auth(&self) -> Auth {
        A::AUTH
    }

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        PremiumApi::request(self, req)
    }

    fn interpret(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<ProviderAnswer, UpstreamError> {
        interpret(self, status, headers, body)
    }

    fn rate_windows(&self, headers: &HeaderMap) -> Vec<RateWindow> {
        PremiumApi::rate_windows(self, headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Ok(value) = content_type.parse() {
            headers.insert(reqwest::header::CONTENT_TYPE, value);
        }
        headers
    }

    const CHALLENGE: &[u8] =
        b"\n<!DOCTYPE html><html><head><title>Just a moment...</title></head></html>";

    #[test]
    fn an_html_page_from_a_json_api_is_a_block_not_malformed() {
        let api = super::super::tavily::Tavily;
        for status in [200, 403, 429] {
            for headers in [html("text/html; charset=UTF-8"), html("text/plain")] {
                let err = interpret(&api, status, &headers, CHALLENGE).err();
                assert_eq!(err.map(|e| e.class), Some(ErrorClass::Blocked), "{status}");
            }
        }
        let err = interpret(&api, 200, &html("application/json"), b"{\"oops\"").err();
        assert_eq!(err.map(|e| e.class), Some(ErrorClass::Malformed));
    }

    #[test]
    fn an_html_5xx_stays_a_transient_server_error() {
        let api = super::super::tavily::Tavily;
        let err = interpret(&api, 502, &html("text/html"), b"<html>Bad gateway</html>").err();
        assert_eq!(err.map(|e| e.class), Some(ErrorClass::Server));
    }

    /// `http_status 404`, not `http_status` alone: the status a failure was read from travels
    /// with it; a failure of a 2xx body has none.
    #[test]
    fn a_failure_read_from_a_status_carries_the_status() {
        let api = super::super::tavily::Tavily;
        let status_of = |status: u16, headers: &HeaderMap, body: &[u8]| {
            interpret(&api, status, headers, body)
                .err()
                .map(|e| (e.class, e.status.map(|s| s.as_u16())))
        };
        let json = HeaderMap::new();
        assert_eq!(
            status_of(404, &json, b"{}"),
            Some((ErrorClass::HttpStatus, Some(404)))
        );
        assert_eq!(
            status_of(503, &json, b"{}"),
            Some((ErrorClass::Server, Some(503)))
        );
        assert_eq!(
            status_of(403, &html("text/html"), CHALLENGE),
            Some((ErrorClass::Blocked, Some(403)))
        );
        assert_eq!(
            status_of(200, &html("text/html"), CHALLENGE),
            Some((ErrorClass::Blocked, None))
        );
        assert_eq!(
            status_of(200, &json, b"{\"oops\""),
            Some((ErrorClass::Malformed, None))
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
}
