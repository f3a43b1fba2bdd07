//! Misbehaviour below the API: what a broken network, a proxy in front, a crashed process or a bot wall
//! does to an upstream's answers, the same for SearXNG and every premium fake. These are the columns of
//! the gateway's fault matrix ([`Fault::MATRIX`]) and what the soak cycles through; a fake serves one with
//! `SearxngMode::Fault` or `ProviderBehaviour::Fault`.
//!
//! Status faults answer like the proxy or firewall in front would (an HTML block page, nginx's 502), not in
//! the provider's own error format: those are the provider behaviours' job. Every body a fault sends carries
//! [`BODY_MARKER`], so a test can prove no upstream body reaches a client or a log line.
//!
//! Two faults act on connections (the fakes' accept loop, [`crate::transport`], applies them):
//! [`Fault::RefuseConnections`] resets every connection at once (the closest a listening port comes to
//! refusing; a test that needs a true refusal points the gateway at a port where nothing listens), and
//! [`Fault::AcceptThenHang`] accepts and never reads. A request on a connection opened before the fault
//! began is reset, or never answered, the same way.

use std::io;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::sync::watch;

use crate::transport::Connection;

/// Text inside every body a fault sends.
pub const BODY_MARKER: &str = "sim-fault-body-6b1f";

/// Size of [`Fault::HugeBody`] in the matrix: 20 MB, over any sane cap on an upstream body.
pub const MATRIX_HUGE_BYTES: usize = 20_000_000;

/// How one upstream misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 403 with an HTML block page (a firewall in front).
    Forbidden,
    /// 429 with `Retry-After`.
    RateLimited {
        /// The `Retry-After` value, in seconds.
        retry_after_secs: u64,
    },
    /// 500 with a JSON error body.
    ServerError,
    /// 502 with nginx's HTML error page (the upstream behind the proxy is down).
    BadGatewayHtml,
    /// Every connection is reset as soon as it is accepted (and a request on an older one is reset).
    RefuseConnections,
    /// 200, half of a JSON body, then the connection is reset (TCP RST).
    ResetMidBody,
    /// Connections are accepted and never read (a request on an older one is never answered).
    AcceptThenHang,
    /// 200 `application/json` whose body is not JSON.
    Garbage,
    /// 200 with an HTML page where JSON belongs (a CAPTCHA wall).
    HtmlPage,
    /// 200 with valid JSON of this many bytes, sent chunked.
    HugeBody {
        /// Body size in bytes.
        bytes: usize,
    },
    /// 200 declaring the full `Content-Length`, sending half, then closing the connection.
    TruncatedBody,
    /// 200 with a JSON body sent one byte at a time.
    Trickle {
        /// The pause before each byte.
        every: Duration,
    },
}

impl Fault {
    /// The fault matrix: every way an upstream misbehaves that the gateway must survive.
    pub const MATRIX: [Fault; 12] = [
        Fault::Forbidden,
        Fault::RateLimited {
            retry_after_secs: 30,
        },
        Fault::ServerError,
        Fault::BadGatewayHtml,
        Fault::RefuseConnections,
        Fault::ResetMidBody,
        Fault::AcceptThenHang,
        Fault::Garbage,
        Fault::HtmlPage,
        Fault::HugeBody {
            bytes: MATRIX_HUGE_BYTES,
        },
        Fault::TruncatedBody,
        Fault::Trickle {
            every: Duration::from_millis(100),
        },
    ];

    /// A short name (`reset_mid_body`).
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Forbidden => "forbidden",
            Fault::RateLimited { .. } => "rate_limited",
            Fault::ServerError => "server_error",
            Fault::BadGatewayHtml => "bad_gateway_html",
            Fault::RefuseConnections => "refuse_connections",
            Fault::ResetMidBody => "reset_mid_body",
            Fault::AcceptThenHang => "accept_then_hang",
            Fault::Garbage => "garbage",
            Fault::HtmlPage => "html_page",
            Fault::HugeBody { .. } => "huge_body",
            Fault::TruncatedBody => "truncated_body",
            Fault::Trickle { .. } => "trickle",
        }
    }

    /// What the accept loop does with a new connection while this fault is on.
    pub(crate) fn on_accept(&self) -> Option<OnAccept> {
        match self {
            Fault::RefuseConnections => Some(OnAccept::Reset),
            Fault::AcceptThenHang => Some(OnAccept::Hang),
            _ => None,
        }
    }
}

/// A connection-level fault at accept time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnAccept {
    /// Reset it at once.
    Reset,
    /// Hold it without reading until the fake stops.
    Hang,
}

/// The answer to one request while `fault` is on. `connection` is the request's connection (to reset
/// it); `stopping` turns `true` when the fake is dropped (ends a hang).
pub(crate) async fn respond(
    fault: Fault,
    connection: Option<&Connection>,
    mut stopping: watch::Receiver<bool>,
) -> Response {
    match fault {
        Fault::Forbidden => page(
            StatusCode::FORBIDDEN,
            "403 Forbidden",
            "Access denied by the firewall.",
        ),
        Fault::RateLimited { retry_after_secs } => {
            let mut response = json(
                StatusCode::TOO_MANY_REQUESTS,
                format!(r#"{{"error":"too many requests","detail":"{BODY_MARKER}"}}"#),
            );
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs));
            response
        }
        Fault::ServerError => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(r#"{{"error":"internal server error","detail":"{BODY_MARKER}"}}"#),
        ),
        Fault::BadGatewayHtml => page(StatusCode::BAD_GATEWAY, "502 Bad Gateway", "nginx"),
        Fault::RefuseConnections => {
            if let Some(connection) = connection {
                connection.reset();
            }
            failing_body(Vec::new(), None)
        }
        Fault::AcceptThenHang => {
            let _ = stopping.wait_for(|stopped| *stopped).await;
            failing_body(Vec::new(), None)
        }
        Fault::ResetMidBody => {
            let body = document(4096);
            let half = body.slice(..body.len() / 2);
            failing_body(vec![half], connection.cloned())
        }
        Fault::Garbage => (
            StatusCode::OK,
            [(CONTENT_TYPE, "application/json")],
            format!("<<{BODY_MARKER}>> \u{0}\u{1}{{{{ not json"),
        )
            .into_response(),
        Fault::HtmlPage => page(
            StatusCode::OK,
            "Just a moment...",
            "Checking your browser before accessing. Please complete the CAPTCHA.",
        ),
        Fault::HugeBody { bytes } => {
            let body = document(bytes);
            let chunks: Vec<Result<Bytes, io::Error>> = (0..body.len())
                .step_by(64 * 1024)
                .map(|start| Ok(body.slice(start..(start + 64 * 1024).min(body.len()))))
                .collect();
            (
                StatusCode::OK,
                [(CONTENT_TYPE, "application/json")],
                Body::from_stream(futures::stream::iter(chunks)),
            )
                .into_response()
        }
        Fault::TruncatedBody => {
            let body = document(4096);
            let declared = body.len();
            let mut response = failing_body(vec![body.slice(..declared / 2)], None);
            response
                .headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(declared));
            response
        }
        Fault::Trickle { every } => {
            let body = document(2048);
            let bytes = futures::stream::iter(0..body.len()).then(move |i| {
                let byte = body.slice(i..=i);
                async move {
                    tokio::time::sleep(every).await;
                    Ok::<Bytes, io::Error>(byte)
                }
            });
            (
                StatusCode::OK,
                [(CONTENT_TYPE, "application/json")],
                Body::from_stream(bytes),
            )
                .into_response()
        }
    }
}

/// A JSON document of at least `bytes` bytes (results padded with the marker). Documents are built
/// once per size: a soak asks for a 20 MB body many times a second.
fn document(bytes: usize) -> Bytes {
    static BUILT: std::sync::Mutex<Vec<(usize, Bytes)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, document)) = built.iter().find(|(size, _)| *size == bytes) {
        return document.clone();
    }
    let document = build_document(bytes);
    built.push((bytes, document.clone()));
    document
}

fn build_document(bytes: usize) -> Bytes {
    let head = format!(
        r#"{{"query":"fault","results":[{{"url":"https://fault.example/1","title":"{BODY_MARKER}","content":"{BODY_MARKER}"}}],"padding":""#
    );
    let tail = r#""}"#;
    let pad = bytes.saturating_sub(head.len() + tail.len());
    let mut text = Vec::with_capacity(head.len() + pad + tail.len());
    text.extend_from_slice(head.as_bytes());
    text.resize(head.len() + pad, b'x');
    text.extend_from_slice(tail.as_bytes());
    Bytes::from(text)
}

/// 200 JSON sending `chunks`, then failing: the connection is closed (reset, when `reset` is given)
/// before the body is complete.
fn failing_body(chunks: Vec<Bytes>, reset: Option<Connection>) -> Response {
    let sent = futures::stream::iter(chunks.into_iter().map(Ok::<Bytes, io::Error>));
    let failure = futures::stream::once(async move {
        // Let what was sent reach the socket before the failure closes it.
        tokio::task::yield_now().await;
        if let Some(connection) = reset {
            connection.reset();
        }
        Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "simulated fault",
        ))
    });
    let mut response = (
        StatusCode::OK,
        [(CONTENT_TYPE, "application/json")],
        Body::from_stream(sent.chain(failure)),
    )
        .into_response();
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}

fn page(status: StatusCode, title: &str, text: &str) -> Response {
    (
        status,
        [(CONTENT_TYPE, "text/html; charset=utf-8")],
        format!(
            "<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n<body><h1>{title}</h1><p>{text}</p>\
             <!-- {BODY_MARKER} --></body></html>\n"
        ),
    )
        .into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::premium::{ProviderBehaviour, SimulatedProvider, SIM_KEY};
    use crate::searxng::{SearxngMode, SimulatedSearxng};
    use crate::Provider;

    async fn exa_with(fault: Fault) -> SimulatedProvider {
        let exa = SimulatedProvider::start(Provider::Exa).await.unwrap();
        exa.set_behaviour(ProviderBehaviour::Fault(fault));
        exa
    }

    async fn search(exa: &SimulatedProvider) -> reqwest::Result<reqwest::Response> {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap()
            .post(format!("{}/search", exa.base_url()))
            .header("x-api-key", SIM_KEY)
            .header("content-type", "application/json")
            .body(r#"{"query":"rust"}"#)
            .send()
            .await
    }

    #[tokio::test]
    async fn status_faults_answer_like_the_proxy_in_front_with_the_marker_in_the_body() {
        for (fault, status, retry_after) in [
            (Fault::Forbidden, 403, None),
            (
                Fault::RateLimited {
                    retry_after_secs: 30,
                },
                429,
                Some("30"),
            ),
            (Fault::ServerError, 500, None),
            (Fault::BadGatewayHtml, 502, None),
            (Fault::Garbage, 200, None),
            (Fault::HtmlPage, 200, None),
        ] {
            let exa = exa_with(fault).await;
            let response = search(&exa).await.unwrap();
            assert_eq!(response.status().as_u16(), status, "{}", fault.name());
            let header = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            assert_eq!(header.as_deref(), retry_after, "{}", fault.name());
            let body = response.text().await.unwrap();
            assert!(body.contains(BODY_MARKER), "{}: {body}", fault.name());
            assert!(serde_json::from_str::<serde_json::Value>(&body).is_err() || status != 200);
        }
    }

    #[tokio::test]
    async fn broken_bodies_fail_the_read_after_a_200() {
        for fault in [Fault::ResetMidBody, Fault::TruncatedBody] {
            let exa = exa_with(fault).await;
            let response = search(&exa).await.unwrap();
            assert_eq!(response.status().as_u16(), 200, "{}", fault.name());
            assert!(
                response.bytes().await.is_err(),
                "{}: the body never completes",
                fault.name()
            );
        }
        let exa = exa_with(Fault::HugeBody { bytes: 300_000 }).await;
        let body = search(&exa).await.unwrap().bytes().await.unwrap();
        assert!(body.len() >= 300_000);
        assert!(
            serde_json::from_slice::<serde_json::Value>(&body).is_ok(),
            "valid JSON"
        );
    }

    #[tokio::test]
    async fn a_trickle_sends_one_byte_at_a_time() {
        let exa = exa_with(Fault::Trickle {
            every: Duration::from_millis(1),
        })
        .await;
        let mut response = search(&exa).await.unwrap();
        for _ in 0..5 {
            let chunk = response.chunk().await.unwrap().unwrap();
            assert_eq!(chunk.len(), 1);
        }
    }

    #[tokio::test]
    async fn refused_and_hanging_connections_never_reach_the_api() {
        let exa = exa_with(Fault::RefuseConnections).await;
        let refused = search(&exa).await.unwrap_err();
        assert!(
            !refused.is_timeout(),
            "reset, not left waiting: {refused:?}"
        );
        let exa = exa_with(Fault::AcceptThenHang).await;
        let hung = search(&exa).await.unwrap_err();
        assert!(hung.is_timeout(), "{hung:?}");
        assert_eq!((exa.calls(), exa.in_flight()), (0, 0), "nothing was read");
    }

    #[tokio::test]
    async fn searxng_serves_a_fault_on_search_while_healthz_keeps_answering() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::Fault(Fault::BadGatewayHtml));
        let client = reqwest::Client::new();
        let search = client
            .get(format!("{}/search?q=x&format=json", searxng.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(search.status().as_u16(), 502);
        assert!(search.text().await.unwrap().contains(BODY_MARKER));
        let health = client
            .get(format!("{}/healthz", searxng.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status().as_u16(), 200);
    }
}
