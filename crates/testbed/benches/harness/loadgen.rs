//! The load generator: N keep-alive HTTP/1.1 connections on hyper 1's client, each sending its next
//! request as soon as the previous answer's body is read, for a fixed time or number of requests.
//! Every latency (request written → body read) goes into one [`Histogram`]; any status other than
//! 200 and any transport error counts as an error (a broken connection is reopened).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderMap, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::histogram::Histogram;

/// Any failure of one request.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The path of request number `n` (0-based, shared by every connection).
pub(crate) type PathOf = Arc<dyn Fn(u64) -> String + Send + Sync>;

/// A path that is the same for every request.
pub(crate) fn fixed(path: &str) -> PathOf {
    let path = path.to_owned();
    Arc::new(move |_| path.clone())
}

/// What to send, where, for how long.
pub(crate) struct Load {
    /// The server.
    pub addr: SocketAddr,
    /// Concurrent keep-alive connections.
    pub connections: usize,
    /// Stop sending after this long.
    pub duration: Duration,
    /// Stop after this many requests in total, if sooner.
    pub max_requests: Option<u64>,
    /// The path of each request.
    pub path: PathOf,
}

/// What a load run measured.
#[derive(Default)]
pub(crate) struct LoadReport {
    /// Answers with status 200.
    pub ok: u64,
    /// Other statuses and transport errors.
    pub errors: u64,
    /// The first error, for the report.
    pub first_error: Option<String>,
    /// From the first request to the last answer.
    pub elapsed: Duration,
    /// Latency of every answered request.
    pub latency: Histogram,
    /// Body bytes received.
    pub body_bytes: u64,
    /// Answers other than 200 that the run tolerates ([`run_tolerating`]), by status.
    pub tolerated: std::collections::BTreeMap<u16, u64>,
}

/// Which non-200 answers a run counts as expected rather than as errors.
pub(crate) type Tolerate = fn(&Answer) -> bool;

/// Sees every answer as it arrives (a measurement that counts answers by what they say).
pub(crate) type Observe = Arc<dyn Fn(&Answer) + Send + Sync>;

impl LoadReport {
    /// Successful answers per second.
    pub(crate) fn throughput(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn error(&mut self, what: String) {
        self.errors += 1;
        self.first_error.get_or_insert(what);
    }

    /// Adds another run's counts (not its elapsed time).
    pub(crate) fn merge(&mut self, other: LoadReport) {
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latency.merge(&other.latency);
        self.body_bytes += other.body_bytes;
        for (status, count) in other.tolerated {
            *self.tolerated.entry(status).or_default() += count;
        }
    }
}

/// Runs `load` to its end; every answer but a 200 is an error.
pub(crate) async fn run(load: &Load) -> LoadReport {
    run_tolerating(load, |_| false).await
}

/// Runs `load` to its end; a non-200 answer `tolerate` accepts is counted in
/// [`LoadReport::tolerated`], not as an error.
pub(crate) async fn run_tolerating(load: &Load, tolerate: Tolerate) -> LoadReport {
    run_observed(load, tolerate, Arc::new(|_| {})).await
}

/// [`run_tolerating`], showing every answer to `observe` too.
pub(crate) async fn run_observed(load: &Load, tolerate: Tolerate, observe: Observe) -> LoadReport {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + load.duration;
    let mut connections = JoinSet::new();
    for _ in 0..load.connections {
        connections.spawn(connection(
            load.addr,
            Arc::clone(&load.path),
            Arc::clone(&next),
            deadline,
            load.max_requests,
            tolerate,
            Arc::clone(&observe),
        ));
    }
    let mut report = LoadReport::default();
    while let Some(done) = connections.join_next().await {
        match done {
            Ok(part) => report.merge(part),
            Err(err) => report.error(format!("load task failed: {err}")),
        }
    }
    report.elapsed = started.elapsed();
    report
}

async fn connection(
    addr: SocketAddr,
    path_of: PathOf,
    next: Arc<AtomicU64>,
    deadline: Instant,
    max_requests: Option<u64>,
    tolerate: Tolerate,
    observe: Observe,
) -> LoadReport {
    let mut report = LoadReport::default();
    let mut sender: Option<SendRequest<Empty<Bytes>>> = None;
    while Instant::now() < deadline {
        let number = next.fetch_add(1, Ordering::Relaxed);
        if max_requests.is_some_and(|max| number >= max) {
            break;
        }
        let path = path_of(number);
        let mut open = match sender.take() {
            Some(open) => open,
            None => match connect(addr).await {
                Ok(open) => open,
                Err(err) => {
                    report.error(format!("connect: {err}"));
                    // A refused connection returns at once: do not spin through the run.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let sent = Instant::now();
        match send(&mut open, addr, &path).await {
            Ok(answer) => {
                report.latency.record(sent.elapsed());
                observe(&answer);
                report.body_bytes += answer.body.len() as u64;
                if answer.status == 200 {
                    report.ok += 1;
                } else if tolerate(&answer) {
                    *report.tolerated.entry(answer.status).or_default() += 1;
                } else {
                    report.error(format!("{path}: status {}", answer.status));
                }
                sender = Some(open);
            }
            Err(err) => report.error(format!("{path}: {err}")),
        }
    }
    report
}

/// One answer.
pub(crate) struct Answer {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

/// Opens a keep-alive connection (TCP_NODELAY, as every server under test uses).
pub(crate) async fn connect(addr: SocketAddr) -> Result<SendRequest<Empty<Bytes>>, BoxError> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // Ends when the sender is dropped or the server closes; either is the run's business.
        let _ = connection.await;
    });
    Ok(sender)
}

/// Sends `GET path` on an open connection and reads the whole answer.
pub(crate) async fn send(
    sender: &mut SendRequest<Empty<Bytes>>,
    addr: SocketAddr,
    path: &str,
) -> Result<Answer, BoxError> {
    sender.ready().await?;
    let request = Request::get(path)
        .header(HOST, addr.to_string())
        .body(Empty::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await?.to_bytes();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// One request on a fresh connection.
pub(crate) async fn get(addr: SocketAddr, path: &str) -> Result<Answer, BoxError> {
    let mut sender = connect(addr).await?;
    send(&mut sender, addr, path).await
}

/// Opens `count` connections, then sends `GET path` on all of them at the same moment; the
/// statuses (or errors) come back in connection order.
pub(crate) async fn burst(addr: SocketAddr, path: &str, count: usize) -> Vec<Result<u16, String>> {
    let mut senders = Vec::with_capacity(count);
    for _ in 0..count {
        match connect(addr).await {
            Ok(sender) => senders.push(sender),
            Err(err) => return vec![Err(format!("connect: {err}"))],
        }
    }
    let gate = Arc::new(tokio::sync::Barrier::new(count));
    let mut requests = JoinSet::new();
    for (index, mut sender) in senders.into_iter().enumerate() {
        let gate = Arc::clone(&gate);
        let path = path.to_owned();
        requests.spawn(async move {
            gate.wait().await;
            let status = send(&mut sender, addr, &path)
                .await
                .map(|answer| answer.status)
                .map_err(|err| err.to_string());
            (index, status)
        });
    }
    let mut statuses = vec![Err("not run".to_owned()); count];
    while let Some(done) = requests.join_next().await {
        if let Ok((index, status)) = done {
            statuses[index] = status;
        }
    }
    statuses
}
