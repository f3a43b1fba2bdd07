//! gpt-researcher's custom retriever: `GET /retriever?query=…` answers `[{"url", "raw_content"}]`,
//! so `RETRIEVER=custom` with `RETRIEVER_ENDPOINT=http://gateway:8080/retriever` researches
//! through the gateway. gpt-researcher sends each `RETRIEVER_ARG_<NAME>` variable as the query
//! parameter `<name>`: `RETRIEVER_ARG_API_KEY` becomes `api_key` (the inbound key, read by the
//! gate), `RETRIEVER_ARG_MAX_RESULTS` becomes `max_results` (1–20, default 5). Any other parameter
//! is refused by name: the door never ignores what it was asked.
//!
//! Each hit is read as text at once, within the request's budget (`REQUEST_BUDGET_SECONDS`); a
//! page that could not be read keeps its search snippet as `raw_content`, so the researcher still
//! has what the search said of it.
//!
//! Errors are `{"error": code, "message": …}` (gpt-researcher logs a failed call and carries on
//! without results): 400 for a missing query or a parameter it does not take, 401/429 from the
//! gate, 502 when every upstream failed (naming each and its error class), 503 with
//! `Retry-After` when the gateway sheds load.

use axum::extract::{Extension, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::gateway::Gateway;
use crate::server::kit::gate::{Admitted, Gate, KEY_PARAMETER};
use crate::server::kit::refusal::{self, json_response, Door, OwnRefusal, Refusal};
use crate::server::kit::{search_call, search_read};
use gateway_core::request::{ReadFormat, SearchInput, SearchRequest, Surface};

/// Where the retriever answers; gpt-researcher's `RETRIEVER_ENDPOINT`.
pub(crate) const PATH: &str = "/retriever";

/// `max_results` when the request has none (gpt-researcher's own default), and its most.
const DEFAULT_RESULTS: usize = 5;
const MAX_RESULTS: usize = 20;

/// The route, behind the gate.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(
            PATH,
            get(retrieve).fallback(refusal::wrong_method::<Retriever>),
        )
        .layer(crate::server::transport::search_span::TRACED)
        .layer(gate.layer(Retriever))
}

/// The retriever's error shape.
#[derive(Debug, Clone, Copy)]
struct Retriever;

/// What gpt-researcher gets instead of results.
type RetrieverError = Refusal<Retriever>;

/// A query string the retriever cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadQuery {
    /// Not `name=value` pairs, each once.
    #[error("the query string cannot be read (is a parameter given twice?)")]
    Unreadable,
    /// A parameter this door does not honour (a `RETRIEVER_ARG_*` it has no use for).
    #[error("parameter {0} is not one the retriever takes (query, max_results, api_key)")]
    Unknown(String),
}

impl OwnRefusal for BadQuery {
    fn code(&self) -> &'static str {
        match self {
            Self::Unreadable => "bad_request",
            Self::Unknown(_) => "unsupported_parameter",
        }
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for Retriever {
    type Own = BadQuery;
    const KEY_IN_BODY: bool = false;

    fn body(refusal: &RetrieverError, _status: StatusCode, message: String) -> Value {
        let mut body = json!({"error": refusal.code(), "message": message});
        if let Some(listed) = refusal.failed_upstreams() {
            body["upstreams"] = listed;
        }
        body
    }
}

/// What the retriever was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ask {
    query: String,
    max_results: usize,
}

impl Ask {
    /// The query string, read: `query`, `max_results`, and the gate's `api_key`; nothing else.
    fn read(raw: Option<&str>) -> Result<Self, RetrieverError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
            .map_err(|_| Refusal::Own(BadQuery::Unreadable))?;
        let mut query = None;
        let mut max_results = None;
        for (name, value) in pairs {
            let slot = match name.as_str() {
                "query" => &mut query,
                "max_results" => &mut max_results,
                KEY_PARAMETER => continue,
                _ => return Err(Refusal::Own(BadQuery::Unknown(name))),
            };
            if slot.replace(value).is_some() {
                return Err(Refusal::Own(BadQuery::Unreadable));
            }
        }
        let max_results = match max_results {
            None => DEFAULT_RESULTS,
            Some(raw) => raw
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_RESULTS).contains(n))
                .ok_or(Refusal::InvalidField(
                    crate::server::kit::json_fields::InvalidField {
                        name: "max_results",
                        expected: "an integer from 1 to 20",
                    },
                ))?,
        };
        Ok(Self {
            query: query.unwrap_or_default(),
            max_results,
        })
    }
}

/// `GET /retriever`.
async fn retrieve(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    RawQuery(raw): RawQuery,
) -> Response {
    let started = Instant::now();
    let max_query_bytes = gateway.server().max_query_bytes;
    let asked = Ask::read(raw.as_deref()).and_then(|ask| {
        let input = SearchInput {
            query: ask.query.clone(),
            ..SearchInput::default()
        };
        Ok((SearchRequest::new(input, max_query_bytes)?, ask))
    });
    let (req, ask) = match asked {
        Ok(asked) => asked,
        Err(err) => {
            search_call::log_refused(Surface::Retriever, err.code());
            return err.into_response();
        }
    };
    let (served, found) =
        match search_call::found(&gateway, Surface::Retriever, req, &admitted).await {
            Ok(answer) => answer,
            Err(unanswered) => return RetrieverError::from(unanswered).into_response(),
        };
    let hits: Vec<_> = found.hits.into_iter().take(ask.max_results).collect();
    let budget = search_read::budget_left(&gateway, started, None);
    let texts = search_read::read_texts(
        &gateway,
        &admitted,
        hits.iter().map(|hit| hit.url.as_str()),
        ReadFormat::Text,
        budget,
    )
    .await;
    let documents: Vec<Value> = hits
        .into_iter()
        .zip(texts)
        .map(|(hit, text)| json!({"url": hit.url, "raw_content": text.unwrap_or(hit.content)}))
        .collect();
    let mut response = json_response(StatusCode::OK, Value::from(documents).to_string());
    search_call::set_served_headers(response.headers_mut(), &served);
    response
}

/// A query string through the retriever's reading and validation, for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(raw: &[u8]) -> Result<usize, StatusCode> {
    let refused = |err: RetrieverError| err.into_response().status();
    let raw = std::str::from_utf8(raw).map_err(|_| StatusCode::BAD_REQUEST)?;
    let ask = Ask::read(Some(raw)).map_err(refused)?;
    let input = SearchInput {
        query: ask.query,
        ..SearchInput::default()
    };
    SearchRequest::new(input, 2048).map_err(|err| refused(err.into()))?;
    Ok(ask.max_results)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_gpt_researcher_sends() {
        assert_eq!(
            Ask::read(Some("query=rust+async&api_key=k")).unwrap(),
            Ask {
                query: "rust async".into(),
                max_results: DEFAULT_RESULTS
            }
        );
        assert_eq!(
            Ask::read(Some("max_results=12&query=q"))
                .unwrap()
                .max_results,
            12
        );
    }

    #[test]
    fn a_parameter_it_does_not_take_is_refused_by_name() {
        for (raw, code, named) in [
            ("query=q&topic=news", "unsupported_parameter", "topic"),
            ("query=q&query=r", "bad_request", "twice"),
            ("query=q&max_results=0", "invalid_field", "max_results"),
            ("query=q&max_results=21", "invalid_field", "max_results"),
        ] {
            let err = Ask::read(Some(raw)).unwrap_err();
            assert_eq!(err.code(), code, "{raw}");
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{raw}");
            assert!(err.message().contains(named), "{raw}: {}", err.message());
        }
        assert_eq!(exercise(b"api_key=k").unwrap_err(), StatusCode::BAD_REQUEST);
    }
}
