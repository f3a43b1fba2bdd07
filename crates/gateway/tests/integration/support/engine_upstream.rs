//! A loopback fake of the sites behind SearXNG's `json_engine` engines.
//!
//! One server plays every engine: SearXNG's settings (see `support::searxng`) point engine `alpha` at
//! `GET /alpha/search?…`, `beta` at `GET /beta/search?…`, and so on. What each engine answers is an
//! [`EngineBehaviour`] that a test may switch while the server runs; every request is counted and its query
//! parameters recorded per engine, so tests prove behaviour through what the upstream saw.
//!
//! Each answer goes out as one `writev`, head and body together, on a `TCP_NODELAY` socket: otherwise every
//! request pays ~40 ms of Nagle/delayed-ACK and latency measurements become meaningless.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// How many results an engine answers with when a test has not said otherwise, and after [`EngineBehaviour::Slow`].
pub const DEFAULT_RESULTS: usize = 3;

/// What one engine's upstream does with a search request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineBehaviour {
    /// 200 with `results` items whose URLs belong to this engine alone (`https://<engine>.example.test/…`).
    Ok {
        /// Number of items in the answer.
        results: usize,
    },
    /// 200 with `results` items whose URLs are the same for every engine set to `Shared`, so SearXNG merges them
    /// into results listing several engines.
    Shared {
        /// Number of items in the answer.
        results: usize,
    },
    /// 200 with an empty item list: the engine found nothing.
    Empty,
    /// This HTTP status with a short plain-text body (403 → `access denied`, 429 → `too many requests`,
    /// 500 → `HTTP error` in SearXNG's `unresponsive_engines`).
    Status(u16),
    /// 503 with a page embedding Google reCAPTCHA, which SearXNG reports as `CAPTCHA`.
    Captcha,
    /// 200 `application/json` whose body is not JSON.
    BadJson,
    /// Bytes that are not HTTP at all, then the connection closes.
    Garbage,
    /// The request is read, then the connection closes without an answer.
    HangUp,
    /// Waits this long, then answers like `Ok { results: DEFAULT_RESULTS }`.
    Slow(Duration),
}

impl Default for EngineBehaviour {
    fn default() -> Self {
        EngineBehaviour::Ok {
            results: DEFAULT_RESULTS,
        }
    }
}

/// SearXNG recognises a reCAPTCHA wall by a 503 whose body contains `"https://www.google.com/recaptcha/`.
const CAPTCHA_PAGE: &str = concat!(
    "<!DOCTYPE html><html><head><title>Sorry…</title>",
    "<script src=\"https://www.google.com/recaptcha/api.js\" async defer></script></head>",
    "<body><form id=\"captcha-form\" method=\"post\">",
    "<div class=\"g-recaptcha\" data-sitekey=\"loopback-test\"></div></form></body></html>"
);

const GARBAGE: &[u8] = b"\x00\x17definitely not HTTP\xff\xfe\r\n\r\n";

/// What the upstream saw and does for one engine.
#[derive(Debug, Default)]
struct EngineRecord {
    behaviour: EngineBehaviour,
    requests: Vec<HashMap<String, String>>,
}

type Records = Arc<Mutex<HashMap<String, EngineRecord>>>;

/// A running fake upstream on `127.0.0.1:<random port>`; it stops when dropped.
#[derive(Debug)]
pub struct EngineUpstream {
    addr: SocketAddr,
    records: Records,
    /// Owns the accept loop, which owns every connection task: aborting it stops them all.
    server: JoinHandle<()>,
}

impl EngineUpstream {
    /// Binds a random loopback port and starts serving; every engine starts as `EngineBehaviour::default()`.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake engine upstream on loopback");
        let addr = listener
            .local_addr()
            .expect("local address of a bound listener");
        let records = Records::default();
        let server = tokio::spawn(serve(listener, records.clone()));
        EngineUpstream {
            addr,
            records,
            server,
        }
    }

    /// The port SearXNG's `search_url`s must point at.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Switches what `engine` answers from its next request on.
    pub fn set(&self, engine: &str, behaviour: EngineBehaviour) {
        lock(&self.records)
            .entry(engine.to_owned())
            .or_default()
            .behaviour = behaviour;
    }

    /// How many search requests reached `engine`'s upstream, whatever it answered.
    pub fn hits(&self, engine: &str) -> usize {
        lock(&self.records)
            .get(engine)
            .map_or(0, |record| record.requests.len())
    }

    /// The decoded query parameters of every search request `engine`'s upstream received, oldest first.
    pub fn requests(&self, engine: &str) -> Vec<HashMap<String, String>> {
        lock(&self.records)
            .get(engine)
            .map_or_else(Vec::new, |record| record.requests.clone())
    }
}

impl Drop for EngineUpstream {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn lock(records: &Records) -> MutexGuard<'_, HashMap<String, EngineRecord>> {
    records
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn serve(listener: TcpListener, records: Records) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(serve_connection(stream, records.clone()));
                }
            }
            Some(_) = connections.join_next() => {}
        }
    }
}

async fn serve_connection(stream: TcpStream, records: Records) {
    let Some((stream, raw)) = with_raw_handle(stream) else {
        return;
    };
    let raw = Arc::new(raw);
    let service = service_fn(move |request| answer(request, records.clone(), raw.clone()));
    // An error here is a connection the behaviour chose to break (HangUp, Garbage) or the client went away.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Sets `TCP_NODELAY` and keeps a second handle on the socket, through which `Garbage` writes bytes that hyper
/// never would.
fn with_raw_handle(stream: TcpStream) -> Option<(TcpStream, std::net::TcpStream)> {
    stream.set_nodelay(true).ok()?;
    let std_stream = stream.into_std().ok()?;
    let raw = std_stream.try_clone().ok()?;
    let stream = TcpStream::from_std(std_stream).ok()?;
    Some((stream, raw))
}

/// Why a connection was dropped on purpose; hyper closes it without writing an answer.
#[derive(Debug)]
struct Broken;

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection broken on purpose by the fake upstream")
    }
}

impl std::error::Error for Broken {}

async fn answer(
    request: Request<Incoming>,
    records: Records,
    raw: Arc<std::net::TcpStream>,
) -> Result<Response<Full<Bytes>>, Broken> {
    let Some(engine) = engine_of(request.uri().path()) else {
        return Ok(text(StatusCode::NOT_FOUND, "no such engine path"));
    };
    let parameters = url::form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let behaviour = {
        let mut records = lock(&records);
        let record = records.entry(engine.clone()).or_default();
        record.requests.push(parameters);
        record.behaviour.clone()
    };

    match behaviour {
        EngineBehaviour::Ok { results } => Ok(items(&engine, results)),
        EngineBehaviour::Shared { results } => Ok(items("shared", results)),
        EngineBehaviour::Empty => Ok(items(&engine, 0)),
        EngineBehaviour::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            Ok(text(status, "the fake upstream refuses"))
        }
        EngineBehaviour::Captcha => Ok(html(StatusCode::SERVICE_UNAVAILABLE, CAPTCHA_PAGE)),
        EngineBehaviour::BadJson => Ok(json(StatusCode::OK, "{\"items\": [{\"link\": ".into())),
        EngineBehaviour::Garbage => {
            // Best effort: if the write fails the client still sees a broken connection.
            let _ = (&*raw).write_all(GARBAGE);
            Err(Broken)
        }
        EngineBehaviour::HangUp => Err(Broken),
        EngineBehaviour::Slow(delay) => {
            tokio::time::sleep(delay).await;
            Ok(items(&engine, DEFAULT_RESULTS))
        }
    }
}

/// `/alpha/search` → `alpha`.
fn engine_of(path: &str) -> Option<String> {
    let engine = path.strip_prefix('/')?.strip_suffix("/search")?;
    (!engine.is_empty() && !engine.contains('/')).then(|| engine.to_owned())
}

/// The JSON shape SearXNG's settings map with `results_query: items`, `url_query: link`, `title_query: name`,
/// `content_query: snippet`.
fn items(owner: &str, count: usize) -> Response<Full<Bytes>> {
    let items: Vec<serde_json::Value> = (1..=count)
        .map(|rank| {
            serde_json::json!({
                "link": format!("https://{owner}.example.test/result/{rank}"),
                "name": format!("{owner} result {rank}"),
                "snippet": format!("Snippet {rank} from {owner}."),
            })
        })
        .collect();
    json(
        StatusCode::OK,
        serde_json::json!({ "items": items }).to_string(),
    )
}

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    respond(status, "application/json", body)
}

fn html(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    respond(status, "text/html; charset=utf-8", body.to_owned())
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    respond(status, "text/plain; charset=utf-8", body.to_owned())
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
