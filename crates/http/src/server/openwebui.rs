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

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};

use super::auth::{Admitted, Gate, Refusals, Refused};
use super::body::{self, BodyError};
use super::document::FailedUpstream;
use super::error::RETRY_AFTER_SECONDS;
use super::json_fields::{self, field, number_in, InvalidField};
use super::read_call::{self, Asked};
use super::search_call::{self, Unanswered};
use crate::clients::end_users::EndUser;
use crate::gateway::Gateway;
use gateway_core::request::{ReadFormat, RequestError, SearchInput, SearchRequest, Surface};
use gateway_engine::pipeline::read::Depth;

/// Open WebUI's external web search.
pub(super) const SEARCH_PATH: &str = "/openwebui/search";
/// Open WebUI's external web loader.
pub(super) const LOADER_PATH: &str = "/openwebui/loader";

/// `count` when the body has none, and its most.
const DEFAULT_COUNT: u32 = 5;
const MAX_COUNT: u32 = 100;
/// URLs one loader call takes at most.
const MAX_URLS: usize = 50;

/// The routes, behind the gate with this surface's refusals (trusting the user headers when
/// `trust`).
pub(super) fn routes(gate: &Gate, trust: bool) -> Router<Gateway> {
    Router::new()
        .route(SEARCH_PATH, post(search).fallback(wrong_method))
        .layer(super::search_span::TracedLayer)
        .route(LOADER_PATH, post(loader).fallback(wrong_method))
        .layer(gate.layer(OpenWebuiRefusals { trust }))
}

/// What Open WebUI gets instead of results.
#[derive(Debug, thiserror::Error)]
enum OpenWebuiError {
    #[error(transparent)]
    Body(#[from] BodyError),
    #[error("the body must be a JSON object")]
    NotJson,
    #[error(transparent)]
    InvalidField(#[from] InvalidField),
    #[error("{}", .0.message_naming_query("query"))]
    Request(#[from] RequestError),
    #[error("urls must list 1 to {MAX_URLS} URLs")]
    Urls,
    #[error("every upstream failed: {}", FailedUpstream::list(.0))]
    AllUpstreamsFailed(Vec<FailedUpstream>),
    #[error("the gateway is at capacity; retry after {RETRY_AFTER_SECONDS} s")]
    Overloaded,
    #[error("the gateway failed to compute an answer")]
    Internal,
    #[error("Method Not Allowed: use POST")]
    WrongMethod,
    #[error("{0}")]
    Unauthorized(&'static str),
    #[error("too many requests; retry after {0} s")]
    RateLimited(u64),
}

impl OpenWebuiError {
    fn code(&self) -> &'static str {
        match self {
            Self::Body(_) => "unreadable_body",
            Self::NotJson => "not_json",
            Self::InvalidField(_) | Self::Urls => "invalid_field",
            Self::Request(err) => err.code(),
            Self::AllUpstreamsFailed(_) => "all_upstreams_failed",
            Self::Overloaded => "overloaded",
            Self::Internal => "internal_error",
            Self::WrongMethod => "method_not_allowed",
            Self::Unauthorized(_) => "unauthorized",
            Self::RateLimited(_) => "rate_limited",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Body(BodyError::TooLarge(_)) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Body(BodyError::Timeout(_)) => StatusCode::REQUEST_TIMEOUT,
            Self::Body(BodyError::Unreadable)
            | Self::NotJson
            | Self::InvalidField(_)
            | Self::Request(_)
            | Self::Urls => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::AllUpstreamsFailed(upstreams)
                if FailedUpstream::all_told_to_slow_down(upstreams) =>
            {
                StatusCode::TOO_MANY_REQUESTS
            }
            Self::AllUpstreamsFailed(_) => StatusCode::BAD_GATEWAY,
            Self::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
        }
    }
}

impl From<Unanswered> for OpenWebuiError {
    fn from(unanswered: Unanswered) -> Self {
        match unanswered {
            Unanswered::Overloaded => Self::Overloaded,
            Unanswered::Lost => Self::Internal,
            Unanswered::AllFailed(upstreams) => Self::AllUpstreamsFailed(upstreams),
        }
    }
}

impl IntoResponse for OpenWebuiError {
    fn into_response(self) -> Response {
        let body = json!({ "detail": self.to_string() }).to_string();
        let mut response = json_response(self.status(), body);
        if let Self::Body(err) = &self {
            err.mark(&mut response);
        }
        let headers = response.headers_mut();
        match self {
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            Self::RateLimited(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn wrong_method() -> Response {
    OpenWebuiError::WrongMethod.into_response()
}

/// The gate's refusals in this surface's shape, and Open WebUI's user headers as the end user
/// when the operator trusts them.
#[derive(Debug, Clone, Copy)]
struct OpenWebuiRefusals {
    trust: bool,
}

impl Refusals for OpenWebuiRefusals {
    const KEY_IN_BODY: bool = false;

    fn refused(&self, refused: Refused) -> Response {
        match refused {
            Refused::Unauthorized(why) => OpenWebuiError::Unauthorized(why.message()),
            Refused::RateLimited(limited) => {
                OpenWebuiError::RateLimited(limited.retry_after_seconds())
            }
        }
        .into_response()
    }

    fn unreadable(&self, err: BodyError) -> Response {
        OpenWebuiError::Body(err).into_response()
    }

    fn end_user(&self, headers: &HeaderMap) -> Option<EndUser> {
        if !self.trust {
            return None;
        }
        end_user(headers)
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
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (req, count) = match read_search(&gateway, &headers, body).await {
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

async fn read_search(
    gateway: &Gateway,
    headers: &HeaderMap,
    body: Body,
) -> Result<(SearchRequest, usize), OpenWebuiError> {
    let body = body::read(&gateway.server().server_limits, headers, body).await?;
    decode_search(&body, gateway.server().max_query_bytes)
}

/// A search body: the search and how many results to answer.
fn decode_search(
    body: &[u8],
    max_query_bytes: usize,
) -> Result<(SearchRequest, usize), OpenWebuiError> {
    let fields = json_fields::object(body).ok_or(OpenWebuiError::NotJson)?;
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
pub(super) fn exercise(loader: bool, body: &[u8]) -> Result<usize, StatusCode> {
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
    headers: HeaderMap,
    body: Body,
) -> Response {
    let urls = match read_urls(&gateway, &headers, body).await {
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

async fn read_urls(
    gateway: &Gateway,
    headers: &HeaderMap,
    body: Body,
) -> Result<Vec<String>, OpenWebuiError> {
    let body = body::read(&gateway.server().server_limits, headers, body).await?;
    decode_urls(&body)
}

/// A loader body: its URLs.
fn decode_urls(body: &[u8]) -> Result<Vec<String>, OpenWebuiError> {
    let fields = json_fields::object(body).ok_or(OpenWebuiError::NotJson)?;
    let urls: Vec<String> =
        field(&fields, "urls", "a list of URLs")?.ok_or(OpenWebuiError::Urls)?;
    if urls.is_empty() || urls.len() > MAX_URLS {
        return Err(OpenWebuiError::Urls);
    }
    Ok(urls)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
        assert_eq!(OpenWebuiRefusals { trust: false }.end_user(&headers), None);
        let user = OpenWebuiRefusals { trust: true }
            .end_user(&headers)
            .unwrap();
        assert_eq!(user.id.as_deref(), Some("7f3a"));
        assert_eq!(user.name.as_deref(), Some("Ada Lövelace"));
        assert_eq!(user.role.as_deref(), Some("admin"));
        assert_eq!(
            OpenWebuiRefusals { trust: true }.end_user(&HeaderMap::new()),
            None
        );
    }

    #[test]
    fn errors_are_fastapis_detail_with_their_statuses() {
        for (error, status) in [
            (OpenWebuiError::NotJson, 400),
            (OpenWebuiError::Urls, 400),
            (OpenWebuiError::Unauthorized("no"), 401),
            (OpenWebuiError::RateLimited(2), 429),
            (
                OpenWebuiError::AllUpstreamsFailed(vec![FailedUpstream {
                    name: "searxng".into(),
                    error_class: "timeout".into(),
                }]),
                502,
            ),
            (OpenWebuiError::Overloaded, 503),
        ] {
            assert_eq!(error.into_response().status().as_u16(), status);
        }
    }
}
