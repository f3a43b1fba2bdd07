//! Open WebUI's "external" engines: `POST /openwebui/search` (its external web search:
//! `WEB_SEARCH_ENGINE=external`, `EXTERNAL_WEB_SEARCH_URL=http://gateway:8080/openwebui/search`)
//! and `POST /openwebui/loader` (its external web loader: `WEB_LOADER_ENGINE=external`,
//! `EXTERNAL_WEB_LOADER_URL=http://gateway:8080/openwebui/loader`), each with the key as
//! `Authorization: Bearer` (`EXTERNAL_WEB_SEARCH_API_KEY`, `EXTERNAL_WEB_LOADER_API_KEY`).
//!
//! Search: body `{"query", "count"}` (`count` 1–100, default 5) → a JSON array of `{"link",
//! "title", "snippet"}`, best first. Loader: body `{"urls": [...]}` (1–50 URLs; Open WebUI sends
//! batches of 20) → a JSON array of `{"page_content", "metadata": {"source", "title",
//! "language", "published"}}`, one per page read (as Markdown, at once, with the gateway's
//! decisions), in the order sent; a page that could not be read is left out and logged, as Open
//! WebUI's own loaders do.
//!
//! End users: Open WebUI forwards who is searching (`X-OpenWebUI-User-Id`, `-Email`, `-Name` —
//! URL-quoted —, `-Role`). With `OPENWEBUI_USER_HEADER_TRUST=true` the request is admitted and
//! charged as that user, a sub-client of the key's client (`crate::clients::end_users`); without
//! it the headers are ignored (anyone could send them).
//!
//! Errors are FastAPI's `{"detail": "…"}` (what Open WebUI's own API answers) with 400, 401, 413,
//! 429 (`Retry-After`), 502 (naming each upstream and its error class, never an upstream's body),
//! 503 (`Retry-After`); Open WebUI logs them and carries on without web results.

use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::clients::end_users::{EndUser, EndUserHeaders};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::json_fields::{self, field, number_in};
use crate::server::kit::read_call::{self, Asked};
use crate::server::kit::refusal::{self, json_response, Door, OwnRefusal, Refusal};
use crate::server::kit::search_call;
use gateway_core::request::{ReadFormat, SearchInput, SearchRequest, Surface};
use gateway_engine::read::Depth;

/// Open WebUI's external web search.
pub(crate) const SEARCH_PATH: &str = "/openwebui/search";
/// Open WebUI's external web loader.
pub(crate) const LOADER_PATH: &str = "/openwebui/loader";

/// `count` when the body has none, and its most.
const DEFAULT_COUNT: u32 = 5;
const MAX_COUNT: u32 = 100;
/// URLs one loader call takes at most.
const MAX_URLS: usize = 50;

/// The routes, behind the gate with this surface's refusals (and its end users, when the
/// operator trusts the user headers).
pub(crate) fn routes(gate: &Gate, user_headers: EndUserHeaders) -> Router<Gateway> {
    let wrong_method = refusal::wrong_method::<OpenWebui>;
    Router::new()
        .route(SEARCH_PATH, post(search).fallback(wrong_method))
        .layer(crate::server::transport::search_span::TRACED)
        .route(LOADER_PATH, post(loader).fallback(wrong_method))
        .layer(gate.layer(OpenWebui { user_headers }))
}

/// FastAPI's error shape, `{"detail": "…"}` (what Open WebUI's own API answers), and Open WebUI's
/// user headers as the end user when the operator trusts them.
#[derive(Debug, Clone, Copy)]
struct OpenWebui {
    user_headers: EndUserHeaders,
}

/// What Open WebUI gets instead of results.
type OpenWebuiError = Refusal<OpenWebui>;

/// `urls` missing, empty or over the limit: the one refusal only this door has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("urls must list 1 to {MAX_URLS} URLs")]
struct BadUrls;

impl OwnRefusal for BadUrls {
    fn code(&self) -> &'static str {
        "invalid_field"
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for OpenWebui {
    type Own = BadUrls;
    const KEY_IN_BODY: bool = false;

    fn body(_refusal: &OpenWebuiError, _status: StatusCode, message: String) -> Value {
        json!({ "detail": message })
    }

    fn end_user(&self, headers: &HeaderMap) -> Option<EndUser> {
        match self.user_headers {
            EndUserHeaders::Trusted => end_user(headers),
            EndUserHeaders::Ignored => None,
        }
    }
}

/// The user Open WebUI's headers name (its display name is URL-quoted).
fn end_user(headers: &HeaderMap) -> Option<EndUser> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let name = text("x-openwebui-user-name")
        .map(|quoted| percent_encoding::percent_decode_str(quoted).decode_utf8_lossy());
    EndUser::new(
        text("x-openwebui-user-id"),
        text("x-openwebui-user-email"),
        name.as_deref(),
        text("x-openwebui-user-role"),
    )
}

/// `POST /openwebui/search`.
async fn search(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let max_query_bytes = gateway.server().max_query_bytes;
    let decoded = body
        .map_err(OpenWebuiError::from)
        .and_then(|body| decode_search(&body, max_query_bytes));
    let (req, count) = match decoded {
        Ok(request) => request,
        Err(err) => {
            search_call::log_refused(Surface::OpenWebui, err.code());
            return err.into_response();
        }
    };
    let (served, found) =
        match search_call::found(&gateway, Surface::OpenWebui, req, &admitted).await {
            Ok(answer) => answer,
            Err(unanswered) => return OpenWebuiError::from(unanswered).into_response(),
        };
    let results: Vec<Value> = found
        .hits
        .into_iter()
        .take(count)
        .map(|hit| json!({"link": hit.url, "title": hit.title, "snippet": hit.content}))
        .collect();
    let mut response = json_response(StatusCode::OK, Value::from(results).to_string());
    search_call::set_served_headers(response.headers_mut(), &served);
    response
}

/// A search body: the search and how many results to answer.
fn decode_search(
    body: &[u8],
    max_query_bytes: usize,
) -> Result<(SearchRequest, usize), OpenWebuiError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    let query: String = field(&fields, "query", "a string")?.unwrap_or_default();
    let count = number_in(&fields, "count", 1..=MAX_COUNT, "an integer from 1 to 100")?
        .unwrap_or(DEFAULT_COUNT);
    let input = SearchInput {
        query,
        ..SearchInput::default()
    };
    Ok((SearchRequest::new(input, max_query_bytes)?, count as usize))
}

/// A body through the search decoder (`loader`: the loader's), for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(loader: bool, body: &[u8]) -> Result<usize, StatusCode> {
    let refused = |err: OpenWebuiError| err.into_response().status();
    if loader {
        decode_urls(body).map(|urls| urls.len()).map_err(refused)
    } else {
        decode_search(body, 2048)
            .map(|(_, count)| count)
            .map_err(refused)
    }
}

/// `POST /openwebui/loader`.
async fn loader(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let urls = match body
        .map_err(OpenWebuiError::from)
        .and_then(|b| decode_urls(&b))
    {
        Ok(urls) => urls,
        Err(err) => {
            tracing::info!(error = err.code(), "load refused");
            return err.into_response();
        }
    };
    let asked: Vec<Asked> = urls.iter().map(|u| Asked::new(u)).collect();
    let budget = gateway.settings().request_budget;
    let reads = read_call::many(
        &gateway,
        &admitted,
        &asked,
        ReadFormat::Markdown,
        Depth::Basic,
        budget,
    )
    .await;
    let documents: Vec<Value> = asked
        .iter()
        .zip(reads)
        .filter_map(|(asked, read)| {
            let done = read?.result.ok()?;
            let page = &done.document;
            let mut metadata = Map::new();
            metadata.insert("source".into(), Value::from(asked.as_sent.as_str()));
            if let Some(title) = &page.title {
                metadata.insert("title".into(), Value::from(title.as_str()));
            }
            if let Some(language) = &page.language {
                metadata.insert("language".into(), Value::from(language.as_str()));
            }
            if let Some(published) = &page.published {
                metadata.insert("published".into(), Value::from(published.as_str()));
            }
            Some(json!({"page_content": page.content, "metadata": metadata}))
        })
        .collect();
    json_response(StatusCode::OK, Value::from(documents).to_string())
}

/// A loader body: its URLs.
fn decode_urls(body: &[u8]) -> Result<Vec<String>, OpenWebuiError> {
    let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
    let urls: Vec<String> =
        field(&fields, "urls", "a list of URLs")?.ok_or(Refusal::Own(BadUrls))?;
    if urls.is_empty() || urls.len() > MAX_URLS {
        return Err(Refusal::Own(BadUrls));
    }
    Ok(urls)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::server::kit::document::FailedUpstream;
    use gateway_core::upstream::ErrorClass;

    #[test]
    fn the_user_headers_name_an_end_user_only_when_trusted() {
        let mut headers = HeaderMap::new();
        headers.insert("x-openwebui-user-id", HeaderValue::from_static("7f3a"));
        headers.insert(
            "x-openwebui-user-name",
            HeaderValue::from_static("Ada%20L%C3%B6velace"),
        );
        headers.insert(
            "x-openwebui-user-email",
            HeaderValue::from_static("ada@example.org"),
        );
        headers.insert("x-openwebui-user-role", HeaderValue::from_static("admin"));
        let trusted = OpenWebui {
            user_headers: EndUserHeaders::Trusted,
        };
        let ignored = OpenWebui {
            user_headers: EndUserHeaders::Ignored,
        };
        assert_eq!(Door::end_user(&ignored, &headers), None);
        let user = Door::end_user(&trusted, &headers).unwrap();
        assert_eq!(user.id.as_deref(), Some("7f3a"));
        assert_eq!(user.name.as_deref(), Some("Ada Lövelace"));
        assert_eq!(user.role.as_deref(), Some("admin"));
        assert_eq!(Door::end_user(&trusted, &HeaderMap::new()), None);
    }

    #[test]
    fn errors_are_fastapis_detail_with_their_statuses() {
        for (error, status) in [
            (OpenWebuiError::NotJson, 400),
            (OpenWebuiError::Own(BadUrls), 400),
            (OpenWebuiError::Unauthorized("no"), 401),
            (OpenWebuiError::RateLimited(2), 429),
            (
                OpenWebuiError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: ErrorClass::Timeout.into(),
                }]),
                502,
            ),
            (OpenWebuiError::Overloaded, 503),
        ] {
            assert_eq!(error.into_response().status().as_u16(), status);
        }
    }
}
