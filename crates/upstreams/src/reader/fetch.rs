//! One page over HTTP, safely: the reader's own pooled client (its resolver only connects to
//! checked addresses, [`super::resolve`]), gzip, brotli and zstd, redirects followed by hand — at
//! most [`MAX_REDIRECTS`], each hop's scheme, host and addresses checked again before it is
//! contacted — a timeout over the whole read (every hop and the body), and a cap on the bytes read
//! (`FETCH_MAX_BYTES`, counted after decompression while reading, so neither a huge page nor a
//! compression bomb is held in memory).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, ACCEPT_LANGUAGE, CONTENT_TYPE, LOCATION};
use url::Url;

use super::resolve::{GuardedResolver, PinError};
use super::ReadFailure;
use gateway_core::upstream::{classify_transport, read_body_capped, ErrorClass};

/// Redirects followed at most (the sixth is refused).
pub(crate) const MAX_REDIRECTS: usize = 5;

/// What a reader's client sends as `Accept`.
const ACCEPT_PAGES: &str = "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/pdf;q=0.8,application/json;q=0.5,application/xml;q=0.5,*/*;q=0.1";

/// A page as it arrived.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// Where it was read from, after redirects.
    pub(crate) final_url: Url,
    /// Its status.
    pub(crate) status: u16,
    /// Its headers.
    pub(crate) headers: HeaderMap,
    /// Its body, decompressed, at most the cap.
    pub(crate) body: Bytes,
}

impl Fetched {
    /// The `Content-Type` header, if any.
    pub(crate) fn content_type(&self) -> Option<&str> {
        self.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())
    }
}

/// The most of a reply to a POST read (and dropped): a receiver's answer is not wanted.
const POST_REPLY_BYTES: usize = 16 * 1024;

/// The reader's HTTP client.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    resolver: Arc<GuardedResolver>,
    max_bytes: usize,
}

impl Fetcher {
    /// A client that resolves through `resolver`, sends `user_agent`, and reads at most
    /// `max_bytes` of a body.
    pub(crate) fn new(resolver: Arc<GuardedResolver>, user_agent: &str, max_bytes: usize) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_PAGES));
        headers.insert(
            ACCEPT_LANGUAGE,
            HeaderValue::from_static("en;q=0.9, *;q=0.5"),
        );
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::clone(&resolver))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .gzip(true)
            .brotli(true)
            .zstd(true)
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(4)
            .tcp_nodelay(true)
            .user_agent(user_agent)
            .default_headers(headers)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            client,
            resolver,
            max_bytes,
        }
    }

    /// Reads `url`, following redirects, within `timeout`.
    pub(crate) async fn fetch(&self, url: &Url, timeout: Duration) -> Result<Fetched, ReadFailure> {
        tokio::time::timeout(timeout, self.follow(url.clone()))
            .await
            .unwrap_or(Err(ReadFailure::Upstream(ErrorClass::Timeout)))
    }

    /// One request of a page the local browser renders: its method, headers and body, no
    /// redirect followed (the browser follows it, and the next hop comes through the fence
    /// again), the same checks of scheme, host and addresses, within `timeout`, at most the cap.
    pub(crate) async fn exchange(
        &self,
        method: reqwest::Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<Fetched, ReadFailure> {
        let exchange = async {
            self.check(url).await?;
            let mut request = self.client.request(method, url.clone()).headers(headers);
            if let Some(body) = body {
                request = request.body(body);
            }
            let response = request
                .send()
                .await
                .map_err(|err| transport_failure(&err))?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = read_body_capped(response, self.max_bytes)
                .await
                .map_err(ReadFailure::Upstream)?;
            Ok(Fetched {
                final_url: url.clone(),
                status,
                headers,
                body,
            })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(ReadFailure::Upstream(ErrorClass::Timeout)))
    }

    async fn follow(&self, mut url: Url) -> Result<Fetched, ReadFailure> {
        for _ in 0..=MAX_REDIRECTS {
            self.check(&url).await?;
            let response = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(|err| transport_failure(&err))?;
            let status = response.status().as_u16();
            if response.status().is_redirection() {
                let next = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|location| url.join(location).ok());
                // A 3xx without a usable `Location` is the page itself.
                if let Some(next) = next {
                    url = next;
                    continue;
                }
            }
            let headers = response.headers().clone();
            let body = read_body_capped(response, self.max_bytes)
                .await
                .map_err(ReadFailure::Upstream)?;
            return Ok(Fetched {
                final_url: url,
                status,
                headers,
                body,
            });
        }
        Err(ReadFailure::TooManyRedirects)
    }

    /// Sends `body` (JSON) to `url` with `headers` within `timeout`, through the same fence as
    /// a read; a redirect is not followed (its status is the answer). The status; at most
    /// [`POST_REPLY_BYTES`] of the reply are read, and dropped.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: Vec<u8>,
        headers: HeaderMap,
        timeout: Duration,
    ) -> Result<u16, ReadFailure> {
        let send = async {
            self.check(url).await?;
            let response = self
                .client
                .post(url.clone())
                .header(CONTENT_TYPE, "application/json")
                .headers(headers)
                .body(body)
                .send()
                .await
                .map_err(|err| transport_failure(&err))?;
            let status = response.status().as_u16();
            let _ = read_body_capped(response, POST_REPLY_BYTES).await;
            Ok(status)
        };
        tokio::time::timeout(timeout, send)
            .await
            .unwrap_or(Err(ReadFailure::Upstream(ErrorClass::Timeout)))
    }

    /// Whether `url` may be contacted: `http` or `https`, a host the policy allows, and every
    /// address the host has (pinned for the connection).
    pub(crate) async fn check(&self, url: &Url) -> Result<(), ReadFailure> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ReadFailure::InvalidUrl);
        }
        let host = url.host_str().ok_or(ReadFailure::InvalidUrl)?;
        let port = url.port_or_known_default().ok_or(ReadFailure::InvalidUrl)?;
        self.resolver
            .pin(host, port)
            .await
            .map_err(|err| match err {
                PinError::Forbidden(_) => ReadFailure::ForbiddenAddress,
                PinError::Unresolved => ReadFailure::Upstream(ErrorClass::Connect),
            })
    }
}

/// A transport error, classified; a connection the resolver refused is `forbidden_address`.
fn transport_failure(err: &reqwest::Error) -> ReadFailure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if cause.is::<super::address::Forbidden>() {
            return ReadFailure::ForbiddenAddress;
        }
        source = cause.source();
    }
    ReadFailure::Upstream(classify_transport(err))
}
