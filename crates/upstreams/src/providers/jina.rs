//! Jina Search: `POST https://s.jina.ai/` with a JSON body `{"q": …}`.
//!
//! Auth: `Authorization: Bearer KEY` (search refuses anonymous calls). We also send
//! `Accept: application/json` (without it the answer is plain text) and
//! `X-Respond-With: no-content` (snippets only: faster and cheaper than fetching every page).
//!
//! Quirks:
//! - zero results is **422** `AssertionFailureError` "No search results available", which is a
//!   healthy empty answer, not a failure;
//! - error bodies are `{"data": null, "code", "name", "status", "message"}`; credits gone is 402
//!   `InsufficientBalanceError`; a 429 carries `Retry-After` as seconds or an HTTP-date;
//! - `hl` takes the language, `page` the 1-based page; there is no time-range parameter.

use reqwest::header::HeaderMap;
use serde_json::json;

use super::api::{class_for_status, primary_language, ApiRequest, Auth, PremiumApi, Refusal, Wire};
use super::{ProviderAnswer, ProviderKind};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::ErrorClass;

/// The Jina Search adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Jina;

const PATH: &str = "/";
const NUM: u32 = 10;

impl Wire for Jina {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    /// Mostly a failure, but Jina's "no search results" 422 is an empty success.
    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let name = body.as_ref().and_then(|e| e.name.as_deref());
        if status == 422 && name == Some("AssertionFailureError") {
            let message = body
                .as_ref()
                .and_then(|e| e.message.as_deref())
                .unwrap_or_default()
                .to_ascii_lowercase();
            // Other assertions (a request we got wrong) share the name; only this one means "nothing".
            if message.is_empty() || message.contains("no search results") {
                return Refusal::NoResults;
            }
        }
        match (status, name) {
            (_, Some("InsufficientBalanceError")) | (402, _) => ErrorClass::Quota,
            (_, Some("AuthenticationRequiredError" | "AuthenticationFailedError")) => {
                ErrorClass::Auth
            }
            (_, Some("ParamValidationError")) | (422, _) => ErrorClass::BadRequest,
            (other, _) => class_for_status(other),
        }
        .into()
    }
}

impl PremiumApi for Jina {
    const KIND: ProviderKind = ProviderKind::Jina;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        let mut body = json!({ "q": req.query, "num": NUM });
        if req.pageno > 1 {
            body["page"] = json!(req.pageno);
        }
        if let Some(primary) = primary_language(req) {
            body["hl"] = json!(primary);
        }
        let mut request = ApiRequest::json_post(PATH, body);
        request.headers.push(("x-respond-with", "no-content"));
        request
    }

    fn answer(&self, body: wire::Response, _: &HeaderMap) -> Result<ProviderAnswer, ErrorClass> {
        Ok(ProviderAnswer::of_hits(
            body.data.into_iter().filter_map(wire::Item::into_hit),
        ))
    }
}

/// Jina's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::PremiumHit;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        pub(super) data: Vec<Item>,
    }

    #[derive(Deserialize)]
    pub(super) struct Item {
        url: Option<String>,
        title: Option<String>,
        description: Option<String>,
        date: Option<String>,
    }

    impl Item {
        /// A hit, or `None` for an entry without a URL.
        pub(super) fn into_hit(self) -> Option<PremiumHit> {
            PremiumHit::from_fields(self.url, self.title, self.description, self.date)
        }
    }

    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        pub(super) name: Option<String>,
        pub(super) message: Option<String>,
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
    use std::time::{Duration, SystemTime};

    const SUCCESS: &str = r#"{"code":200,"status":20000,"data":[{"title":"Async Rust primer","url":"https://example.org/async","description":"A short primer."}],"meta":{"usage":{"tokens":10000}}}"#;
    const NO_RESULTS: &str = r#"{"data":null,"code":422,"name":"AssertionFailureError","status":42206,"message":"No search results available for query rust async","readableMessage":"AssertionFailureError: No search results available for query rust async"}"#;
    const OTHER_ASSERTION: &str = r#"{"data":null,"code":422,"name":"AssertionFailureError","status":42206,"message":"Invalid value for num"}"#;
    const NO_BALANCE: &str = r#"{"data":null,"code":402,"name":"InsufficientBalanceError","status":40203,"message":"Account balance not enough to run this query, please recharge."}"#;
    const AUTH_REQUIRED: &str = r#"{"data":null,"code":401,"name":"AuthenticationRequiredError","status":40101,"message":"Authentication is required to use this endpoint."}"#;
    const AUTH_FAILED: &str = r#"{"data":null,"code":401,"name":"AuthenticationFailedError","status":40102,"message":"Invalid API key."}"#;
    const RATE: &str = r#"{"data":null,"code":429,"name":"RateLimitTriggeredError","status":42903,"message":"Per IP rate limit exceeded."}"#;
    const PARAM: &str = r#"{"data":null,"code":400,"name":"ParamValidationError","status":40001,"message":"q is required"}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Jina, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits() {
        let answer = interpret(&Jina, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: None,
            }]
        );
    }

    #[test]
    fn the_date_field_becomes_the_published_date() {
        let body = r#"{"code":200,"data":[{"title":"T","url":"https://a.example","description":"d","date":"Nov 27, 2026"}]}"#;
        let hits = interpret(&Jina, 200, &HeaderMap::new(), body.as_bytes())
            .unwrap()
            .hits;
        assert_eq!(hits[0].published_date.as_deref(), Some("Nov 27, 2026"));
    }

    #[test]
    fn the_no_results_422_is_an_empty_answer_not_a_failure() {
        let answer = interpret(&Jina, 422, &HeaderMap::new(), NO_RESULTS.as_bytes()).unwrap();
        assert_eq!(answer, ProviderAnswer::default());
        let answer =
            interpret(&Jina, 200, &HeaderMap::new(), br#"{"code":200,"data":[]}"#).unwrap();
        assert!(answer.hits.is_empty());
    }

    #[test]
    fn another_assertion_failure_is_our_bad_request() {
        assert_eq!(class(422, OTHER_ASSERTION), ErrorClass::BadRequest);
    }

    #[test]
    fn errors_are_classified_from_status_and_name() {
        assert_eq!(class(401, AUTH_REQUIRED), ErrorClass::Auth);
        assert_eq!(class(401, AUTH_FAILED), ErrorClass::Auth);
        assert_eq!(class(402, NO_BALANCE), ErrorClass::Quota);
        assert_eq!(class(429, RATE), ErrorClass::RateLimited);
        assert_eq!(class(400, PARAM), ErrorClass::BadRequest);
        assert_eq!(class(502, "<html>bad gateway</html>"), ErrorClass::Server);
        assert_eq!(class(404, "{}"), ErrorClass::HttpStatus);
        assert_eq!(class(403, ""), ErrorClass::Auth);
    }

    #[test]
    fn garbled_or_wrong_shape_bodies_are_malformed() {
        for body in [
            "[1] Title: Async Rust primer\n[1] URL Source: https://example.org/async",
            r#"{"code":200,"data":[{"#,
            r#"{"code":200,"data":null}"#,
            r#"{"results":[]}"#,
        ] {
            assert_eq!(class(200, body), ErrorClass::Malformed, "{body}");
        }
    }

    #[test]
    fn a_429_carries_retry_after_as_seconds_or_a_date() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("30"));
        let err = interpret(&Jina, 429, &h, RATE.as_bytes()).unwrap_err();
        assert_eq!(err.retry_after, Some(Duration::from_secs(30)));

        let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(60));
        h.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let err = interpret(&Jina, 429, &h, RATE.as_bytes()).unwrap_err();
        let hint = err.retry_after.unwrap();
        assert!(hint > Duration::from_secs(50) && hint <= Duration::from_secs(60));
    }

    #[test]
    fn the_request_is_a_json_post_to_the_root_with_bearer_auth_and_no_content() {
        let req = PremiumApi::request(&Jina, &SearchRequest::simple("Rust Async"));
        assert_eq!(req.method, Method::Post);
        assert_eq!(req.path, "/");
        assert_eq!(Jina::AUTH, Auth::Bearer);
        assert!(req.headers.contains(&("accept", "application/json")));
        assert!(req.headers.contains(&("x-respond-with", "no-content")));
        let body = req.body.unwrap();
        assert_eq!(body["q"], "Rust Async");
        assert_eq!(body["num"], 10);
        assert!(body.get("page").is_none());
        assert!(body.get("hl").is_none());
    }

    #[test]
    fn language_and_page_map_onto_hl_and_page() {
        let req = SearchRequest {
            pageno: 2,
            language: Some("de-DE".into()),
            ..SearchRequest::simple("x")
        };
        let body = PremiumApi::request(&Jina, &req).body.unwrap();
        assert_eq!(body["hl"], "de");
        assert_eq!(body["page"], 2);
        let all = SearchRequest {
            language: Some("all".into()),
            ..SearchRequest::simple("x")
        };
        assert!(PremiumApi::request(&Jina, &all)
            .body
            .unwrap()
            .get("hl")
            .is_none());
    }
}
