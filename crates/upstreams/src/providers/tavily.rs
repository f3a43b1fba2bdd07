//! Tavily: `POST https://api.tavily.com/search` with a JSON body.
//!
//! Auth: `Authorization: Bearer KEY`. We pin `search_depth: "basic"`: the default may change and
//! `advanced` costs twice as much.
//!
//! Quirks:
//! - credits gone is **432** (plan limit) or **433** (pay-as-you-go limit), statuses no HTTP
//!   library knows; error bodies are `{"detail": {"error": "…"}}`;
//! - `time_range` takes SearXNG's own values (day/week/month/year); there is no page, language or
//!   safe-search parameter;
//! - no rate-limit headers.

use reqwest::header::HeaderMap;
use serde_json::json;

use super::api::{class_for_status, domain_names, ApiRequest, Auth, PremiumApi, Refusal, Wire};
use super::{ProviderAnswer, ProviderKind, Results};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::ErrorClass;

/// The Tavily adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tavily;

const PATH: &str = "/search";
const MAX_RESULTS: u32 = 10;

impl Wire for Tavily {
    type Success = Results<wire::Result>;
    /// Error bodies (`{"detail":{"error":…}}`) carry free text only: the status alone classifies.
    type Failure = serde::de::IgnoredAny;

    fn refusal(&self, status: u16, _: Option<serde::de::IgnoredAny>, _: &HeaderMap) -> Refusal {
        refusal_by_status(status)
    }
}

/// What a refused Tavily call means, for its search and its extract alike: the status alone
/// classifies (432 and 433: the credits are gone).
pub(crate) fn refusal_by_status(status: u16) -> Refusal {
    match status {
        432 | 433 => ErrorClass::Quota,
        other => class_for_status(other),
    }
    .into()
}

impl PremiumApi for Tavily {
    const KIND: ProviderKind = ProviderKind::Tavily;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        let mut body = json!({
            "query": req.query,
            "search_depth": "basic",
            "max_results": MAX_RESULTS,
        });
        if let Some(range) = req.time_range {
            body["time_range"] = json!(range.as_str());
        }
        if !req.domains.include().is_empty() {
            body["include_domains"] = json!(domain_names(req.domains.include()));
        }
        if !req.domains.exclude().is_empty() {
            body["exclude_domains"] = json!(domain_names(req.domains.exclude()));
        }
        ApiRequest::json_post(PATH, body)
    }

    fn answer(
        &self,
        body: Results<wire::Result>,
        _: &HeaderMap,
    ) -> Result<ProviderAnswer, ErrorClass> {
        Ok(body.into_answer())
    }
}

/// Tavily's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::{Entry, PremiumHit};

    #[derive(Deserialize)]
    pub(crate) struct Result {
        url: Option<String>,
        title: Option<String>,
        content: Option<String>,
        published_date: Option<String>,
    }

    impl Entry for Result {
        /// A hit, or `None` for an entry without a URL.
        fn into_hit(self) -> Option<PremiumHit> {
            PremiumHit::from_fields(self.url, self.title, self.content, self.published_date)
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
    use gateway_core::request::TimeRange;
    use reqwest::header::HeaderValue;
    use std::time::Duration;

    const SUCCESS: &str = r#"{"query":"rust async","answer":null,"results":[{"title":"Async Rust primer","url":"https://example.org/async","content":"A short primer.","score":0.87,"raw_content":null}],"response_time":0.92}"#;
    const EMPTY: &str =
        r#"{"query":"zxqv","answer":null,"images":[],"results":[],"response_time":0.41}"#;
    const UNAUTHORIZED: &str =
        r#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#;
    const PLAN_LIMIT: &str =
        r#"{"detail":{"error":"This request exceeds your plan's set usage limit."}}"#;
    const PAYG_LIMIT: &str =
        r#"{"detail":{"error":"This request exceeds the pay-as-you-go limit."}}"#;
    const RATE: &str = r#"{"detail":{"error":"Rate limit exceeded."}}"#;
    const INVALID: &str = r#"{"detail":{"error":"Invalid search_depth."}}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Tavily, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits() {
        let answer = interpret(&Tavily, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
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
    fn published_date_is_kept_when_given() {
        let body = r#"{"results":[{"title":"T","url":"https://a.example","content":"c","published_date":"Thu, 27 Nov 2026 10:00:00 GMT"}]}"#;
        let hits = interpret(&Tavily, 200, &HeaderMap::new(), body.as_bytes())
            .unwrap()
            .hits;
        assert_eq!(
            hits[0].published_date.as_deref(),
            Some("Thu, 27 Nov 2026 10:00:00 GMT")
        );
    }

    #[test]
    fn an_empty_result_list_is_an_empty_answer() {
        let answer = interpret(&Tavily, 200, &HeaderMap::new(), EMPTY.as_bytes()).unwrap();
        assert!(answer.hits.is_empty());
    }

    #[test]
    fn garbled_or_wrong_shape_bodies_are_malformed() {
        for body in [
            "",
            "not json",
            r#"{"results":[{"#,
            r#"{"query":"x","answer":null}"#,
        ] {
            assert_eq!(class(200, body), ErrorClass::Malformed, "{body}");
        }
    }

    #[test]
    fn errors_are_classified_including_the_432_and_433_quota_statuses() {
        assert_eq!(class(401, UNAUTHORIZED), ErrorClass::Auth);
        assert_eq!(class(403, "{}"), ErrorClass::Auth);
        assert_eq!(class(432, PLAN_LIMIT), ErrorClass::Quota);
        assert_eq!(class(433, PAYG_LIMIT), ErrorClass::Quota);
        assert_eq!(class(429, RATE), ErrorClass::RateLimited);
        assert_eq!(class(400, INVALID), ErrorClass::BadRequest);
        assert_eq!(class(500, "{}"), ErrorClass::Server);
        assert_eq!(class(404, "{}"), ErrorClass::HttpStatus);
    }

    #[test]
    fn a_429_carries_retry_after() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("4"));
        let err = interpret(&Tavily, 429, &h, RATE.as_bytes()).unwrap_err();
        assert_eq!(err.retry_after, Some(Duration::from_secs(4)));
    }

    #[test]
    fn the_request_is_a_json_post_with_bearer_auth_and_basic_depth() {
        let req = PremiumApi::request(&Tavily, &SearchRequest::simple("Rust Async"));
        assert_eq!(req.method, Method::Post);
        assert_eq!(req.path, "/search");
        assert_eq!(Tavily::AUTH, Auth::Bearer);
        assert!(req.headers.contains(&("content-type", "application/json")));
        let body = req.body.unwrap();
        assert_eq!(body["query"], "Rust Async");
        assert_eq!(body["search_depth"], "basic");
        assert_eq!(body["max_results"], 10);
        assert!(body.get("time_range").is_none());
    }

    #[test]
    fn a_time_range_is_passed_as_tavilys_time_range() {
        let req = SearchRequest {
            time_range: Some(TimeRange::Month),
            ..SearchRequest::simple("x")
        };
        assert_eq!(
            PremiumApi::request(&Tavily, &req).body.unwrap()["time_range"],
            "month"
        );
    }
}
