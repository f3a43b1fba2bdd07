//! Tavily extract: `POST https://api.tavily.com/extract` with a JSON body.
//!
//! Auth: `Authorization: Bearer KEY`, as for its search. We send one URL per call
//! (`urls: [url]`), `extract_depth: "basic"` pinned (advanced costs twice as much), `format`
//! (`markdown` or `text`), `include_images: true`, and `timeout` in seconds (1–60).
//!
//! Quirks:
//! - a URL it could not read is a `failed_results` entry inside a 200 — the page's failure;
//! - credits gone is **432** (plan limit) or **433** (pay-as-you-go limit); error bodies are
//!   `{"detail": {"error": "…"}}` with free text only: the status alone classifies;
//! - billed per five successful URLs (failed ones are free).

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::json;

use super::{PageResult, PremiumPage, ReaderApi, ReaderKind};
use crate::providers::api::{ApiRequest, Auth, Refusal, Wire};
use crate::providers::tavily::refusal_by_status;
use gateway_core::request::ReadFormat;
use gateway_core::upstream::ErrorClass;

/// The Tavily extract adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TavilyExtract;

const PATH: &str = "/extract";

impl Wire for TavilyExtract {
    type Success = wire::Response;
    type Failure = serde::de::IgnoredAny;

    fn refusal(&self, status: u16, _: Option<serde::de::IgnoredAny>, _: &HeaderMap) -> Refusal {
        refusal_by_status(status)
    }
}

impl ReaderApi for TavilyExtract {
    const KIND: ReaderKind = ReaderKind::Tavily;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, url: &str, format: ReadFormat, timeout: Duration) -> ApiRequest {
        ApiRequest::json_post(
            PATH,
            json!({
                "urls": [url],
                "extract_depth": "basic",
                "format": format.as_str(),
                "include_images": true,
                "timeout": timeout.as_secs_f64().clamp(1.0, 60.0),
            }),
        )
    }

    fn page(&self, body: wire::Response, url: &str) -> Result<PageResult, ErrorClass> {
        let Some(results) = body.results else {
            return Err(ErrorClass::Malformed);
        };
        // One URL was asked for: its result, or the only one (Tavily may spell the URL its way).
        let at = results
            .iter()
            .position(|r| r.url.as_deref() == Some(url))
            .unwrap_or(0);
        let Some(result) = results.into_iter().nth(at) else {
            return Ok(PageResult::Unreadable);
        };
        let content = result.raw_content.unwrap_or_default();
        if content.trim().is_empty() {
            return Ok(PageResult::Unreadable);
        }
        Ok(PageResult::Page(PremiumPage {
            final_url: result.url,
            title: None,
            content,
            published: None,
            language: None,
            images: result.images.unwrap_or_default(),
            cost_dollars: None,
        }))
    }
}

/// Tavily's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        pub(super) results: Option<Vec<Result>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Result {
        pub(super) url: Option<String>,
        pub(super) raw_content: Option<String>,
        pub(super) images: Option<Vec<String>>,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::Method;
    use crate::providers::readers::interpret;

    const URL: &str = "https://example.org/async";
    const SUCCESS: &str = r##"{"results":[{"url":"https://example.org/async","raw_content":"# Async Rust\n…","images":["https://example.org/a.png"]}],"failed_results":[],"response_time":0.8,"request_id":"123e4567-e89b-12d3-a456-426614174111"}"##;
    const FAILED: &str = r#"{"results":[],"failed_results":[{"url":"https://example.org/async","error":"Failed to fetch url"}],"response_time":0.5}"#;

    #[test]
    fn the_request_asks_for_one_url_at_basic_depth_in_the_format() {
        let req = TavilyExtract.request(URL, ReadFormat::Text, Duration::from_millis(200));
        let body = req.body.unwrap();
        assert_eq!((req.method, req.path), (Method::Post, PATH));
        assert_eq!(body["urls"], json!([URL]));
        assert_eq!(body["extract_depth"], "basic");
        assert_eq!(body["format"], "text");
        assert_eq!(body["timeout"], 1.0, "Tavily takes 1–60 s");
    }

    #[test]
    fn a_result_is_a_page_and_a_failed_result_the_pages_failure() {
        let read =
            |body: &str| interpret(&TavilyExtract, 200, &HeaderMap::new(), body.as_bytes(), URL);
        let Ok(PageResult::Page(page)) = read(SUCCESS) else {
            panic!("a page")
        };
        assert!(page.content.starts_with("# Async Rust"));
        assert_eq!(page.images, ["https://example.org/a.png"]);
        assert_eq!(read(FAILED).unwrap(), PageResult::Unreadable);
        assert_eq!(read("{}").map_err(|e| e.class), Err(ErrorClass::Malformed));
    }

    #[test]
    fn spent_credits_are_a_quota() {
        let class = |status| {
            interpret(
                &TavilyExtract,
                status,
                &HeaderMap::new(),
                br#"{"detail":{"error":"x"}}"#,
                URL,
            )
            .map_err(|e| e.class)
        };
        assert_eq!(class(432), Err(ErrorClass::Quota));
        assert_eq!(class(433), Err(ErrorClass::Quota));
        assert_eq!(class(401), Err(ErrorClass::Auth));
        assert_eq!(class(429), Err(ErrorClass::RateLimited));
        assert_eq!(class(400), Err(ErrorClass::BadRequest));
    }
}
