//! `POST /firecrawl/v1/scrape` and `/firecrawl/v2/scrape`: one page read with the gateway's
//! decisions (the page cache, the host's breaker, the premium readers of `READ_PROVIDERS`), in
//! Firecrawl's document shape.
//!
//! Request: `url`; `formats` (`markdown` — the default —, `html` (the main content's HTML),
//! `rawHtml` (the page as it came), `links` (the links of the main content); each content format
//! is its own read, run at once); `timeout` in milliseconds (the budget of the reads; default
//! `FALLBACK_TIMEOUT_SECONDS`); `waitFor` in milliseconds (the page rendered by the local browser
//! and given that long after its load; refused by name when `BROWSER` is off). With the browser,
//! `rawHtml` of a rendered page is its rendered DOM. `screenshot` (the 1280 × 800 viewport),
//! `screenshot@fullPage` and v2's `{"type": "screenshot", "fullPage": true}` (the whole page, cut at
//! 10,000 pixels) are a render of their own beside the reads, in the local browser — the same
//! fence, tab leases and time — refused by name when `BROWSER` is off; never cached. The image
//! is `data.screenshot`, a `data:image/png;base64,…` URL: what Firecrawl's self-hosted API
//! answers, which uploads a screenshot and answers its URL only with its hosted storage (its
//! `uploadScreenshot` step runs with `USE_DB_AUTHENTICATION`) — the gateway has no storage to
//! serve an image from, and a data URL is what firecrawl-py hands its caller unchanged. The
//! other page options (`maxAge`,
//! `onlyMainContent`, `actions`, `mobile`, `headers`, …) are honoured, taken as harmless, or refused by name
//! ([`super::page_options`]).
//!
//! Answer: `{"success": true, "data": {"markdown", "html", "rawHtml", "links", "screenshot", "metadata":
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
    if let Err(err) = needs_browser(&ask, gateway.renders()) {
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
    }));
    let screenshot = async {
        match ask.formats.screenshot {
            Some(shot) => Some(
                gateway
                    .screenshot(&ask.url, shot, ask.wait_for, budget)
                    .await,
            ),
            None => None,
        }
    };
    let (reads, screenshot) = tokio::join!(reads, screenshot);
    let mut page_said_no = false;
    if !reads.is_empty() && reads.iter().all(|read| read.result.is_err()) {
        page_said_no = reads.first().is_some_and(|read| {
            matches!(&read.result, Err(failed) if matches!(failed.failure, ReadFailure::HttpStatus(_)))
        });
        if !page_said_no {
            if let Some(err) = reads.first().and_then(unread) {
                return err.into_response();
            }
        }
    }
    let mut data: Map<String, Value> = document(&ask.as_sent, &ask.formats, &reads);
    match screenshot {
        None => {}
        Some(Ok(shot)) => {
            if reads.is_empty() {
                // A screenshot alone: its page's address is the metadata.
                if let Some(Value::Object(metadata)) = data.get_mut("metadata") {
                    metadata.insert("url".into(), Value::from(shot.final_url.as_str()));
                    metadata.insert("statusCode".into(), Value::from(200));
                }
            }
            data.insert("screenshot".into(), Value::from(data_url(&shot.png)));
        }
        // The page answered an HTTP error: the document says so, without a picture of it.
        Some(Err(_)) if page_said_no => {}
        Some(Err(failure)) => {
            let err = FirecrawlError::Own(super::FirecrawlOwn::Page(failure));
            tracing::info!(error = err.code(), "screenshot failed");
            return err.into_response();
        }
    }
    json_response(
        StatusCode::OK,
        json!({ "success": true, "data": data }).to_string(),
    )
}

/// The scrape refused when it needs the local browser (`waitFor`, a screenshot) and there is
/// none (`renders` false).
fn needs_browser(ask: &ScrapeAsk, renders: bool) -> Result<(), FirecrawlError> {
    if renders {
        return Ok(());
    }
    let asked = match (ask.wait_for, ask.formats.screenshot) {
        (Some(wait), _) => format!("waitFor: {}", wait.as_millis()),
        (None, Some(shot)) => format!("format {:?}", super::shot_name(shot)),
        (None, None) => return Ok(()),
    };
    Err(super::unsupported(format!(
        "{asked} is not supported by this gateway (no browser renders pages here: BROWSER is off)"
    )))
}

/// A PNG as Firecrawl's self-hosted API gives it when no storage is configured: a `data:` URL.
fn data_url(png: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
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
            "a list of markdown, html, rawHtml, links and screenshot",
        )?)?;
        if formats.is_empty() {
            return Err(InvalidField {
                name: "formats",
                expected: "a list of markdown, html, rawHtml, links and screenshot",
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
    fn without_the_browser_a_screenshot_or_a_wait_is_refused_by_name() {
        for (body, named) in [
            (
                json!({"url": "https://a.example/", "formats": ["screenshot"]}),
                "format \"screenshot\"",
            ),
            (
                json!({"url": "https://a.example/", "formats": [{"type": "screenshot", "fullPage": true}]}),
                "format \"screenshot@fullPage\"",
            ),
            (
                json!({"url": "https://a.example/", "waitFor": 300}),
                "waitFor: 300",
            ),
        ] {
            let ask = ScrapeAsk::read(&fields(body.clone())).unwrap();
            assert!(needs_browser(&ask, true).is_ok(), "{body}");
            match needs_browser(&ask, false) {
                Err(Refusal::Own(own)) => {
                    let message = own.to_string();
                    assert!(
                        message.contains(named) && message.contains("BROWSER is off"),
                        "{message}"
                    );
                }
                other => panic!("{body}: {other:?}"),
            }
        }
        let plain = ScrapeAsk::read(&fields(json!({"url": "https://a.example/"}))).unwrap();
        assert!(needs_browser(&plain, false).is_ok());
    }

    #[test]
    fn a_screenshot_is_a_png_data_url() {
        assert_eq!(data_url(b"\x89PNG"), "data:image/png;base64,iVBORw==");
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
