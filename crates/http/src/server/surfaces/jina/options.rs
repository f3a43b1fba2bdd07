//! The headers that change a Jina answer, read once for both APIs: honoured, or refused by name
//! (never ignored).
//!
//! Honoured: `Accept` (`application/json` for Jina's envelope; `text/event-stream`, Jina's
//! streaming, is refused), `X-Return-Format` (`markdown` — the default —, `text`, `html`: the page
//! as it came), `X-Timeout` (seconds, 1–180: the budget, never past `REQUEST_BUDGET_SECONDS`),
//! `X-No-Cache` (the reader's: the page is read afresh and replaces the cached one),
//! `X-With-Links-Summary` and `X-With-Images-Summary` (the links and images of the content kept,
//! listed after it), `X-Retain-Images: none` (markdown images dropped), `X-Engine: direct` (the
//! gateway's own reader, never its browser) and `X-Engine: browser` (rendered first by the local
//! browser; refused by the read where none runs), and for the search `X-Respond-With: no-content` (hits without reading
//! them) and `X-Site` (one domain the hits must be on). Refused by name: every other Jina option
//! ([`NOT_HONOURED`]: selectors, cookies, proxies, waiting, generated alt text, token budgets, the
//! markdown style switches), the formats that need a screenshot (`screenshot`, `pageshot`). Headers that are not Jina's (`X-Forwarded-For`, …) are
//! none of this module's business.

use std::time::Duration;

use axum::http::{header, HeaderMap};

use super::{JinaError, JinaOwn};
use crate::server::kit::refusal::Refusal;
use gateway_core::request::ReadFormat;
use gateway_engine::read::{Freshness, Render};

/// Jina's options this gateway does not honour: a request carrying one is refused.
const NOT_HONOURED: &[&str] = &[
    "x-target-selector",
    "x-remove-selector",
    "x-wait-for-selector",
    "x-with-generated-alt",
    "x-set-cookie",
    "x-proxy-url",
    "x-proxy",
    "x-locale",
    "x-with-iframe",
    "x-with-shadow-dom",
    "x-token-budget",
    "x-cache-tolerance",
    "x-base",
    "x-keep-img-data-url",
    "x-robots-txt",
    "x-no-gfm",
    "x-user-agent",
    "x-referer",
    "x-with-favicons",
    "x-md-heading-style",
    "x-md-hr",
    "x-md-bullet-list-marker",
    "x-md-em-delimiter",
    "x-md-strong-delimiter",
    "x-md-link-style",
    "x-md-link-reference-style",
];

/// The most `X-Timeout` Jina takes, in seconds.
const MAX_TIMEOUT_SECONDS: u64 = 180;

/// Which API the options are read for (a few belong to one only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Api {
    /// `/r/`.
    Read,
    /// `/s/`.
    Search,
}

/// The answer's body: Jina's text, or its JSON envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Envelope {
    Text,
    Json,
}

/// `X-Return-Format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReturnFormat {
    Markdown,
    Text,
    Html,
}

impl ReturnFormat {
    /// The reader's format: Jina's `html` is the page as it came.
    pub(super) fn read_format(self) -> ReadFormat {
        match self {
            Self::Markdown => ReadFormat::Markdown,
            Self::Text => ReadFormat::Text,
            Self::Html => ReadFormat::RawHtml,
        }
    }

    /// The label before the content in Jina's text answer.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Markdown => "Markdown Content",
            Self::Text | Self::Html => "Content",
        }
    }
}

/// `X-Retain-Images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Images {
    /// As the reader kept them (Jina's `all`, the default).
    Keep,
    /// Markdown images dropped (`none`).
    Drop,
}

/// `X-Respond-With` on the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Respond {
    /// Each hit read.
    Content,
    /// The hits only (`no-content`).
    NoContent,
}

/// What a request's headers ask of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Options {
    pub(super) envelope: Envelope,
    pub(super) format: ReturnFormat,
    pub(super) timeout: Option<Duration>,
    pub(super) freshness: Freshness,
    pub(super) links_summary: bool,
    pub(super) images_summary: bool,
    pub(super) images: Images,
    pub(super) respond: Respond,
    /// `X-Site`: the one domain the hits must be on.
    pub(super) site: Option<String>,
    /// `X-Gateway-Explain`.
    pub(super) explain: bool,
    /// `X-Engine`: `browser` renders the page in the local browser first (refused by the read
    /// when none runs), `direct` never renders it, none lets the gateway decide.
    pub(super) render: Render,
}

impl Options {
    /// The options of `headers` for `api`, or the first one it cannot honour.
    pub(super) fn read(headers: &HeaderMap, api: Api) -> Result<Self, JinaError> {
        if let Some(name) = NOT_HONOURED
            .iter()
            .find(|name| headers.contains_key(**name))
        {
            return Err(unsupported(&header_name(name)));
        }
        let value = |name: &'static str| -> Result<Option<String>, JinaError> {
            match headers.get(name) {
                None => Ok(None),
                Some(v) => v
                    .to_str()
                    .map(|v| Some(v.trim().to_ascii_lowercase()))
                    .map_err(|_| invalid(name, "visible ASCII")),
            }
        };
        let accept = value(header::ACCEPT.as_str())?.unwrap_or_default();
        if accept.contains("text/event-stream") {
            return Err(unsupported("Accept: text/event-stream (streaming)"));
        }
        let envelope = if accept.contains("application/json") {
            Envelope::Json
        } else {
            Envelope::Text
        };
        let format = match value("x-return-format")?.as_deref() {
            None | Some("" | "markdown") => ReturnFormat::Markdown,
            Some("text") => ReturnFormat::Text,
            Some("html") => ReturnFormat::Html,
            Some(other @ ("screenshot" | "pageshot")) => {
                return Err(unsupported(&format!(
                    "X-Return-Format: {other} (no browser renders pages here)"
                )))
            }
            Some(_) => return Err(invalid("X-Return-Format", "markdown, text or html")),
        };
        let timeout = match value("x-timeout")? {
            None => None,
            Some(raw) => Some(
                raw.parse::<u64>()
                    .ok()
                    .filter(|s| (1..=MAX_TIMEOUT_SECONDS).contains(s))
                    .map(Duration::from_secs)
                    .ok_or(invalid("X-Timeout", "whole seconds from 1 to 180"))?,
            ),
        };
        let freshness = if flag(value("x-no-cache")?, "X-No-Cache")? {
            if api == Api::Search {
                return Err(unsupported("X-No-Cache on the search (it is the reader's)"));
            }
            Freshness::Fresh
        } else {
            Freshness::Cached
        };
        let links_summary = flag(value("x-with-links-summary")?, "X-With-Links-Summary")?;
        let images_summary = flag(value("x-with-images-summary")?, "X-With-Images-Summary")?;
        let images = match value("x-retain-images")?.as_deref() {
            None | Some("" | "all") => Images::Keep,
            Some("none") if format == ReturnFormat::Markdown => Images::Drop,
            Some("none") => {
                return Err(unsupported(
                    "X-Retain-Images: none with a format other than markdown",
                ))
            }
            Some(_) => return Err(invalid("X-Retain-Images", "all or none")),
        };
        if format == ReturnFormat::Html && (links_summary || images_summary) {
            return Err(unsupported("a links or images summary after html"));
        }
        let render = match value("x-engine")?.as_deref() {
            None | Some("") => Render::Auto,
            Some("direct") => Render::Never,
            Some("browser") => Render::Always,
            Some(_) => return Err(invalid("X-Engine", "direct or browser")),
        };
        let respond = match (api, value("x-respond-with")?.as_deref()) {
            (_, None) => Respond::Content,
            (Api::Search, Some("no-content")) => Respond::NoContent,
            (Api::Search, Some(_)) => return Err(invalid("X-Respond-With", "no-content")),
            (Api::Read, Some(_)) => return Err(unsupported("X-Respond-With on the reader")),
        };
        let site = match (api, value("x-site")?) {
            (_, None) => None,
            (Api::Search, Some(site)) if !site.is_empty() => Some(site),
            (Api::Search, Some(_)) => return Err(invalid("X-Site", "a domain")),
            (Api::Read, Some(_)) => return Err(unsupported("X-Site on the reader")),
        };
        let explain = flag(value("x-gateway-explain")?, "X-Gateway-Explain")?;
        if explain && envelope == Envelope::Text {
            return Err(unsupported(
                "X-Gateway-Explain with a text answer (ask with Accept: application/json)",
            ));
        }
        Ok(Self {
            envelope,
            format,
            timeout,
            freshness,
            links_summary,
            images_summary,
            images,
            respond,
            site,
            explain,
            render,
        })
    }
}

/// A yes/no header: `true`/`1`/`yes`, or `false`/`0`/`no`/empty.
fn flag(value: Option<String>, name: &'static str) -> Result<bool, JinaError> {
    match value.as_deref() {
        None | Some("" | "false" | "0" | "no") => Ok(false),
        Some("true" | "1" | "yes") => Ok(true),
        Some(_) => Err(invalid(name, "true or false")),
    }
}

fn unsupported(what: &str) -> JinaError {
    Refusal::Own(JinaOwn::Unsupported(what.to_owned()))
}

fn invalid(name: &'static str, expected: &'static str) -> JinaError {
    Refusal::Own(JinaOwn::Invalid { name, expected })
}

/// `x-target-selector` as Jina writes it: `X-Target-Selector`.
fn header_name(lower: &str) -> String {
    lower
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// `markdown` without its images (`![alt](url)`, also inside a link): Jina's
/// `X-Retain-Images: none`. One pass over the text; anything that is not a whole image stays.
pub(super) fn without_images(markdown: &str) -> String {
    let mut kept = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(start) = rest.find("![") {
        kept.push_str(&rest[..start]);
        let image = &rest[start..];
        match image_len(image) {
            Some(len) => rest = &image[len..],
            None => {
                kept.push_str("![");
                rest = &image[2..];
            }
        }
    }
    kept.push_str(rest);
    kept
}

/// The length of the image at the start of `text` (`![alt](url)`), if one is whole there: the
/// alt text on one line, the target without spaces or a title in quotes.
fn image_len(text: &str) -> Option<usize> {
    let alt_end = text[2..].find(']')? + 2;
    if text[2..alt_end].contains('\n') || !text[alt_end..].starts_with("](") {
        return None;
    }
    let target_start = alt_end + 2;
    let target_end = text[target_start..].find(')')? + target_start;
    if text[target_start..target_end].contains('\n') {
        return None;
    }
    Some(target_end + 1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn no_headers_is_jinas_default_markdown_text() {
        let options = Options::read(&HeaderMap::new(), Api::Read).unwrap();
        assert_eq!(options.envelope, Envelope::Text);
        assert_eq!(options.format, ReturnFormat::Markdown);
        assert_eq!(options.freshness, Freshness::Cached);
        assert_eq!(options.respond, Respond::Content);
        assert!(!options.links_summary && !options.explain);
    }

    #[test]
    fn the_headers_it_honours_are_read() {
        let options = Options::read(
            &headers(&[
                ("accept", "application/json"),
                ("x-return-format", "text"),
                ("x-timeout", "7"),
                ("x-no-cache", "true"),
                ("x-with-links-summary", "true"),
                ("x-with-images-summary", "1"),
                ("x-engine", "direct"),
                ("x-gateway-explain", "1"),
                ("x-forwarded-for", "10.0.0.1"),
            ]),
            Api::Read,
        )
        .unwrap();
        assert_eq!(options.envelope, Envelope::Json);
        assert_eq!(options.format.read_format(), ReadFormat::Text);
        assert_eq!(options.timeout, Some(Duration::from_secs(7)));
        assert_eq!(options.freshness, Freshness::Fresh);
        assert!(options.links_summary && options.images_summary && options.explain);
        assert_eq!(options.render, Render::Never);
        let search = Options::read(
            &headers(&[("x-respond-with", "no-content"), ("x-site", "Docs.RS")]),
            Api::Search,
        )
        .unwrap();
        assert_eq!(search.respond, Respond::NoContent);
        assert_eq!(search.site.as_deref(), Some("docs.rs"));
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (pairs, api, named) in [
            (
                vec![("x-target-selector", "#main")],
                Api::Read,
                "X-Target-Selector",
            ),
            (vec![("x-set-cookie", "a=b")], Api::Read, "X-Set-Cookie"),
            (vec![("x-engine", "readerlm")], Api::Read, "X-Engine"),
            (
                vec![("x-return-format", "screenshot")],
                Api::Read,
                "screenshot",
            ),
            (
                vec![("x-return-format", "pdf")],
                Api::Read,
                "X-Return-Format",
            ),
            (vec![("x-timeout", "0")], Api::Read, "X-Timeout"),
            (vec![("x-timeout", "181")], Api::Read, "X-Timeout"),
            (vec![("x-no-cache", "maybe")], Api::Read, "X-No-Cache"),
            (vec![("x-no-cache", "true")], Api::Search, "X-No-Cache"),
            (
                vec![("accept", "text/event-stream")],
                Api::Read,
                "streaming",
            ),
            (
                vec![("x-respond-with", "no-content")],
                Api::Read,
                "X-Respond-With",
            ),
            (vec![("x-site", "a.example")], Api::Read, "X-Site"),
            (
                vec![
                    ("x-return-format", "html"),
                    ("x-with-links-summary", "true"),
                ],
                Api::Read,
                "summary",
            ),
            (
                vec![("x-return-format", "text"), ("x-retain-images", "none")],
                Api::Read,
                "X-Retain-Images",
            ),
            (
                vec![("x-gateway-explain", "1")],
                Api::Read,
                "X-Gateway-Explain",
            ),
        ] {
            let err = Options::read(&headers(&pairs), api).unwrap_err();
            assert_eq!(err.status().as_u16(), 400, "{pairs:?}");
            assert!(
                err.message().contains(named),
                "{pairs:?}: {}",
                err.message()
            );
        }
    }

    #[test]
    fn images_are_dropped_and_everything_else_stays() {
        assert_eq!(
            without_images("a ![logo](https://a.example/l.png) b [![x](i.png)](https://a.example)"),
            "a  b [](https://a.example)"
        );
        assert_eq!(without_images("![no end"), "![no end");
        assert_eq!(without_images("![a\nb](x)"), "![a\nb](x)");
        assert_eq!(without_images("![a](b c\n)"), "![a](b c\n)");
        assert_eq!(without_images("ünïcode ![é](ü) ok"), "ünïcode  ok");
    }
}
