//! The client of SearXNG calls: hyper-util's pooled client over rustls, with nothing between the
//! gateway and the connection pool but the request itself.
//!
//! SearXNG is the call every miss makes, so its client does no work a gateway does not need:
//! reqwest (which the premium APIs and page reads keep) turns each `Url` into a `Uri` again, runs
//! its redirect policy, proxy matching and decompression layers, and boxes the body and the
//! future. Here the caller builds the `Uri` once, the request is a `GET` with its headers, and the
//! gateway's own limits stand in for the rest: the attempt timeout and the budget around each call
//! (the caller's `tokio::time::timeout`), the body cap ([`super::read_body_capped`]), redirects
//! reported and never followed (there is no policy to follow them), no proxy from the environment
//! (there is no proxy support), no `Accept-Encoding` (on a local network, decompressing costs more
//! than the bytes it saves), and credentials in the instance's URL sent by the caller as
//! `Authorization: Basic` (this client does not read them from the URL).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, ACCEPT, USER_AGENT};
use hyper::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::ErrorClass;

/// The `User-Agent` of every call.
const AGENT: HeaderValue =
    HeaderValue::from_static(concat!("searxng-gateway/", env!("CARGO_PKG_VERSION")));

/// A pooled keep-alive HTTP/1.1 client for `http://` and `https://` origins (TLS by rustls with the
/// Mozilla roots), TCP_NODELAY. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct LeanHttp {
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
}

impl std::fmt::Debug for LeanHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeanHttp")
    }
}

impl LeanHttp {
    /// A client with a pool of its own; an error when TLS cannot be set up.
    pub(crate) fn new() -> Result<Self, rustls::Error> {
        let mut http = HttpConnector::new();
        // The TLS connector above it takes `https://`; plain `http://` passes through.
        http.enforce_http(false);
        http.set_nodelay(true);
        // A pooled connection a firewall or NAT dropped in silence is found out by the kernel,
        // not by the next search's timeout.
        http.set_keepalive(Some(Duration::from_secs(15)));
        http.set_keepalive_interval(Some(Duration::from_secs(15)));
        http.set_keepalive_retries(Some(3));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(Arc::new(rustls::crypto::ring::default_provider()))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(64)
            .pool_timer(TokioTimer::new())
            .build(https);
        Ok(Self { client })
    }

    /// `GET uri` asking for JSON, with the `extra` headers: the response with its body unread.
    /// `uri` carries no credentials (the caller sends them as a header: this client would drop
    /// them). Not bounded in time — the caller's timeout is. A failure before the response is
    /// [`ErrorClass::Connect`] (refused, reset, closed before the answer, TLS).
    pub async fn get(
        &self,
        uri: Uri,
        extra: impl IntoIterator<Item = (HeaderName, HeaderValue)>,
    ) -> Result<Response<Incoming>, ErrorClass> {
        let mut request = Request::new(Empty::new());
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(USER_AGENT, AGENT);
        for (name, value) in extra {
            headers.insert(name, value);
        }
        self.client
            .request(request)
            .await
            .map_err(|_| ErrorClass::Connect)
    }
}
