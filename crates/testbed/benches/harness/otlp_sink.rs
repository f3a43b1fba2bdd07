//! A stand-in OpenTelemetry collector for the tracing measurement: a hyper 1 server on a loopback
//! port, in the harness process, that accepts `POST /v1/traces` (OTLP/HTTP), counts the exports and
//! their bytes, discards them and answers an empty `ExportTraceServiceResponse` (an empty protobuf
//! message is zero bytes). It does no decoding, so what it costs is the gateway's exporting and
//! not a collector's work.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the sink received.
#[derive(Debug, Default)]
struct Counts {
    exports: AtomicU64,
    bytes: AtomicU64,
}

/// The running sink; dropping it stops it.
pub(crate) struct OtlpSink {
    /// Where it listens: the gateway's `OTEL_EXPORTER_OTLP_ENDPOINT` is `http://{addr}`.
    pub(crate) addr: SocketAddr,
    counts: Arc<Counts>,
    task: JoinHandle<()>,
}

impl OtlpSink {
    /// Starts the sink on a kernel-chosen loopback port.
    pub(crate) async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&counts)));
        Ok(Self { addr, counts, task })
    }

    /// Export requests received so far, and their body bytes.
    pub(crate) fn received(&self) -> (u64, u64) {
        (
            self.counts.exports.load(Ordering::Relaxed),
            self.counts.bytes.load(Ordering::Relaxed),
        )
    }
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, counts: Arc<Counts>) {
    while let Ok((stream, _)) = listener.accept().await {
        let counts = Arc::clone(&counts);
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                let counts = Arc::clone(&counts);
                async move { Ok::<_, Infallible>(export(request, &counts).await) }
            });
            // A connection error is the gateway going away at the end of a run.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn export(request: Request<hyper::body::Incoming>, counts: &Counts) -> Response<Full<Bytes>> {
    if request.method() != Method::POST || request.uri().path() != "/v1/traces" {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let Ok(body) = request.into_body().collect().await else {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return response;
    };
    counts.exports.fetch_add(1, Ordering::Relaxed);
    counts
        .bytes
        .fetch_add(body.to_bytes().len() as u64, Ordering::Relaxed);
    let mut response = Response::new(Full::new(Bytes::new()));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-protobuf"),
    );
    response
}
