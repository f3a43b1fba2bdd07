//! `POST /firecrawl/v1/scrape` and `/firecrawl/v2/scrape`: one page read with the gateway's
//! decisions (the page cache, the host's breaker, the premium readers of `READ_PROVIDERS`), in
//! Firecrawl's document shape.
//!
//! Request: `url`; `formats` (`markdown` — the default —, `html` (the main content's HTML),
//! `rawHtml` (the page as it came), `links` (the links of the main content); each content format
//! is its own read, run at once); `timeout` in milliseconds (the budget of the reads; default
//! `FALLBACK_TIMEOUT_SECONDS`); `waitFor` in milliseconds (the page rendered by the local browser
//! and given that long after its load; refused by name when `BROWSER` is off). With the browser,
//! `rawHtml` of a rendered page is its rendered DOM. The other page options (`maxAge`,
//! `onlyMainContent`, `actions`, `mobile`, `headers`, …) are honoured, taken as harmless, or refused by name
//! ([`super::page_options`]).
//!
//! Answer: `{"success": true, "data": {"markdown", "html", "rawHtml", "links", "metadata":
//! {"title", "sourceURL", "url", "statusCode", "contentType", "language", "publishedTime"}}}` with
//! the formats asked for. A page that answered an HTTP error (404, 410, …) is, as on Firecrawl, a
//! success whose `metadata.statusCode` says so and whose content is empty; every other failure is
//! an error ([`super::FirecrawlError`]).

use std::time::Duration;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::{document, unread, FirecrawlError, Formats, Named};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field, InvalidField};
use crate::server::kit::read_call;
use crate::server::kit::refusal::{json_response, Refusal};
use gateway_engine::read::{Depth, Freshness, Render};
use gateway_upstreams::reader::ReadFailure;

/// A scrape request, read and checked.
#[derive(Debug, Clone)]
struct ScrapeAsk {
    url: url::Url,
    as_sent: String,
    formats: Formats,
    timeout: Option<Duration>,
    freshness: Freshness,
    /// `waitFor`, in milliseconds: the rendered page is given this long after its load (`None`
    /// for 0 or none).
    wait_for: Option<Duration>,
}

/// The longest `waitFor`, in milliseconds.
const MAX_WAIT_FOR_MS: u32 = 60_000;

/// `POST …/scrape`.
pub(crate) async fn scrape(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let decoded = body
        .map_err(FirecrawlError::from)
        .and_then(|body| decode(&body));
    let ask = match decoded {
        Ok(ask) => ask,
        Err(err) => {
            tracing::info!(error = err.code(), "scrape refused");
            return err.into_response();
        }
    };
    if let (Some(wait), false) = (ask.wait_for, gateway.renders()) {
        let err = super::unsupported(format!(
            "waitFor: {} is not supported by this gateway (no browser renders pages here: BROWSER is off)",
            wait.as_millis()
        ));
        tracing::info!(error = err.code(), "scrape refused");
        return err.into_response();
    }
    let budget = ask.timeout.unwrap_or(gateway.settings().request_budget);
    let asked = read_call::Asking {
        depth: Depth::Basic,
        freshness: ask.freshness,
        // A wait is for a rendered page: the page is rendered first.
        render: if ask.wait_for.is_some() {
            Render::Always
        } else {
            Render::Auto
        },
        wait_for: ask.wait_for,
    };
    let reads = futures::future::join_all(ask.formats.reads().into_iter().map(|format| {
        read_call::run_asking(&gateway, &admitted, ask.url.clone(), format, asked, budget)
    }))
    .await;
    if reads.iter().all(|read| read.result.is_err()) {
        let page_said_no = reads.first().is_some_and(|read| {
            matches!(&read.result, Err(failed) if matches!(failed.failure, ReadFailure::HttpStatus(_)))
        });
        if !page_said_no {
            if let Some(err) = reads.first().and_then(unread) {
                return err.into_response();
            }
        }
    }
    let data: Map<String, Value> = document(&ask.as_sent, &ask.formats, &reads);
    json_response(
        StatusCode::OK,
        json!({ "success": true, "data": data }).to_string(),
    )
}

/// The body read as a scrape request.
fn decode(body: &[u8]) -> Result<ScrapeAsk, FirecrawlError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    ScrapeAsk::read(&fields)
}

/// A body through the scrape decoder, for the fuzz target: the reads it asks for, or the
/// refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8]) -> Result<usize, StatusCode> {
    let ask = decode(body).map_err(|err| err.into_response().status())?;
    Ok(ask.formats.reads().len())
}

impl ScrapeAsk {
    fn read(fields: &Map<String, Value>) -> Result<Self, FirecrawlError> {
        const URL: InvalidField = InvalidField {
            name: "url",
            expected: "an http or https URL",
        };
        let as_sent: String = field(fields, "url", "an http or https URL")?.ok_or(URL)?;
        let url = url::Url::parse(as_sent.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or(URL)?;
        let formats = Formats::read(field::<Vec<Named>>(
            fields,
            "formats",
            "a list of markdown, html, rawHtml and links",
        )?)?;
        if formats.is_empty() {
            return Err(InvalidField {
                name: "formats",
                expected: "a list of markdown, html, rawHtml and links",
            }
            .into());
        }
        let freshness =
            super::page_options::check(fields, &["url", "formats", "timeout", "waitFor"])?;
        let timeout = super::timeout(fields)?;
        let wait_for = json_fields::number_in(
            fields,
            "waitFor",
            0..=MAX_WAIT_FOR_MS,
            "milliseconds, 0 to 60000",
        )?
        .filter(|ms| *ms > 0)
        .map(|ms| Duration::from_millis(u64::from(ms)));
        Ok(Self {
            url,
            as_sent,
            formats,
            timeout,
            freshness,
            wait_for,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn reads_what_firecrawl_py_sends() {
        let ask = ScrapeAsk::read(&fields(
            json!({"url": "https://a.example/x", "origin": "python-sdk@4.55.0"}),
        ))
        .unwrap();
        assert_eq!(ask.formats.content, [ReadFormat::Markdown]);
        assert_eq!(ask.as_sent, "https://a.example/x");
        let full = ScrapeAsk::read(&fields(json!({"url": "https://a.example/x",
            "formats": ["markdown", "html", "links"], "onlyMainContent": true, "timeout": 10000,
            "removeBase64Images": true, "maxAge": 14400000, "mobile": false})))
        .unwrap();
        assert_eq!(
            full.formats.content,
            [ReadFormat::Markdown, ReadFormat::Html]
        );
        assert!(full.formats.links);
        assert_eq!(full.timeout, Some(Duration::from_secs(10)));
    }

    #[test]
    fn a_missing_or_bad_url_or_format_is_named() {
        for (body, name) in [
            (json!({}), "url"),
            (json!({"url": "ftp://a.example/"}), "url"),
            (json!({"url": "not a url"}), "url"),
            (
                json!({"url": "https://a.example/", "formats": []}),
                "formats",
            ),
            (
                json!({"url": "https://a.example/", "timeout": 400000}),
                "timeout",
            ),
        ] {
            match ScrapeAsk::read(&fields(body.clone())) {
                Err(FirecrawlError::InvalidField(InvalidField { name: got, .. })) => {
                    assert_eq!(got, name, "{body}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }
}
