//! The fence inside the browser: every request a rendered page makes is paused (the DevTools
//! `Fetch` domain, request stage, every URL) and answered here. An `http` or `https` request goes
//! through the direct reader's own client ([`super::super::fetch::Fetcher::exchange`]): the same
//! address policy, the same resolver that connects only to the addresses it checked, the same
//! timeout and body cap — and its answer is handed to the page (`Fetch.fulfillRequest`).
//! Anything else (`file:`, `ftp:`, `chrome:`, …) and any refused address fails inside the page
//! (`Fetch.failRequest`, `BlockedByClient`); a page's requests together may not read more than
//! its byte budget, and at most [`AT_ONCE`] of them are fetched at once. `data:` and `blob:`
//! URLs never reach the network and are not paused.
//!
//! The fence also counts the page's requests in flight: the render waits for them to settle.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::fetch::{
    EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use chromiumoxide::Page;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use super::super::fetch::Fetcher;
use super::super::ReadFailure;
use gateway_core::upstream::ErrorClass;

/// Requests of one page fetched at once; more wait their turn (within their time).
const AT_ONCE: usize = 16;

/// Headers of an answer not handed to the page: the body is already decoded and whole.
const DROPPED: [&str; 4] = [
    "content-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
];

/// One page's fence. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Fence {
    fetcher: Fetcher,
    /// How long one request may take.
    timeout: Duration,
    /// Bytes the page's requests may still read.
    budget: Arc<AtomicU64>,
    /// Requests being answered now.
    in_flight: Arc<AtomicUsize>,
    /// Fetches at once ([`AT_ONCE`]): a page asking for thousands is served a few at a time.
    at_once: Arc<tokio::sync::Semaphore>,
    /// The page's main frame (its documents are the page's own).
    main_frame: Arc<std::sync::OnceLock<String>>,
    /// How the main frame's last document came: [`NO_DOCUMENT`], [`REFUSED`], [`FAILED`], or
    /// its HTTP status.
    document: Arc<AtomicU16>,
}

/// No document of the main frame was asked for yet.
pub(super) const NO_DOCUMENT: u16 = 0;
/// The main frame's document was refused by the policy.
pub(super) const REFUSED: u16 = 1;
/// The main frame's document could not be fetched.
pub(super) const FAILED: u16 = 2;

impl Fence {
    /// A fence fetching with `fetcher`, each request within `timeout`, `budget` bytes in all.
    pub(super) fn new(fetcher: Fetcher, timeout: Duration, budget: u64) -> Self {
        Self {
            fetcher,
            timeout,
            budget: Arc::new(AtomicU64::new(budget)),
            in_flight: Arc::new(AtomicUsize::new(0)),
            at_once: Arc::new(tokio::sync::Semaphore::new(AT_ONCE)),
            main_frame: Arc::new(std::sync::OnceLock::new()),
            document: Arc::new(AtomicU16::new(NO_DOCUMENT)),
        }
    }

    /// The page's main frame, whose documents are watched.
    pub(super) fn watch_frame(&self, frame: &str) {
        let _ = self.main_frame.set(frame.to_owned());
    }

    /// How the main frame's last document came ([`NO_DOCUMENT`], [`REFUSED`], [`FAILED`], or
    /// its HTTP status).
    pub(super) fn document(&self) -> u16 {
        self.document.load(Ordering::Acquire)
    }

    /// Requests being answered now.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Answers one paused request on `page`: fetched and handed over, or failed.
    pub(super) async fn answer(&self, page: &Page, event: &EventRequestPaused) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let answer = match self.at_once.acquire().await {
            Ok(_turn) => self.fetch(event).await,
            Err(_) => Err(ErrorReason::Aborted),
        };
        let main = self
            .main_frame
            .get()
            .is_some_and(|frame| frame.as_str() == AsRef::<str>::as_ref(&event.frame_id));
        if main && event.resource_type == ResourceType::Document {
            let document = match &answer {
                Ok(fulfil) => u16::try_from(fulfil.response_code).unwrap_or(FAILED),
                Err(ErrorReason::BlockedByClient) => REFUSED,
                Err(_) => FAILED,
            };
            self.document.store(document, Ordering::Release);
        }
        let sent = match answer {
            Ok(fulfil) => page.execute(fulfil).await.map(|_| ()),
            Err(reason) => page
                .execute(FailRequestParams::new(event.request_id.clone(), reason))
                .await
                .map(|_| ()),
        };
        if let Err(err) = sent {
            tracing::debug!("a paused request could not be answered: {err}");
        }
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    async fn fetch(&self, event: &EventRequestPaused) -> Result<FulfillRequestParams, ErrorReason> {
        let request = &event.request;
        let url = Url::parse(&request.url).map_err(|_| self.refuse())?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(self.refuse());
        }
        let method =
            reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|_| self.refuse())?;
        let body = request.post_data_entries.as_ref().map(|entries| {
            entries
                .iter()
                .filter_map(|entry| entry.bytes.as_ref())
                .filter_map(|b| {
                    base64::engine::general_purpose::STANDARD
                        .decode(AsRef::<str>::as_ref(b))
                        .ok()
                })
                .flatten()
                .collect::<Vec<u8>>()
        });
        let fetched = self
            .fetcher
            .exchange(
                method,
                &url,
                headers_of(request.headers.inner()),
                body,
                self.timeout,
            )
            .await;
        let fetched = match fetched {
            Ok(fetched) => fetched,
            Err(ReadFailure::ForbiddenAddress | ReadFailure::InvalidUrl) => {
                return Err(self.refuse())
            }
            Err(ReadFailure::Upstream(ErrorClass::Timeout)) => return Err(ErrorReason::TimedOut),
            Err(_) => return Err(ErrorReason::Failed),
        };
        let size = fetched.body.len() as u64;
        let spent = self
            .budget
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(size)
            });
        if spent.is_err() {
            return Err(ErrorReason::BlockedByClient);
        }
        let headers = fetched
            .headers
            .iter()
            .filter(|(name, _)| !DROPPED.contains(&name.as_str()))
            .filter_map(|(name, value)| Some(HeaderEntry::new(name.as_str(), value.to_str().ok()?)))
            .collect::<Vec<_>>();
        FulfillRequestParams::builder()
            .request_id(event.request_id.clone())
            .response_code(i64::from(fetched.status))
            .response_headers(headers)
            .body(base64::engine::general_purpose::STANDARD.encode(&fetched.body))
            .build()
            .map_err(|_| ErrorReason::Failed)
    }

    /// A request the policy (or its scheme) refuses fails inside the page.
    fn refuse(&self) -> ErrorReason {
        ErrorReason::BlockedByClient
    }
}

/// The request's headers as the page's browser would send them (a JSON object of strings).
fn headers_of(value: &serde_json::Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let Some(object) = value.as_object() else {
        return headers;
    };
    for (name, value) in object {
        let (Ok(name), Some(Ok(value))) = (
            HeaderName::from_bytes(name.as_bytes()),
            value.as_str().map(HeaderValue::from_str),
        ) else {
            continue;
        };
        // The client sets its own: the host from the URL, the length from the body.
        if matches!(name.as_str(), "host" | "content-length" | "connection") {
            continue;
        }
        headers.insert(name, value);
    }
    headers
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_pages_headers_are_sent_but_the_host_and_length_are_the_clients() {
        let headers = headers_of(&serde_json::json!({
            "Accept": "application/json",
            "Host": "elsewhere.example",
            "Content-Length": "99",
            "X-Bad": "line\nbreak",
        }));
        assert_eq!(headers.len(), 1);
        assert_eq!(headers["accept"], "application/json");
    }
}
