//! The fakes' accept loop: hyper (HTTP/1.1, TCP_NODELAY) over each accepted connection, with what the
//! connection-level [`Fault`](crate::fault::Fault)s need and `axum::serve` does not give — deciding
//! per connection at accept time (reset it, or hold it unread), and letting a handler reset the
//! connection its request came on ([`Connection::reset`]: `SO_LINGER` 0, so closing sends a TCP RST
//! instead of a FIN). When the fake stops, idle connections close and requests in flight end.
//!
//! It also keeps the fake's own clock of each connection ([`Lifetimes`]): how long the client kept it
//! open before closing it — how a test learns, without timing the client, when the gateway gave up
//! on a hanging or trickling upstream. A connection held unread ([`OnAccept::Hang`]) is drained into
//! the void so its close is seen; it is still never answered.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::{service_fn, Service};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::fault::OnAccept;

/// The connection a request came on, in the request's extensions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection(Arc<AtomicBool>);

impl Connection {
    /// Resets the connection (TCP RST) at its next read or write, or when it closes.
    pub(crate) fn reset(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_reset(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How long clients kept a fake's connections open before closing them, on the fake's own clock:
/// over all connections, and per the path of a connection's first request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lifetimes(Arc<Mutex<LifetimeLog>>);

#[derive(Debug, Default)]
struct LifetimeLog {
    all: LifetimeStats,
    by_path: std::collections::HashMap<String, LifetimeStats>,
}

/// What [`Lifetimes`] has seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LifetimeStats {
    /// Connections the client closed (or that failed), not counting those the fake closed on stopping.
    pub closed: usize,
    /// The longest of those, from accept to close.
    pub longest: Duration,
}

impl LifetimeStats {
    fn add(&mut self, lived: Duration) {
        self.closed += 1;
        self.longest = self.longest.max(lived);
    }
}

impl Lifetimes {
    /// A connection opened at `opened` closed now; `first_path`: its first request's path (none
    /// for a connection that was never read).
    fn record(&self, opened: Instant, first_path: Option<&str>) {
        let lived = opened.elapsed();
        let mut log = self.log();
        log.all.add(lived);
        if let Some(path) = first_path {
            log.by_path.entry(path.to_owned()).or_default().add(lived);
        }
    }

    fn log(&self) -> std::sync::MutexGuard<'_, LifetimeLog> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What was seen so far, over every connection.
    pub(crate) fn stats(&self) -> LifetimeStats {
        self.log().all
    }

    /// What was seen so far of the connections whose first request was for `path`.
    pub(crate) fn stats_of(&self, path: &str) -> LifetimeStats {
        self.log().by_path.get(path).copied().unwrap_or_default()
    }
}

/// Serves `router` on `listener` until `stopping` turns `true`; `on_accept` says what to do with each
/// new connection (`None`: serve it); each connection's lifetime goes to `lifetimes`. The task is the
/// accept loop.
pub(crate) fn spawn(
    listener: TcpListener,
    router: Router,
    on_accept: impl Fn() -> Option<OnAccept> + Send + Sync + 'static,
    stopping: watch::Receiver<bool>,
    lifetimes: Lifetimes,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut stop = stopping.clone();
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // A loopback accept error: nobody to report it to; tests notice refused connections.
                    Err(_) => continue,
                },
                _ = stop.wait_for(|stopped| *stopped) => return,
            };
            let opened = Instant::now();
            match on_accept() {
                Some(OnAccept::Reset) => {
                    let _ = stream.set_zero_linger();
                    drop(stream);
                }
                Some(OnAccept::Hang) => {
                    hold(stream, stopping.clone(), lifetimes.clone(), opened);
                }
                None => serve(
                    stream,
                    router.clone(),
                    stopping.clone(),
                    lifetimes.clone(),
                    opened,
                ),
            }
        }
    })
}

/// Holds a connection without ever answering it, reading what the client sends into the void until
/// the client closes it (recorded, with the path of the request line it sent) or the fake stops.
fn hold(
    mut stream: TcpStream,
    mut stopping: watch::Receiver<bool>,
    lifetimes: Lifetimes,
    opened: Instant,
) {
    tokio::spawn(async move {
        let mut head = Vec::new();
        let mut sink = [0u8; 4096];
        let closed = async {
            while let Ok(n @ 1..) = stream.read(&mut sink).await {
                if head.len() < 1024 {
                    head.extend_from_slice(&sink[..n.min(1024 - head.len())]);
                }
            }
        };
        tokio::select! {
            () = closed => lifetimes.record(opened, request_path(&head)),
            _ = stopping.wait_for(|stopped| *stopped) => {}
        }
    });
}

/// The path of the request line at the start of `head` (`GET /search?q=x HTTP/1.1` → `/search`).
fn request_path(head: &[u8]) -> Option<&str> {
    let line = head.split(|b| *b == b'\n').next()?;
    let target = std::str::from_utf8(line).ok()?.split(' ').nth(1)?;
    target.split('?').next()
}

/// One connection, until the client closes it (recorded) or the fake stops.
fn serve(
    stream: TcpStream,
    router: Router,
    mut stopping: watch::Receiver<bool>,
    lifetimes: Lifetimes,
    opened: Instant,
) {
    let _ = stream.set_nodelay(true);
    let connection = Connection::default();
    let io = TokioIo::new(Controlled {
        stream,
        connection: connection.clone(),
    });
    let app = TowerToHyperService::new(router);
    let first_path: Arc<std::sync::OnceLock<String>> = Arc::default();
    let seen_path = Arc::clone(&first_path);
    let service = service_fn(move |mut req: Request<Incoming>| {
        let _ = seen_path.set(req.uri().path().to_owned());
        req.extensions_mut().insert(connection.clone());
        app.call(req)
    });
    tokio::spawn(async move {
        let served = http1::Builder::new().serve_connection(io, service);
        let mut served = std::pin::pin!(served);
        let stopped = async move {
            let _ = stopping.wait_for(|stopped| *stopped).await;
        };
        tokio::select! {
            _ = served.as_mut() => lifetimes.record(opened, first_path.get().map(String::as_str)),
            () = stopped => {
                served.as_mut().graceful_shutdown();
                let _ = served.await;
            }
        }
    });
}

/// A connection's socket that a handler can have reset.
struct Controlled {
    stream: TcpStream,
    connection: Connection,
}

impl Controlled {
    /// Once reset was asked for: arm the RST and fail, so hyper drops the connection now.
    fn check_reset(&self) -> io::Result<()> {
        if self.connection.is_reset() {
            let _ = self.stream.set_zero_linger();
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "simulated reset",
            ));
        }
        Ok(())
    }
}

impl Drop for Controlled {
    fn drop(&mut self) {
        if self.connection.is_reset() {
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for Controlled {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check_reset()?;
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Controlled {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_reset()?;
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_reset()?;
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_connections_path_comes_from_its_request_line() {
        assert_eq!(
            request_path(b"GET /search?q=x HTTP/1.1\r\nhost: a\r\n"),
            Some("/search")
        );
        assert_eq!(
            request_path(b"POST /v1/search HTTP/1.1"),
            Some("/v1/search")
        );
        assert_eq!(request_path(b""), None);
        assert_eq!(request_path(b"garbage"), None);
    }
}
