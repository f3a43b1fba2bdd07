//! A fake reranker in Jina's and Cohere's shape (`POST /v1/rerank`), as a local Infinity or Jina's
//! API answers: `{"model"?, "query", "documents": [string], "top_n"?, "return_documents"?}` →
//! `{"model", "results": [{"index", "relevance_score"}], "usage"}`, the best first, `top_n` of
//! them.
//!
//! Strict like the real services: another path is 404, another method 405, a body without a
//! string `query` or with `documents` that are not strings 422 (Infinity's validation error), a
//! missing or wrong Bearer key 401 when a key is expected. It ranks by a rule a test can predict
//! ([`RerankerBehaviour::Favour`]: documents with any of the favoured words first), and misbehaves
//! as scripted: a 500, a wait (a test on a paused clock sees the gateway give up), garbage in the
//! right envelope (an index out of range, an index twice, a score that is no number) or not JSON.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::transport;

/// Where the fake serves (Jina's and Cohere's path).
pub const PATH: &str = "/v1/rerank";

/// What the fake does with a well-formed request.
#[derive(Debug, Clone, PartialEq)]
pub enum RerankerBehaviour {
    /// Ranks documents that hold any of these words (case-insensitive) first, in the order sent,
    /// then the others in the order sent; scores fall from 0.99 for the first.
    Favour(Vec<String>),
    /// A 500 with a JSON error.
    ServerError,
    /// Waits this long (or until the fake is dropped), then behaves as the inner behaviour.
    Slow(Duration, Box<RerankerBehaviour>),
    /// 200 with a result whose index is past the last document.
    IndexOutOfRange,
    /// 200 naming the first document twice.
    DuplicateIndex,
    /// 200 whose scores are strings.
    ScoreNotANumber,
    /// 200 `application/json` that is not JSON.
    NotJson,
}

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankRequest {
    /// The `Authorization` header, if any.
    pub auth: Option<String>,
    /// The JSON body (`Null` when it is not JSON).
    pub body: Value,
}

impl RerankRequest {
    /// The documents sent, in order (empty when there are none).
    pub fn documents(&self) -> Vec<String> {
        self.body["documents"]
            .as_array()
            .map(|docs| {
                docs.iter()
                    .filter_map(|d| d.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A running fake reranker. Dropping it stops the server and ends its waits.
pub struct SimulatedReranker {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

struct Shared {
    released: watch::Receiver<bool>,
    state: Mutex<RerankerState>,
}

struct RerankerState {
    behaviour: RerankerBehaviour,
    key: Option<String>,
    requests: Vec<RerankRequest>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, RerankerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SimulatedReranker {
    /// A fake favouring nothing (the order sent), expecting no key, on 127.0.0.1 (port chosen by
    /// the kernel).
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, released) = watch::channel(false);
        let shared = Arc::new(Shared {
            released: released.clone(),
            state: Mutex::new(RerankerState {
                behaviour: RerankerBehaviour::Favour(Vec::new()),
                key: None,
                requests: Vec::new(),
            }),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = transport::spawn(
            listener,
            app,
            || None,
            released,
            transport::Lifetimes::default(),
        );
        Ok(Self {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// The endpoint to give the gateway (`RERANK_URL`).
    pub fn url(&self) -> String {
        format!("http://{}{PATH}", self.addr)
    }

    /// What to do from now on.
    pub fn set_behaviour(&self, behaviour: RerankerBehaviour) {
        self.shared.lock().behaviour = behaviour;
    }

    /// Expect `Authorization: Bearer <key>` from now on (`None`: no key).
    pub fn expect_key(&self, key: Option<&str>) {
        self.shared.lock().key = key.map(str::to_owned);
    }

    /// Every request that arrived, in order.
    pub fn requests(&self) -> Vec<RerankRequest> {
        self.shared.lock().requests.clone()
    }

    /// How many requests arrived.
    pub fn calls(&self) -> usize {
        self.shared.lock().requests.len()
    }
}

impl Drop for SimulatedReranker {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

fn reply(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    response
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (behaviour, key) = {
        let mut state = shared.lock();
        state.requests.push(RerankRequest {
            auth: auth.clone(),
            body: json.clone(),
        });
        (state.behaviour.clone(), state.key.clone())
    };
    if uri.path() != PATH {
        return reply(
            StatusCode::NOT_FOUND,
            json!({"detail": "Not Found"}).to_string(),
        );
    }
    if method != Method::POST {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            json!({"detail": "Method Not Allowed"}).to_string(),
        );
    }
    if let Some(key) = key {
        if auth.as_deref() != Some(format!("Bearer {key}").as_str()) {
            return reply(
                StatusCode::UNAUTHORIZED,
                json!({"detail": "Invalid API key"}).to_string(),
            );
        }
    }
    let query = json["query"].as_str();
    let documents: Option<Vec<&str>> = json["documents"]
        .as_array()
        .and_then(|docs| docs.iter().map(Value::as_str).collect());
    let (Some(_), Some(documents)) = (query, documents) else {
        return reply(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"detail": [{"loc": ["body"], "msg": "query and documents (strings) are required",
                               "type": "value_error"}]})
            .to_string(),
        );
    };
    let top_n = json["top_n"]
        .as_u64()
        .map_or(documents.len(), |n| n as usize);
    let mut behaviour = behaviour;
    loop {
        match behaviour {
            RerankerBehaviour::Slow(delay, then) => {
                let mut released = shared.released.clone();
                tokio::select! {
                    () = tokio::time::sleep(delay) => behaviour = *then,
                    _ = released.wait_for(|r| *r) => {
                        return reply(StatusCode::SERVICE_UNAVAILABLE, "{}".to_owned());
                    }
                }
            }
            RerankerBehaviour::Favour(words) => return ranked(&documents, &words, top_n),
            RerankerBehaviour::ServerError => {
                return reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"detail": "CUDA out of memory"}).to_string(),
                )
            }
            RerankerBehaviour::IndexOutOfRange => {
                return reply(
                    StatusCode::OK,
                    json!({"results": [{"index": documents.len(), "relevance_score": 0.9}]})
                        .to_string(),
                )
            }
            RerankerBehaviour::DuplicateIndex => {
                return reply(
                    StatusCode::OK,
                    json!({"results": [{"index": 0, "relevance_score": 0.9},
                                       {"index": 0, "relevance_score": 0.8}]})
                    .to_string(),
                )
            }
            RerankerBehaviour::ScoreNotANumber => {
                return reply(
                    StatusCode::OK,
                    json!({"results": [{"index": 0, "relevance_score": "NaN"}]}).to_string(),
                )
            }
            RerankerBehaviour::NotJson => {
                return reply(StatusCode::OK, "results: 0.9, 0.8".to_owned())
            }
        }
    }
}

/// The favoured documents first, then the others, each group in the order sent.
fn ranked(documents: &[&str], words: &[String], top_n: usize) -> Response {
    let favoured = |text: &str| {
        let text = text.to_lowercase();
        words.iter().any(|w| text.contains(&w.to_lowercase()))
    };
    let mut order: Vec<usize> = (0..documents.len())
        .filter(|i| favoured(documents[*i]))
        .collect();
    order.extend((0..documents.len()).filter(|i| !favoured(documents[*i])));
    let results: Vec<Value> = order
        .into_iter()
        .take(top_n)
        .enumerate()
        .map(|(place, index)| {
            json!({"index": index, "relevance_score": 0.99 / (place as f64 + 1.0)})
        })
        .collect();
    reply(
        StatusCode::OK,
        json!({"model": "sim-reranker", "results": results,
               "usage": {"total_tokens": documents.len() * 10}})
        .to_string(),
    )
}
