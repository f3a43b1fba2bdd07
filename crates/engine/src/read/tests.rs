//! The read pipeline through its front door (`Reading::read`): the page cache against pages only
//! credentials may read, the outcome counted per read, the host's breaker and slots — with the
//! real reader against a loopback site that tells a request with credentials from one without
//! (real time where a socket is involved; the paused clock where none is).

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use url::Url;

use super::hosts::HostName;
use super::metrics::{ReadLabels, ReadOutcome};
use super::page_key::PageKey;
use super::record::DirectOutcome;
use super::*;
use crate::search::Premium;
use crate::settings::EngineSettings;
use gateway_core::breaker::BreakerMetrics;
use gateway_core::breaker::{BreakerBoard, BreakerPolicy};
use gateway_core::cache::CacheStatus;
use gateway_core::metrics::Registry;
use gateway_core::request::ReadFormat;
use gateway_upstreams::reader::{ReadFailure, Reader};
use gateway_upstreams::reader::{ReaderMetrics, SystemLookup};

const PRIVATE: &str = "alice's private notes: the launch moves to Tuesday";
const PUBLIC: &str = "a public page that anyone may read";

/// A site on loopback whose one page is private to a request carrying credentials; it records
/// whether each request it got carried them.
struct AuthSite {
    origin: String,
    seen: Arc<Mutex<Vec<bool>>>,
    task: tokio::task::JoinHandle<()>,
}

impl AuthSite {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
                    let authorized = head.contains("\r\nauthorization: basic ");
                    log.lock().unwrap().push(authorized);
                    let body = if authorized { PRIVATE } else { PUBLIC };
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { origin, seen, task }
    }

    /// The page's URL, with `userinfo` (`user:password@`) in front of the host.
    fn url(&self, userinfo: &str) -> Url {
        Url::parse(&format!("http://{userinfo}{}/authpage", self.origin)).unwrap()
    }

    /// Whether each request so far carried credentials, in order.
    fn seen(&self) -> Vec<bool> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for AuthSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reading with the real reader (loopback allowed), no premium reader, no shared tier.
fn reading() -> Reading {
    let lookup = |name: &str| match name {
        "FETCH_ALLOW_PRIVATE" => Some("127.0.0.0/8".to_owned()),
        // These tests are about the direct read and its decisions, with or without a Chromium.
        "BROWSER" => Some("off".to_owned()),
        _ => None,
    };
    let settings = EngineSettings::from_lookup(&lookup).unwrap().reader;
    let mut registry = Registry::new();
    let policy = BreakerPolicy {
        open_base: Duration::from_secs(300),
        open_max: Duration::from_secs(3600),
        failure_threshold: 3,
        jitter: 0.0,
        healthy_interval: Duration::from_secs(600),
        quota_park: Duration::from_secs(86_400),
    };
    Reading::new(
        Reader::new(
            &settings,
            Arc::new(SystemLookup),
            ReaderMetrics::new(&mut registry),
        ),
        Vec::new(),
        policy,
        BreakerBoard::new(policy, BreakerMetrics::new(&mut registry)),
        None,
        ReadMetrics::new(&mut registry),
        ReadSettings {
            per_host: 4,
            cache_ttl: Duration::from_secs(600),
            cache_bytes: 1 << 20,
            timeout: Duration::from_secs(10),
            stale: Duration::from_secs(600),
        },
    )
}

fn request(url: Url) -> ReadRequest {
    ReadRequest {
        url,
        format: ReadFormat::Text,
        depth: Depth::Basic,
        freshness: Freshness::Cached,
        render: Render::Auto,
        wait_for: None,
    }
}

/// Reads `url`: its text and cache status.
async fn read(reading: &Reading, url: Url) -> (String, CacheStatus) {
    let read = reading
        .read(request(url), Premium::Allowed, Duration::from_secs(10))
        .await;
    let done = read.result.unwrap();
    (done.document.content.clone(), read.cache)
}

#[tokio::test]
async fn a_page_read_with_credentials_is_never_served_to_a_read_without_them() {
    let site = AuthSite::start().await;
    let reading = reading();
    let (alice, _) = read(&reading, site.url("alice:s3cret@")).await;
    assert_eq!(alice, PRIVATE);
    let (anonymous, cache) = read(&reading, site.url("")).await;
    assert_eq!(
        anonymous, PUBLIC,
        "alice's page is not handed to anyone else"
    );
    assert_eq!(cache, CacheStatus::Miss);
    assert_eq!(site.seen(), [true, false]);
    let (again, cache) = read(&reading, site.url("")).await;
    assert_eq!((again.as_str(), cache), (PUBLIC, CacheStatus::Hit));
    let (user_only, _) = read(&reading, site.url("alice@")).await;
    assert_eq!(
        user_only, PRIVATE,
        "a user without a password is credentials too"
    );
    let (alice_again, cache) = read(&reading, site.url("alice:s3cret@")).await;
    assert_eq!(
        (alice_again.as_str(), cache),
        (PRIVATE, CacheStatus::Miss),
        "read afresh every time, never the public page from the cache"
    );
    assert_eq!(site.seen(), [true, false, true, true]);
}

#[tokio::test]
async fn reads_with_and_without_credentials_in_flight_together_do_not_share_a_read() {
    let site = AuthSite::start().await;
    let reading = reading();
    let ((alice, _), (anonymous, _)) = tokio::join!(
        read(&reading, site.url("alice:s3cret@")),
        read(&reading, site.url(""))
    );
    assert_eq!((alice.as_str(), anonymous.as_str()), (PRIVATE, PUBLIC));
    let mut seen = site.seen();
    seen.sort_unstable();
    assert_eq!(seen, [false, true], "two reads, one each");
}

#[test]
fn a_url_with_credentials_has_no_cache_key_and_the_scheme_is_part_of_the_key() {
    let key = |url: &str| {
        PageKey::new(&request(Url::parse(url).unwrap()), Premium::Allowed).map(|key| key.text)
    };
    assert_eq!(key("https://alice:s3cret@example.org/authpage"), None);
    assert_eq!(key("https://alice@example.org/authpage"), None);
    assert_eq!(key("https://:s3cret@example.org/authpage"), None);
    let https = key("https://example.org/page").unwrap();
    let http = key("http://example.org/page").unwrap();
    assert_ne!(http, https, "http and https may serve different pages");
    assert_eq!(
        key("https://www.Example.org/page/?utm_source=x#top"),
        Some(https),
        "the rest of the canonical URL still folds"
    );
}

/// How many reads `reading` counted with `outcome` in `reads_total`.
fn counted(reading: &Reading, outcome: ReadOutcome) -> u64 {
    reading
        .inner
        .metrics
        .reads
        .get_or_create(&ReadLabels { outcome })
        .get()
}

#[tokio::test]
async fn a_page_read_directly_counts_direct_ok_then_the_next_read_is_a_cache_hit() {
    let site = AuthSite::start().await;
    let reading = reading();
    let (text, cache) = read(&reading, site.url("")).await;
    assert_eq!((text.as_str(), cache), (PUBLIC, CacheStatus::Miss));
    let (_, cache) = read(&reading, site.url("")).await;
    assert_eq!(cache, CacheStatus::Hit);
    assert_eq!(
        site.seen(),
        [false],
        "the second read never reached the site"
    );
    assert_eq!(counted(&reading, ReadOutcome::DirectOk), 1);
    assert_eq!(counted(&reading, ReadOutcome::CacheHit), 1);
}

#[tokio::test]
async fn a_fresh_read_reaches_the_site_and_its_page_answers_the_next_cached_read() {
    let site = AuthSite::start().await;
    let reading = reading();
    read(&reading, site.url("")).await;
    let fresh = ReadRequest {
        freshness: Freshness::Fresh,
        ..request(site.url(""))
    };
    let read_again = reading
        .read(fresh, Premium::Allowed, Duration::from_secs(10))
        .await;
    assert_eq!(read_again.cache, CacheStatus::Miss);
    assert_eq!(
        site.seen(),
        [false, false],
        "the fresh read reached the site"
    );
    let (_, cache) = read(&reading, site.url("")).await;
    assert_eq!(cache, CacheStatus::Hit, "the fresh page is cached again");
    assert_eq!(site.seen().len(), 2);
}

#[tokio::test]
async fn an_open_host_breaker_blocks_the_read_without_sending_anything() {
    let site = AuthSite::start().await;
    let reading = reading();
    let url = site.url("");
    reading
        .host_breakers()
        .get(&HostName::of(&url))
        .force_open(Duration::from_secs(300));
    let read = reading
        .read(request(url), Premium::Allowed, Duration::from_secs(10))
        .await;
    let failed = read.result.unwrap_err();
    assert!(matches!(failed.failure, ReadFailure::Blocked(_)));
    assert!(matches!(
        failed.record.direct.as_ref().map(|d| d.outcome),
        Some(DirectOutcome::HostBreakerOpen)
    ));
    assert!(site.seen().is_empty(), "nothing was sent to the host");
    assert_eq!(counted(&reading, ReadOutcome::Blocked), 1);
}

#[tokio::test]
async fn a_refused_address_is_counted_forbidden_and_never_cached() {
    let reading = reading();
    // Loopback is allowed in these tests; a private network is not.
    let url = Url::parse("http://10.1.2.3/page").unwrap();
    for _ in 0..2 {
        let read = reading
            .read(
                request(url.clone()),
                Premium::Allowed,
                Duration::from_secs(10),
            )
            .await;
        assert_eq!(read.cache, CacheStatus::Miss, "a failure is never kept");
        assert_eq!(
            read.result.unwrap_err().failure,
            ReadFailure::ForbiddenAddress
        );
    }
    assert_eq!(counted(&reading, ReadOutcome::Forbidden), 2);
    assert_eq!(counted(&reading, ReadOutcome::Failed), 0);
}

/// The host's slots taken for the whole budget: the read gives up exactly at its deadline, as a
/// timeout, without reading (the host is never contacted: no socket, so the clock is paused).
#[tokio::test(start_paused = true)]
async fn a_host_whose_slots_stay_taken_fails_as_a_timeout_exactly_at_the_deadline() {
    let reading = reading();
    let url = Url::parse("http://127.0.0.1:9/busy").unwrap();
    let host = HostName::of(&url);
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    let mut held = Vec::new();
    while let Some(slot) = reading.inner.slots.acquire(&host, far).await {
        held.push(slot);
        if held.len() == 4 {
            break;
        }
    }
    assert_eq!(held.len(), 4, "FETCH_PER_HOST_CONCURRENCY in these tests");
    let started = tokio::time::Instant::now();
    let read = reading
        .read(request(url), Premium::Allowed, Duration::from_secs(2))
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    let failed = read.result.unwrap_err();
    assert_eq!(
        failed.failure,
        ReadFailure::Upstream(gateway_core::upstream::ErrorClass::Timeout)
    );
    assert!(matches!(
        failed.record.direct.as_ref().map(|d| d.outcome),
        Some(DirectOutcome::HostBusy)
    ));
    assert_eq!(counted(&reading, ReadOutcome::Failed), 1);
}

#[test]
fn a_client_whose_budget_is_spent_has_reads_of_its_own() {
    let url = Url::parse("https://example.org/page").unwrap();
    let paid = PageKey::new(&request(url.clone()), Premium::Allowed).unwrap();
    let own = PageKey::new(&request(url.clone()), Premium::BudgetSpent).unwrap();
    assert_ne!(paid, own);
    let advanced = ReadRequest {
        depth: Depth::Advanced,
        ..request(url)
    };
    assert_ne!(PageKey::new(&advanced, Premium::Allowed).unwrap(), paid);
}
