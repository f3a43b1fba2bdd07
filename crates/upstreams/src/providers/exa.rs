//! Exa: `POST https://api.exa.ai/search` with a JSON body.
//!
//! Auth: `x-api-key: KEY`. We ask for `contents: {"highlights": true}`: without a contents option
//! the results carry no snippet at all.
//!
//! Quirks:
//! - credits gone is **402** with tag `NO_MORE_CREDITS` or `API_KEY_BUDGET_EXCEEDED`; error bodies
//!   are `{"requestId", "error", "tag"}`;
//! - `title` may be `null`; the snippet is in `highlights[]`, `text` or `summary`, whichever was
//!   asked for;
//! - there is no page or language parameter; a time range becomes `startPublishedDate`, an ISO 8601
//!   instant computed from the current time;
//! - every answer reports its price in `costDollars.total`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;
use serde_json::json;

use super::api::{class_for_status, domain_names, ApiRequest, Auth, PremiumApi, Refusal, Wire};
use super::{ProviderAnswer, ProviderKind};
use gateway_core::request::{SearchRequest, TimeRange};
use gateway_core::upstream::ErrorClass;

/// The Exa adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Exa;

const PATH: &str = "/search";
const NUM_RESULTS: u32 = 10;

impl Exa {
    /// The request as it would be built at `now` (the start date of a time range depends on it).
    fn request_at(req: &SearchRequest, now: SystemTime) -> ApiRequest {
        let mut body = json!({
            "query": req.query,
            "numResults": NUM_RESULTS,
            "contents": { "highlights": true },
        });
        if let Some(range) = req.time_range {
            body["startPublishedDate"] = json!(start_published_date(range, now));
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

impl Wire for Exa {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let tag = body.and_then(|b| b.tag);
        match (status, tag.as_deref()) {
            (_, Some("NO_MORE_CREDITS" | "API_KEY_BUDGET_EXCEEDED")) | (402, _) => {
                ErrorClass::Quota
            }
            (other, _) => class_for_status(other),
        }
        .into()
    }
}

impl PremiumApi for Exa {
    const KIND: ProviderKind = ProviderKind::Exa;
    const AUTH: Auth = Auth::Header("x-api-key");

    fn request(&self, req: &SearchRequest) -> ApiRequest {
        Self::request_at(req, SystemTime::now())
    }

    fn answer(&self, body: wire::Response, _: &HeaderMap) -> Result<ProviderAnswer, ErrorClass> {
        Ok(ProviderAnswer {
            hits: body
                .results
                .into_iter()
                .filter_map(wire::Result::into_hit)
                .collect(),
            cost_dollars: body.cost_dollars.and_then(|c| c.total),
            ..ProviderAnswer::default()
        })
    }
}

/// `now` minus the range, as ISO 8601 UTC with milliseconds (`2026-10-01T00:00:00.000Z`).
fn start_published_date(range: TimeRange, now: SystemTime) -> String {
    let back = Duration::from_secs(u64::from(range.days()) * 86_400);
    let start = now.checked_sub(back).unwrap_or(UNIX_EPOCH);
    iso8601(start)
}

/// Formats an instant as ISO 8601 UTC with milliseconds (RFC 3339, through `humantime`).
fn iso8601(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// Exa's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    use crate::providers::PremiumHit;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Response {
        pub(super) results: Vec<Result>,
        pub(super) cost_dollars: Option<Cost>,
    }

    #[derive(Deserialize)]
    pub(super) struct Cost {
        pub(super) total: Option<f64>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Result {
        url: Option<String>,
        title: Option<String>,
        published_date: Option<String>,
        #[serde(default)]
        highlights: Vec<String>,
        text: Option<String>,
        summary: Option<String>,
    }

    impl Result {
        /// A hit, or `None` for an entry without a URL.
        pub(super) fn into_hit(self) -> Option<PremiumHit> {
            let url = self.url.filter(|u| !u.is_empty())?;
            let highlights = self
                .highlights
                .iter()
                .map(|h| h.trim())
                .filter(|h| !h.is_empty())
                .collect::<Vec<_>>()
                .join(" … ");
            let content = Some(highlights)
                .filter(|h| !h.is_empty())
                .or(self.text)
                .or(self.summary)
                .unwrap_or_default();
            Some(PremiumHit {
                url,
                title: self.title.unwrap_or_default(),
                content,
                published_date: self.published_date,
            })
        }
    }

    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        pub(super) tag: Option<String>,
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

    const SUCCESS: &str = r#"{"requestId":"7f3a","results":[{"id":"https://example.org/a","url":"https://example.org/a","title":"Async Rust primer","publishedDate":"2026-10-01T00:00:00.000Z","score":0.41,"highlights":["Futures are lazy."]}],"costDollars":{"total":0.007}}"#;
    const EMPTY: &str = r#"{"requestId":"7f3b","results":[],"costDollars":{"total":0.005}}"#;
    const NO_CREDITS: &str =
        r#"{"requestId":"7f3c","error":"You have run out of credits","tag":"NO_MORE_CREDITS"}"#;
    const BUDGET: &str =
        r#"{"requestId":"7f3d","error":"API key budget exceeded","tag":"API_KEY_BUDGET_EXCEEDED"}"#;
    const INVALID_KEY: &str =
        r#"{"requestId":"7f3e","error":"Invalid API key","tag":"INVALID_API_KEY"}"#;
    const BAD_BODY: &str = r#"{"requestId":"7f3f","error":"numResults must be at most 100","tag":"INVALID_REQUEST_BODY"}"#;
    const OVERLOADED: &str =
        r#"{"requestId":"7f40","error":"Service overloaded","tag":"SERVICE_OVERLOADED"}"#;

    fn class(status: u16, body: &str) -> ErrorClass {
        interpret(&Exa, status, &HeaderMap::new(), body.as_bytes())
            .unwrap_err()
            .class
    }

    #[test]
    fn the_recorded_success_body_becomes_hits_and_a_cost() {
        let answer = interpret(&Exa, 200, &HeaderMap::new(), SUCCESS.as_bytes()).unwrap();
        assert_eq!(
            answer.hits,
            [PremiumHit {
                url: "https://example.org/a".into(),
                title: "Async Rust primer".into(),
                content: "Futures are lazy.".into(),
                published_date: Some("2026-10-01T00:00:00.000Z".into()),
            }]
        );
        assert_eq!(answer.cost_dollars, Some(0.007));
        assert_eq!(answer.park, None);
    }

    #[test]
    fn an_empty_result_list_is_an_empty_answer_that_still_costs() {
        let answer = interpret(&Exa, 200, &HeaderMap::new(), EMPTY.as_bytes()).unwrap();
        assert!(answer.hits.is_empty());
        assert_eq!(answer.cost_dollars, Some(0.005));
    }

    #[test]
    fn a_null_title_is_empty_and_text_or_summary_stand_in_for_highlights() {
        let body = r#"{"results":[
            {"url":"https://a.example","title":null,"text":"Body text."},
            {"url":"https://b.example","title":"B","highlights":[],"summary":"A summary."},
            {"url":"https://c.example","title":"C","highlights":["one","two"]},
            {"title":"no url"}]}"#;
        let hits = interpret(&Exa, 200, &HeaderMap::new(), body.as_bytes())
            .unwrap()
            .hits;
        assert_eq!(hits.len(), 3);
        assert_eq!(
            (hits[0].title.as_str(), hits[0].content.as_str()),
            ("", "Body text.")
        );
        assert_eq!(hits[1].content, "A summary.");
        assert_eq!(hits[2].content, "one … two");
    }

    #[test]
    fn garbled_or_wrong_shape_bodies_are_malformed() {
        for body in [
            "not json",
            r#"{"results":[{"url":"#,
            r#"{"requestId":"x","data":[]}"#,
            r#"{"results":null}"#,
        ] {
            assert_eq!(class(200, body), ErrorClass::Malformed, "{body}");
        }
    }

    #[test]
    fn errors_are_classified_from_status_and_tag() {
        assert_eq!(class(401, INVALID_KEY), ErrorClass::Auth);
        assert_eq!(class(403, "{}"), ErrorClass::Auth);
        assert_eq!(class(402, NO_CREDITS), ErrorClass::Quota);
        assert_eq!(class(402, BUDGET), ErrorClass::Quota);
        assert_eq!(class(402, "garbage"), ErrorClass::Quota);
        assert_eq!(class(400, BAD_BODY), ErrorClass::BadRequest);
        assert_eq!(class(429, "{}"), ErrorClass::RateLimited);
        assert_eq!(class(503, OVERLOADED), ErrorClass::Server);
        assert_eq!(class(500, ""), ErrorClass::Server);
        assert_eq!(class(404, "{}"), ErrorClass::HttpStatus);
    }

    #[test]
    fn a_429_carries_retry_after() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("12"));
        let err = interpret(&Exa, 429, &h, b"{}").unwrap_err();
        assert_eq!(err.retry_after, Some(Duration::from_secs(12)));
    }

    #[test]
    fn the_request_is_a_json_post_with_the_api_key_header_and_highlights() {
        let req = PremiumApi::request(&Exa, &SearchRequest::simple("Rust Async"));
        assert_eq!(req.method, Method::Post);
        assert_eq!(req.path, "/search");
        assert!(req.query.is_empty());
        assert!(req.headers.contains(&("content-type", "application/json")));
        assert_eq!(Exa::AUTH, Auth::Header("x-api-key"));
        let body = req.body.unwrap();
        assert_eq!(body["query"], "Rust Async");
        assert_eq!(body["numResults"], 10);
        assert_eq!(body["contents"]["highlights"], true);
        assert!(body.get("startPublishedDate").is_none());
    }

    #[test]
    fn a_time_range_becomes_a_start_date_that_far_back() {
        // 2026-11-27T10:11:12Z
        let now = UNIX_EPOCH + Duration::from_secs(1_795_774_272);
        assert_eq!(iso8601(now), "2026-11-27T10:11:12.000Z");
        let req = SearchRequest {
            time_range: Some(TimeRange::Week),
            ..SearchRequest::simple("x")
        };
        let body = Exa::request_at(&req, now).body.unwrap();
        assert_eq!(body["startPublishedDate"], "2026-11-20T10:11:12.000Z");
        let year = SearchRequest {
            time_range: Some(TimeRange::Year),
            ..SearchRequest::simple("x")
        };
        let body = Exa::request_at(&year, now).body.unwrap();
        assert_eq!(body["startPublishedDate"], "2025-11-27T10:11:12.000Z");
    }

    #[test]
    fn start_dates_are_right_across_month_year_and_leap_boundaries() {
        let day = |d: u64| UNIX_EPOCH + Duration::from_secs(d * 86_400);
        assert_eq!(iso8601(day(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(day(11_016)), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(day(19_782)), "2024-02-29T00:00:00.000Z");
        assert_eq!(iso8601(day(20_819)), "2027-01-01T00:00:00.000Z");
        assert_eq!(iso8601(day(47_541)), "2100-03-01T00:00:00.000Z");
    }
}
