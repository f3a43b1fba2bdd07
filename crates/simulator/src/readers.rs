//! Faithful fakes of the four premium page readers — Jina Reader, Tavily extract, Exa contents,
//! Firecrawl scrape — one reader per [`SimulatedReader`], serving real HTTP on a loopback port.
//!
//! Strict like the real services (shared/spec/PROVIDERS.md, "Readers"): a wrong path is 404, a
//! wrong method 405, a missing or wrong key gets that reader's own 401, a body without the URL its
//! 400. Each scripted [`ReaderBehaviour`] is answered in the reader's own shape: a page; a page it
//! could not read (Jina's 422, Tavily's `failed_results`, Exa's error `statuses`, Firecrawl's
//! target `statusCode`); spent credits (Jina's 402 `InsufficientBalanceError`, Tavily's 432, Exa's
//! 402 `NO_MORE_CREDITS`, Firecrawl's 402); a rate limit (429 with `Retry-After`); a 500. The fake
//! never fetches anything: a page it "reads" is text naming the URL and the reader.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::premium::SIM_KEY;
use crate::transport;

/// The premium readers the simulator fakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reader {
    /// Jina Reader (r.jina.ai).
    Jina,
    /// Tavily's `/extract`.
    Tavily,
    /// Exa's `/contents`.
    Exa,
    /// Firecrawl's `/v2/scrape`.
    Firecrawl,
}

impl Reader {
    /// Every reader.
    pub const ALL: [Reader; 4] = [Self::Jina, Self::Tavily, Self::Exa, Self::Firecrawl];

    /// The name `READ_PROVIDERS` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jina => "jina",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
            Self::Firecrawl => "firecrawl",
        }
    }

    /// The prefix of the gateway's key variable (`JINA_API_KEY`).
    pub fn env_prefix(self) -> &'static str {
        match self {
            Self::Jina => "JINA",
            Self::Tavily => "TAVILY",
            Self::Exa => "EXA",
            Self::Firecrawl => "FIRECRAWL",
        }
    }

    /// The gateway's variable for the reader's origin.
    pub fn base_variable(self) -> &'static str {
        match self {
            Self::Jina => "JINA_READER_BASE_URL",
            Self::Tavily => "TAVILY_BASE_URL",
            Self::Exa => "EXA_BASE_URL",
            Self::Firecrawl => "FIRECRAWL_BASE_URL",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Jina => "/",
            Self::Tavily => "/extract",
            Self::Exa => "/contents",
            Self::Firecrawl => "/v2/scrape",
        }
    }
}

/// What the fake does with a well-formed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReaderBehaviour {
    /// Reads the page: a title and a few paragraphs naming the URL.
    Pages,
    /// Answers that it could not read that page.
    Unreadable,
    /// Credits spent.
    Quota,
    /// Too many requests (`Retry-After: 30`).
    RateLimited,
    /// An internal error.
    ServerError,
    /// Waits this long, then reads the page.
    Slow(Duration),
}

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderRequest {
    /// The method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The auth header's value (`Authorization` or `x-api-key`), if any.
    pub auth: Option<String>,
    /// The JSON body (`Null` when there is none or it is not JSON).
    pub body: Value,
}

/// A running fake reader. Dropping it stops the server.
pub struct SimulatedReader {
    kind: Reader,
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

struct Shared {
    kind: Reader,
    released: watch::Receiver<bool>,
    state: Mutex<State_>,
}

struct State_ {
    behaviour: ReaderBehaviour,
    requests: Vec<ReaderRequest>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State_> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SimulatedReader {
    /// A fake of `kind` reading every page, expecting [`SIM_KEY`], on 127.0.0.1 (port chosen by
    /// the kernel).
    pub async fn start(kind: Reader) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, released) = watch::channel(false);
        let shared = Arc::new(Shared {
            kind,
            released: released.clone(),
            state: Mutex::new(State_ {
                behaviour: ReaderBehaviour::Pages,
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
            kind,
            addr,
            shared,
            stop,
            task,
        })
    }

    /// Which reader this fakes.
    pub fn kind(&self) -> Reader {
        self.kind
    }

    /// The origin to give the gateway (`<NAME>_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What to do from now on.
    pub fn set_behaviour(&self, behaviour: ReaderBehaviour) {
        self.shared.lock().behaviour = behaviour;
    }

    /// Every request that arrived, in order.
    pub fn requests(&self) -> Vec<ReaderRequest> {
        self.shared.lock().requests.clone()
    }

    /// How many requests arrived.
    pub fn calls(&self) -> usize {
        self.shared.lock().requests.len()
    }
}

impl Drop for SimulatedReader {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

fn reply(status: u16, body: Value) -> Response {
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body.to_string(),
    )
        .into_response();
    response.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let kind = shared.kind;
    let auth_header = match kind {
        Reader::Exa => "x-api-key",
        _ => "authorization",
    };
    let auth = headers
        .get(auth_header)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let behaviour = {
        let mut state = shared.lock();
        state.requests.push(ReaderRequest {
            method: method.to_string(),
            path: uri.path().to_owned(),
            auth: auth.clone(),
            body: json.clone(),
        });
        state.behaviour.clone()
    };
    if uri.path() != kind.path() && !(kind == Reader::Firecrawl && uri.path() == "/v1/scrape") {
        return reply(404, json!({"error": "Not Found"}));
    }
    if method != Method::POST {
        return reply(405, json!({"error": "Method Not Allowed"}));
    }
    let expected = match kind {
        Reader::Exa => SIM_KEY.to_owned(),
        _ => format!("Bearer {SIM_KEY}"),
    };
    if auth.as_deref() != Some(expected.as_str()) {
        return match kind {
            Reader::Jina => reply(
                401,
                json!({"data": null, "code": 401, "name": "AuthenticationFailedError", "status": 40103, "message": "Invalid API key"}),
            ),
            Reader::Tavily => reply(
                401,
                json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}),
            ),
            Reader::Exa => reply(
                401,
                json!({"requestId": "sim", "error": "Invalid API key", "tag": "INVALID_API_KEY"}),
            ),
            Reader::Firecrawl => reply(
                401,
                json!({"success": false, "error": "Unauthorized: Invalid token"}),
            ),
        };
    }
    let url = match kind {
        Reader::Jina | Reader::Firecrawl => json["url"].as_str().map(str::to_owned),
        Reader::Tavily | Reader::Exa => match &json["urls"] {
            Value::String(url) => Some(url.clone()),
            Value::Array(urls) => urls.first().and_then(Value::as_str).map(str::to_owned),
            _ => None,
        },
    };
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        return match kind {
            Reader::Jina => reply(
                400,
                json!({"code": 400, "name": "ParamValidationError", "status": 40001, "message": "url is required"}),
            ),
            Reader::Tavily => reply(400, json!({"detail": {"error": "urls is required"}})),
            Reader::Exa => reply(
                400,
                json!({"requestId": "sim", "error": "urls is required", "tag": "INVALID_REQUEST_BODY"}),
            ),
            Reader::Firecrawl => reply(
                400,
                json!({"success": false, "error": "Bad Request", "details": [{"path": ["url"], "message": "Required"}]}),
            ),
        };
    };
    match behaviour {
        ReaderBehaviour::Pages => page(kind, &url),
        ReaderBehaviour::Slow(delay) => {
            let mut released = shared.released.clone();
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = released.wait_for(|r| *r) => {}
            }
            page(kind, &url)
        }
        ReaderBehaviour::Unreadable => unreadable(kind, &url),
        ReaderBehaviour::Quota => match kind {
            Reader::Jina => reply(
                402,
                json!({"data": null, "code": 402, "name": "InsufficientBalanceError", "status": 40203, "message": "Account balance not enough to run this query"}),
            ),
            Reader::Tavily => reply(
                432,
                json!({"detail": {"error": "This request exceeds your plan's set usage limit."}}),
            ),
            Reader::Exa => reply(
                402,
                json!({"requestId": "sim", "error": "You have exceeded your credits limit.", "tag": "NO_MORE_CREDITS"}),
            ),
            Reader::Firecrawl => reply(
                402,
                json!({"success": false, "error": "Payment Required: Insufficient credits"}),
            ),
        },
        ReaderBehaviour::RateLimited => {
            let body = match kind {
                Reader::Jina => {
                    json!({"data": null, "code": 429, "name": "RateLimitTriggeredError", "status": 42903, "message": "Per IP rate limit exceeded"})
                }
                Reader::Tavily => {
                    json!({"detail": {"error": "Your request has been blocked due to excessive requests."}})
                }
                Reader::Exa => {
                    json!({"requestId": "sim", "error": "Rate limit exceeded", "tag": "RATE_LIMIT_EXCEEDED"})
                }
                Reader::Firecrawl => json!({"success": false, "error": "Rate limit exceeded"}),
            };
            let mut response = reply(429, body);
            response
                .headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("30"));
            response
        }
        ReaderBehaviour::ServerError => reply(500, json!({"error": "Internal Server Error"})),
    }
}

/// The text a fake reader gives for `url`.
pub fn page_text(reader: Reader, url: &str) -> String {
    let paragraph = format!(
        "This page at {url} was read by the simulated {} reader, which renders pages in a browser \
         and keeps their main content for whoever asked, with enough words to count as an article.",
        reader.as_str()
    );
    format!(
        "# Read by {}\n\n{paragraph}\n\n{paragraph}\n\n{paragraph}",
        reader.as_str()
    )
}

fn page(kind: Reader, url: &str) -> Response {
    let text = page_text(kind, url);
    let title = format!("Read by {}", kind.as_str());
    match kind {
        Reader::Jina => reply(
            200,
            json!({"code": 200, "status": 20000, "data": {"title": title, "description": "", "url": url, "content": text, "usage": {"tokens": 120}}}),
        ),
        Reader::Tavily => reply(
            200,
            json!({"results": [{"url": url, "raw_content": text, "images": []}], "failed_results": [], "response_time": 0.4, "request_id": "sim"}),
        ),
        Reader::Exa => reply(
            200,
            json!({"requestId": "sim", "results": [{"id": url, "url": url, "title": title, "text": text}], "statuses": [{"id": url, "status": "success"}], "costDollars": {"total": 0.001}}),
        ),
        Reader::Firecrawl => reply(
            200,
            json!({"success": true, "data": {"markdown": text, "metadata": {"title": title, "sourceURL": url, "url": url, "statusCode": 200}}}),
        ),
    }
}

fn unreadable(kind: Reader, url: &str) -> Response {
    match kind {
        Reader::Jina => reply(
            422,
            json!({"data": null, "code": 422, "name": "AssertionFailureError", "status": 42206, "message": "Failed to get the contents of the page"}),
        ),
        Reader::Tavily => reply(
            200,
            json!({"results": [], "failed_results": [{"url": url, "error": "Failed to fetch url"}], "response_time": 0.3, "request_id": "sim"}),
        ),
        Reader::Exa => reply(
            200,
            json!({"requestId": "sim", "results": [], "statuses": [{"id": url, "status": "error", "error": {"tag": "CRAWL_NOT_FOUND", "httpStatusCode": 404}}]}),
        ),
        Reader::Firecrawl => reply(
            200,
            json!({"success": true, "data": {"markdown": "Not Found", "metadata": {"sourceURL": url, "url": url, "statusCode": 404}}}),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_reader_is_strict_about_path_method_and_key_and_answers_in_its_shape() {
        let client = reqwest::Client::new();
        for kind in Reader::ALL {
            let sim = SimulatedReader::start(kind).await.unwrap();
            let body = match kind {
                Reader::Jina | Reader::Firecrawl => json!({"url": "https://a.example/"}),
                Reader::Tavily | Reader::Exa => json!({"urls": ["https://a.example/"]}),
            };
            let auth = |req: reqwest::RequestBuilder| match kind {
                Reader::Exa => req.header("x-api-key", SIM_KEY),
                _ => req.bearer_auth(SIM_KEY),
            };
            let url = format!("{}{}", sim.base_url(), kind.path());
            let wrong_key = client.post(&url).json(&body).send().await.unwrap();
            assert_eq!(wrong_key.status(), 401, "{kind:?}");
            let wrong_path = auth(client.post(format!("{}/nope", sim.base_url())))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(wrong_path.status(), 404, "{kind:?}");
            let ok: Value = auth(client.post(&url))
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert!(
                ok.to_string().contains("read by the simulated"),
                "{kind:?}: {ok}"
            );
            sim.set_behaviour(ReaderBehaviour::Quota);
            let quota = auth(client.post(&url)).json(&body).send().await.unwrap();
            assert!(matches!(quota.status().as_u16(), 402 | 432), "{kind:?}");
            assert_eq!(sim.calls(), 4);
        }
    }
}
