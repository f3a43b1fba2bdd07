//! The yardstick for cache hits: a minimal hyper 1 server that answers every request with the
//! bytes and headers the gateway sent for a cache hit. It runs as its own process on the same
//! tokio runtime the gateway uses (`Runtime::new()`, one worker per core) and, like the gateway's
//! `axum::serve`, leaves Nagle on; so the comparison isolates what the gateway does per request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Serves `body_file` on `addr` until killed.
pub(crate) fn serve(addr: &str, body_file: &Path) -> ExitCode {
    let (addr, body) = match (addr.parse::<SocketAddr>(), std::fs::read(body_file)) {
        (Ok(addr), Ok(body)) => (addr, Bytes::from(body)),
        (Err(err), _) => return fail(&format!("bad address {addr}: {err}")),
        (_, Err(err)) => return fail(&format!("cannot read {}: {err}", body_file.display())),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&format!("runtime: {err}")),
    };
    match runtime.block_on(accept_loop(addr, body)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&err.to_string()),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("baseline server: {message}");
    ExitCode::FAILURE
}

async fn accept_loop(addr: SocketAddr, body: Bytes) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                let mut response = Response::new(Full::new(body.clone()));
                let headers = response.headers_mut();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                headers.insert("x-cache", HeaderValue::from_static("hit"));
                headers.insert("x-gateway-outcome", HeaderValue::from_static("cache_hit"));
                async move { Ok::<_, Infallible>(response) }
            });
            // A connection error is the client going away at the end of a run.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
