//! Crawls and batch scrapes through Firecrawl's doors (issue #43): a crawl follows the site's
//! links and sitemap in scope, honours `robots.txt` (the blocked URL listed in its errors), stops
//! at its limit, holds a calendar (not a forum's numbered topics) to the trap guard; its status
//! pages its documents; a cancel ends it; a batch reads its list; one
//! client never sees another's job; what a crawl cannot honour is refused by name.

use std::io::Write;

use serde_json::{json, Value};
use simulator::site::Page;

use crate::support::gateway::TestGateway;
use crate::support::reading::ReadStack;

const ALICE: &str = "alice-crawl-key-0123456789";
const BOB: &str = "bob-crawl-key-0123456789";

fn article(title: &str, links: &[&str]) -> Page {
    let words = "Notes from the observatory on the hill: the telescopes, the weather, the nights \
        of watching and what was seen, written down for anyone who comes after. "
        .repeat(5);
    let anchors: String = links
        .iter()
        .map(|href| format!(" <a href=\"{href}\">{href}</a>"))
        .collect();
    Page::html(format!(
        "<html><head><title>{title}</title></head><body><article><h1>{title}</h1>\
         <p>{words}{anchors}</p><p>{words}</p></article></body></html>"
    ))
}

/// A site: `/` links to `/docs/a`, `/docs/b` and `/private/x` (robots.txt disallows it);
/// `/docs/a` links to `/docs/c`; `/docs/b` to another site; the sitemap adds `/docs/d`.
async fn site(vars: &[(&str, &str)]) -> ReadStack {
    let stack = ReadStack::start(&[], vars).await;
    let site = &stack.site;
    let origin = site.origin();
    site.set(
        "/",
        article("Home", &["/docs/a", "/docs/b#part", "/private/x"]),
    );
    site.set("/docs/a", article("A", &["/docs/c?utm_source=x"]));
    site.set("/docs/b", article("B", &["https://elsewhere.example/y"]));
    site.set("/docs/c", article("C", &["/"]));
    site.set("/docs/d", article("D", &[]));
    site.set("/private/x", article("Private", &[]));
    site.set(
        "/robots.txt",
        Page::ok(
            "text/plain",
            format!("User-agent: *\nDisallow: /private\nSitemap: {origin}/sitemap.xml\n"),
        ),
    );
    site.set(
        "/sitemap.xml",
        Page::ok(
            "application/xml",
            format!("<urlset><url><loc>{origin}/docs/d</loc></url></urlset>"),
        ),
    );
    stack
}

fn keys() -> tempfile::NamedTempFile {
    crate::support::keys::keys_file(&[("alice", ALICE, ""), ("bob", BOB, "")])
}

async fn call(
    g: &TestGateway,
    method: reqwest::Method,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let url = if path.starts_with("http") {
        path.to_owned()
    } else {
        format!("{}{path}", g.url)
    };
    let mut request = g.http.request(method, url);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the gateway answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Polls the job at `status_url` until it is no longer scraping; its last status.
async fn finished(g: &TestGateway, status_url: &str, key: Option<&str>) -> Value {
    crate::support::wait::until("the crawl to end", || async move {
        let (_, answer) = call(g, reqwest::Method::GET, status_url, key, None).await;
        answer["status"] != "scraping"
    })
    .await;
    call(g, reqwest::Method::GET, status_url, key, None).await.1
}

fn source_urls(status: &Value) -> Vec<String> {
    let mut urls: Vec<String> = status["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| {
            d["metadata"]["sourceURL"]
                .as_str()
                .expect("sourceURL")
                .to_owned()
        })
        .collect();
    urls.sort();
    urls
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crawl_follows_links_and_sitemap_in_scope_and_honours_robots() {
    let stack = site(&[]).await;
    let g = &stack.gateway;
    let origin = stack.site.origin();
    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v2/crawl",
        None,
        Some(json!({"url": format!("{origin}/"), "scrapeOptions": {"formats": ["markdown", "links"]}})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let status_url = started["url"].as_str().expect("url").to_owned();
    assert!(
        status_url.ends_with(&format!("/firecrawl/v2/crawl/{id}")),
        "{status_url}"
    );
    let done = finished(g, &status_url, None).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        source_urls(&done),
        [
            format!("{origin}/"),
            format!("{origin}/docs/a"),
            format!("{origin}/docs/b"),
            format!("{origin}/docs/c"),
            format!("{origin}/docs/d"),
        ]
    );
    assert_eq!(done["completed"], 5);
    let first = &done["data"].as_array().expect("data")[0];
    assert!(first["markdown"]
        .as_str()
        .expect("markdown")
        .contains("observatory"));
    assert!(first["links"].is_array());
    // robots.txt: never read, listed as blocked.
    assert_eq!(stack.site.hits("/private/x"), 0);
    let (_, errors) = call(
        g,
        reqwest::Method::GET,
        &format!("/firecrawl/v2/crawl/{id}/errors"),
        None,
        None,
    )
    .await;
    assert_eq!(
        errors["robotsBlocked"],
        json!([format!("{origin}/private/x")])
    );
    // Each page read once.
    assert_eq!(stack.site.hits("/docs/a"), 1);
    // explain=1: what the gateway did with the job and why.
    let (_, explained) = call(
        g,
        reqwest::Method::GET,
        &format!("{status_url}?explain=1"),
        None,
        None,
    )
    .await;
    let why = &explained["gateway"];
    assert_eq!(why["runs"], "process", "{why}");
    assert_eq!(why["asked"]["start"], format!("{origin}/"));
    assert_eq!(why["asked"]["formats"], json!(["markdown"]));
    assert_eq!(
        (
            why["urls"]["read"].as_u64(),
            why["urls"]["robots_blocked"].as_u64()
        ),
        (Some(5), Some(1)),
        "{why}"
    );
    assert!(why["held_to"]["max_pages"].as_u64() >= Some(1));
    assert!(why["reads"]
        .as_str()
        .is_some_and(|r| r.contains("premium budget allows")));
    assert!(done.get("gateway").is_none(), "only when asked");

    // A limit stops it.
    let (_, small) = call(
        g,
        reqwest::Method::POST,
        "/v2/crawl",
        None,
        Some(json!({"url": format!("{origin}/"), "limit": 2, "sitemap": "skip"})),
    )
    .await;
    let done = finished(g, small["url"].as_str().expect("url"), None).await;
    assert_eq!(done["completed"], 2, "{done}");
    assert!(
        done["data"][0].get("links").is_none(),
        "links only when asked"
    );
}

/// The trap guard takes a path shape with its dates as placeholders: a calendar's months, linked
/// from the home page, stop at `MAX_PER_PATTERN`; a forum's numbered topics, more of them than
/// that, are each a shape of their own and all read.
#[tokio::test(flavor = "multi_thread")]
async fn a_calendar_is_held_to_the_trap_guard_and_a_forums_numbered_topics_are_all_read() {
    const TOPICS: usize = 250;
    const MONTHS: usize = 300;
    let cap = gateway_engine::crawl::scope::MAX_PER_PATTERN;
    assert!(TOPICS.min(MONTHS) > cap, "both past the cap");
    let stack = ReadStack::start(&[], &[]).await;
    let site = &stack.site;
    let origin = site.origin();
    let month = |n: usize| format!("/events/{}/{:02}/", 2000 + n / 12, n % 12 + 1);
    let months: Vec<String> = (0..MONTHS).map(month).collect();
    let mut home: Vec<&str> = vec!["/forum"];
    home.extend(months.iter().map(String::as_str));
    site.set("/", article("Home", &home));
    let topics: Vec<String> = (0..TOPICS).map(|i| format!("/t/{}", 48_000 + i)).collect();
    let topic_links: Vec<&str> = topics.iter().map(String::as_str).collect();
    site.set("/forum", article("Forum", &topic_links));
    for (i, topic) in topics.iter().enumerate() {
        site.set(topic, article(&format!("Topic {i}"), &["/forum"]));
    }
    for (i, path) in months.iter().enumerate() {
        site.set(path, article(&format!("Month {i}"), &["/"]));
    }
    let g = &stack.gateway;
    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v2/crawl",
        None,
        Some(json!({"url": format!("{origin}/"), "limit": 1000, "sitemap": "skip"})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let done = finished(g, started["url"].as_str().expect("url"), None).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["completed"],
        2 + TOPICS + cap,
        "home, forum, every topic and the calendar's cap"
    );
    assert!(topics.iter().all(|topic| site.hits(topic) == 1));
    let months_read = months.iter().filter(|path| site.hits(path) == 1).count();
    assert_eq!(months_read, cap, "the calendar held to the trap guard");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_reads_its_list_and_a_job_is_its_clients_alone() {
    let keys = keys();
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let stack = site(&[("API_KEYS_FILE", path.as_str())]).await;
    let g = &stack.gateway;
    let origin = stack.site.origin();
    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v2/batch/scrape",
        Some(ALICE),
        Some(
            json!({"urls": [format!("{origin}/docs/a"), format!("{origin}/docs/c"), "not a url"],
            "ignoreInvalidURLs": true, "formats": ["html"]}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["invalidURLs"], json!(["not a url"]));
    let status_url = started["url"].as_str().expect("url").to_owned();
    let done = finished(g, &status_url, Some(ALICE)).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(
        source_urls(&done),
        [format!("{origin}/docs/a"), format!("{origin}/docs/c")]
    );
    assert!(done["data"][0]["html"].is_string() && done["data"][0].get("markdown").is_none());
    // Bob cannot see, cancel or list Alice's job.
    let (status, _) = call(g, reqwest::Method::GET, &status_url, Some(BOB), None).await;
    assert_eq!(status, 404);
    let (status, _) = call(g, reqwest::Method::DELETE, &status_url, Some(BOB), None).await;
    assert_eq!(status, 404);
    let (status, _) = call(
        g,
        reqwest::Method::GET,
        &format!("{status_url}/errors"),
        Some(BOB),
        None,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_ends_a_crawl_and_what_it_cannot_honour_is_refused() {
    let stack = site(&[("CRAWL_CONCURRENCY", "1")]).await;
    let g = &stack.gateway;
    let origin = stack.site.origin();
    // A delay of a minute between two reads on the host: the crawl waits after its first page.
    let (_, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v1/crawl",
        None,
        Some(json!({"url": format!("{origin}/"), "delay": 60, "ignoreSitemap": true})),
    )
    .await;
    let status_url = started["url"].as_str().expect("url").to_owned();
    assert!(status_url.contains("/firecrawl/v1/crawl/"), "{status_url}");
    let (status, cancelled) = call(g, reqwest::Method::DELETE, &status_url, None, None).await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled"))
    );
    let done = finished(g, &status_url, None).await;
    assert_eq!(done["status"], "cancelled");
    assert!(done["completed"].as_u64().expect("completed") <= 1);
    for body in [
        json!({"url": format!("{origin}/"), "prompt": "only the docs"}),
        json!({"url": format!("{origin}/"), "ignoreRobotsTxt": true}),
        json!({"url": format!("{origin}/"), "webhook": "https://hooks.example/x"}),
        json!({"url": format!("{origin}/"), "includePaths": ["(unclosed"]}),
    ] {
        let (status, refused) = call(
            g,
            reqwest::Method::POST,
            "/firecrawl/v2/crawl",
            None,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(refused["success"], false);
    }
    let (status, _) = call(
        g,
        reqwest::Method::GET,
        "/firecrawl/v2/crawl/no-such-job",
        None,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

/// What a receiver got: each POST's signature header and body, in order.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A loopback receiver of webhooks: every POST's signature header and JSON body, in order.
pub(crate) struct Receiver {
    pub(crate) url: String,
    got: Received,
}

impl Receiver {
    pub(crate) async fn start(ip: &str) -> Self {
        use axum::routing::post;
        let got: Received = Default::default();
        let kept = std::sync::Arc::clone(&got);
        let app = axum::Router::new().route(
            "/hook",
            post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| async move {
                    let signature = headers
                        .get("x-firecrawl-signature")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    kept.lock().expect("lock").push((signature, body.to_vec()));
                    "ok"
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind(format!("{ip}:0"))
            .await
            .expect("bind the receiver");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("http://{addr}/hook"),
            got,
        }
    }

    pub(crate) fn events(&self) -> Vec<(String, Value)> {
        self.got
            .lock()
            .expect("lock")
            .iter()
            .map(|(sig, body)| (sig.clone(), serde_json::from_slice(body).expect("JSON")))
            .collect()
    }

    pub(crate) fn raw(&self) -> Vec<(String, Vec<u8>)> {
        self.got.lock().expect("lock").clone()
    }
}

fn hmac_hex(key: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    hex::encode(ring::hmac::sign(&key, body).as_ref())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crawls_webhook_gets_each_event_signed_with_its_clients_own_secret() {
    let keys = keys();
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let stack = site(&[
        ("API_KEYS_FILE", path.as_str()),
        ("CRAWL_WEBHOOK_SECRET", "operator-webhook-secret-0123456789"),
    ])
    .await;
    let g = &stack.gateway;
    let origin = stack.site.origin();
    let receiver = Receiver::start("127.0.0.1").await;

    // Each client reads its own secret.
    let (status, alice_secret) = call(
        g,
        reqwest::Method::GET,
        "/v1/webhook-secret",
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(status, 200, "{alice_secret}");
    let secret = alice_secret["secret"].as_str().expect("secret").to_owned();
    let (_, bob_secret) = call(
        g,
        reqwest::Method::GET,
        "/v1/webhook-secret",
        Some(BOB),
        None,
    )
    .await;
    assert_ne!(bob_secret["secret"].as_str(), Some(secret.as_str()));
    assert_eq!(
        call(g, reqwest::Method::GET, "/v1/webhook-secret", None, None)
            .await
            .0,
        401
    );

    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/v2/crawl",
        Some(ALICE),
        Some(
            json!({"url": format!("{origin}/"), "limit": 3, "sitemap": "skip",
            "webhook": {"url": receiver.url, "headers": {"X-Team": "docs"},
                        "metadata": {"run": 7}}}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    finished(g, started["url"].as_str().expect("url"), Some(ALICE)).await;
    // started, three pages, completed: sent in the background, so waited for.
    crate::support::wait::until("five webhook events", || {
        let n = receiver.raw().len();
        async move { n >= 5 }
    })
    .await;
    let events = receiver.events();
    let types: Vec<&str> = events
        .iter()
        .map(|(_, e)| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types.first(), Some(&"crawl.started"), "{types:?}");
    assert_eq!(
        types.iter().filter(|t| **t == "crawl.page").count(),
        3,
        "{types:?}"
    );
    assert!(types.contains(&"crawl.completed"), "{types:?}");
    for (_, event) in &events {
        assert_eq!(event["id"], id.as_str());
        assert_eq!(event["metadata"], json!({"run": 7}));
    }
    let page = events
        .iter()
        .find(|(_, e)| e["type"] == "crawl.page")
        .expect("a page");
    assert!(page.1["data"][0]["markdown"]
        .as_str()
        .expect("markdown")
        .contains("observatory"));
    // Every body signed with Alice's secret, Firecrawl's way.
    for (signature, body) in receiver.raw() {
        assert_eq!(
            signature,
            format!("sha256={}", hmac_hex(secret.as_bytes(), &body))
        );
    }
    let metrics = g.metrics_text().await;
    assert!(
        crate::support::gateway::metric_value(
            &metrics,
            "searxng_gateway_crawl_webhooks_total",
            &[("event", "page"), ("outcome", "delivered")]
        ) >= 3.0,
        "{metrics}"
    );

    // What a webhook cannot be: a header the gateway signs with, an unknown event.
    for webhook in [
        json!({"url": receiver.url, "headers": {"X-Firecrawl-Signature": "forged"}}),
        json!({"url": receiver.url, "events": ["finished"]}),
        json!("file:///etc/passwd"),
    ] {
        let (status, refused) = call(
            g,
            reqwest::Method::POST,
            "/v2/crawl",
            Some(ALICE),
            Some(json!({"url": format!("{origin}/"), "webhook": webhook})),
        )
        .await;
        assert_eq!(status, 400, "{refused}");
        assert!(
            refused["error"]
                .as_str()
                .expect("error")
                .contains("webhook"),
            "{refused}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_behind_the_fence_or_without_a_secret_is_refused_by_name() {
    // The site is on 127.0.0.1 (allowed); the receiver on 127.0.0.2, which the fence refuses.
    let stack = site(&[
        ("FETCH_ALLOW_PRIVATE", "127.0.0.1/32"),
        ("CRAWL_WEBHOOK_SECRET", "operator-webhook-secret-0123456789"),
    ])
    .await;
    let g = &stack.gateway;
    let origin = stack.site.origin();
    let fenced = Receiver::start("127.0.0.2").await;
    let (status, refused) = call(
        g,
        reqwest::Method::POST,
        "/v2/crawl",
        None,
        Some(json!({"url": format!("{origin}/"), "webhook": fenced.url})),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    let error = refused["error"].as_str().expect("error");
    assert!(
        error.contains("webhook.url") && error.contains("forbidden_address"),
        "{error}"
    );
    assert!(
        fenced.raw().is_empty(),
        "nothing reached the fenced address"
    );

    let plain = site(&[]).await;
    let receiver = Receiver::start("127.0.0.1").await;
    let (status, refused) = call(
        &plain.gateway,
        reqwest::Method::POST,
        "/v2/batch/scrape",
        None,
        Some(json!({"urls": [format!("{}/", plain.site.origin())], "webhook": receiver.url})),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .expect("error")
            .contains("CRAWL_WEBHOOK_SECRET"),
        "{refused}"
    );
    let (status, _) = call(
        &plain.gateway,
        reqwest::Method::GET,
        "/v1/webhook-secret",
        None,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_lists_every_clients_crawls_and_cancels_one_with_the_admin_token() {
    const ADMIN: &str = "crawl-admin-token-0123456789";
    let keys = keys();
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let stack = site(&[
        ("API_KEYS_FILE", path.as_str()),
        ("ADMIN_TOKEN", ADMIN),
        ("CRAWL_CONCURRENCY", "1"),
    ])
    .await;
    let g = &stack.gateway;
    let origin = stack.site.origin();
    // A minute between two reads on the host: Alice's crawl waits after its first page.
    let (_, started) = call(
        g,
        reqwest::Method::POST,
        "/v2/crawl",
        Some(ALICE),
        Some(json!({"url": format!("{origin}/"), "delay": 60, "sitemap": "skip"})),
    )
    .await;
    let id = started["id"].as_str().expect("id").to_owned();

    let (status, listed) = call(g, reqwest::Method::GET, "/admin/crawls", Some(ADMIN), None).await;
    assert_eq!(status, 200, "{listed}");
    let job = listed["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["id"] == id.as_str())
        .cloned()
        .expect("Alice's job is listed");
    assert_eq!(
        (
            job["owner"].as_str(),
            job["status"].as_str(),
            job["kind"].as_str()
        ),
        (Some("alice"), Some("scraping"), Some("crawl")),
        "{job}"
    );
    // A client's key is not the admin token.
    assert_eq!(
        call(g, reqwest::Method::GET, "/admin/crawls", Some(ALICE), None)
            .await
            .0,
        401
    );

    // The operator's page lists it: to the admin token and to Alice, not to Bob.
    let listed_to = |key: &'static str| {
        let id = id.clone();
        async move {
            let (_, overview) =
                call(g, reqwest::Method::GET, "/ui/api/overview", Some(key), None).await;
            overview["crawls"]
                .as_array()
                .expect("crawls")
                .iter()
                .any(|j| j["id"] == id.as_str())
        }
    };
    assert!(listed_to(ADMIN).await);
    assert!(listed_to(ALICE).await);
    assert!(
        !listed_to(BOB).await,
        "another client's crawl is not on Bob's page"
    );

    let cancel = format!("/admin/crawls/{id}/cancel");
    let (status, cancelled) = call(g, reqwest::Method::POST, &cancel, Some(ADMIN), None).await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled")),
        "{cancelled}"
    );
    let (_, seen) = call(
        g,
        reqwest::Method::GET,
        &format!("/v2/crawl/{id}"),
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(
        seen["status"], "cancelled",
        "Alice sees the operator's cancel: {seen}"
    );
    let (status, _) = call(
        g,
        reqwest::Method::POST,
        "/admin/crawls/no-such-job/cancel",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(status, 404);
}

/// Each page a job reads is one of its client's requests: a client allowed four a minute that
/// starts a batch of six pages (one request) has three pages read and is then over its rate — its
/// next search is refused (429) while another client searches on. Without the count, all six pages
/// would be read and the search answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_crawls_pages_count_against_its_clients_rate() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for (name, key, rate) in [("alice", ALICE, ":4"), ("bob", BOB, "")] {
        let line = searxng_gateway::clients::keys_file::hash_line(name, key).expect("valid");
        writeln!(file, "{line}{rate}").expect("write");
    }
    let path = file.path().to_str().expect("utf-8").to_owned();
    let stack = site(&[("API_KEYS_FILE", path.as_str())]).await;
    let g = &stack.gateway;
    let pages: Vec<String> = (1..=6).map(|i| format!("/batch/{i}")).collect();
    for page in &pages {
        stack.site.set(page, article(page, &[]));
    }
    let urls: Vec<String> = pages.iter().map(|p| stack.site.url(p)).collect();
    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v2/batch/scrape",
        Some(ALICE),
        Some(json!({"urls": urls})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let read = || pages.iter().map(|p| stack.site.hits(p)).sum::<usize>();
    crate::support::wait::until("three of the batch's pages to be read", || {
        let n = read();
        async move { n >= 3 }
    })
    .await;
    let search = |key: &'static str| {
        g.http
            .get(format!("{}/search?q=rate&format=json", g.url))
            .bearer_auth(key)
            .send()
    };
    let alice = search(ALICE).await.expect("the gateway answers");
    assert_eq!(
        alice.status().as_u16(),
        429,
        "the batch's pages spent Alice's rate ({} pages read)",
        read()
    );
    assert!(alice.headers().contains_key("retry-after"));
    let bob = search(BOB).await.expect("the gateway answers");
    assert_eq!(
        bob.status().as_u16(),
        200,
        "another client's rate is its own"
    );
}

/// The reaper (#43): a job that reads or fails no page for `CRAWL_STALL_SECONDS` ends `failed` —
/// here a batch whose client's rate (two a minute) is spent by its start and its first page, so
/// its second page waits; in this process, and shared on Redis (where the reaper waits at least
/// the claim time, 2 × `FETCH_TIMEOUT_SECONDS` + 5 s, before it calls a job stalled). Without it
/// the job would wait until `CRAWL_MAX_SECONDS`.
async fn a_job_without_progress_is_ended_by_the_reaper(redis_url: Option<String>) {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    let line = searxng_gateway::clients::keys_file::hash_line("alice", ALICE).expect("valid");
    writeln!(file, "{line}:2").expect("write");
    let path = file.path().to_str().expect("utf-8").to_owned();
    let mut vars = vec![
        ("API_KEYS_FILE", path.as_str()),
        ("CRAWL_STALL_SECONDS", "1"),
        ("FETCH_TIMEOUT_SECONDS", "1"),
    ];
    if let Some(url) = &redis_url {
        vars.push(("REDIS_URL", url.as_str()));
    }
    let stack = site(&vars).await;
    let g = &stack.gateway;
    let urls: Vec<String> = ["/docs/a", "/docs/b", "/docs/c"]
        .iter()
        .map(|p| stack.site.url(p))
        .collect();
    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v2/batch/scrape",
        Some(ALICE),
        Some(json!({"urls": urls})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    crate::support::wait::until("the reaper to end the job", || async move {
        g.metric("searxng_gateway_crawl_stalled_jobs_total", &[])
            .await
            >= 1.0
    })
    .await;
    assert_eq!(
        g.metric(
            "searxng_gateway_crawl_jobs_total",
            &[("kind", "batch"), ("status", "failed")]
        )
        .await,
        1.0,
        "ended failed"
    );
    crate::support::wait::until("its workers to stop", || async move {
        g.metric("searxng_gateway_crawl_jobs_running", &[]).await == 0.0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_without_progress_is_ended_by_the_reaper_in_this_process() {
    a_job_without_progress_is_ended_by_the_reaper(None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shared_job_without_progress_is_ended_by_the_reaper() {
    crate::support::external::needs!(RedisServer);
    let redis = crate::support::redis::RedisServer::start().await;
    a_job_without_progress_is_ended_by_the_reaper(Some(redis.url())).await;
}

/// A page of a job the direct reader cannot read (a wall) goes to a premium reader while its
/// client's premium budget allows — here one call a day — and the call is charged to the client;
/// past the budget the next such page fails instead of spending more.
#[tokio::test(flavor = "multi_thread")]
async fn a_jobs_walled_pages_go_to_a_premium_reader_within_its_clients_budget() {
    use simulator::readers::Reader;
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    let line = searxng_gateway::clients::keys_file::hash_line("alice", ALICE).expect("valid");
    writeln!(file, "{line}:0:1").expect("write");
    let path = file.path().to_str().expect("utf-8").to_owned();
    let stack = ReadStack::start(&[Reader::Jina], &[("API_KEYS_FILE", path.as_str())]).await;
    let g = &stack.gateway;
    for path in ["/wall/1", "/wall/2"] {
        stack.site.set(path, Page::cloudflare_challenge());
    }
    let urls = [stack.site.url("/wall/1"), stack.site.url("/wall/2")];
    let (status, started) = call(
        g,
        reqwest::Method::POST,
        "/firecrawl/v2/batch/scrape",
        Some(ALICE),
        Some(json!({"urls": urls, "maxConcurrency": 1})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let status_url = started["url"].as_str().expect("url").to_owned();
    let done = finished(g, &status_url, Some(ALICE)).await;
    assert_eq!(
        done["completed"], 1,
        "one page through the premium reader: {done}"
    );
    let (_, errors) = call(
        g,
        reqwest::Method::GET,
        &format!("{status_url}/errors"),
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(
        errors["errors"].as_array().map(Vec::len),
        Some(1),
        "the other failed, the budget spent: {errors}"
    );
    assert_eq!(
        stack.reader(Reader::Jina).calls(),
        1,
        "one premium call, no more"
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_client_premium_calls_total",
            &[("client", "alice")]
        )
        .await,
        1.0,
        "charged to the job's client"
    );
}
