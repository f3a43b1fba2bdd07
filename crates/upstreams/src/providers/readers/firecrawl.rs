//! Firecrawl scrape: `POST https://api.firecrawl.dev/v2/scrape` with a JSON body.
//!
//! Auth: `Authorization: Bearer fc-KEY`. We send `url`, `formats: ["markdown"]` (`["html"]` or
//! `["rawHtml"]` for the HTML formats),
//! `onlyMainContent: true` and `timeout` in milliseconds. Firecrawl renders pages in a browser, so
//! it reads what a direct read cannot (script shells, most bot walls) — and costs a credit a page.
//!
//! Quirks:
//! - Markdown is the only text form it gives; a `text` read gets its Markdown;
//! - `data.metadata.statusCode` is the *target's* status: a 200 envelope may hold a 404 page,
//!   which is the page's failure;
//! - errors are `{"success": false, "error": "…", "code"?}`: 402 credits gone (quota), 401 a bad
//!   key, 403 a site it does not support (the page's failure, not an auth problem), 408 the page
//!   was too slow, 429 a rate or concurrency limit with `Retry-After`.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::json;

use super::{PageResult, PremiumPage, ReaderApi, ReaderKind};
use crate::providers::api::{class_for_status, ApiRequest, Auth, Refusal, Wire};
use gateway_core::request::ReadFormat;
use gateway_core::upstream::ErrorClass;

/// The Firecrawl scrape adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FirecrawlScrape;

const PATH: &str = "/v2/scrape";

impl Wire for FirecrawlScrape {
    type Success = wire::Response;
    type Failure = serde::de::IgnoredAny;

    fn refusal(&self, status: u16, _: Option<serde::de::IgnoredAny>, _: &HeaderMap) -> Refusal {
        match status {
            402 => ErrorClass::Quota.into(),
            401 => ErrorClass::Auth.into(),
            403 | 404 | 422 => Refusal::NoResults,
            408 => ErrorClass::Timeout.into(),
            other => class_for_status(other).into(),
        }
    }
}

impl ReaderApi for FirecrawlScrape {
    const KIND: ReaderKind = ReaderKind::Firecrawl;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, url: &str, format: ReadFormat, timeout: Duration) -> ApiRequest {
        let wanted = match format {
            ReadFormat::Markdown | ReadFormat::Text => "markdown",
            ReadFormat::Html => "html",
            ReadFormat::RawHtml => "rawHtml",
        };
        ApiRequest::json_post(
            PATH,
            json!({
                "url": url,
                "formats": [wanted],
                "onlyMainContent": true,
                "timeout": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX).clamp(1_000, 300_000),
            }),
        )
    }

    fn serves(&self, _: ReadFormat) -> bool {
        true
    }

    fn page(&self, body: wire::Response, _: &str) -> Result<PageResult, ErrorClass> {
        if !body.success {
            return Err(ErrorClass::Malformed);
        }
        let Some(data) = body.data else {
            return Err(ErrorClass::Malformed);
        };
        let metadata = data.metadata.unwrap_or_default();
        // One format was asked for: whichever came is the page.
        let content = data
            .markdown
            .or(data.html)
            .or(data.raw_html)
            .unwrap_or_default();
        if metadata.status_code.is_some_and(|s| s >= 400) || content.trim().is_empty() {
            return Ok(PageResult::Unreadable);
        }
        Ok(PageResult::Page(PremiumPage {
            final_url: metadata.url.or(metadata.source_url),
            title: metadata.title.filter(|t| !t.is_empty()),
            content,
            published: metadata.published_time.filter(|d| !d.is_empty()),
            language: metadata.language.filter(|l| !l.is_empty()),
            images: Vec::new(),
            cost_dollars: None,
        }))
    }
}

/// Firecrawl's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        #[serde(default)]
        pub(super) success: bool,
        pub(super) data: Option<Data>,
    }

    #[derive(Deserialize)]
    pub(super) struct Data {
        pub(super) markdown: Option<String>,
        pub(super) html: Option<String>,
        #[serde(rename = "rawHtml")]
        pub(super) raw_html: Option<String>,
        pub(super) metadata: Option<Metadata>,
    }

    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Metadata {
        pub(super) title: Option<String>,
        pub(super) url: Option<String>,
        #[serde(rename = "sourceURL")]
        pub(super) source_url: Option<String>,
        pub(super) status_code: Option<u16>,
        pub(super) language: Option<String>,
        pub(super) published_time: Option<String>,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::Method;
    use crate::providers::readers::interpret;

    const SUCCESS: &str = r##"{"success":true,"data":{"markdown":"# Async Rust\n…","metadata":{"title":"Async Rust primer","sourceURL":"https://example.org/async","url":"https://example.org/async","statusCode":200,"language":"en"}}}"##;

    fn read(status: u16, body: &str) -> Result<PageResult, ErrorClass> {
        interpret(
            &FirecrawlScrape,
            status,
            &HeaderMap::new(),
            body.as_bytes(),
            "u",
        )
        .map_err(|e| e.class)
    }

    #[test]
    fn the_request_asks_for_the_main_content_as_markdown_in_milliseconds() {
        let req = FirecrawlScrape.request(
            "https://example.org/a",
            ReadFormat::Text,
            Duration::from_secs(7),
        );
        let body = req.body.unwrap();
        assert_eq!((req.method, req.path), (Method::Post, PATH));
        assert_eq!(body["formats"], json!(["markdown"]));
        assert_eq!(body["onlyMainContent"], true);
        assert_eq!(body["timeout"], 7000);
    }

    #[test]
    fn a_scrape_is_a_page_and_a_target_error_is_the_pages_failure() {
        let Ok(PageResult::Page(page)) = read(200, SUCCESS) else {
            panic!("a page")
        };
        assert_eq!(page.title.as_deref(), Some("Async Rust primer"));
        assert_eq!(page.language.as_deref(), Some("en"));
        let not_found =
            r#"{"success":true,"data":{"markdown":"Not found","metadata":{"statusCode":404}}}"#;
        assert_eq!(read(200, not_found), Ok(PageResult::Unreadable));
        assert_eq!(
            read(403, r#"{"success":false,"error":"UNSUPPORTED_SITE"}"#),
            Ok(PageResult::Unreadable)
        );
        assert_eq!(
            read(200, r#"{"success":false}"#),
            Err(ErrorClass::Malformed)
        );
    }

    #[test]
    fn spent_credits_are_a_quota_and_a_slow_page_a_timeout() {
        let body = r#"{"success":false,"error":"Payment Required: Insufficient credits"}"#;
        assert_eq!(read(402, body), Err(ErrorClass::Quota));
        assert_eq!(read(401, "{}"), Err(ErrorClass::Auth));
        assert_eq!(read(408, "{}"), Err(ErrorClass::Timeout));
        assert_eq!(read(429, "{}"), Err(ErrorClass::RateLimited));
        assert_eq!(read(500, "{}"), Err(ErrorClass::Server));
    }
}
