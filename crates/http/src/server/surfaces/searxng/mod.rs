//! The SearXNG surface: `/search` (GET, and POST with a form body) and SearXNG's root path.
//!
//! `/search` parses the parameters into one [`SearchRequest`], asks the pipeline, and renders the
//! answer in the requested format with `X-Cache` and `X-Gateway-Outcome`. `GET /search` is served
//! by [`SearchStack`], which [`crate::server::front`] calls before the router; the router has the rest.
//!
//! `/` behaves as SearXNG's own root path: with a non-empty `q` (in the query string or a form
//! body) it answers `308 Permanent Redirect` to `/search` with the same query string — so a client
//! configured with the bare origin (LangChain's `SearxSearchWrapper`) follows it, a POST keeps its
//! method and body, and `/search` stays the one URL that answers searches. Without `q` it answers
//! the gateway's index ([`Index`]).

mod format;
pub(crate) mod index;

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Extension, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::future::BoxFuture;
use tower_layer::Layer;
use tower_service::Service;

use crate::gateway::Gateway;
use crate::server::error::{Api, ApiError, API_REFUSALS};
use crate::server::kit::body;
use crate::server::kit::explain;
use crate::server::kit::gate::{Admit, Admitted, Gate};
use crate::server::kit::search_call;
use crate::server::transport::request_id::{self, Tag};
use crate::server::transport::search_span::{self, Traced};
use gateway_core::request::{Format, RawParams, SearchRequest, Surface};
use gateway_engine::SearchError;
use index::Index;

/// Where searches are answered.
pub(crate) const SEARCH_PATH: &str = "/search";

/// `GET /search` with the layers [`routes`] and the router put on it — the request ID outside,
/// then the gate with the API's refusals, then the `search` span — around [`SearchGet`].
pub(crate) type SearchStack = Tag<Admit<Traced<SearchGet>, Api>>;

/// [`SearchStack`] over `gateway`, behind `gate`.
pub(crate) fn search_stack(gate: &Gate, gateway: Gateway) -> SearchStack {
    request_id::TAGGED.layer(
        gate.layer(API_REFUSALS)
            .layer(search_span::TRACED.layer(SearchGet { gateway })),
    )
}

/// `GET /search?q=…` as a service: the admitted caller taken out of the request, the query
/// string read where it is.
#[derive(Debug, Clone)]
pub(crate) struct SearchGet {
    gateway: Gateway,
}

impl Service<Request> for SearchGet {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let gateway = self.gateway.clone();
        let admitted = request.extensions_mut().remove::<Admitted>();
        let raw = parse(request.uri().query().unwrap_or(""));
        Box::pin(async move {
            // The gate puts the caller on every request it lets through.
            let Some(admitted) = admitted else {
                return Ok(ApiError::Internal.into_response());
            };
            Ok(match raw {
                Ok(raw) => answer(gateway, raw, &admitted).await,
                Err(err) => err.into_response(),
            })
        })
    }
}

/// `/search` and `/`, behind the gate with the API's refusals, each search in its span; the root
/// path answers `index` without a query. (`GET /search` is answered by [`SearchStack`] before the
/// router; the route stays for `HEAD`, which axum answers as a `GET` without its body.)
pub(crate) fn routes(gate: &Gate, index: Index) -> Router<Gateway> {
    Router::new()
        .route(SEARCH_PATH, get(search_get).post(search_post))
        .route("/", get(root_get).post(root_post))
        .layer(Extension(index))
        .layer(search_span::TRACED)
        .layer(gate.layer(API_REFUSALS))
}

/// A query string or form body as `/search` parameters (each at most once).
pub(crate) fn parse(raw: &str) -> Result<RawParams, ApiError> {
    serde_urlencoded::from_str(raw)
        .map_err(|_| ApiError::unreadable("parameters must be URL-encoded and must not repeat"))
}

/// The form body of a POST, `None` when it has none; an error for a body that is not a form or
/// breaks the server limits (`MAX_BODY_BYTES` 413, `REQUEST_READ_TIMEOUT_SECONDS` 408).
async fn form_body(
    gateway: &Gateway,
    headers: &HeaderMap,
    body: Body,
) -> Result<Option<String>, ApiError> {
    let body = body::read(&gateway.server().server_limits, headers, body).await?;
    if body.is_empty() {
        return Ok(None);
    }
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return Err(ApiError::unreadable(
            "POST takes an application/x-www-form-urlencoded body",
        ));
    }
    String::from_utf8(body.to_vec())
        .map(Some)
        .map_err(|_| ApiError::unreadable("the form body is not UTF-8"))
}

/// `GET /search?q=…`
async fn search_get(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    RawQuery(query): RawQuery,
) -> Response {
    match parse(query.as_deref().unwrap_or("")) {
        Ok(raw) => answer(gateway, raw, &admitted).await,
        Err(err) => err.into_response(),
    }
}

/// `POST /search` with `application/x-www-form-urlencoded` (as SearXNG accepts); parameters in the
/// query string are used when the body is empty.
async fn search_post(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let raw = match form_body(&gateway, &headers, body).await {
        Ok(Some(form)) => parse(&form),
        Ok(None) => parse(query.as_deref().unwrap_or("")),
        Err(err) => Err(err),
    };
    match raw {
        Ok(raw) => answer(gateway, raw, &admitted).await,
        Err(err) => err.into_response(),
    }
}

async fn answer(gateway: Gateway, mut raw: RawParams, admitted: &Admitted) -> Response {
    let explain = match explain::wanted(raw.explain.take().as_deref()) {
        Ok(explain) => explain,
        Err(message) => {
            search_call::log_refused(Surface::Searxng, "invalid_parameter");
            return ApiError::unreadable(message).into_response();
        }
    };
    let req = match SearchRequest::parse(raw, gateway.server().max_query_bytes) {
        Ok(req) => req,
        Err(err) => {
            search_call::log_refused(Surface::Searxng, err.code());
            return ApiError::from(err).into_response();
        }
    };
    let format = req.format;
    let query = req.query.clone();
    let served = match search_call::run(&gateway, Surface::Searxng, req, admitted).await {
        Ok(served) => served,
        Err(SearchError::Overloaded(_)) => return ApiError::Overloaded.into_response(),
        Err(SearchError::Lost(_)) => return ApiError::Internal.into_response(),
    };
    let answer = &served.answer;
    let status = answer.status;
    let (body, content_type): (Bytes, &'static str) = match (format, status.is_success()) {
        (Format::Csv | Format::Rss, true) => {
            let document: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&answer.json).unwrap_or_default();
            if format == Format::Csv {
                (format::csv(&document).into(), "text/csv; charset=utf-8")
            } else {
                (
                    format::rss(&document, &query).into(),
                    "application/rss+xml; charset=utf-8",
                )
            }
        }
        _ if explain => (
            explain::add_to(&answer.json, explain::object(&served, admitted)).into(),
            "application/json",
        ),
        _ => (answer.json.clone(), "application/json"),
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    search_call::set_served_headers(headers, &served);
    response
}

/// Whether SearXNG would treat these URL-encoded parameters as a search: a non-empty `q`.
fn has_query(encoded: &str) -> bool {
    url::form_urlencoded::parse(encoded.as_bytes())
        .any(|(name, value)| name == "q" && !value.is_empty())
}

/// `308` to `/search` with the request's own query string (a POST's body follows it).
fn redirect_to_search(query: Option<&str>) -> Response {
    let location = match query {
        Some(query) if !query.is_empty() => format!("{SEARCH_PATH}?{query}"),
        _ => SEARCH_PATH.to_owned(),
    };
    match HeaderValue::try_from(location) {
        Ok(location) => (
            StatusCode::PERMANENT_REDIRECT,
            [(header::LOCATION, location)],
        )
            .into_response(),
        Err(_) => ApiError::unreadable("the query string is not a valid URL query").into_response(),
    }
}

/// `GET /`: SearXNG's root path.
async fn root_get(Extension(index): Extension<Index>, RawQuery(query): RawQuery) -> Response {
    if query.as_deref().is_some_and(has_query) {
        return redirect_to_search(query.as_deref());
    }
    index.response()
}

/// `POST /`: a form with `q` is a search, as on SearXNG.
async fn root_post(
    State(gateway): State<Gateway>,
    Extension(index): Extension<Index>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let in_body = match form_body(&gateway, &headers, body).await {
        Ok(form) => form.as_deref().is_some_and(has_query),
        Err(err) => return err.into_response(),
    };
    if in_body || query.as_deref().is_some_and(has_query) {
        return redirect_to_search(query.as_deref());
    }
    index.response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_non_empty_q_makes_the_root_path_a_search() {
        assert!(has_query("q=rust&format=json"));
        assert!(has_query("format=json&q=%20"));
        assert!(!has_query("q=&format=json"));
        assert!(!has_query("format=json"));
        assert!(!has_query("qq=rust"));
    }
}
