//! Brave Search API: `GET https://api.search.brave.com/res/v1/web/search?q=…`.
//!
//! Auth: `X-Subscription-Token: KEY`; we also send `Accept: application/json` and
//! `text_decorations=false` so snippets are plain text.
//!
//! Quirks:
//! - a bad key is **422** `SUBSCRIPTION_TOKEN_INVALID` (or 404 `SUBSCRIPTION_NOT_FOUND`), not 401;
//!   422 `VALIDATION` means our request is wrong;
//! - quota and rate limit are both **429**; only the body's `code` (`QUOTA_LIMITED` vs
//!   `RATE_LIMITED`) tells them apart. Error bodies carry an `error` object, the documentation shows
//!   an `errors` array: both are read;
//! - a 200 without `web` is zero results;
//! - every response carries `X-RateLimit-{Limit,Remaining,Reset,Policy}`, comma lists with one
//!   entry per window (per second, per month). A window at zero parks Brave until its reset even
//!   on a 200; a missing or short list is unknown, never zero.
//! - `offset` is a page index limited to 0–9; `search_lang`/`ui_lang` accept only listed codes, so
//!   an unlisted language is left out rather than risking a 422.

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::api::{class_for_status, ApiRequest, Auth, PremiumApi, Refusal, Wire};
use super::quota::RateWindow;
use super::{Park, ProviderAnswer, ProviderKind};
use gateway_core::request::{SafeSearch, SearchRequest, TimeRange};
use gateway_core::upstream::{retry_after, ErrorClass, UpstreamError};

/// The Brave Search API adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Brave;

const PATH: &str = "/res/v1/web/search";
const COUNT: u32 = 10;
/// Brave's highest page index.
const MAX_OFFSET: u32 = 9;
/// The policy window (`w=`) of the monthly quota.
const MONTH_SECS: u64 = 2_592_000;

/// `search_lang` values Brave lists that are plain two-letter codes. Codes whose spelling differs
/// between Brave's documentation and client libraries (Japanese, Chinese, Portuguese) are left out.
const SEARCH_LANGS: &[&str] = &[
    "ar", "bg", "bn", "ca", "cs", "da", "de", "en", "es", "et", "eu", "fi", "fr", "gl", "gu", "he",
    "hi", "hr", "hu", "is", "it", "kn", "ko", "lt", "lv", "ml", "mr", "ms", "nb", "nl", "pa", "pl",
    "ro", "ru", "sk", "sl", "sr", "sv", "ta", "te", "th", "tr", "uk", "vi",
];

/// `ui_lang` market codes Brave lists.
const UI_LANGS: &[&str] = &[
    "da-DK", "de-AT", "de-CH", "de-DE", "en-AU", "en-CA", "en-GB", "en-ID", "en-IN", "en-MY",
    "en-NZ", "en-PH", "en-US", "en-ZA", "es-AR", "es-CL", "es-ES", "es-MX", "es-US", "fi-FI",
    "fr-BE", "fr-CA", "fr-CH", "fr-FR", "it-IT", "ja-JP", "ko-KR", "nl-BE", "nl-NL", "no-NO",
    "pl-PL", "pt-BR", "ru-RU", "sv-SE", "tr-TR", "zh-CN", "zh-HK", "zh-TW",
];

impl Wire for Brave {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    /// The body's `code` first, the status when the body names none.
    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, headers: &HeaderMap) -> Refusal {
        let limits = RateLimits::from_headers(headers);
        let class = match body.and_then(wire::ErrorBody::code).as_deref() {
            Some("SUBSCRIPTION_TOKEN_INVALID" | "SUBSCRIPTION_NOT_FOUND") => ErrorClass::Auth,
            Some("QUOTA_LIMITED") => ErrorClass::Quota,
            Some("RATE_LIMITED") => ErrorClass::RateLimited,
            Some("VALIDATION") => ErrorClass::BadRequest,
            _ => match status {
                422 => ErrorClass::BadRequest,
                429 if limits.month().is_some_and(Window::is_exhausted) => ErrorClass::Quota,
                other => class_for_status(other),
            },
        };
        // Brave sends no Retry-After as far as we know; the exhausted window's reset says the same.
        let hint = retry_after(headers).or_else(|| match class {
            ErrorClass::Quota => limits
                .month()
                .and_then(Window::reset_duration)
                .or_else(|| limits.exhausted().and_then(Window::reset_duration)),
            ErrorClass::RateLimited => limits.exhausted().and_then(Window::reset_duration),
            _ => None,
        });
        Refusal::Failed(UpstreamError::with_retry_after(class, hint))
    }
}

impl PremiumApi for Brave {
    const KIND: ProviderKind = ProviderKind::Brave;
    const AUTH: Auth = Auth::Header("x-subscription-token");

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        let mut query = vec![
            ("q", req.query_with_site().into_owned()),
            ("count", COUNT.to_string()),
            (
                "offset",
                req.pageno.saturating_sub(1).min(MAX_OFFSET).to_string(),
            ),
            ("text_decorations", "false".to_owned()),
        ];
        if let Some((search_lang, ui_lang)) = languages(req.language.as_deref()) {
            if let Some(lang) = search_lang {
                query.push(("search_lang", lang));
            }
            if let Some(lang) = ui_lang {
                query.push(("ui_lang", lang));
            }
        }
        if let Some(range) = req.time_range {
            let freshness = match range {
                TimeRange::Day => "pd",
                TimeRange::Week => "pw",
                TimeRange::Month => "pm",
                TimeRange::Year => "py",
            };
            query.push(("freshness", freshness.to_owned()));
        }
        if let Some(level) = req.safesearch {
            let safesearch = match level {
                SafeSearch::Off => "off",
                SafeSearch::Moderate => "moderate",
                SafeSearch::Strict => "strict",
            };
            query.push(("safesearch", safesearch.to_owned()));
        }
        ApiRequest::json_get(PATH, query)
    }

    fn answer(
        &self,
        body: wire::Response,
        headers: &HeaderMap,
    ) -> Result<ProviderAnswer, ErrorClass> {
        if body.kind != "search" {
            return Err(ErrorClass::Malformed);
        }
        let hits = body
            .web
            .map(|web| {
                web.results
                    .into_iter()
                    .filter_map(wire::Result::into_hit)
                    .collect()
            })
            .unwrap_or_default();
        let limits = RateLimits::from_headers(headers);
        let park = limits.exhausted().map(|window| {
            if window.is_month() {
                Park::Quota(window.reset_duration())
            } else {
                Park::Window(window.reset_duration().unwrap_or(Duration::from_secs(1)))
            }
        });
        Ok(ProviderAnswer {
            hits,
            park,
            ..ProviderAnswer::default()
        })
    }

    fn rate_windows(&self, headers: &HeaderMap) -> Vec<RateWindow> {
        RateLimits::from_headers(headers)
            .windows
            .into_iter()
            .map(|w| RateWindow {
                label: w.label,
                period_seconds: w.seconds,
                limit: w.limit,
                remaining: w.remaining,
                reset_seconds: w.reset,
            })
            .collect()
    }
}

/// `(search_lang, ui_lang)` for a SearXNG language such as `de`, `de-DE` or `en_US`; `None` for
/// `all` or no language. Each half is left out when Brave does not list it.
fn languages(language: Option<&str>) -> Option<(Option<String>, Option<String>)> {
    let language = language.filter(|l| !l.eq_ignore_ascii_case("all"))?;
    let mut parts = language.split(['-', '_']);
    let primary = parts.next()?.to_ascii_lowercase();
    let region = parts.next().map(str::to_ascii_uppercase);
    let search_lang = SEARCH_LANGS
        .contains(&primary.as_str())
        .then(|| primary.clone());
    let ui_lang = region
        .map(|region| format!("{primary}-{region}"))
        .filter(|market| UI_LANGS.contains(&market.as_str()));
    Some((search_lang, ui_lang))
}

/// Brave's rate-limit windows as its `X-RateLimit-*` headers describe them.
#[derive(Debug, Default, PartialEq)]
struct RateLimits {
    windows: Vec<Window>,
}

/// One rate-limit window; each value is `None` when its header entry was missing or unreadable.
#[derive(Debug, PartialEq)]
struct Window {
    /// `1s`, `month`, `w<secs>`, or the window's index when there is no policy.
    label: String,
    /// The window length from the policy's `w=`.
    seconds: Option<u64>,
    limit: Option<f64>,
    remaining: Option<f64>,
    reset: Option<f64>,
}

impl Window {
    fn is_month(&self) -> bool {
        self.seconds == Some(MONTH_SECS)
    }

    fn is_exhausted(&self) -> bool {
        self.remaining == Some(0.0)
    }

    /// The reset as a duration; `None` for a value no duration holds (found by fuzzing: a reset of
    /// 8.6e31 seconds used to panic in `Duration::from_secs_f64`).
    fn reset_duration(&self) -> Option<Duration> {
        self.reset.and_then(|r| Duration::try_from_secs_f64(r).ok())
    }
}

impl RateLimits {
    fn from_headers(headers: &HeaderMap) -> Self {
        let numbers = |name: &str| -> Vec<Option<f64>> {
            list(headers, name)
                .iter()
                .map(|entry| entry.parse::<f64>().ok().filter(|v| v.is_finite()))
                .collect()
        };
        let limits = numbers("x-ratelimit-limit");
        let remaining = numbers("x-ratelimit-remaining");
        let resets = numbers("x-ratelimit-reset");
        let policies: Vec<Option<u64>> = list(headers, "x-ratelimit-policy")
            .iter()
            .map(|entry| policy_window(entry))
            .collect();
        let count = limits
            .len()
            .max(remaining.len())
            .max(resets.len())
            .max(policies.len());
        let windows = (0..count)
            .map(|i| {
                let seconds = policies.get(i).copied().flatten();
                let label = match seconds {
                    Some(1) => "1s".to_owned(),
                    Some(MONTH_SECS) => "month".to_owned(),
                    Some(secs) => format!("w{secs}"),
                    None => i.to_string(),
                };
                Window {
                    label,
                    seconds,
                    limit: limits.get(i).copied().flatten(),
                    remaining: remaining.get(i).copied().flatten(),
                    reset: resets.get(i).copied().flatten(),
                }
            })
            .collect();
        Self { windows }
    }

    /// The exhausted window that stays closed longest (a month beats a second).
    fn exhausted(&self) -> Option<&Window> {
        self.windows
            .iter()
            .filter(|w| w.is_exhausted())
            .max_by(|a, b| {
                (a.is_month(), a.reset.unwrap_or(0.0))
                    .partial_cmp(&(b.is_month(), b.reset.unwrap_or(0.0)))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
    }

    fn month(&self) -> Option<&Window> {
        self.windows.iter().find(|w| w.is_month())
    }
}

/// The comma-separated entries of a header (empty when it is absent or not text).
fn list(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(',').map(|e| e.trim().to_owned()).collect())
        .unwrap_or_default()
}

/// The `w=` parameter of one policy entry such as `15000;w=2592000`.
fn policy_window(entry: &str) -> Option<u64> {
    entry
        .split(';')
        .skip(1)
        .filter_map(|param| param.trim().split_once('='))
        .find(|(name, _)| name.trim() == "w")
        .and_then(|(_, value)| value.trim().parse().ok())
}

/// Brave's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::PremiumHit;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        /// Always `search` on a web-search answer: the one field that tells an empty answer
        /// (no `web`) from a body of the wrong shape.
        #[serde(rename = "type")]
        pub(super) kind: String,
        pub(super) web: Option<Web>,
    }

    #[derive(Deserialize)]
    pub(super) struct Web {
        pub(super) results: Vec<Result>,
    }

    #[derive(Deserialize)]
    pub(super) struct Result {
        url: Option<String>,
        title: Option<String>,
        description: Option<String>,
        page_age: Option<String>,
        #[serde(default)]
        extra_snippets: Vec<String>,
    }

    impl Result {
        /// A hit, or `None` for an entry without a URL (nothing to link to).
        pub(super) fn into_hit(self) -> Option<PremiumHit> {
            let url = self.url.filter(|u| !u.is_empty())?;
            let content = self
                .description
                .filter(|d| !d.is_empty())
                .or_else(|| self.extra_snippets.into_iter().next())
                .unwrap_or_default();
            Some(PremiumHit {
                url,
                title: self.title.unwrap_or_default(),
                content,
                published_date: self.page_age,
            })
        }
    }

    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        error: Option<ErrorDetail>,
        #[serde(default)]
        errors: Vec<ErrorDetail>,
    }

    #[derive(Deserialize)]
    struct ErrorDetail {
        code: Option<String>,
    }

    impl ErrorBody {
        /// The error code, from the `error` object or the first entry of `errors`.
        pub(super) fn code(self) -> Option<String> {
            self.error
                .and_then(|e| e.code)
                .or_else(|| self.errors.into_iter().find_map(|e| e.code))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::interpret;
    use crate::providers::api::Method;
    use crate::providers::PremiumHit;
    use reqwest::header::HeaderValue;

    const SUCCESS: &str = r#"{"type":"search","query":{"original":"rust async"},"web":{"type":"search","results":[{"title":"Async Rust primer","url":"https://example.org/async","description":"A short primer.","page_age":"2026-11-27T10:00:00"}]}}"#;
    const NO_WEB: &str =
        r#"{"type":"search","query":{"original":"zxqv"},"mixed":{"type":"mixed","main":[]}}"#;
    const TOKEN_INVALID: &str = r#"{"type":"ErrorResponse","error":{"id":"a1","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."},"time":1700000000}"#;
    const NOT_FOUND: &str = r#"{"type":"ErrorResponse","error":{"id":"a2","status":404,"code":"SUBSCRIPTION_NOT_FOUND","detail":"Subscription not found."}}"#;
    const VALIDATION_ERRORS_ARRAY: &str = r#"{"type":"ErrorResponse","errors":[{"id":"a3","status":422,"code":"VALIDATION","detail":"Unable to validate request parameter(s).","meta":{"errors":[{"loc":["query","count"]}]}}]}"#;
    const QUOTA: &str = r#"{"type":"ErrorResponse","error":{"id":"a4","status":429,"code":"QUOTA_LIMITED","detail":"Request quota limit reached."}}"#;
    const RATE: &str = r#"{"type":"ErrorResponse","error":{"id":"a5","status":429,"code":"RATE_LIMITED","detail":"Request rate limit exceeded."}}"#;

    fn limits(limit: &str, policy: &str, remaining: &str, reset: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in [
            ("x-ratelimit-limit", limit),
            ("x-ratelimit-policy", policy),
            ("x-ratelimit-remaining", remaining),
            ("x-ratelimit-reset", reset),
        ] {
            if !value.is_empty() {
                h.insert(name, HeaderValue::from_str(value).unwrap());
            }
        }
        h
    }

    fn healthy() -> HeaderMap {
        limits(
            "20, 15000",
            "20;w=1, 15000;w=2592000",
            "19, 14321",
            "1, 1419704",
        )
    }

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Brave, status, &healthy(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits() {
        let answer = interpret(&Brave, 200, &healthy(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: Some("2026-11-27T10:00:00".into()),
            }]
        );
        assert_eq!(answer.park, None);
        assert_eq!(answer.cost_dollars, None);
    }

    #[test]
    fn a_200_without_web_is_an_empty_answer() {
        let answer = interpret(&Brave, 200, &healthy(), NO_WEB.as_bytes()).unwrap();
        assert!(answer.hits.is_empty());
    }

    #[test]
    fn garbled_or_wrong_shape_bodies_are_malformed() {
        assert_eq!(
            class(200, "<html>oops</html>"),
            ErrorClass::Blocked,
            "an HTML page is a block, not drift"
        );
        for body in [
            "oops",
            r#"{"type":"search","web":{"results":[{"title":"#,
            r#"{"status":"ok","items":[]}"#,
            r#"{"type":"search","web":{"type":"search"}}"#,
        ] {
            assert_eq!(class(200, body), ErrorClass::Malformed, "{body}");
        }
    }

    #[test]
    fn a_hit_without_url_is_dropped_and_extra_snippets_fill_a_missing_description() {
        let body = r#"{"type":"search","web":{"results":[{"title":"no url"},{"url":"https://a.example","extra_snippets":["more"]}]}}"#;
        let answer = interpret(&Brave, 200, &healthy(), body.as_bytes()).unwrap();
        assert_eq!(answer.hits.len(), 1);
        assert_eq!(answer.hits[0].content, "more");
        assert_eq!(answer.hits[0].title, "");
    }

    #[test]
    fn error_codes_decide_the_class_not_the_status() {
        assert_eq!(class(422, TOKEN_INVALID), ErrorClass::Auth);
        assert_eq!(class(404, NOT_FOUND), ErrorClass::Auth);
        assert_eq!(class(422, VALIDATION_ERRORS_ARRAY), ErrorClass::BadRequest);
        assert_eq!(class(429, QUOTA), ErrorClass::Quota);
        assert_eq!(class(429, RATE), ErrorClass::RateLimited);
    }

    #[test]
    fn statuses_decide_when_the_body_names_no_code() {
        assert_eq!(class(500, TOKEN_INVALID), ErrorClass::Server);
        assert_eq!(class(503, "upstream down"), ErrorClass::Server);
        assert_eq!(class(401, "nope"), ErrorClass::Auth);
        assert_eq!(class(403, ""), ErrorClass::Auth);
        assert_eq!(class(422, "{}"), ErrorClass::BadRequest);
        assert_eq!(class(429, "{}"), ErrorClass::RateLimited);
        assert_eq!(class(404, "{}"), ErrorClass::HttpStatus);
        assert_eq!(class(418, "{}"), ErrorClass::HttpStatus);
    }

    #[test]
    fn a_429_uses_the_exhausted_windows_reset_without_retry_after() {
        let h = limits(
            "1, 15000",
            "1;w=1, 15000;w=2592000",
            "0, 14321",
            "3, 1419704",
        );
        let err = interpret(&Brave, 429, &h, RATE.as_bytes()).unwrap_err();
        assert_eq!(err.class, ErrorClass::RateLimited);
        assert_eq!(err.retry_after, Some(Duration::from_secs(3)));

        let h = limits("1, 15000", "1;w=1, 15000;w=2592000", "1, 0", "1, 86400");
        let err = interpret(&Brave, 429, &h, QUOTA.as_bytes()).unwrap_err();
        assert_eq!(err.class, ErrorClass::Quota);
        assert_eq!(err.retry_after, Some(Duration::from_secs(86400)));

        let mut h = h;
        h.insert("retry-after", HeaderValue::from_static("9"));
        let err = interpret(&Brave, 429, &h, RATE.as_bytes()).unwrap_err();
        assert_eq!(err.retry_after, Some(Duration::from_secs(9)));
    }

    #[test]
    fn a_429_without_code_is_quota_when_the_month_window_is_empty() {
        let h = limits("1, 15000", "1;w=1, 15000;w=2592000", "1, 0", "1, 5000");
        let err = interpret(&Brave, 429, &h, b"{}").unwrap_err();
        assert_eq!(err.class, ErrorClass::Quota);
        assert_eq!(err.retry_after, Some(Duration::from_secs(5000)));
    }

    #[test]
    fn a_200_with_an_exhausted_window_parks_brave_until_its_reset() {
        let h = limits(
            "1, 15000",
            "1;w=1, 15000;w=2592000",
            "0, 14321",
            "1, 1419704",
        );
        let answer = interpret(&Brave, 200, &h, SUCCESS.as_bytes()).unwrap();
        assert_eq!(answer.hits.len(), 1);
        assert_eq!(answer.park, Some(Park::Window(Duration::from_secs(1))));

        let h = limits("1, 15000", "1;w=1, 15000;w=2592000", "0, 0", "1, 1419704");
        let answer = interpret(&Brave, 200, &h, SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.park,
            Some(Park::Quota(Some(Duration::from_secs(1_419_704))))
        );
    }

    #[test]
    fn a_reset_beyond_any_duration_is_unknown_not_a_panic() {
        // fuzz/regressions/brave_rate_limits/reset-beyond-duration-range
        let headers = limits(
            "1, 15000",
            "1;w=1, 15000;w=2592000",
            "1, 0",
            "0.5, 86400777777777777777777777777777",
        );
        let err = interpret(&Brave, 429, &headers, b"{}").unwrap_err();
        assert_eq!(err.class, ErrorClass::Quota, "the month window is spent");
        assert_eq!(
            err.retry_after, None,
            "a reset no duration holds is unknown"
        );
        let ok = interpret(&Brave, 200, &headers, br#"{"type":"search"}"#).unwrap();
        assert_eq!(ok.park, Some(Park::Quota(None)));
    }

    #[test]
    fn missing_or_short_lists_are_unknown_never_zero() {
        let answer = interpret(&Brave, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(answer.park, None);
        let h = limits("1, 15000", "1;w=1, 15000;w=2592000", "5", "");
        let parsed = RateLimits::from_headers(&h);
        assert_eq!(parsed.windows.len(), 2);
        assert_eq!(parsed.windows[1].remaining, None);
        assert_eq!(parsed.windows[1].label, "month");
        assert_eq!(
            interpret(&Brave, 200, &h, SUCCESS.as_bytes()).unwrap().park,
            None
        );
    }

    #[test]
    fn every_window_is_reported_as_a_fact() {
        let windows = PremiumApi::rate_windows(&Brave, &healthy());
        assert_eq!(
            windows,
            [
                RateWindow {
                    label: "1s".into(),
                    period_seconds: Some(1),
                    limit: Some(20.0),
                    remaining: Some(19.0),
                    reset_seconds: Some(1.0),
                },
                RateWindow {
                    label: "month".into(),
                    period_seconds: Some(MONTH_SECS),
                    limit: Some(15000.0),
                    remaining: Some(14321.0),
                    reset_seconds: Some(1_419_704.0),
                },
            ]
        );
    }

    #[test]
    fn windows_are_labelled_from_the_policy_or_by_index() {
        let h = limits("5, 100", "5;w=60, 100;w=86400", "1, 2", "3, 4");
        let labels: Vec<_> = RateLimits::from_headers(&h)
            .windows
            .into_iter()
            .map(|w| w.label)
            .collect();
        assert_eq!(labels, ["w60", "w86400"]);

        let windows = PremiumApi::rate_windows(&Brave, &limits("5, 100", "", "1, 2", "3"));
        assert_eq!(windows[0].label, "0");
        assert_eq!(windows[1].label, "1");
        assert_eq!(windows[1].remaining, Some(2.0));
        assert_eq!(
            windows[1].reset_seconds, None,
            "a short list is unknown, not zero"
        );
    }

    #[test]
    fn the_request_is_a_get_with_plain_text_snippets_and_the_key_in_the_subscription_token() {
        let req = PremiumApi::request(&Brave, &SearchRequest::simple("Rust Async"));
        assert_eq!(req.method, Method::Get);
        assert_eq!(req.path, "/res/v1/web/search");
        assert!(req.body.is_none());
        assert_eq!(req.headers, [("accept", "application/json")]);
        assert_eq!(Brave::AUTH, Auth::Header("x-subscription-token"));
        let q = |name: &str| {
            req.query
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(q("q"), Some("Rust Async"));
        assert_eq!(q("count"), Some("10"));
        assert_eq!(q("offset"), Some("0"));
        assert_eq!(q("text_decorations"), Some("false"));
        for absent in ["search_lang", "ui_lang", "freshness", "safesearch"] {
            assert_eq!(q(absent), None, "{absent}");
        }
    }

    #[test]
    fn searxng_parameters_map_onto_braves_own() {
        let req = SearchRequest {
            pageno: 3,
            language: Some("de-DE".into()),
            time_range: Some(TimeRange::Week),
            safesearch: Some(SafeSearch::Strict),
            ..SearchRequest::simple("x")
        };
        let built = PremiumApi::request(&Brave, &req);
        let q = |name: &str| {
            built
                .query
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(q("offset").as_deref(), Some("2"));
        assert_eq!(q("search_lang").as_deref(), Some("de"));
        assert_eq!(q("ui_lang").as_deref(), Some("de-DE"));
        assert_eq!(q("freshness").as_deref(), Some("pw"));
        assert_eq!(q("safesearch").as_deref(), Some("strict"));

        let far = SearchRequest {
            pageno: 40,
            ..SearchRequest::simple("x")
        };
        let built = PremiumApi::request(&Brave, &far);
        assert!(built.query.contains(&("offset", "9".to_owned())));
    }

    #[test]
    fn languages_brave_does_not_list_are_left_out() {
        assert_eq!(languages(None), None);
        assert_eq!(languages(Some("all")), None);
        assert_eq!(languages(Some("en")), Some((Some("en".into()), None)));
        assert_eq!(
            languages(Some("en_us")),
            Some((Some("en".into()), Some("en-US".into())))
        );
        assert_eq!(languages(Some("ja-JP")), Some((None, Some("ja-JP".into()))));
        assert_eq!(languages(Some("xx-YY")), Some((None, None)));
    }
}
