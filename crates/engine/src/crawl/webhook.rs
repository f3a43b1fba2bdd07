//! A job's webhook (Firecrawl's `webhook`): the events it asked for — `started`, `page` (each page
//! read), `completed`, `failed` — POSTed as JSON to its URL through the same address fence as
//! every read (resolved and checked when the job starts, and again at each delivery, redirects
//! not followed), signed, off the job's path (a slow receiver never slows the crawl), tried up to
//! [`ATTEMPTS`] times on a transport failure or a 5xx.
//!
//! Signature, as Firecrawl's: `X-Firecrawl-Signature: sha256=<hex HMAC-SHA256 of the body>`,
//! keyed with the client's own secret — HMAC-SHA256 of the client's name under
//! `CRAWL_WEBHOOK_SECRET` ([`client_secret`]), which the client reads at `GET /v1/webhook-secret`
//! with its key, so one client's secret signs nothing of another's. Without
//! `CRAWL_WEBHOOK_SECRET` webhooks are refused by name at the door.
//!
//! The body: `{"success", "type": "crawl.started" | "crawl.page" | "crawl.completed" |
//! "crawl.failed" (`batch_scrape.*` for a batch), "id", "data", "metadata", "error"}` — `data`
//! the page read (Markdown and its `metadata`) for a page event, empty otherwise; `metadata` the
//! client's own, as it sent it.
//!
//! HMAC is `ring`'s (already the TLS stack's): nothing hand-written but the body's assembly.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use url::Url;

use super::metrics::{CrawlMetrics, Delivery};
use super::{CrawledPage, JobKind, WebhookEvent};
use crate::read::Reading;
use crate::settings::WebhookSecret;
use gateway_core::request::ReadFormat;

/// Deliveries tried at most per event.
pub(crate) const ATTEMPTS: usize = 3;
/// One delivery's time.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries in flight at most in this process (more wait their turn).
const IN_FLIGHT: usize = 16;
/// Headers a webhook may carry at most, and their size.
pub const MAX_HEADERS: usize = 20;
/// The longest header value (and name) taken.
pub const MAX_HEADER_CHARS: usize = 1024;
/// The most bytes of `metadata` (as JSON) taken.
pub const MAX_METADATA_BYTES: usize = 4096;
/// Headers a client may not set: the transport's and the signature's own.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "x-firecrawl-signature",
];

/// Why a webhook was refused at the door.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookRefusal {
    /// `CRAWL_WEBHOOK_SECRET` is unset.
    #[error("webhook: this gateway signs no webhooks (its operator has not set CRAWL_WEBHOOK_SECRET); poll the status URL")]
    NoSecret,
    /// A header the gateway sets itself, or too many or too long.
    #[error("webhook.headers: {0}")]
    Header(String),
    /// `metadata` over [`MAX_METADATA_BYTES`].
    #[error("webhook.metadata: at most {MAX_METADATA_BYTES} bytes of JSON")]
    Metadata,
    /// The URL is not one the gateway may send to (not http(s), or behind the address fence).
    #[error("webhook.url: the gateway may not send to that address ({0})")]
    Fenced(&'static str),
}

/// A job's webhook, as a door read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    /// Where events go.
    #[serde(with = "url_text")]
    pub url: Url,
    /// Headers sent with each (the client's, checked).
    pub headers: BTreeMap<String, String>,
    /// The client's own, sent back with each event.
    pub metadata: Value,
    /// The events asked for.
    pub events: Vec<WebhookEvent>,
}

impl Webhook {
    /// Checks what a door read: headers a client may set, their number and size, the metadata's
    /// size.
    pub fn check(&self) -> Result<(), WebhookRefusal> {
        if self.headers.len() > MAX_HEADERS {
            return Err(WebhookRefusal::Header(format!(
                "at most {MAX_HEADERS} headers"
            )));
        }
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(WebhookRefusal::Header(format!(
                    "{lower} is set by the gateway"
                )));
            }
            if name.len() > MAX_HEADER_CHARS
                || value.len() > MAX_HEADER_CHARS
                || HeaderName::from_bytes(name.as_bytes()).is_err()
                || HeaderValue::from_str(value).is_err()
            {
                return Err(WebhookRefusal::Header(format!(
                    "{:?} is not a header this gateway sends",
                    name.chars().take(40).collect::<String>()
                )));
            }
        }
        if serde_json::to_vec(&self.metadata).map_or(true, |m| m.len() > MAX_METADATA_BYTES) {
            return Err(WebhookRefusal::Metadata);
        }
        Ok(())
    }

    fn wants(&self, event: WebhookEvent) -> bool {
        self.events.contains(&event)
    }
}

/// A URL kept as its text (in a shared job's record).
mod url_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use url::Url;

    pub(super) fn serialize<S: Serializer>(url: &Url, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str(url.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Url, D::Error> {
        let text = String::deserialize(from)?;
        Url::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Client `owner`'s webhook secret (hex): HMAC-SHA256 of `webhook:<owner>` under
/// `CRAWL_WEBHOOK_SECRET`.
pub fn client_secret(secret: &WebhookSecret, owner: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.expose());
    hex::encode(ring::hmac::sign(&key, format!("webhook:{owner}").as_bytes()).as_ref())
}

/// The signature header's value of `body` for a client whose secret is `client_secret`.
pub fn signature(client_secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, client_secret.as_bytes());
    format!(
        "sha256={}",
        hex::encode(ring::hmac::sign(&key, body).as_ref())
    )
}

/// Sends jobs' events. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Deliveries {
    reading: Reading,
    secret: Option<WebhookSecret>,
    metrics: CrawlMetrics,
    turns: Arc<Semaphore>,
}

impl Deliveries {
    pub(crate) fn new(
        reading: Reading,
        secret: Option<WebhookSecret>,
        metrics: CrawlMetrics,
    ) -> Self {
        Self {
            reading,
            secret,
            metrics,
            turns: Arc::new(Semaphore::new(IN_FLIGHT)),
        }
    }

    /// Whether webhooks are signed here (`CRAWL_WEBHOOK_SECRET` is set).
    pub(crate) fn enabled(&self) -> bool {
        self.secret.is_some()
    }

    /// Client `owner`'s secret, when webhooks are signed here.
    pub(crate) fn client_secret(&self, owner: &str) -> Option<String> {
        self.secret.as_ref().map(|s| client_secret(s, owner))
    }

    /// Checks `webhook` before its job starts: signed here, headers and metadata, the URL
    /// through the fence.
    pub(crate) async fn admit(&self, webhook: &Webhook) -> Result<(), WebhookRefusal> {
        if self.secret.is_none() {
            return Err(WebhookRefusal::NoSecret);
        }
        webhook.check()?;
        self.reading
            .check_fence(&webhook.url)
            .await
            .map_err(|failure| WebhookRefusal::Fenced(failure.code()))
    }

    /// Sends `event` of job `id` (of `owner`, a `kind`) to `webhook` in the background, if it
    /// asked for it; `page` is the page of a page event.
    pub(crate) fn send(
        &self,
        webhook: &Webhook,
        owner: &str,
        kind: JobKind,
        id: &str,
        event: WebhookEvent,
        page: Option<&CrawledPage>,
    ) {
        let Some(secret) = self.client_secret(owner) else {
            return;
        };
        if !webhook.wants(event) {
            return;
        }
        let family = match kind {
            JobKind::Crawl => "crawl",
            JobKind::Batch => "batch_scrape",
        };
        let data: Vec<Value> = page.map(page_document).into_iter().collect();
        let body = json!({
            "success": event != WebhookEvent::Failed,
            "type": format!("{family}.{}", event.as_str()),
            "id": id,
            "data": data,
            "metadata": webhook.metadata,
            "error": (event == WebhookEvent::Failed).then_some("the job read no page"),
        });
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut headers = HeaderMap::new();
        for (name, value) in &webhook.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.insert(name, value);
            }
        }
        if let Ok(value) = HeaderValue::from_str(&signature(&secret, &body)) {
            headers.insert(signature_header(), value);
        }
        let url = webhook.url.clone();
        let this = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            let Ok(_turn) = this.turns.acquire().await else {
                return;
            };
            let outcome = this.deliver(&url, body, headers).await;
            this.metrics.webhook(event, outcome);
            if outcome != Delivery::Delivered {
                tracing::info!(job = %id, event = event.as_str(), outcome = outcome.as_str(), "webhook not delivered");
            }
        });
    }

    async fn deliver(&self, url: &Url, body: Vec<u8>, headers: HeaderMap) -> Delivery {
        let mut backoff = Duration::from_secs(1);
        for attempt in 1..=ATTEMPTS {
            match self
                .reading
                .post_json(url, body.clone(), headers.clone(), DELIVERY_TIMEOUT)
                .await
            {
                Ok(status) if (200..300).contains(&status) => return Delivery::Delivered,
                Ok(status) if status < 500 => return Delivery::Refused,
                Err(failure) if failure.code() == "forbidden_address" => return Delivery::Fenced,
                _ if attempt < ATTEMPTS => {
                    tokio::time::sleep(backoff).await;
                    backoff *= 4;
                }
                _ => {}
            }
        }
        Delivery::Failed
    }
}

fn signature_header() -> HeaderName {
    static NAME: OnceLock<HeaderName> = OnceLock::new();
    NAME.get_or_init(|| HeaderName::from_static("x-firecrawl-signature"))
        .clone()
}

/// A page as a webhook's `data` carries it: its Markdown and metadata.
fn page_document(page: &CrawledPage) -> Value {
    let mut doc = serde_json::Map::new();
    if let Some((_, read)) = page
        .reads
        .iter()
        .find(|(format, _)| *format == ReadFormat::Markdown)
    {
        doc.insert("markdown".into(), Value::from(read.content.as_str()));
    }
    if let Some((_, first)) = page.reads.first() {
        doc.insert(
            "metadata".into(),
            json!({
                "sourceURL": page.url,
                "url": first.final_url,
                "title": first.title,
            }),
        );
    }
    Value::Object(doc)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn webhook() -> Webhook {
        Webhook {
            url: Url::parse("https://hooks.example/crawl").unwrap(),
            headers: BTreeMap::from([("X-Team".to_owned(), "docs".to_owned())]),
            metadata: json!({"run": 7}),
            events: WebhookEvent::ALL.to_vec(),
        }
    }

    #[test]
    fn each_client_has_its_own_secret_and_the_signature_is_firecrawls() {
        let env_secret = WebhookSecret::for_tests("operator-secret-0123456789");
        let alice = client_secret(&env_secret, "alice");
        assert_ne!(alice, client_secret(&env_secret, "bob"));
        assert_eq!(alice.len(), 64);
        let signed = signature(&alice, b"{\"type\":\"crawl.page\"}");
        assert!(
            signed.starts_with("sha256=") && signed.len() == 7 + 64,
            "{signed}"
        );
        assert_ne!(signed, signature(&alice, b"{\"type\":\"crawl.started\"}"));
    }

    #[test]
    fn headers_the_gateway_sets_and_oversized_parts_are_refused() {
        assert_eq!(webhook().check(), Ok(()));
        let mut signed = webhook();
        signed
            .headers
            .insert("X-Firecrawl-Signature".into(), "forged".into());
        assert!(matches!(signed.check(), Err(WebhookRefusal::Header(_))));
        let mut many = webhook();
        for i in 0..=MAX_HEADERS {
            many.headers.insert(format!("X-{i}"), "v".into());
        }
        assert!(matches!(many.check(), Err(WebhookRefusal::Header(_))));
        let mut broken = webhook();
        broken.headers.insert("X-Line".into(), "a\r\nb".into());
        assert!(matches!(broken.check(), Err(WebhookRefusal::Header(_))));
        let mut big = webhook();
        big.metadata = json!({"blob": "x".repeat(MAX_METADATA_BYTES)});
        assert_eq!(big.check(), Err(WebhookRefusal::Metadata));
    }

    #[test]
    fn events_are_firecrawls_words() {
        for event in WebhookEvent::ALL {
            assert_eq!(WebhookEvent::parse(event.as_str()), Some(event));
        }
        assert_eq!(WebhookEvent::parse("finished"), None);
    }
}
