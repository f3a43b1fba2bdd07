//! The page cache against pages only credentials may read, through the whole read with the real
//! reader against a loopback site that tells a request with credentials from one without
//! (real time: a socket is involved).

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::settings::EngineSettings;
use gateway_core::breaker::BreakerMetrics;
use gateway_core::metrics::Registry;
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
    let lookup = |name: &str| (name == "FETCH_ALLOW_PRIVATE").then(|| "127.0.0.0/8".to_owned());
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
