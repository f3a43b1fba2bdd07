//! `GET /s/<query>` (or `/s/?q=…`) and `POST /s/` with `{"q"}`: a search through the gateway's
//! decisions, each hit read within the request's budget, in Jina's search answer.
//!
//! Parameters (query string or body): `q`; `num` (1–20, default 5, Jina's); `page` (1–10); `hl`
//! (a language, `en`) with `gl` (a country, `us`): SearXNG's `en-US`. Any other is refused by name. With `X-Respond-With: no-content` the hits are listed, not read; with
//! `X-Site` only hits on that domain are kept (SearXNG is asked `site:` through the domain filter).
//!
//! Text answer, per hit `i`: `[i] Title:`, `[i] URL Source:`, `[i] Description:` (the snippet),
//! `[i] Published Time:` when known, then `[i] Markdown Content:` and the page (unless
//! `no-content`); a blank line between hits. JSON: `{"code": 200, "status": 20000, "data": [{"title",
//! "url", "description", "content", "date"?, "warning"?, "usage": {"tokens"}}], "meta": {"usage":
//! {"tokens"}}}` — tokens as the reader's answer counts them, their sum in `meta`; a hit whose page could not be read
//! keeps an empty `content` and a `warning` saying why, as Jina's does for a target that failed.
//! No hit at all is Jina's 422 `AssertionFailureError` "No search results available".

use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::options::{Api, Envelope, Options, Respond};
use super::read::{add_usage, content, page_data, summaries, text_response};
use super::{JinaError, JinaOwn};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::document::Hit;
use crate::server::kit::gate::{Admitted, KEY_PARAMETER};
use crate::server::kit::json_fields::{self, field, number_in};
use crate::server::kit::refusal::{json_response, Refusal};
use crate::server::kit::{explain, read_call, search_call, search_read};
use gateway_core::request::{DomainFilter, SearchInput, SearchRequest, Surface};
use gateway_engine::read::PageRead;

/// Jina's default and most hits.
const DEFAULT_NUM: u32 = 5;
const MAX_NUM: u32 = 20;
const MAX_PAGE: u32 = 10;

/// What the search was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ask {
    pub(super) query: String,
    pub(super) num: usize,
    page: Option<u32>,
    /// `hl` with `gl`, as SearXNG's language.
    language: Option<String>,
}

/// `GET /s/<query>` or `/s/?q=`.
pub(super) async fn in_path(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let asked = decode_query(uri.path(), uri.query());
    answer(&gateway, &admitted, &headers, asked).await
}

/// `POST /s/` with `{"q", "num", "page"}`.
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

/// A POST body.
pub(super) fn decode_posted(body: &[u8]) -> Result<Ask, JinaError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    if let Some(name) = fields
        .keys()
        .find(|name| !matches!(name.as_str(), "q" | "num" | "page" | "hl" | "gl"))
    {
        return Err(unsupported(name));
    }
    let query: String = field(&fields, "q", "a string")?.unwrap_or_default();
    let num = number_in(&fields, "num", 1..=MAX_NUM, "an integer from 1 to 20")?;
    let page = number_in(&fields, "page", 1..=MAX_PAGE, "an integer from 1 to 10")?;
    let hl: Option<String> = field(&fields, "hl", "a language code such as en")?;
    let gl: Option<String> = field(&fields, "gl", "a country code such as us")?;
    let language = match (hl, gl) {
        (Some(hl), Some(gl)) if gl.trim().len() == 2 => Some(format!(
            "{}-{}",
            hl.trim().to_ascii_lowercase(),
            gl.trim().to_ascii_uppercase()
        )),
        (Some(hl), _) => Some(hl.trim().to_ascii_lowercase()),
        (None, Some(_)) => {
            return Err(Refusal::Own(JinaOwn::Unsupported(
                "gl without hl (give the language too)".to_owned(),
            )))
        }
        (None, None) => None,
    };
    Ok(Ask {
        query,
        num: num.unwrap_or(DEFAULT_NUM) as usize,
        page,
        language,
    })
}

/// The query in the path (`/s/<query>`, percent-decoded) or as `q`, with `num` and `page`.
fn decode_query(path: &str, query: Option<&str>) -> Result<Ask, JinaError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.unwrap_or("")).map_err(|_| {
            Refusal::Own(JinaOwn::Invalid {
                name: "the query string",
                expected: "name=value pairs",
            })
        })?;
    let mut fields = Map::new();
    for (name, value) in pairs {
        let value = match name.as_str() {
            "q" | "hl" | "gl" => Value::from(value),
            "num" | "page" => value
                .trim()
                .parse::<u64>()
                .map(Value::from)
                .unwrap_or(Value::from(value)),
            KEY_PARAMETER => continue,
            _ => return Err(unsupported(&name)),
        };
        if fields.insert(name.clone(), value).is_some() {
            return Err(Refusal::Own(JinaOwn::Invalid {
                name: "the query string",
                expected: "each parameter once",
            }));
        }
    }
    let in_path = path
        .strip_prefix("/s")
        .unwrap_or("")
        .trim_start_matches('/');
    if !in_path.is_empty() {
        let decoded = percent_encoding::percent_decode_str(in_path)
            .decode_utf8()
            .map_err(|_| {
                Refusal::Own(JinaOwn::Invalid {
                    name: "the query in the path",
                    expected: "percent-encoded UTF-8",
                })
            })?;
        fields.insert("q".into(), Value::from(decoded.into_owned()));
    }
    decode_posted(Value::Object(fields).to_string().as_bytes())
}

fn unsupported(name: &str) -> JinaError {
    Refusal::Own(JinaOwn::Unsupported(format!("the parameter {name}")))
}

/// The search, its hits read unless `no-content`, the answer in the shape the headers ask for.
async fn answer(
    gateway: &Gateway,
    admitted: &Admitted,
    headers: &HeaderMap,
    asked: Result<Ask, JinaError>,
) -> Response {
    let started = Instant::now();
    let max_query_bytes = gateway.server().max_query_bytes;
    let checked = Options::read(headers, Api::Search).and_then(|options| {
        let ask = asked?;
        let domains = match &options.site {
            None => DomainFilter::default(),
            Some(site) => DomainFilter::new(&[site.as_str()], &[]).map_err(|_| {
                Refusal::Own(JinaOwn::Invalid {
                    name: "X-Site",
                    expected: "a domain",
                })
            })?,
        };
        let input = SearchInput {
            query: ask.query.clone(),
            pageno: ask.page,
            language: ask.language.clone(),
            domains,
            ..SearchInput::default()
        };
        Ok((options, SearchRequest::new(input, max_query_bytes)?, ask))
    });
    let (options, req, ask) = match checked {
        Ok(checked) => checked,
        Err(err) => {
            search_call::log_refused(Surface::Jina, err.code());
            return err.into_response();
        }
    };
    let (served, found) = match search_call::found(gateway, Surface::Jina, req, admitted).await {
        Ok(answer) => answer,
        Err(unanswered) => return JinaError::from(unanswered).into_response(),
    };
    let hits: Vec<Hit> = found.hits.into_iter().take(ask.num).collect();
    if hits.is_empty() {
        return JinaError::Own(JinaOwn::NoResults).into_response();
    }
    let reads: Vec<Option<PageRead>> = match options.respond {
        Respond::NoContent => hits.iter().map(|_| None).collect(),
        Respond::Content => {
            let budget = search_read::budget_left(gateway, started, options.timeout);
            search_read::read_hits(
                gateway,
                admitted,
                hits.iter().map(|hit| hit.url.as_str()),
                options.format.read_format(),
                budget,
            )
            .await
        }
    };
    let mut response = match options.envelope {
        Envelope::Text => text_response(hits_text(&hits, &reads, &options)),
        Envelope::Json => {
            let mut data: Vec<Map<String, Value>> = hits
                .iter()
                .zip(&reads)
                .map(|(hit, read)| hit_data(hit, read.as_ref(), &options))
                .collect();
            let tokens = add_usage(gateway, &mut data).await;
            let mut body = json!({"code": 200, "status": 20000, "data": data,
                "meta": {"usage": {"tokens": tokens}}});
            if options.explain {
                body["gateway"] = explain::object(&served, admitted);
            }
            json_response(StatusCode::OK, body.to_string())
        }
    };
    search_call::set_served_headers(response.headers_mut(), &served);
    response
}

/// One hit in Jina's JSON.
fn hit_data(hit: &Hit, read: Option<&PageRead>, options: &Options) -> Map<String, Value> {
    let mut data = match read.map(|read| &read.result) {
        Some(Ok(done)) => page_data(&done.document, options),
        _ => Map::new(),
    };
    data.insert("title".into(), Value::from(hit.title.as_str()));
    data.insert("url".into(), Value::from(hit.url.as_str()));
    data.insert("description".into(), Value::from(hit.content.as_str()));
    if let Some(date) = &hit.published_date {
        data.insert("date".into(), Value::from(date.as_str()));
    }
    match (options.respond, read.map(|read| &read.result)) {
        (Respond::NoContent, _) | (_, Some(Ok(_))) => {}
        (Respond::Content, Some(Err(failed))) => {
            data.insert("content".into(), "".into());
            data.insert(
                "warning".into(),
                read_call::unread_reason(failed.failure).into(),
            );
        }
        (Respond::Content, None) => {
            data.insert("content".into(), "".into());
            data.insert(
                "warning".into(),
                "the hit's URL is not one the gateway reads".into(),
            );
        }
    }
    data
}

/// Jina's text answer for the hits.
fn hits_text(hits: &[Hit], reads: &[Option<PageRead>], options: &Options) -> String {
    let mut text = String::new();
    for (i, (hit, read)) in hits.iter().zip(reads).enumerate() {
        let n = i + 1;
        if i > 0 {
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "[{n}] Title: {}\n[{n}] URL Source: {}\n[{n}] Description: {}\n",
            hit.title, hit.url, hit.content
        ));
        if let Some(date) = &hit.published_date {
            text.push_str(&format!("[{n}] Published Time: {date}\n"));
        }
        if options.respond == Respond::NoContent {
            continue;
        }
        match read.as_ref().map(|read| &read.result) {
            Some(Ok(done)) => {
                text.push_str(&format!("[{n}] {}:\n", options.format.label()));
                text.push_str(&content(&done.document, options));
                summaries(&mut text, &done.document, options);
            }
            Some(Err(failed)) => text.push_str(&format!(
                "[{n}] Warning: {}\n",
                read_call::unread_reason(failed.failure)
            )),
            None => text.push_str(&format!(
                "[{n}] Warning: the URL is not one the gateway reads\n"
            )),
        }
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_query_comes_from_the_path_or_q() {
        assert_eq!(
            decode_query("/s/rust%20async%20book", None).unwrap(),
            Ask {
                query: "rust async book".into(),
                num: 5,
                page: None,
                language: None,
            }
        );
        let ask = decode_query("/s/", Some("q=tokio+runtime&num=3&page=2&api_key=k")).unwrap();
        assert_eq!(
            (ask.query.as_str(), ask.num, ask.page),
            ("tokio runtime", 3, Some(2))
        );
        assert_eq!(decode_posted(br#"{"q": "x", "num": 20}"#).unwrap().num, 20);
        let localised = decode_query("/s/x", Some("hl=de&gl=ch")).unwrap();
        assert_eq!(localised.language.as_deref(), Some("de-CH"));
    }

    #[test]
    fn a_parameter_it_does_not_take_is_refused_by_name() {
        for (path, query, named) in [
            ("/s/x", Some("gl=us"), "gl without hl"),
            ("/s/x", Some("location=Paris"), "location"),
            ("/s/x", Some("num=0"), "num"),
            ("/s/x", Some("num=21"), "num"),
            ("/s/x", Some("num=many"), "num"),
            ("/s/x", Some("page=11"), "page"),
            ("/s/x", Some("q=a&q=b"), "once"),
        ] {
            let err = decode_query(path, query).unwrap_err();
            assert_eq!(err.status().as_u16(), 400, "{query:?}");
            assert!(
                err.message().contains(named),
                "{query:?}: {}",
                err.message()
            );
        }
        let err = decode_posted(br#"{"q": "x", "location": "Paris"}"#).unwrap_err();
        assert!(err.message().contains("location"));
    }

    #[test]
    fn hits_without_content_are_listed_in_jinas_text() {
        let hits = vec![Hit {
            url: "https://a.example/x".into(),
            title: "X".into(),
            content: "About x.".into(),
            engines: vec!["duckduckgo".into()],
            published_date: None,
        }];
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-respond-with",
            axum::http::HeaderValue::from_static("no-content"),
        );
        let options = Options::read(&headers, Api::Search).unwrap();
        assert_eq!(
            hits_text(&hits, &[None], &options),
            "[1] Title: X\n[1] URL Source: https://a.example/x\n[1] Description: About x.\n"
        );
        let data = hit_data(&hits[0], None, &options);
        assert_eq!(
            Value::Object(data),
            json!({"title": "X", "url": "https://a.example/x", "description": "About x."})
        );
    }
}
