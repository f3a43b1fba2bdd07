//! The accept loop and what the server enforces per connection (the book's configuration
//! reference, "Server limits"):
//!
//! - `MAX_CONNECTIONS`: one connection more is answered `503 overloaded` (JSON, `Retry-After`,
//!   `Connection: close`) without reading its request, and closed;
//! - `KEEPALIVE_IDLE_SECONDS` and `REQUEST_READ_TIMEOUT_SECONDS` on the request head: the socket's
//!   [`ReadGuard`] (a quiet connection is closed, a slow head gets 408 with JSON);
//! - `MAX_URL_BYTES` (414) and `MAX_HEADER_BYTES` (431), checked on the parsed head before routing,
//!   each answered with the JSON error body. A head too large for the connection's read buffer
//!   (both limits plus 4 KiB) never gets parsed: hyper answers that one itself, with a bare 431;
//! - the form body (`MAX_BODY_BYTES`, 413; its read time, 408) is the `/search` handler's, the
//!   only one that reads a body.
//! - an answer that left its request's body unread (a refusal from the head) says
//!   `Connection: close` ([`unread_body`]), since hyper will not keep that connection.
//!
//! Every rejection is counted in `http_rejections_total{reason}`: here, or from the marker an
//! [`ApiError`] leaves on its response. Shutdown is graceful: the listener closes, idle connections
//! close, requests in flight finish, then [`serve_connections`] returns.
//!
//! Under `RUNTIME=thread-per-core` ([`gateway_core::runtime`]) every further worker is a thread with its
//! own current-thread runtime and its own listener on the same address, running the same accept
//! loop; the limits above are the server's, shared by all of them.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::future::{ready, Either};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::server::error::{ApiError, ApiOwn};
use crate::server::front::Front;
use crate::server::transport::metrics::{Rejection, ServerMetrics};
use crate::server::transport::read_guard::ReadGuard;
use crate::server::transport::unread_body::{self, BodyWatch, WatchedBody};
use crate::settings::limits::ServerLimits;
use gateway_core::runtime::Runtime;

/// Connections turned away at `MAX_CONNECTIONS` that may be getting their 503 at once; beyond
/// this a flood is dropped without an answer rather than costing a task each.
const MAX_REFUSALS_IN_FLIGHT: usize = 64;
/// How long a turned-away connection is given to take its 503.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// The sockets the server accepts on: the one it was given, and under thread-per-core one more per
/// further worker (`runtime::sibling_listener`), made before the server says it is listening so
/// that a failure to bind them is a failure to start.
pub(crate) struct Listeners {
    own: TcpListener,
    siblings: Vec<std::net::TcpListener>,
}

impl Listeners {
    /// `listener` for `runtime`'s workers.
    pub(crate) fn new(listener: TcpListener, runtime: Runtime) -> io::Result<Self> {
        let siblings = (1..runtime.pools())
            .map(|_| gateway_core::runtime::sibling_listener(&listener))
            .collect::<io::Result<_>>()?;
        Ok(Self {
            own: listener,
            siblings,
        })
    }

    /// The address every listener is bound to.
    pub(crate) fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.own.local_addr()
    }
}

/// What every worker's accept loop shares: the router, and the connection limit and the refusals in
/// flight, which are the server's and not a worker's.
#[derive(Clone)]
struct Shared {
    router: Front,
    limits: ServerLimits,
    metrics: ServerMetrics,
    connections: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
}

/// Serves `router` on `listeners` within `limits` until `shutdown` resolves, then lets every
/// request in flight finish. The given listener is served on the caller's runtime; each sibling on
/// a thread of its own with a current-thread runtime (worker 1, 2, …), which ends when its
/// connections have finished.
pub(crate) async fn serve_connections(
    listeners: Listeners,
    router: Front,
    limits: ServerLimits,
    metrics: ServerMetrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let shared = Shared {
        router,
        limits,
        metrics,
        connections: Arc::new(Semaphore::new(limits.max_connections)),
        refusals: Arc::new(Semaphore::new(MAX_REFUSALS_IN_FLIGHT)),
    };
    let stop = CancellationToken::new();
    let mut workers = Vec::with_capacity(listeners.siblings.len());
    for (index, sibling) in (1..).zip(listeners.siblings) {
        match start_worker(index, sibling, shared.clone(), stop.clone()) {
            Ok(finished) => workers.push(finished),
            Err(err) => {
                stop.cancel();
                for finished in workers {
                    let _ = finished.await;
                }
                return Err(err);
            }
        }
    }
    let own = accept_loop(listeners.own, shared, async move {
        shutdown.await;
        stop.cancel();
    })
    .await;
    let mut served = own;
    for finished in workers {
        let worker = finished
            .await
            .unwrap_or_else(|_| Err(io::Error::other("a worker thread ended unexpectedly")));
        served = served.and(worker);
    }
    served
}

/// Starts worker `index` on a thread of its own, serving `listener` until `stop`; the receiver
/// gets how its serving ended.
fn start_worker(
    index: usize,
    listener: std::net::TcpListener,
    shared: Shared,
    stop: CancellationToken,
) -> io::Result<oneshot::Receiver<io::Result<()>>> {
    let (done, finished) = oneshot::channel();
    std::thread::Builder::new()
        .name(format!("gw-worker-{index}"))
        .stack_size(gateway_core::runtime::THREAD_STACK_BYTES)
        .spawn(move || {
            gateway_core::runtime::become_worker(index);
            let served = gateway_core::runtime::worker_runtime().and_then(|runtime| {
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener)?;
                    accept_loop(listener, shared, stop.cancelled_owned()).await
                })
            });
            let _ = done.send(served);
        })?;
    Ok(finished)
}

/// One worker's accept loop: serves `listener` until `shutdown` resolves, then lets every request
/// in flight on its connections finish.
async fn accept_loop(
    listener: TcpListener,
    shared: Shared,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let Shared {
        router,
        limits,
        metrics,
        connections,
        refusals,
    } = shared;
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .max_buf_size(limits.read_buffer_bytes())
        // A backstop only: the ReadGuard answers first (idle, then the head's own clock).
        .header_read_timeout(limits.keepalive_idle + limits.read_timeout)
        .keep_alive(true);
    let overloaded = raw_answer(ApiError::Overloaded);
    let head_timeout = raw_answer(ApiError::Own(ApiOwn::HeadTimeout(
        limits.read_timeout.as_secs(),
    )));
    let head_timeouts = metrics.counter(Rejection::HeadTimeout);
    let accepted = metrics.accepted(gateway_core::runtime::current_worker());
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(err) => {
                    accept_failed(&err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        accepted.inc();
        let Ok(slot) = Arc::clone(&connections).try_acquire_owned() else {
            metrics.count(Rejection::TooManyConnections);
            if let Ok(refusing) = Arc::clone(&refusals).try_acquire_owned() {
                let answer = overloaded.clone();
                tokio::spawn(async move {
                    refuse(stream, answer).await;
                    drop(refusing);
                });
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let io = ReadGuard::new(
            stream,
            limits.keepalive_idle,
            limits.read_timeout,
            head_timeout.clone(),
            head_timeouts.clone(),
        );
        let service = LimitedService {
            inner: TowerToHyperService::new(router.clone()),
            limits,
            metrics: metrics.clone(),
        };
        let connection = graceful.watch(http.serve_connection(TokioIo::new(io), service));
        tokio::spawn(async move {
            // A client that vanishes mid-request is its own business, not an error of ours.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// An accept error: a connection that died in the backlog is skipped; anything else (out of file
/// descriptors) is logged and the loop pauses so it does not spin.
async fn accept_failed(err: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%err, "accepting a connection failed; pausing for a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Sends `answer` to a connection over the limit, then closes it after reading what the client sent
/// meanwhile (closing on unread bytes would reset the connection under the answer).
async fn refuse(mut stream: TcpStream, answer: Bytes) {
    let _ = stream.set_nodelay(true);
    let _ = tokio::time::timeout(REFUSAL_TIME, async move {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), io::Error>(())
    })
    .await;
}

/// A complete HTTP/1.1 response for `error` with `Connection: close`, for the paths where hyper is
/// not (or no longer) the one answering.
fn raw_answer(error: ApiError) -> Bytes {
    let status = error.status();
    let body = error.body_json();
    let retry_after = if matches!(error, ApiError::Overloaded) {
        format!(
            "retry-after: {}\r\n",
            crate::server::kit::refusal::RETRY_AFTER_SECONDS
        )
    } else {
        String::new()
    };
    Bytes::from(format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\n{retry_after}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    ))
}

/// The router behind the head checks, counting every rejection on the way out.
#[derive(Clone)]
struct LimitedService {
    inner: TowerToHyperService<Front>,
    limits: ServerLimits,
    metrics: ServerMetrics,
}

impl Service<Request<Incoming>> for LimitedService {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        futures::future::Ready<Result<Response, Infallible>>,
        Answer<<TowerToHyperService<Front> as Service<Request<WatchedBody>>>::Future>,
    >;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let (req, body) = unread_body::watch(req);
        if let Err(error) = check_head(&req, &self.limits) {
            if let Some(reason) = error.rejection() {
                self.metrics.count(reason);
            }
            let mut response = error.into_response();
            body.close_if_unread(&mut response);
            return Either::Left(ready(Ok(response)));
        }
        Either::Right(Answer {
            answer: self.inner.call(req),
            metrics: self.metrics.clone(),
            body,
        })
    }
}

pin_project_lite::pin_project! {
    /// The router's answer, with a rejection a handler answered counted (an [`ApiError`] marks its
    /// response) and `Connection: close` if it left the request's body unread.
    struct Answer<F> {
        #[pin]
        answer: F,
        metrics: ServerMetrics,
        body: BodyWatch,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for Answer<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let mut answered = std::task::ready!(this.answer.poll(cx));
        if let Ok(response) = &mut answered {
            if let Some(reason) = response.extensions().get::<Rejection>() {
                this.metrics.count(*reason);
            }
            this.body.close_if_unread(response);
        }
        std::task::Poll::Ready(answered)
    }
}

/// `MAX_URL_BYTES` and `MAX_HEADER_BYTES` on a parsed head.
fn check_head<B>(req: &Request<B>, limits: &ServerLimits) -> Result<(), ApiError> {
    let uri = req.uri();
    let target = uri.path_and_query().map_or(0, |pq| pq.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len());
    if target > limits.max_url_bytes {
        return Err(ApiError::Own(ApiOwn::UrlTooLong(limits.max_url_bytes)));
    }
    let headers: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers > limits.max_header_bytes {
        return Err(ApiError::Own(ApiOwn::HeadersTooLarge(
            limits.max_header_bytes,
        )));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn limits() -> ServerLimits {
        ServerLimits {
            max_connections: 4,
            read_timeout: Duration::from_secs(1),
            keepalive_idle: Duration::from_secs(1),
            max_url_bytes: 300,
            max_header_bytes: 1024,
            max_body_bytes: 1024,
        }
    }

    #[test]
    fn long_targets_and_large_headers_are_refused_with_their_own_error() {
        let ok = Request::get("/search?q=x")
            .header("a", "b")
            .body(())
            .unwrap();
        assert!(check_head(&ok, &limits()).is_ok());
        let long = Request::get(format!("/search?q={}", "x".repeat(300)))
            .body(())
            .unwrap();
        assert!(matches!(
            check_head(&long, &limits()),
            Err(ApiError::Own(ApiOwn::UrlTooLong(300)))
        ));
        let large = Request::get("/search?q=x")
            .header("cookie", "c".repeat(1100))
            .body(())
            .unwrap();
        assert!(matches!(
            check_head(&large, &limits()),
            Err(ApiError::Own(ApiOwn::HeadersTooLarge(1024)))
        ));
    }

    #[test]
    fn raw_answers_are_complete_http_responses_with_a_json_body() {
        let text = String::from_utf8(raw_answer(ApiError::Overloaded).to_vec()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\nretry-after: 1\r\n"));
        assert!(head.contains("\r\nconnection: close"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "overloaded");
        let timeout =
            String::from_utf8(raw_answer(ApiError::Own(ApiOwn::HeadTimeout(10))).to_vec()).unwrap();
        assert!(timeout.starts_with("HTTP/1.1 408 Request Timeout\r\n"));
        assert!(!timeout.contains("retry-after"));
    }
}
