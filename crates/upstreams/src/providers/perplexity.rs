//! Perplexity Search API: `POST https://api.perplexity.ai/search` with a JSON body — ranked web
//! results, not the chat-completions answer engine.
//!
//! Auth: `Authorization: Bearer KEY`. We send `query`, `max_results` (10),
//! `search_recency_filter` (`day`/`week`/`month`/`year`, SearXNG's own values),
//! `search_language_filter` (ISO 639-1 codes), `country` (ISO 3166-1 alpha-2, upper case, when the
//! language names a region) and `search_domain_filter` (domains to keep; a leading `-` excludes).
//! There is no page or safe-search parameter.
//!
//! Quirks:
//! - errors are `{"error": {"message", "type", "code"}}`; a request it cannot validate is **422**
//!   (FastAPI's `{"detail": [...]}`), not 400;
//! - spent credits are `insufficient_quota` in the error's `type` or `code` (on 401, 402 or 429
//!   [unverified which]): the body decides; any other 429 is the 50 requests/s rate limit;
//! - no rate-limit headers; the list price is $5 per 1000 requests, whatever the result count.

use reqwest::header::HeaderMap;
use serde_json::json;

use super::api::{
    class_for_status, primary_language, region, ApiRequest, Auth, PremiumApi, Refusal, Wire,
};
use super::{ProviderAnswer, ProviderKind, Results};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::ErrorClass;

/// The Perplexity Search adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Perplexity;

const PATH: &str = "/search";
const MAX_RESULTS: u32 = 10;

impl Wire for Perplexity {
    type Success = Results<wire::Result>;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let says_money = body.is_some_and(|b| b.says_money());
        match status {
            401 | 402 | 403 | 429 if says_money => ErrorClass::Quota,
            402 => ErrorClass::Quota,
            422 => ErrorClass::BadRequest,
            other => class_for_status(other),
        }
        .into()
    }
}

impl PremiumApi for Perplexity {
    const KIND: ProviderKind = ProviderKind::Perplexity;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        let mut body = json!({ "query": req.query, "max_results": MAX_RESULTS });
        if let Some(range) = req.time_range {
            body["search_recency_filter"] = json!(range.as_str());
        }
        if let Some(language) = primary_language(req) {
            body["search_language_filter"] = json!([language]);
        }
        if let Some(region) = region(req) {
            body["country"] = json!(region.to_ascii_uppercase());
        }
        let domains: Vec<String> = req
            .domains
            .include()
            .iter()
            .map(|d| d.as_str().to_owned())
            .chain(
                req.domains
                    .exclude()
                    .iter()
                    .map(|d| format!("-{}", d.as_str())),
            )
            .collect();
        if !domains.is_empty() {
            body["search_domain_filter"] = json!(domains);
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

/// Perplexity's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::api::mentions_money;
    use crate::providers::{Entry, PremiumHit};

    /// `{"error": {"message": "…", "type": "…", "code": …}}`.
    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        error: Option<Error>,
    }

    #[derive(Deserialize)]
    struct Error {
        message: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
        code: Option<serde_json::Value>,
    }

    impl ErrorBody {
        /// Whether the error says the account is out of credits.
        pub(super) fn says_money(&self) -> bool {
            let Some(error) = &self.error else {
                return false;
            };
            let code = error.code.as_ref().and_then(|c| c.as_str());
            [error.kind.as_deref(), code, error.message.as_deref()]
                .into_iter()
                .flatten()
                .any(mentions_money)
        }
    }

    #[derive(Deserialize)]
    pub(crate) struct Result {
        url: Option<String>,
        title: Option<String>,
        snippet: Option<String>,
        date: Option<String>,
    }

    impl Entry for Result {
        /// A hit, or `None` for an entry without a URL.
        fn into_hit(self) -> Option<PremiumHit> {
            PremiumHit::from_fields(self.url, self.title, self.snippet, self.date)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::Method;
    use crate::providers::api::{interpret, mentions_money};
    use crate::providers::PremiumHit;
    use gateway_core::request::{DomainFilter, TimeRange};

    const SUCCESS: &str = r#"{"results":[{"title":"Async Rust primer","url":"https://example.org/async","snippet":"A short primer.","date":"2026-11-27","last_updated":"2026-11-28"},{"title":"no url"}],"id":"e38104d5"}"#;
    const EMPTY: &str = r#"{"results":[],"id":"e38104d6"}"#;
    const QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":429}}"#;
    const RATE: &str =
        r#"{"error":{"message":"Rate limit exceeded","type":"rate_limit_exceeded","code":429}}"#;
    const AUTH: &str =
        r#"{"error":{"message":"Invalid API key provided.","type":"invalid_api_key","code":401}}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Perplexity, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits() {
        let answer = interpret(&Perplexity, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: Some("2026-11-27".into()),
            }]
        );
        let empty = interpret(&Perplexity, 200, &HeaderMap::new(), EMPTY.as_bytes()).unwrap();
        assert!(empty.hits.is_empty());
        assert_eq!(class(200, r#"{"id":"x"}"#), ErrorClass::Malformed);
    }

    #[test]
    fn errors_are_classified_by_status_and_body() {
        assert_eq!(class(429, QUOTA), ErrorClass::Quota);
        assert_eq!(class(401, QUOTA), ErrorClass::Quota);
        assert_eq!(class(402, "{}"), ErrorClass::Quota);
        assert_eq!(class(429, RATE), ErrorClass::RateLimited);
        assert_eq!(class(401, AUTH), ErrorClass::Auth);
        assert_eq!(
            class(422, r#"{"detail":[{"msg":"field required"}]}"#),
            ErrorClass::BadRequest
        );
        assert_eq!(class(400, "{}"), ErrorClass::BadRequest);
        assert_eq!(class(503, "{}"), ErrorClass::Server);
    }

    #[test]
    fn the_request_maps_recency_language_country_and_domains() {
        let req = SearchRequest {
            language: Some("fr-CA".into()),
            time_range: Some(TimeRange::Day),
            domains: DomainFilter::signed(&["docs.rs", "-example.com"]).unwrap(),
            ..SearchRequest::simple("Rust Async")
        };
        let api = PremiumApi::request(&Perplexity, &req);
        assert_eq!((api.method, api.path), (Method::Post, "/search"));
        assert_eq!(Perplexity::AUTH, Auth::Bearer);
        let body = api.body.unwrap();
        assert_eq!(body["query"], "Rust Async");
        assert_eq!(body["max_results"], 10);
        assert_eq!(body["search_recency_filter"], "day");
        assert_eq!(body["search_language_filter"], json!(["fr"]));
        assert_eq!(body["country"], "CA");
        assert_eq!(
            body["search_domain_filter"],
            json!(["docs.rs", "-example.com"])
        );
        let plain = PremiumApi::request(&Perplexity, &SearchRequest::simple("x"))
            .body
            .unwrap();
        assert!(plain.get("search_recency_filter").is_none() && plain.get("country").is_none());
        assert!(!mentions_money("invalid_api_key"));
    }
}
