//! The HTTP mechanics every premium call shares, written once: the configured origin with the
//! upstream's own path and query, the adapter's headers plus the key where its [`Auth`] says
//! (marked sensitive, so the HTTP stack never prints it), one timeout over the whole exchange
//! (headers and body), the shared body cap, and transport errors classified without reading their
//! text. Search adapters ([`super::client`]) and page readers ([`super::readers`]) both call
//! through it.
//!
//! Secrets stay out of logs: nothing here logs, and its `Debug` shows the origin and timeout only.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use url::Url;

use super::api::{ApiRequest, Auth, Method};
use super::ApiKey;
use gateway_core::upstream::{
    classify_transport, read_body_capped, ErrorClass, UpstreamError, UpstreamHttp, BODY_CAP,
};

/// One complete answer.
#[derive(Debug)]
pub(crate) struct Exchanged {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// A premium API's origin, key and timeout, over the upstream HTTP client.
pub(crate) struct KeyedHttp {
    http: UpstreamHttp,
    base_url: Url,
    timeout: Duration,
    key: ApiKey,
}

impl KeyedHttp {
    /// Calls to `base_url` with `key`, each bounded by `timeout`.
    pub(crate) fn new(http: UpstreamHttp, base_url: Url, timeout: Duration, key: ApiKey) -> Self {
        Self {
            http,
            base_url,
            timeout,
            key,
        }
    }

    /// The call timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `api_req` with the key where `auth` says and reads the whole answer, within the
    /// timeout (and `limit`, when shorter). `status` is filled in as soon as the headers arrive,
    /// so a log line can name it even when the body then fails.
    pub(crate) async fn call(
        &self,
        auth: Auth,
        api_req: &ApiRequest,
        status: &mut Option<u16>,
    ) -> Result<Exchanged, UpstreamError> {
        self.call_within(auth, api_req, self.timeout, status).await
    }

    /// [`KeyedHttp::call`] bounded by `limit` when it is shorter than the timeout.
    pub(crate) async fn call_within(
        &self,
        auth: Auth,
        api_req: &ApiRequest,
        limit: Duration,
        status: &mut Option<u16>,
    ) -> Result<Exchanged, UpstreamError> {
        tokio::time::timeout(
            self.timeout.min(limit),
            self.exchange(auth, api_req, status),
        )
        .await
        .unwrap_or_else(|_| Err(UpstreamError::new(ErrorClass::Timeout)))
    }

    async fn exchange(
        &self,
        auth: Auth,
        api_req: &ApiRequest,
        status: &mut Option<u16>,
    ) -> Result<Exchanged, UpstreamError> {
        let mut builder = match api_req.method {
            Method::Get => self.http.get().get(self.url(api_req)),
            Method::Post => self.http.get().post(self.url(api_req)),
        }
        .headers(self.headers(auth, api_req)?);
        if let Some(body) = &api_req.body {
            let bytes =
                serde_json::to_vec(body).map_err(|_| UpstreamError::new(ErrorClass::BadRequest))?;
            builder = builder.body(bytes);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| UpstreamError::new(classify_transport(&e)))?;
        let code = response.status().as_u16();
        *status = Some(code);
        let headers = response.headers().clone();
        let body = read_body_capped(response, BODY_CAP)
            .await
            .map_err(UpstreamError::new)?;
        Ok(Exchanged {
            status: code,
            headers,
            body,
        })
    }

    /// The configured origin with the provider's own path and query.
    pub(crate) fn url(&self, api_req: &ApiRequest) -> Url {
        let mut url = self.base_url.clone();
        url.set_path(api_req.path);
        url.set_query(None);
        if !api_req.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(api_req.query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// The adapter's headers plus the key where `auth` says, marked sensitive so the HTTP stack
    /// never prints it. A key that cannot travel in a header is an auth failure.
    pub(crate) fn headers(
        &self,
        auth: Auth,
        api_req: &ApiRequest,
    ) -> Result<HeaderMap, UpstreamError> {
        let mut map = HeaderMap::with_capacity(api_req.headers.len() + 1);
        for (name, value) in &api_req.headers {
            map.insert(static_name(name)?, HeaderValue::from_static(value));
        }
        let (name, value) = match auth {
            Auth::Header(name) => (static_name(name)?, HeaderValue::from_str(self.key.expose())),
            Auth::Bearer => (
                AUTHORIZATION,
                HeaderValue::from_str(&format!("Bearer {}", self.key.expose())),
            ),
            Auth::Scheme(scheme) => (
                AUTHORIZATION,
                HeaderValue::from_str(&format!("{scheme} {}", self.key.expose())),
            ),
        };
        let mut value = value.map_err(|_| UpstreamError::new(ErrorClass::Auth))?;
        value.set_sensitive(true);
        map.insert(name, value);
        Ok(map)
    }
}

impl fmt::Debug for KeyedHttp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedHttp")
            .field("base_url", &self.base_url.as_str())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Header names adapters declare are static lower-case literals; anything else is our bug.
fn static_name(name: &'static str) -> Result<HeaderName, UpstreamError> {
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| UpstreamError::new(ErrorClass::BadRequest))
}
