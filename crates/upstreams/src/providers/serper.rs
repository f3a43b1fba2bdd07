//! Serper (Google results): `POST https://google.serper.dev/search` with a JSON body.
//!
//! Auth: `X-API-KEY: KEY`. We send `q`, `num` (10), `page` (1-based, from the second page on), `hl`
//! (the language), `gl` (the region, when the language names one) and `tbs` = `qdr:d|w|m|y` for a
//! time range. There is no safe-search parameter.
//!
//! Quirks (Serper publishes no error reference; these are what its users have seen):
//! - a bad key is **403** `{"message": "Unauthorized.", "statusCode": 403}`, not 401;
//! - spent credits have been seen as 400 `{"message": "Not enough credits"}` and as 429: the
//!   message decides (one that mentions credits is quota, any other 429 a rate limit);
//! - no rate-limit headers; credits are deducted for successful responses only.

use reqwest::header::HeaderMap;
use serde_json::json;

use super::api::{
    class_for_status, mentions_money, primary_language, region, ApiRequest, Auth, PremiumApi,
    Refusal, Wire,
};
use super::google_organic::Organic;
use super::{ProviderAnswer, ProviderKind};
use gateway_core::request::{SearchRequest, TimeRange};
use gateway_core::upstream::ErrorClass;

/// The Serper adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Serper;

const PATH: &str = "/search";
const NUM: u32 = 10;

impl Wire for Serper {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let message = body.and_then(|b| b.message).unwrap_or_default();
        match status {
            400 | 402 | 429 if mentions_money(&message) => ErrorClass::Quota,
            401 | 403 => ErrorClass::Auth,
            other => class_for_status(other),
        }
        .into()
    }
}

impl PremiumApi for Serper {
    const KIND: ProviderKind = ProviderKind::Serper;
    const AUTH: Auth = Auth::Header("x-api-key");

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        let mut body = json!({ "q": req.query_with_site(), "num": NUM });
        if req.pageno > 1 {
            body["page"] = json!(req.pageno);
        }
        if let Some(language) = primary_language(req) {
            body["hl"] = json!(language);
        }
        if let Some(region) = region(req) {
            body["gl"] = json!(region);
        }
        if let Some(range) = req.time_range {
            let qdr = match range {
                TimeRange::Day => "qdr:d",
                TimeRange::Week => "qdr:w",
                TimeRange::Month => "qdr:m",
                TimeRange::Year => "qdr:y",
            };
            body["tbs"] = json!(qdr);
        }
        ApiRequest::json_post(PATH, body)
    }

    fn answer(&self, body: wire::Response, _: &HeaderMap) -> Result<ProviderAnswer, ErrorClass> {
        Ok(ProviderAnswer::of_hits(
            body.organic.into_iter().filter_map(Organic::into_hit),
        ))
    }
}

/// Serper's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::google_organic::Organic;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        /// Absent when Google found nothing organic.
        #[serde(default)]
        pub(super) organic: Vec<Organic>,
        /// Present on every answer: a body without it is not Serper's (schema drift).
        #[serde(rename = "searchParameters")]
        _search_parameters: serde::de::IgnoredAny,
    }

    /// `{"message": "…", "statusCode": N}`.
    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
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

    const SUCCESS: &str = r#"{"searchParameters":{"q":"rust async","gl":"us","hl":"en","type":"search"},"organic":[{"title":"Async Rust primer","link":"https://example.org/async","snippet":"A short primer.","position":1,"date":"Nov 27, 2026"},{"title":"No link","position":2}],"credits":1}"#;
    const EMPTY: &str = r#"{"searchParameters":{"q":"zxqv","type":"search"}}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Serper, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits() {
        let answer = interpret(&Serper, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/async".into(),
                title: "Async Rust primer".into(),
                content: "A short primer.".into(),
                published_date: Some("Nov 27, 2026".into()),
            }]
        );
        let empty = interpret(&Serper, 200, &HeaderMap::new(), EMPTY.as_bytes()).unwrap();
        assert!(empty.hits.is_empty(), "no organic list: nothing found");
        assert_eq!(class(200, r#"{"organic":[]}"#), ErrorClass::Malformed);
        assert_eq!(class(200, "not json"), ErrorClass::Malformed);
    }

    #[test]
    fn errors_are_classified_by_status_and_message() {
        assert_eq!(
            class(403, r#"{"message":"Unauthorized.","statusCode":403}"#),
            ErrorClass::Auth
        );
        assert_eq!(
            class(400, r#"{"message":"Not enough credits","statusCode":400}"#),
            ErrorClass::Quota
        );
        assert_eq!(
            class(429, r#"{"message":"Not enough credits"}"#),
            ErrorClass::Quota
        );
        assert_eq!(
            class(429, r#"{"message":"Too many requests"}"#),
            ErrorClass::RateLimited
        );
        assert_eq!(
            class(400, r#"{"message":"Missing query"}"#),
            ErrorClass::BadRequest
        );
        assert_eq!(class(500, "{}"), ErrorClass::Server);
    }

    #[test]
    fn the_request_maps_language_region_page_and_time_range() {
        let req = SearchRequest {
            language: Some("de-CH".into()),
            pageno: 2,
            time_range: Some(TimeRange::Week),
            ..SearchRequest::simple("Rust Async")
        };
        let api = PremiumApi::request(&Serper, &req);
        assert_eq!((api.method, api.path), (Method::Post, "/search"));
        assert_eq!(Serper::AUTH, Auth::Header("x-api-key"));
        let body = api.body.unwrap();
        assert_eq!(body["q"], "Rust Async");
        assert_eq!(body["num"], 10);
        assert_eq!(body["page"], 2);
        assert_eq!(body["hl"], "de");
        assert_eq!(body["gl"], "ch");
        assert_eq!(body["tbs"], "qdr:w");
        let plain = PremiumApi::request(&Serper, &SearchRequest::simple("x"))
            .body
            .unwrap();
        assert!(
            plain.get("page").is_none() && plain.get("hl").is_none() && plain.get("tbs").is_none()
        );
    }
}
