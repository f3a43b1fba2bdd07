//! A job as bytes: its request ([`Spec`], patterns as their source), a page and a failure as
//! versioned, zstd-compressed JSON (`crate::packed`), times as unix milliseconds — what a job the fleet shares keeps in Redis
//! ([`super::shared`]) and what a job of this process keeps under `STATE_DIR` ([`super::kept`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use url::Url;

use super::scope;
use super::webhook::Webhook;
use super::{CrawlRequest, CrawlScope, CrawledPage, JobKind, JobStatus};
use crate::packed;
use gateway_core::request::ReadFormat;
use gateway_upstreams::reader::Document;

/// The first bytes of a page or failure blob (`crate::packed`), then its version.
const MAGIC: &[u8; 4] = b"sxgc";
/// A job's request as kept in its record: patterns as their source.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub(crate) kind: String,
    pub(crate) urls: Vec<String>,
    pub(crate) allow_external: bool,
    pub(crate) allow_subdomains: bool,
    pub(crate) include: Vec<String>,
    pub(crate) exclude: Vec<String>,
    pub(crate) on_full_url: bool,
    pub(crate) max_depth: usize,
    pub(crate) ignore_query: bool,
    pub(crate) max_breadth: Option<usize>,
    pub(crate) include_hosts: Vec<String>,
    pub(crate) exclude_hosts: Vec<String>,
    pub(crate) formats: Vec<ReadFormat>,
    pub(crate) limit: usize,
    pub(crate) delay_ms: Option<u64>,
    pub(crate) concurrency: Option<usize>,
    pub(crate) discover_only: bool,
    pub(crate) links: bool,
    pub(crate) markdown: bool,
    #[serde(default)]
    pub(crate) webhook: Option<Webhook>,
}

fn sources(patterns: &[regex::Regex]) -> Vec<String> {
    patterns.iter().map(|p| p.as_str().to_owned()).collect()
}

impl Spec {
    pub(crate) fn of(request: &CrawlRequest) -> Self {
        let s = &request.scope;
        Self {
            kind: request.kind.as_str().to_owned(),
            urls: request.urls.iter().map(Url::to_string).collect(),
            allow_external: s.allow_external,
            allow_subdomains: s.allow_subdomains,
            include: sources(&s.include),
            exclude: sources(&s.exclude),
            on_full_url: s.on_full_url,
            max_depth: s.max_depth,
            ignore_query: s.ignore_query,
            max_breadth: s.max_breadth,
            include_hosts: sources(&s.include_hosts),
            exclude_hosts: sources(&s.exclude_hosts),
            formats: request.formats.clone(),
            limit: request.limit,
            delay_ms: request
                .delay
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            concurrency: request.concurrency,
            discover_only: request.discover_only,
            links: request.links,
            markdown: request.markdown,
            webhook: request.webhook.clone(),
        }
    }

    /// The request back, for `owner` (`None`: a record from another build).
    pub(crate) fn request(&self, owner: &str) -> Option<CrawlRequest> {
        Some(CrawlRequest {
            owner: owner.to_owned(),
            kind: self.kind(),
            urls: self
                .urls
                .iter()
                .map(|u| Url::parse(u).ok())
                .collect::<Option<Vec<_>>>()?,
            scope: self.scope()?,
            formats: self.formats.clone(),
            limit: self.limit,
            delay: self.delay_ms.map(Duration::from_millis),
            concurrency: self.concurrency,
            sitemap: false,
            discover_only: self.discover_only,
            links: self.links,
            markdown: self.markdown,
            webhook: self.webhook.clone(),
        })
    }

    pub(crate) fn kind(&self) -> JobKind {
        if self.kind == "batch" {
            JobKind::Batch
        } else {
            JobKind::Crawl
        }
    }

    /// The scope back (`None`: a pattern no longer compiles — a record from another build).
    pub(crate) fn scope(&self) -> Option<CrawlScope> {
        Some(CrawlScope {
            allow_external: self.allow_external,
            allow_subdomains: self.allow_subdomains,
            include: scope::patterns(&self.include).ok()?,
            exclude: scope::patterns(&self.exclude).ok()?,
            on_full_url: self.on_full_url,
            max_depth: self.max_depth,
            ignore_query: self.ignore_query,
            max_breadth: self.max_breadth,
            include_hosts: scope::patterns(&self.include_hosts).ok()?,
            exclude_hosts: scope::patterns(&self.exclude_hosts).ok()?,
        })
    }
}

/// A page as a job's record keeps it.
#[derive(Serialize, Deserialize)]
pub(crate) struct PageBlob {
    pub(crate) url: String,
    pub(crate) reads: Vec<(ReadFormat, Document)>,
}

/// A page as it is written: a [`PageBlob`]'s JSON, from the documents the read left.
#[derive(Serialize)]
pub(crate) struct PageBlobOf<'a> {
    pub(crate) url: &'a str,
    pub(crate) reads: Vec<(ReadFormat, &'a Document)>,
}

impl PageBlob {
    pub(crate) fn of(page: &CrawledPage) -> Self {
        Self {
            url: page.url.clone(),
            reads: page
                .reads
                .iter()
                .map(|(format, doc)| (*format, (**doc).clone()))
                .collect(),
        }
    }

    pub(crate) fn into_page(self) -> CrawledPage {
        CrawledPage {
            url: self.url,
            reads: self
                .reads
                .into_iter()
                .map(|(format, doc)| (format, Arc::new(doc)))
                .collect(),
        }
    }
}

/// A failure as a job's record keeps it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FailureBlob {
    pub(crate) url: String,
    pub(crate) error: String,
    pub(crate) at_ms: u64,
}

/// `value` as a job's blob: compressed JSON ([`crate::packed`]).
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    packed::pack(MAGIC, value)
}

/// A job's blob, compressed or (written before) plain.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(blob: &[u8]) -> Option<T> {
    packed::unpack(MAGIC, blob)
}

pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

pub(crate) fn status_of(word: &str) -> JobStatus {
    match word {
        "completed" => JobStatus::Completed,
        "failed" => JobStatus::Failed,
        "cancelled" => JobStatus::Cancelled,
        _ => JobStatus::Scraping,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::crawl::WebhookEvent;

    #[test]
    fn a_request_survives_its_record() {
        let request = CrawlRequest {
            owner: "alice".into(),
            kind: JobKind::Crawl,
            urls: vec![Url::parse("http://example.test/docs/").unwrap()],
            scope: CrawlScope {
                allow_external: false,
                allow_subdomains: true,
                include: scope::patterns(&["^/docs/.*".into()]).unwrap(),
                exclude: scope::patterns(&["/private".into()]).unwrap(),
                on_full_url: false,
                max_depth: 3,
                ignore_query: true,
                max_breadth: Some(7),
                include_hosts: Vec::new(),
                exclude_hosts: scope::patterns(&["ads\\.".into()]).unwrap(),
            },
            formats: vec![ReadFormat::Markdown, ReadFormat::Html],
            limit: 40,
            delay: Some(Duration::from_millis(250)),
            concurrency: Some(2),
            sitemap: false,
            discover_only: false,
            links: true,
            markdown: true,
            webhook: Some(Webhook {
                url: Url::parse("https://hooks.example/in").unwrap(),
                headers: std::collections::BTreeMap::new(),
                metadata: serde_json::json!({"run": 7}),
                events: vec![WebhookEvent::Page],
            }),
        };
        let json = serde_json::to_vec(&Spec::of(&request)).unwrap();
        let spec: Spec = serde_json::from_slice(&json).unwrap();
        let scope = spec.scope().unwrap();
        let start = Url::parse("http://example.test/docs/").unwrap();
        let inside = Url::parse("http://example.test/docs/a").unwrap();
        let excluded = Url::parse("http://example.test/docs/private").unwrap();
        assert!(scope.follows(&start, &inside, 1));
        assert!(!scope.follows(&start, &excluded, 1));
        assert!(!scope.follows(&start, &inside, 4));
        assert_eq!(spec.kind(), JobKind::Crawl);
        assert_eq!(spec.delay_ms, Some(250));
        assert_eq!(spec.formats, [ReadFormat::Markdown, ReadFormat::Html]);
        assert_eq!(
            spec.webhook, request.webhook,
            "the webhook goes with the job"
        );
    }

    #[test]
    fn blobs_of_another_version_are_not_read() {
        let blob = encode(&FailureBlob {
            url: "http://a.test/".into(),
            error: "timed out".into(),
            at_ms: 5,
        });
        assert_eq!(decode::<FailureBlob>(&blob).unwrap().at_ms, 5);
        let mut other = blob.clone();
        other[4] = packed::PACKED + 1;
        assert!(decode::<FailureBlob>(&other).is_none());
    }

    #[test]
    fn a_page_is_kept_compressed_and_plain_blobs_are_still_read() {
        let text = "A paragraph of the page, and another like it. ".repeat(400);
        let blob = encode(&FailureBlob {
            url: "http://a.test/".into(),
            error: text.clone(),
            at_ms: 5,
        });
        assert_eq!(blob[..4], *MAGIC);
        assert_eq!(blob[4], packed::PACKED);
        assert_eq!(decode::<FailureBlob>(&blob).unwrap().error, text);
        let mut plain = MAGIC.to_vec();
        plain.push(packed::PLAIN);
        plain.extend(br#"{"url":"http://a.test/","error":"old","at_ms":7}"#);
        assert_eq!(decode::<FailureBlob>(&plain).unwrap().at_ms, 7);
    }
}
