//! `GET /r/<url>` and `POST /r/` with `{"url"}`: one page read, in Jina Reader's answer.
//!
//! The URL is the rest of the path as the client sent it (`/r/https://a.example/p?x=1`: the query
//! string is the page's), or percent-encoded as one segment (`/r/https%3A%2F%2Fa.example%2Fp`); a
//! path whose `//` a proxy folded (`https:/a.example`) is read as meant. The body of a POST is
//! `{"url"}` and nothing else.
//!
//! Text answer (the default, Jina's): `Title:`, `URL Source:`, `Published Time:` when the page
//! says, then `Markdown Content:` (or `Content:` for `text` and `html`, whose answer is the
//! content alone, as Jina's) and the content; the summaries asked for after it (`Links/Buttons:`,
//! `Images:`). JSON answer: `{"code": 200, "status": 20000, "data": {"title", "description",
//! "url", "content", "publishedTime"?, "links"?, "images"?, "usage": {"tokens"}}}` — `usage` the
//! content's tokens as the gateway's tokenizer counts them (`TOKENIZER_ENCODING`; Jina bills in
//! them, and clients such as node-DeepResearch add them up), `links` and `images` as Jina's
//! objects (name → URL; the gateway keeps no link text, so a link is named by its URL). A page
//! that could not be read is an error: 422 `AssertionFailureError` naming why (an HTTP error of
//! the page, a wall, a timeout), 451 `SecurityCompromiseError` for an address the fence refuses.

use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use tokio::time::Instant;
use url::Url;

use super::options::{self, Api, Envelope, Images, Options, ReturnFormat};
use super::{JinaError, JinaOwn};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field};
use crate::server::kit::refusal::{json_response, Refusal};
use crate::server::kit::{explain, read_call, search_read};
use gateway_engine::read::{Depth, Render};
use gateway_upstreams::reader::Document;

/// `GET /r/<url>`.
pub(super) async fn in_path(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let path = uri.path().strip_prefix("/r/").unwrap_or("");
    let asked = target(path, uri.query());
    answer(&gateway, &admitted, &headers, asked).await
}

/// `POST /r/` with `{"url"}`.
pub(super) async fn posted(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let asked = body
        .map_err(JinaError::from)
        .and_then(|body| decode_posted(&body));
    answer(&gateway, &admitted, &headers, asked).await
}

/// A POST body: `{"url"}`, nothing else.
pub(super) fn decode_posted(body: &[u8]) -> Result<Url, JinaError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    if let Some(name) = fields.keys().find(|name| name.as_str() != "url") {
        return Err(Refusal::Own(JinaOwn::Unsupported(format!(
            "the field {name}"
        ))));
    }
    let url: String = field(&fields, "url", "an http or https URL")?.unwrap_or_default();
    web_url(&url)
}

/// The page a `/r/` path names, with the query string that belongs to it.
pub(super) fn target(path: &str, query: Option<&str>) -> Result<Url, JinaError> {
    let mut raw = if path.contains("://") || path.contains(":/") {
        path.to_owned()
    } else {
        percent_encoding::percent_decode_str(path)
            .decode_utf8()
            .map_err(|_| Refusal::Own(JinaOwn::NoUrl))?
            .into_owned()
    };
    for scheme in ["http:", "https:"] {
        if let Some(rest) = raw.strip_prefix(scheme) {
            if !rest.starts_with("//") {
                // A proxy folded the `//` after the scheme into one slash.
                raw = format!("{scheme}//{}", rest.trim_start_matches('/'));
            }
            break;
        }
    }
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        raw.push('?');
        raw.push_str(query);
    }
    web_url(&raw)
}

/// `raw` when it is an absolute http or https URL with a host.
fn web_url(raw: &str) -> Result<Url, JinaError> {
    Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or(Refusal::Own(JinaOwn::NoUrl))
}

/// The read, and its answer in the shape the headers ask for.
async fn answer(
    gateway: &Gateway,
    admitted: &Admitted,
    headers: &HeaderMap,
    asked: Result<Url, JinaError>,
) -> Response {
    let started = Instant::now();
    let checked = Options::read(headers, Api::Read).and_then(|options| Ok((options, asked?)));
    let (options, url) = match checked {
        Ok(checked) => checked,
        Err(err) => {
            tracing::info!(error = err.code(), "jina read refused");
            return err.into_response();
        }
    };
    if options.render == Render::Always && !gateway.renders() {
        let err: JinaError = Refusal::Own(JinaOwn::Unsupported(
            "X-Engine: browser (no browser renders pages here: BROWSER is off; use direct)"
                .to_owned(),
        ));
        tracing::info!(error = err.code(), "jina read refused");
        return err.into_response();
    }
    let budget = search_read::budget_left(gateway, started, options.timeout);
    let asked = read_call::Asking {
        depth: Depth::Basic,
        freshness: options.freshness,
        render: options.render,
        wait_for: None,
    };
    let read = read_call::run_asking(
        gateway,
        admitted,
        url,
        options.format.read_format(),
        asked,
        budget,
    )
    .await;
    let done = match &read.result {
        Ok(done) => done,
        Err(failed) => return JinaError::Own(JinaOwn::unread(failed.failure)).into_response(),
    };
    let document = &done.document;
    match options.envelope {
        Envelope::Text => text_response(page_text(document, &options)),
        Envelope::Json => {
            let mut data = [page_data(document, &options)];
            add_usage(gateway, &mut data).await;
            let [data] = data;
            let mut body = json!({"code": 200, "status": 20000, "data": data});
            if options.explain {
                body["gateway"] = explain::read_object(&read, admitted);
            }
            json_response(StatusCode::OK, body.to_string())
        }
    }
}

/// The content as asked: images dropped with `X-Retain-Images: none`.
pub(super) fn content(document: &Document, options: &Options) -> String {
    match options.images {
        Images::Keep => document.content.clone(),
        Images::Drop => options::without_images(&document.content),
    }
}

/// Jina's text answer for one page.
fn page_text(document: &Document, options: &Options) -> String {
    let content = content(document, options);
    let mut text = match options.format {
        ReturnFormat::Markdown => {
            let mut head = format!(
                "Title: {}\n\nURL Source: {}\n\n",
                document.title.as_deref().unwrap_or(""),
                document.final_url
            );
            if let Some(published) = &document.published {
                head.push_str(&format!("Published Time: {published}\n\n"));
            }
            head.push_str(options.format.label());
            head.push_str(":\n");
            head.push_str(&content);
            head
        }
        ReturnFormat::Text | ReturnFormat::Html => content,
    };
    summaries(&mut text, document, options);
    text
}

/// The links and images summaries asked for, after the content.
pub(super) fn summaries(text: &mut String, document: &Document, options: &Options) {
    if options.images_summary && !document.images.is_empty() {
        text.push_str("\n\nImages:\n");
        for (i, image) in document.images.iter().enumerate() {
            text.push_str(&format!("- ![Image {}]({image})\n", i + 1));
        }
    }
    if options.links_summary && !document.links.is_empty() {
        text.push_str("\n\nLinks/Buttons:\n");
        for link in &document.links {
            text.push_str(&format!("- [{link}]({link})\n"));
        }
    }
}

/// Adds Jina's `usage: {"tokens"}` to each `data` object — the tokens of its `content`, or of its
/// title and description when it has none — counted on the blocking pool (a long page takes
/// milliseconds); answers their sum, Jina's `meta.usage.tokens` of a search.
pub(super) async fn add_usage(gateway: &Gateway, data: &mut [Map<String, Value>]) -> usize {
    let texts: Vec<String> = data
        .iter()
        .map(|object| {
            let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or("");
            match object.get("content").and_then(Value::as_str) {
                Some(content) => content.to_owned(),
                None => format!("{}\n{}", field("title"), field("description")),
            }
        })
        .collect();
    let counter = gateway.passages().counter();
    let counts = tokio::task::spawn_blocking(move || {
        texts
            .iter()
            .map(|text| counter.count(text))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for (object, tokens) in data.iter_mut().zip(&counts) {
        object.insert("usage".into(), json!({ "tokens": tokens }));
    }
    counts.iter().sum()
}

/// Jina's `data` object for one page.
pub(super) fn page_data(document: &Document, options: &Options) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert(
        "title".into(),
        document.title.clone().unwrap_or_default().into(),
    );
    data.insert("description".into(), "".into());
    data.insert("url".into(), document.final_url.clone().into());
    data.insert("content".into(), content(document, options).into());
    if let Some(published) = &document.published {
        data.insert("publishedTime".into(), published.clone().into());
    }
    if options.links_summary {
        let links: Map<String, Value> = document
            .links
            .iter()
            .map(|link| (link.clone(), Value::from(link.as_str())))
            .collect();
        data.insert("links".into(), links.into());
    }
    if options.images_summary {
        let images: Map<String, Value> = document
            .images
            .iter()
            .enumerate()
            .map(|(i, image)| (format!("Image {}", i + 1), Value::from(image.as_str())))
            .collect();
        data.insert("images".into(), images.into());
    }
    data
}

/// A text answer.
pub(super) fn text_response(text: String) -> Response {
    let mut response = (StatusCode::OK, text).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;

    #[test]
    fn the_url_is_the_rest_of_the_path_with_its_query() {
        for (path, query, url) in [
            (
                "https://a.example/p",
                Some("x=1&y=2"),
                "https://a.example/p?x=1&y=2",
            ),
            ("https%3A%2F%2Fa.example%2Fp", None, "https://a.example/p"),
            ("https:/a.example/p", None, "https://a.example/p"),
            ("http://a.example", Some(""), "http://a.example/"),
        ] {
            assert_eq!(target(path, query).unwrap().as_str(), url, "{path}");
        }
        for path in [
            "",
            "a.example/p",
            "ftp://a.example/",
            "file:///etc/passwd",
            "%FF",
        ] {
            assert_eq!(
                target(path, None).unwrap_err().code(),
                "invalid_url",
                "{path}"
            );
        }
    }

    #[test]
    fn a_posted_body_is_the_url_and_nothing_else() {
        assert_eq!(
            decode_posted(br#"{"url": "https://a.example/"}"#)
                .unwrap()
                .as_str(),
            "https://a.example/"
        );
        let err = decode_posted(br##"{"url": "https://a.example/", "targetSelector": "#m"}"##)
            .unwrap_err();
        assert!(
            err.message().contains("targetSelector"),
            "{}",
            err.message()
        );
        assert_eq!(decode_posted(b"[]").unwrap_err().code(), "not_json");
    }

    fn document() -> Document {
        Document {
            url: "https://a.example/p".into(),
            final_url: "https://a.example/p".into(),
            title: Some("A page".into()),
            content: "Text ![logo](https://a.example/l.png) more.".into(),
            format: ReadFormat::Markdown,
            published: Some("2026-11-30".into()),
            language: None,
            author: None,
            site_name: None,
            images: vec!["https://a.example/l.png".into()],
            links: vec!["https://a.example/next".into()],
            content_type: "text/html".into(),
            bytes_read: 100,
        }
    }

    #[test]
    fn the_text_answer_is_jinas() {
        let options = Options::read(&HeaderMap::new(), Api::Read).unwrap();
        assert_eq!(
            page_text(&document(), &options),
            "Title: A page\n\nURL Source: https://a.example/p\n\nPublished Time: 2026-11-30\n\n\
             Markdown Content:\nText ![logo](https://a.example/l.png) more."
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-retain-images", HeaderValue::from_static("none"));
        headers.insert("x-with-links-summary", HeaderValue::from_static("true"));
        headers.insert("x-with-images-summary", HeaderValue::from_static("true"));
        let options = Options::read(&headers, Api::Read).unwrap();
        let text = page_text(&document(), &options);
        assert!(text.contains("Markdown Content:\nText  more."), "{text}");
        assert!(text.ends_with(
            "Images:\n- ![Image 1](https://a.example/l.png)\n\n\nLinks/Buttons:\n- [https://a.example/next](https://a.example/next)\n"
        ), "{text}");
        let data = page_data(&document(), &options);
        assert_eq!(
            data["links"]["https://a.example/next"],
            "https://a.example/next"
        );
        assert_eq!(data["images"]["Image 1"], "https://a.example/l.png");
        assert_eq!(data["publishedTime"], "2026-11-30");
    }
}
