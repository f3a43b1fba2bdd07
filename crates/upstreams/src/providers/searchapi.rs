//! SearchAPI.io (Google results): `GET https://www.searchapi.io/api/v1/search?engine=google&q=…`.
//!
//! Auth: `Authorization: Bearer KEY` (the API also takes `api_key=` in the query string; we never
//! put a key in a URL). We send `engine=google`, `q`, `num` (10), `page` (1-based, from the second
//! page on), `hl` (the language), `gl` (the region, when the language names one), `time_period`
//! (`last_day`/`last_week`/`last_month`/`last_year`) and `safe` (`active` for moderate or strict,
//! `off`).
//!
//! Quirks ([unverified]: SearchAPI publishes no error table; what follows is lenient on purpose):
//! - errors are `{"error": "…"}`; a bad key is 401;
//! - a spent plan has been reported as 429 and as 402 with a message about the plan's searches or
//!   credits: the message decides (quota when it speaks of money, the plan or searches left), any
//!   other 429 is a rate limit;
//! - a query Google finds nothing for is a 200 with `error` = "Google hasn't returned any results
//!   for this query." and no `organic_results`: an empty answer, not a failure.

use reqwest::header::HeaderMap;

use super::api::{
    class_for_status, mentions_money, primary_language, region, ApiRequest, Auth, PremiumApi,
    Refusal, Wire,
};
use super::google_organic::Organic;
use super::{ProviderAnswer, ProviderKind};
use gateway_core::request::{SafeSearch, SearchRequest, TimeRange};
use gateway_core::upstream::ErrorClass;

/// The SearchAPI.io adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SearchApi;

const PATH: &str = "/api/v1/search";
const NUM: u32 = 10;

/// Whether an error message says the plan's searches are spent.
fn says_plan_spent(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    mentions_money(&lower) || lower.contains("plan") || lower.contains("searches")
}

impl Wire for SearchApi {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let message = body.and_then(|b| b.error).unwrap_or_default();
        match status {
            402 => ErrorClass::Quota,
            429 if says_plan_spent(&message) => ErrorClass::Quota,
            other => class_for_status(other),
        }
        .into()
    }
}

impl PremiumApi for SearchApi {
    const KIND: ProviderKind = ProviderKind::SearchApi;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        let mut query = vec![
            ("engine", "google".to_owned()),
            ("q", req.query_with_site().into_owned()),
            ("num", NUM.to_string()),
        ];
        if req.pageno > 1 {
            query.push(("page", req.pageno.to_string()));
        }
        if let Some(language) = primary_language(req) {
            query.push(("hl", language));
        }
        if let Some(region) = region(req) {
            query.push(("gl", region));
        }
        if let Some(range) = req.time_range {
            let period = match range {
                TimeRange::Day => "last_day",
                TimeRange::Week => "last_week",
                TimeRange::Month => "last_month",
                TimeRange::Year => "last_year",
            };
            query.push(("time_period", period.to_owned()));
        }
        if let Some(level) = req.safesearch {
            let safe = match level {
                SafeSearch::Off => "off",
                SafeSearch::Moderate | SafeSearch::Strict => "active",
            };
            query.push(("safe", safe.to_owned()));
        }
        ApiRequest::json_get(PATH, query)
    }

    fn answer(&self, body: wire::Response, _: &HeaderMap) -> Result<ProviderAnswer, ErrorClass> {
        let hits = match (body.organic_results, body.search_metadata, body.error) {
            (Some(organic), _, _) => organic,
            // Found nothing: metadata without results, or the "no results" notice.
            (None, Some(_), _) => Vec::new(),
            (None, None, Some(notice)) if notice.to_ascii_lowercase().contains("results") => {
                Vec::new()
            }
            (None, None, _) => return Err(ErrorClass::Malformed),
        };
        Ok(ProviderAnswer {
            hits: hits.into_iter().filter_map(Organic::into_hit).collect(),
            ..ProviderAnswer::default()
        })
    }
}

/// SearchAPI's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::google_organic::Organic;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        pub(super) organic_results: Option<Vec<Organic>>,
        pub(super) search_metadata: Option<serde::de::IgnoredAny>,
        pub(super) error: Option<String>,
    }

    /// `{"error": "…"}`.
    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        pub(super) error: Option<String>,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::interpret;
    use crate::providers::api::Method;
    use crate::providers::PremiumHit;

    const SUCCESS: &str = r#"{"search_metadata":{"id":"search_x","status":"Success"},"search_parameters":{"engine":"google","q":"rust async"},"organic_results":[{"position":1,"title":"Async Rust primer","link":"https://example.org/async","snippet":"A short primer.","date":"Nov 27, 2026"}]}"#;
    const NOTHING: &str = r#"{"search_metadata":{"id":"search_y","status":"Success"},"error":"Google hasn't returned any results for this query."}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&SearchApi, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits_and_nothing_found_is_empty() {
        let answer = interpret(&SearchApi, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: Some("Nov 27, 2026".into()),
            }]
        );
        let empty = interpret(&SearchApi, 200, &HeaderMap::new(), NOTHING.as_bytes()).unwrap();
        assert!(empty.hits.is_empty());
        assert_eq!(class(200, r#"{"answer_box":{}}"#), ErrorClass::Malformed);
    }

    #[test]
    fn errors_are_classified_by_status_and_message() {
        assert_eq!(
            class(401, r#"{"error":"Invalid API key."}"#),
            ErrorClass::Auth
        );
        assert_eq!(
            class(
                429,
                r#"{"error":"You have run out of searches for your plan. Please upgrade."}"#
            ),
            ErrorClass::Quota
        );
        assert_eq!(class(402, "{}"), ErrorClass::Quota);
        assert_eq!(
            class(429, r#"{"error":"Too many requests per second."}"#),
            ErrorClass::RateLimited
        );
        assert_eq!(
            class(400, r#"{"error":"Missing query `q` parameter."}"#),
            ErrorClass::BadRequest
        );
        assert_eq!(class(503, "{}"), ErrorClass::Server);
    }

    #[test]
    fn the_request_is_a_get_for_googles_engine_with_the_mapped_parameters() {
        let req = SearchRequest {
            language: Some("en-GB".into()),
            pageno: 3,
            time_range: Some(TimeRange::Month),
            safesearch: Some(SafeSearch::Strict),
            ..SearchRequest::simple("rust async")
        };
        let api = PremiumApi::request(&SearchApi, &req);
        assert_eq!((api.method, api.path), (Method::Get, "/api/v1/search"));
        assert_eq!(SearchApi::AUTH, Auth::Bearer);
        let get = |name: &str| {
            api.query
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("engine"), Some("google"));
        assert_eq!(get("q"), Some("rust async"));
        assert_eq!(get("page"), Some("3"));
        assert_eq!(get("hl"), Some("en"));
        assert_eq!(get("gl"), Some("gb"));
        assert_eq!(get("time_period"), Some("last_month"));
        assert_eq!(get("safe"), Some("active"));
        assert!(
            api.query.iter().all(|(n, _)| *n != "api_key"),
            "the key never goes in the URL"
        );
    }
}
