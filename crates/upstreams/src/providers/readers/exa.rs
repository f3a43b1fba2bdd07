//! Exa contents: `POST https://api.exa.ai/contents` with a JSON body.
//!
//! Auth: `x-api-key: KEY`, as for its search. We send `urls: [url]` and `text: true` (the page's
//! text; Exa has no Markdown switch, its text keeps headings as Markdown does).
//!
//! Quirks:
//! - a URL it could not read is an `error` entry of `statuses` inside a 200 (tags such as
//!   `CRAWL_NOT_FOUND`, `CRAWL_TIMEOUT`, `SOURCE_NOT_AVAILABLE`) — the page's failure; HTTP
//!   errors are request-level only;
//! - credits gone is **402** with tag `NO_MORE_CREDITS` or `API_KEY_BUDGET_EXCEEDED`; error bodies
//!   are `{"requestId", "error", "tag"}`; 422 is "this URL could not be processed";
//! - every answer reports its spend (`costDollars.total`).

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::json;

use super::{PageResult, PremiumPage, ReaderApi, ReaderKind};
use crate::providers::api::{class_for_status, ApiRequest, Auth, Refusal, Wire};
use gateway_core::request::ReadFormat;
use gateway_core::upstream::ErrorClass;

/// The Exa contents adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExaContents;

const PATH: &str = "/contents";

impl Wire for ExaContents {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let tag = body.as_ref().and_then(|b| b.tag.as_deref());
        match (status, tag) {
            (_, Some("NO_MORE_CREDITS" | "API_KEY_BUDGET_EXCEEDED")) | (402, _) => {
                ErrorClass::Quota.into()
            }
            (422, _) => Refusal::NoResults,
            (other, _) => class_for_status(other).into(),
        }
    }
}

impl ReaderApi for ExaContents {
    const KIND: ReaderKind = ReaderKind::Exa;
    const AUTH: Auth = Auth::Header("x-api-key");

    fn request(&self, url: &str, _: ReadFormat, _: Duration) -> ApiRequest {
        ApiRequest::json_post(PATH, json!({ "urls": [url], "text": true }))
    }

    fn page(&self, body: wire::Response, _: &str) -> Result<PageResult, ErrorClass> {
        let cost = body.cost_dollars.and_then(|c| c.total);
        let failed = body
            .statuses
            .iter()
            .any(|s| s.status.as_deref() == Some("error"));
        let Some(result) = body.results.and_then(|r| r.into_iter().next()) else {
            return if failed {
                Ok(PageResult::Unreadable)
            } else {
                Err(ErrorClass::Malformed)
            };
        };
        let content = result.text.unwrap_or_default();
        if content.trim().is_empty() {
            return Ok(PageResult::Unreadable);
        }
        Ok(PageResult::Page(PremiumPage {
            final_url: result.url,
            title: result.title.filter(|t| !t.is_empty()),
            content,
            published: result.published_date.filter(|d| !d.is_empty()),
            language: None,
            images: result.image.into_iter().collect(),
            cost_dollars: cost,
        }))
    }
}

/// Exa's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Response {
        pub(super) results: Option<Vec<Result>>,
        #[serde(default)]
        pub(super) statuses: Vec<Status>,
        pub(super) cost_dollars: Option<Cost>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Result {
        pub(super) url: Option<String>,
        pub(super) title: Option<String>,
        pub(super) text: Option<String>,
        pub(super) published_date: Option<String>,
        pub(super) image: Option<String>,
    }

    #[derive(Deserialize)]
    pub(super) struct Status {
        pub(super) status: Option<String>,
    }

    #[derive(Deserialize)]
    pub(super) struct Cost {
        pub(super) total: Option<f64>,
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
    use crate::providers::readers::interpret;

    const SUCCESS: &str = r##"{"requestId":"r1","results":[{"id":"https://example.org/async","url":"https://example.org/async","title":"Async Rust primer","text":"# Async Rust\nFutures are lazy.","publishedDate":"2026-10-01T00:00:00.000Z"}],"statuses":[{"id":"https://example.org/async","status":"success"}],"costDollars":{"total":0.001}}"##;
    const FAILED: &str = r#"{"requestId":"r2","results":[],"statuses":[{"id":"https://example.org/x","status":"error","error":{"tag":"CRAWL_NOT_FOUND","httpStatusCode":404}}]}"#;

    fn read(status: u16, body: &str) -> Result<PageResult, ErrorClass> {
        interpret(
            &ExaContents,
            status,
            &HeaderMap::new(),
            body.as_bytes(),
            "u",
        )
        .map_err(|e| e.class)
    }

    #[test]
    fn a_result_is_a_page_with_its_spend() {
        let req = ExaContents.request(
            "https://example.org/async",
            ReadFormat::Markdown,
            Duration::ZERO,
        );
        assert_eq!(
            req.body.unwrap(),
            json!({"urls": ["https://example.org/async"], "text": true})
        );
        let Ok(PageResult::Page(page)) = read(200, SUCCESS) else {
            panic!("a page")
        };
        assert_eq!(page.title.as_deref(), Some("Async Rust primer"));
        assert_eq!(page.cost_dollars, Some(0.001));
        assert_eq!(page.published.as_deref(), Some("2026-10-01T00:00:00.000Z"));
    }

    #[test]
    fn an_error_status_is_the_pages_failure_and_spent_credits_a_quota() {
        assert_eq!(read(200, FAILED), Ok(PageResult::Unreadable));
        let credits = r#"{"requestId":"r","error":"You have exceeded your credits limit.","tag":"NO_MORE_CREDITS"}"#;
        assert_eq!(read(402, credits), Err(ErrorClass::Quota));
        assert_eq!(read(401, "{}"), Err(ErrorClass::Auth));
        assert_eq!(read(422, "{}"), Ok(PageResult::Unreadable));
        assert_eq!(
            read(200, r#"{"requestId":"r"}"#),
            Err(ErrorClass::Malformed)
        );
    }
}
