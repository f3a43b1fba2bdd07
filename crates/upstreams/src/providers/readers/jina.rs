//! Jina Reader: `POST https://r.jina.ai/` with JSON `{"url": …}` (its `GET /<url>` form would put
//! the target in the path, where our logs never look but proxies do).
//!
//! Auth: `Authorization: Bearer KEY` (keyless works at a low rate; the gateway reads keyless only
//! directly). `Accept: application/json` for the JSON envelope, `X-Return-Format: markdown` or
//! `text` for the content's form.
//!
//! Quirks:
//! - errors are `{"code", "name", "status", "message"}` with Jina's five-digit `status` (40201
//!   `InsufficientCreditsError`, 40203 `InsufficientBalanceError` → HTTP 402: quota; 42903 →
//!   429 with `Retry-After`); 409 `BudgetExceededError` is a quota too;
//! - a target it cannot read (a refused or harmful page, 451; an assertion on the page, 422) is
//!   the page's failure, not the reader's.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::json;

use super::{PageResult, PremiumPage, ReaderApi, ReaderKind};
use crate::providers::api::{class_for_status, ApiRequest, Auth, Refusal, Wire};
use gateway_core::request::ReadFormat;
use gateway_core::upstream::ErrorClass;

/// The Jina Reader adapter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JinaReader;

impl Wire for JinaReader {
    type Success = wire::Response;
    type Failure = wire::ErrorBody;

    fn refusal(&self, status: u16, body: Option<wire::ErrorBody>, _: &HeaderMap) -> Refusal {
        let name = body.as_ref().and_then(|e| e.name.as_deref());
        match (status, name) {
            (
                _,
                Some(
                    "InsufficientBalanceError" | "InsufficientCreditsError" | "BudgetExceededError",
                ),
            )
            | (402, _) => ErrorClass::Quota.into(),
            (_, Some("AuthenticationRequiredError" | "AuthenticationFailedError")) => {
                ErrorClass::Auth.into()
            }
            (422 | 451, _) => Refusal::NoResults,
            (_, Some("ParamValidationError")) => ErrorClass::BadRequest.into(),
            (other, _) => class_for_status(other).into(),
        }
    }
}

impl ReaderApi for JinaReader {
    const KIND: ReaderKind = ReaderKind::Jina;
    const AUTH: Auth = Auth::Bearer;

    fn request(&self, url: &str, format: ReadFormat, _: Duration) -> ApiRequest {
        let returned = match format {
            ReadFormat::Markdown => "markdown",
            ReadFormat::Text => "text",
            ReadFormat::Html | ReadFormat::RawHtml => "html",
        };
        let mut request = ApiRequest::json_post("/", json!({ "url": url }));
        request.headers.push(("x-return-format", returned));
        request
    }

    fn serves(&self, _: ReadFormat) -> bool {
        true
    }

    fn page(&self, body: wire::Response, _: &str) -> Result<PageResult, ErrorClass> {
        let Some(data) = body.data else {
            return Err(ErrorClass::Malformed);
        };
        // An `html` read answers in `html` [unverified: the documentation shows `content` for
        // the text formats only]; whichever is there is the page.
        let content = data.content.or(data.html).unwrap_or_default();
        if content.trim().is_empty() {
            return Ok(PageResult::Unreadable);
        }
        Ok(PageResult::Page(PremiumPage {
            final_url: data.url.filter(|u| !u.is_empty()),
            title: data.title.filter(|t| !t.is_empty()),
            content,
            published: data.published_time.filter(|d| !d.is_empty()),
            language: None,
            images: Vec::new(),
            cost_dollars: None,
        }))
    }
}

/// Jina Reader's JSON, only the parts we read.
mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(crate) struct Response {
        pub(super) data: Option<Data>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Data {
        pub(super) title: Option<String>,
        pub(super) url: Option<String>,
        pub(super) html: Option<String>,
        pub(super) content: Option<String>,
        pub(super) published_time: Option<String>,
    }

    #[derive(Deserialize)]
    pub(crate) struct ErrorBody {
        pub(super) name: Option<String>,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::api::Method;
    use crate::providers::readers::interpret;

    const SUCCESS: &str = r##"{"code":200,"status":20000,"data":{"title":"Async Rust primer","description":"A short primer.","url":"https://example.org/async","content":"# Async Rust\n\nFutures are lazy.","publishedTime":"2026-10-01T00:00:00Z","usage":{"tokens":812}}}"##;

    #[test]
    fn the_request_posts_the_url_and_asks_for_json_in_the_format() {
        let req = JinaReader.request(
            "https://example.org/a?b=1",
            ReadFormat::Text,
            Duration::ZERO,
        );
        assert_eq!(req.method, Method::Post);
        assert_eq!(req.path, "/");
        assert_eq!(req.body.unwrap()["url"], "https://example.org/a?b=1");
        assert!(req.headers.contains(&("x-return-format", "text")));
        assert!(req.headers.contains(&("accept", "application/json")));
    }

    #[test]
    fn a_recorded_answer_becomes_a_page() {
        let page = interpret(&JinaReader, 200, &HeaderMap::new(), SUCCESS.as_bytes(), "u").unwrap();
        let PageResult::Page(page) = page else {
            panic!("a page")
        };
        assert_eq!(page.title.as_deref(), Some("Async Rust primer"));
        assert!(page.content.starts_with("# Async Rust"));
        assert_eq!(page.final_url.as_deref(), Some("https://example.org/async"));
        assert_eq!(page.published.as_deref(), Some("2026-10-01T00:00:00Z"));
    }

    #[test]
    fn errors_are_classified_and_a_page_it_cannot_read_is_the_pages_failure() {
        let class = |status, body: &str| {
            interpret(&JinaReader, status, &HeaderMap::new(), body.as_bytes(), "u")
                .map_err(|e| e.class)
        };
        let quota = r#"{"data":null,"code":402,"name":"InsufficientBalanceError","status":40203,"message":"m"}"#;
        assert_eq!(class(402, quota), Err(ErrorClass::Quota));
        let budget = r#"{"code":409,"name":"BudgetExceededError","status":40904}"#;
        assert_eq!(class(409, budget), Err(ErrorClass::Quota));
        assert_eq!(class(401, "{}"), Err(ErrorClass::Auth));
        assert_eq!(class(429, "{}"), Err(ErrorClass::RateLimited));
        assert_eq!(
            class(451, r#"{"name":"HarmfulContentError"}"#),
            Ok(PageResult::Unreadable)
        );
        assert_eq!(
            class(200, r#"{"code":200,"data":{"content":"  "}}"#),
            Ok(PageResult::Unreadable)
        );
        assert_eq!(class(200, r#"{"code":200}"#), Err(ErrorClass::Malformed));
        assert_eq!(class(503, "{}"), Err(ErrorClass::Server));
    }
}
