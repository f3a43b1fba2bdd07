//! Linkup: `POST https://api.linkup.so/v1/search` with a JSON body.
//!
//! Auth: `Authorization: Bearer KEY`. We pin `depth: "standard"` (`deep` costs ten times the
//! credits) and `outputType: "searchResults"` (ranked results; the other types ask Linkup for a
//! sourced answer, at another price), send `q`, `maxResults` (10), `fromDate` (`YYYY-MM-DD`, the
//! first day of a time range) and `includeDomains` / `excludeDomains`. There is no page, language
//! or safe-search parameter.
//!
//! Quirks:
//! - errors are `{"statusCode": N, "error": {"code": "…", "message": "…", "details": []}}`;
//! - spent credits are **429** `INSUFFICIENT_FUNDS_CREDITS` (secondary sources say 402, which
//!   Linkup's own error page gives to an x402 payment-signature failure: a 402 is quota only when
//!   its code or message speaks of credits); any other 429 is a rate limit;
//! - a query that finds nothing is **400** `SEARCH_QUERY_NO_RESULT`: an empty answer, not a failure;
//! - results carry a `type` (`text`, `image`); only text results become hits.

use std::time::SystemTime;

use reqwest::header::HeaderMap;
use serde_json::json;

use super::api::{
    class_for_status, domain_names, start_day, ApiRequest, Auth, PremiumApi, Refusal, Wire,
};
use super::{ProviderAnswer, ProviderKind, Results};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::ErrorClass;

/// The Linkup adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Linkup;

const PATH: &str = "/v1/search";
const MAX_RESULTS: u32 = 10;

impl Linkup {
    /// The request as it would be built at `now` (the start date of a time range depends on it).
    fn request_at(req: &SearchRequest, now: SystemTime) -> ApiRequest {
        let mut body = json!({
            "q": req.query,
            "depth": "standard",
            "outputType": "searchResults",
            "maxResults": MAX_RESULTS,
        });
        if let Some(range) = req.time_range {
            body["fromDate"] = json!(start_day(range, now));
        }
        if !req.domains.include().is_empty() {
            body["includeDomains"] = json!(domain_names(req.domains.include()));
        }
        if !req.domains.exclude().is_empty() {
            body["excludeDomains"] = json!(domain_names(req.domains.exclude()));
        }
        ApiRequest::json_post(PATH, body)
    }
}

impl Wire for Linkup {
    type Success = Results<wire::Result>;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let (no_results, says_money) =
            body.map_or((false, false), |b| (b.no_results(), b.says_money()));
        match status {
            400 if no_results => return Refusal::NoResults,
            402 | 429 if says_money => ErrorClass::Quota,
            other => class_for_status(other),
        }
        .into()
    }
}

impl PremiumApi for Linkup {
    const KIND: ProviderKind = ProviderKind::Linkup;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        Self::request_at(req, SystemTime::now())
    }

    fn answer(
        &self,
        body: Results<wire::Result>,
        _: &HeaderMap,
    ) -> Result<ProviderAnswer, ErrorClass> {
        Ok(body.into_answer())
    }
}

/// Linkup's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::api::mentions_money;
    use crate::providers::{Entry, PremiumHit};

    #[derive(Deserialize)]
    pub(crate) struct Result {
        #[serde(rename = "type")]
        kind: Option<String>,
        name: Option<String>,
        url: Option<String>,
        content: Option<String>,
    }

    impl Entry for Result {
        /// A hit, or `None` for an entry without a URL or of another type than text.
        fn into_hit(self) -> Option<PremiumHit> {
            if self.kind.as_deref().is_some_and(|k| k != "text") {
                return None;
            }
            PremiumHit::from_fields(self.url, self.name, self.content, None)
        }
    }

    /// `{"statusCode": N, "error": {"code": "…", "message": "…"}}`.
    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        error: Option<Error>,
    }

    #[derive(Deserialize)]
    struct Error {
        code: Option<String>,
        message: Option<String>,
    }

    impl ErrorBody {
        fn code(&self) -> &str {
            self.error
                .as_ref()
                .and_then(|e| e.code.as_deref())
                .unwrap_or("")
        }

        /// `SEARCH_QUERY_NO_RESULT`: nothing found.
        pub(super) fn no_results(&self) -> bool {
            self.code() == "SEARCH_QUERY_NO_RESULT"
        }

        /// Whether the code or message says the credits are spent.
        pub(super) fn says_money(&self) -> bool {
            let message = self
                .error
                .as_ref()
                .and_then(|e| e.message.as_deref())
                .unwrap_or("");
            self.code().contains("CREDITS")
                || self.code().contains("FUNDS")
                || mentions_money(message)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::providers::api::interpret;
    use crate::providers::api::Method;
    use crate::providers::PremiumHit;
    use gateway_core::request::{DomainFilter, TimeRange};

    const SUCCESS: &str = r#"{"results":[{"type":"text","name":"Async Rust primer","url":"https://example.org/async","content":"A short primer."},{"type":"image","name":"A diagram","url":"https://example.org/d.png"}]}"#;
    const NO_RESULT: &str = r#"{"statusCode":400,"error":{"code":"SEARCH_QUERY_NO_RESULT","message":"The query did not yield any result","details":[]}}"#;
    const CREDITS: &str = r#"{"statusCode":429,"error":{"code":"INSUFFICIENT_FUNDS_CREDITS","message":"You do not have enough credits to perform this request.","details":[]}}"#;
    const RATE: &str = r#"{"statusCode":429,"error":{"code":"TOO_MANY_REQUESTS","message":"Too many requests","details":[]}}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Linkup, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_text_hits() {
        let answer = interpret(&Linkup, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: None,
            }]
        );
        assert_eq!(class(200, r#"{"answer":"x"}"#), ErrorClass::Malformed);
    }

    #[test]
    fn no_result_is_an_empty_answer_and_credits_are_quota() {
        let empty = interpret(&Linkup, 400, &HeaderMap::new(), NO_RESULT.as_bytes()).unwrap();
        assert!(empty.hits.is_empty());
        assert_eq!(class(429, CREDITS), ErrorClass::Quota);
        assert_eq!(
            class(
                402,
                r#"{"error":{"code":"X","message":"Not enough credits"}}"#
            ),
            ErrorClass::Quota
        );
        assert_eq!(
            class(
                402,
                r#"{"error":{"code":"INVALID_PAYMENT_SIGNATURE","message":"x402"}}"#
            ),
            ErrorClass::HttpStatus
        );
        assert_eq!(class(429, RATE), ErrorClass::RateLimited);
        assert_eq!(
            class(
                401,
                r#"{"statusCode":401,"error":{"code":"UNAUTHORIZED","message":"Unauthorized"}}"#
            ),
            ErrorClass::Auth
        );
        assert_eq!(
            class(
                400,
                r#"{"statusCode":400,"error":{"code":"BAD_REQUEST","message":"q is required"}}"#
            ),
            ErrorClass::BadRequest
        );
        assert_eq!(class(500, "{}"), ErrorClass::Server);
    }

    #[test]
    fn the_request_pins_depth_and_output_and_maps_dates_and_domains() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_774_272); // 2026-11-27
        let req = SearchRequest {
            time_range: Some(TimeRange::Week),
            domains: DomainFilter::signed(&["docs.rs", "-example.com"]).unwrap(),
            ..SearchRequest::simple("Rust Async")
        };
        let api = Linkup::request_at(&req, now);
        assert_eq!((api.method, api.path), (Method::Post, "/v1/search"));
        assert_eq!(Linkup::AUTH, Auth::Bearer);
        let body = api.body.unwrap();
        assert_eq!(body["q"], "Rust Async");
        assert_eq!(body["depth"], "standard");
        assert_eq!(body["outputType"], "searchResults");
        assert_eq!(body["maxResults"], 10);
        assert_eq!(body["fromDate"], "2026-11-20");
        assert_eq!(body["includeDomains"], json!(["docs.rs"]));
        assert_eq!(body["excludeDomains"], json!(["example.com"]));
    }
}
