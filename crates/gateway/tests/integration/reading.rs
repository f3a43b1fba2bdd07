//! Reading pages through the gateway, end to end: `POST /tavily/extract` against a loopback site
//! serving real pages (the Readability corpus) and pages that misbehave — a redirect chain, a 403,
//! a Cloudflare challenge, a 429, a script shell, a PDF, a trickle, a huge body, a wrong charset —
//! with the simulated premium readers as the fallback; when walls shut a host out (walls on
//! several paths, or a 429 that says how long — never one page's wall); the address policy
//! (nothing private is contacted unless allowed); the page cache, and the Redis tier replicas share
//! it through (pages kept compressed); and `include_raw_content` on `/tavily/search`.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use simulator::readers::{page_text, Reader, ReaderBehaviour};
use simulator::site::{pdf_with_text, Page};

use crate::support::external::needs;
use crate::support::gateway::TestGateway;
use crate::support::reading::{corpus, words, ReadStack};
use crate::support::redis::RedisServer;

/// The share of `expected`'s distinct words found in `got`.
fn recall(got: &str, expected: &str) -> f64 {
    let got: HashSet<String> = words(got).into_iter().collect();
    let expected: HashSet<String> = words(expected).into_iter().collect();
    let found = expected.iter().filter(|w| got.contains(*w)).count();
    found as f64 / expected.len().max(1) as f64
}

#[tokio::test(flavor = "multi_thread")]
async fn extract_reads_real_pages_and_reports_each_failure_apart_in_the_order_sent() {
    let s = ReadStack::start(&[], &[]).await;
    let (source, expected) = corpus("ars-1");
    s.site.set("/ars", Page::html(source));
    s.site.set(
        "/notes.txt",
        Page::ok("text/plain", "Plain notes, kept as they are."),
    );
    let ars = s.site.url("/ars");
    let reply = s
        .extract(
            json!({"urls": [ars, "not a url", s.site.url("/notes.txt"), s.site.url("/missing")], "format": "text"}),
            "",
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let results = reply.json["results"].as_array().expect("a list");
    assert_eq!(results.len(), 2, "{}", reply.json);
    assert_eq!(results[0]["url"], ars, "each url exactly as sent, in order");
    let text = results[0]["raw_content"].as_str().expect("a string");
    assert!(
        recall(text, &expected) > 0.95,
        "the article's words are read"
    );
    assert!(!text.contains("<p>"), "plain text, not markup");
    assert_eq!(results[1]["raw_content"], "Plain notes, kept as they are.");
    let failed = reply.json["failed_results"].as_array().expect("a list");
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0]["url"], "not a url");
    assert_eq!(failed[1]["url"], s.site.url("/missing"));
    assert!(
        failed[1]["error"]
            .as_str()
            .expect("a string")
            .contains("404"),
        "{}",
        failed[1]
    );
    assert!(reply.json["response_time"].as_f64().is_some());
    assert_eq!(s.reads("direct_ok").await, 2.0);
    assert_eq!(s.reads("failed").await, 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn markdown_keeps_the_articles_structure_and_images_are_listed_when_asked() {
    let s = ReadStack::start(&[], &[]).await;
    let (source, _) = corpus("mozilla-1");
    s.site.set("/moz", Page::html(source));
    let reply = s
        .extract(
            json!({"urls": s.site.url("/moz"), "include_images": true}),
            "",
        )
        .await;
    let result = &reply.json["results"][0];
    let markdown = result["raw_content"].as_str().expect("a string");
    assert!(
        markdown.lines().any(|l| l.starts_with('#')),
        "headings in Markdown"
    );
    assert!(markdown.contains("]("), "links in Markdown");
    assert!(result["images"].as_array().is_some());
    let plain = s.extract(json!({"urls": s.site.url("/moz")}), "").await;
    assert_eq!(
        plain.json["results"][0]["images"],
        json!([]),
        "images only when asked"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_chain_is_followed_five_hops_and_a_sixth_is_refused() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set(
        "/end",
        Page::ok("text/plain", "the end of the chain, finally reached"),
    );
    for hop in 1..=5 {
        let next = if hop == 5 {
            "/end".to_owned()
        } else {
            format!("/r{}", hop + 1)
        };
        s.site.set(&format!("/r{hop}"), Page::redirect(next));
    }
    s.site.set("/r0", Page::redirect("/r1"));
    let five = s.extract(json!({"urls": s.site.url("/r1")}), "").await;
    assert_eq!(
        five.json["results"][0]["raw_content"],
        "the end of the chain, finally reached"
    );
    let six = s.extract(json!({"urls": s.site.url("/r0")}), "").await;
    assert!(six.json["failed_results"][0]["error"]
        .as_str()
        .expect("a string")
        .contains("redirects"));
}

#[tokio::test(flavor = "multi_thread")]
async fn one_forbidden_page_does_not_shut_out_the_other_pages_of_its_host() {
    let s = ReadStack::start(&[], &[]).await;
    s.site
        .set("/private", Page::status(403, "<h1>Forbidden</h1>"));
    s.site.set(
        "/article",
        Page::ok("text/plain", "another page of the same host, readable"),
    );
    let blocked = s
        .extract(json!({"urls": s.site.url("/private")}), "?explain=1")
        .await;
    let failed = &blocked.json["failed_results"][0];
    assert_eq!(
        failed["gateway"]["read"]["direct"]["wall"], "forbidden",
        "{failed}"
    );
    let next = s
        .extract(json!({"urls": s.site.url("/article")}), "?explain=1")
        .await;
    let result = &next.json["results"][0];
    assert_eq!(
        result["raw_content"], "another page of the same host, readable",
        "{}",
        next.json
    );
    assert_eq!(result["gateway"]["read"]["direct"]["outcome"], "ok");
    assert_eq!(s.site.hits("/article"), 1);
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_read_host_breakers_open", &[])
            .await,
        0.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn walls_on_three_paths_of_a_host_open_its_breaker_and_it_is_not_asked_again_meanwhile() {
    let s = ReadStack::start(&[], &[("BREAKER_OPEN_SECONDS", "300")]).await;
    for path in ["/challenge", "/challenge-2", "/challenge-3"] {
        s.site.set(path, Page::cloudflare_challenge());
    }
    s.site.set(
        "/other",
        Page::ok("text/plain", "another page of the same host"),
    );
    let blocked = s
        .extract(json!({"urls": s.site.url("/challenge")}), "?explain=1")
        .await;
    let failed = &blocked.json["failed_results"][0];
    assert!(
        failed["error"]
            .as_str()
            .expect("a string")
            .contains("cloudflare"),
        "{failed}"
    );
    assert_eq!(failed["gateway"]["read"]["direct"]["outcome"], "blocked");
    assert_eq!(failed["gateway"]["read"]["direct"]["wall"], "cloudflare");
    // The same page again is not a second path; two more pages are.
    for path in ["/challenge", "/challenge-2", "/challenge-3"] {
        let again = s
            .extract(json!({"urls": s.site.url(path)}), "?explain=1")
            .await;
        assert_eq!(
            again.json["failed_results"][0]["gateway"]["read"]["direct"]["outcome"], "blocked",
            "{path}"
        );
    }
    assert_eq!(s.reads("blocked").await, 4.0);
    // The host is shut out: the next page of it is not requested.
    let next = s
        .extract(json!({"urls": s.site.url("/other")}), "?explain=1")
        .await;
    assert_eq!(
        next.json["failed_results"][0]["gateway"]["read"]["direct"]["outcome"],
        "host_breaker_open"
    );
    assert_eq!(s.site.hits("/other"), 0);
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_read_host_breakers_open", &[])
            .await,
        1.0
    );
    let status = s.gateway.status().await;
    assert_eq!(status["reads"]["host_breakers_open"], 1);
    let host = status["breakers"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|b| b["namespace"] == "host")
        .cloned()
        .expect("the host's breaker is listed");
    let authority = s.site.origin().trim_start_matches("http://").to_owned();
    assert_eq!(
        (host["name"].as_str(), host["state"].as_str()),
        (Some(authority.as_str()), Some("open"))
    );
    assert!(
        !s.gateway.metrics_text().await.contains("127.0.0.1"),
        "no host in any series"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_with_retry_after_shuts_its_host_out_at_once() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set(
        "/api",
        Page::Answer {
            status: 429,
            content_type: Some("text/plain".into()),
            headers: vec![("retry-after".into(), "120".into())],
            body: b"slow down".to_vec(),
        },
    );
    s.site.set(
        "/article",
        Page::ok("text/plain", "a page of the same host"),
    );
    let limited = s
        .extract(json!({"urls": s.site.url("/api")}), "?explain=1")
        .await;
    assert_eq!(
        limited.json["failed_results"][0]["gateway"]["read"]["direct"]["wall"], "rate_limited",
        "{}",
        limited.json
    );
    let next = s
        .extract(json!({"urls": s.site.url("/article")}), "?explain=1")
        .await;
    assert_eq!(
        next.json["failed_results"][0]["gateway"]["read"]["direct"]["outcome"],
        "host_breaker_open"
    );
    assert_eq!(s.site.hits("/article"), 0);
    let breaker = s
        .gateway
        .breaker("host", s.site.origin().trim_start_matches("http://"))
        .await;
    assert_eq!(breaker["reason"], "rate_limited", "{breaker}");
}

/// With `API_KEYS_FILE`, which hosts other clients' page reads tripped is theirs: a client key's
/// `/status` counts the open host breakers without naming them; the admin token's lists them.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_key_does_not_see_the_hosts_other_reads_shut_out() {
    const ADMIN: &str = "admin-token-0123456789";
    // `ReadStack::extract` presents `any-key`: here it is alice's.
    let mut keys = tempfile::NamedTempFile::new().expect("temp file");
    let line = searxng_gateway::clients::keys_file::hash_line("alice", "any-key").expect("valid");
    std::io::Write::write_all(&mut keys, format!("{line}\n").as_bytes()).expect("write");
    let path = keys.path().display().to_string();
    let s = ReadStack::start(
        &[],
        &[
            ("API_KEYS_FILE", &path),
            ("TEST_CLIENT_KEY", "any-key"),
            ("ADMIN_TOKEN", ADMIN),
        ],
    )
    .await;
    s.site.set(
        "/api",
        Page::Answer {
            status: 429,
            content_type: Some("text/plain".into()),
            headers: vec![("retry-after".into(), "120".into())],
            body: b"slow down".to_vec(),
        },
    );
    s.extract(json!({"urls": s.site.url("/api")}), "").await;
    let authority = s.site.origin().trim_start_matches("http://").to_owned();
    let hosts = |status: &Value| -> Vec<String> {
        status["breakers"]
            .as_array()
            .expect("a list")
            .iter()
            .filter(|b| b["namespace"] == "host")
            .map(|b| b["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let as_client = s.gateway.status().await;
    assert_eq!(as_client["reads"]["host_breakers_open"], 1, "{as_client}");
    assert!(hosts(&as_client).is_empty(), "{as_client}");
    assert!(!as_client.to_string().contains(&authority), "{as_client}");
    let as_operator: Value = s
        .gateway
        .http
        .get(format!("{}/admin/status", s.gateway.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("admin status answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(hosts(&as_operator["status"]), [authority]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_page_is_read_by_the_first_premium_reader_that_can_and_charged() {
    let s = ReadStack::start(&[Reader::Jina, Reader::Firecrawl], &[]).await;
    s.reader(Reader::Jina)
        .set_behaviour(ReaderBehaviour::Unreadable);
    s.site
        .set("/forbidden", Page::status(403, "<h1>Forbidden</h1>"));
    let url = s.site.url("/forbidden");
    let reply = s.extract(json!({"urls": [url]}), "?explain=1").await;
    let result = &reply.json["results"][0];
    assert_eq!(result["raw_content"], page_text(Reader::Firecrawl, &url));
    let read = &result["gateway"]["read"];
    assert_eq!(read["direct"]["outcome"], "blocked");
    assert_eq!(read["fallback_reason"], "blocked");
    assert_eq!(read["premium"][0]["reader"], "jina");
    assert_eq!(read["premium"][0]["outcome"], "unreadable");
    assert_eq!(read["premium"][1]["reader"], "firecrawl");
    assert_eq!(read["premium"][1]["outcome"], "ok");
    assert_eq!(result["gateway"]["source"], "firecrawl");
    assert_eq!(result["gateway"]["premium"]["charged"], 2);
    // What each reader saw: the URL, the key where its API takes it.
    let jina = &s.reader(Reader::Jina).requests()[0];
    assert_eq!(jina.body["url"], url);
    assert_eq!(jina.auth.as_deref(), Some("Bearer sim-key"));
    assert_eq!(
        s.reader(Reader::Firecrawl).requests()[0].body["formats"],
        json!(["markdown"])
    );
    assert_eq!(s.reads("premium_ok").await, 1.0);
    for (reader, outcome) in [("jina", "unreadable"), ("firecrawl", "ok")] {
        assert_eq!(
            s.gateway
                .metric(
                    "searxng_gateway_premium_read_calls_total",
                    &[("provider", reader), ("outcome", outcome)],
                )
                .await,
            1.0
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_read_with_credentials_is_never_served_to_a_client_without_them() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set(
        "/authpage",
        Page::basic_auth(
            "alice",
            "s3cret",
            Page::html(
                "<html><body><article><p>Alice's private medical notes, for her eyes only, \
                 written down in plain words.</p></article></body></html>",
            ),
        ),
    );
    let public = s.site.url("/authpage");
    let private = public.replace("http://", "http://alice:s3cret@");
    let alice = s.extract(json!({"urls": [private]}), "").await;
    assert!(
        alice.json["results"][0]["raw_content"]
            .as_str()
            .expect("alice reads her page")
            .contains("private medical notes"),
        "{}",
        alice.json
    );
    for _ in 0..2 {
        let other = s.extract(json!({"urls": [public]}), "").await;
        assert!(
            !other.text.contains("private medical notes"),
            "a client without the credentials got alice's page: {}",
            other.text
        );
        assert!(other.json["failed_results"][0]["error"]
            .as_str()
            .expect("a reason")
            .contains("401"));
    }
    // Alice again: read afresh with her credentials, never from a cache.
    let again = s.extract(json!({"urls": [private]}), "").await;
    assert!(again.text.contains("private medical notes"));
    assert_eq!(s.site.hits("/authpage"), 4, "every read went to the site");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_url_with_credentials_is_never_sent_to_a_premium_reader() {
    let s = ReadStack::start(&[Reader::Jina], &[]).await;
    s.site
        .set("/private", Page::status(403, "<h1>Forbidden</h1>"));
    let url = s
        .site
        .url("/private")
        .replace("http://", "http://alice:s3cret@");
    let reply = s.extract(json!({"urls": [url]}), "?explain=1").await;
    let failed = &reply.json["failed_results"][0];
    assert!(
        failed["error"]
            .as_str()
            .expect("a reason")
            .contains("blocked"),
        "{}",
        reply.json
    );
    assert!(
        s.reader(Reader::Jina).requests().is_empty(),
        "alice's password goes to her site only, never to a third party"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_out_of_credits_is_parked_and_the_next_one_reads() {
    let s = ReadStack::start(&[Reader::Tavily, Reader::Exa], &[]).await;
    s.reader(Reader::Tavily)
        .set_behaviour(ReaderBehaviour::Quota);
    s.site.set("/shell", Page::javascript_shell());
    s.site.set("/shell2", Page::javascript_shell());
    let first = s.extract(json!({"urls": s.site.url("/shell")}), "").await;
    assert_eq!(
        first.json["results"][0]["raw_content"],
        page_text(Reader::Exa, &s.site.url("/shell"))
    );
    let breaker = s.gateway.breaker("reader", "tavily").await;
    assert_eq!(
        (breaker["state"].as_str(), breaker["reason"].as_str()),
        (Some("open"), Some("quota"))
    );
    let second = s
        .extract(json!({"urls": s.site.url("/shell2")}), "?explain=1")
        .await;
    let read = &second.json["results"][0]["gateway"]["read"];
    assert_eq!(
        read["skipped"][0],
        json!({"reader": "tavily", "why": "breaker_open"})
    );
    assert_eq!(
        s.reader(Reader::Tavily).calls(),
        1,
        "a parked reader is not called"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pdf_json_and_xml_are_read_as_text_and_an_image_is_unsupported() {
    let s = ReadStack::start(&[Reader::Jina], &[]).await;
    s.site.set(
        "/paper.pdf",
        Page::ok(
            "application/pdf",
            pdf_with_text("Attention is all you need"),
        ),
    );
    s.site.set(
        "/data.json",
        Page::ok("application/json", r#"{"answer": 42}"#),
    );
    s.site.set(
        "/feed.xml",
        Page::ok(
            "application/rss+xml",
            "<rss><channel><title>Feed</title></channel></rss>",
        ),
    );
    s.site.set(
        "/logo.png",
        Page::ok("image/png", vec![0x89, b'P', b'N', b'G']),
    );
    let reply = s
        .extract(
            json!({"urls": [s.site.url("/paper.pdf"), s.site.url("/data.json"), s.site.url("/feed.xml"), s.site.url("/logo.png")]}),
            "",
        )
        .await;
    let results = reply.json["results"].as_array().expect("a list");
    assert!(results[0]["raw_content"]
        .as_str()
        .expect("a string")
        .contains("Attention is all you need"));
    assert_eq!(results[1]["raw_content"], r#"{"answer": 42}"#);
    assert!(results[2]["raw_content"]
        .as_str()
        .expect("a string")
        .contains("<title>Feed</title>"));
    let failed = &reply.json["failed_results"][0];
    assert_eq!(failed["url"], s.site.url("/logo.png"));
    assert!(failed["error"]
        .as_str()
        .expect("a string")
        .contains("content type"));
    assert_eq!(
        s.reader(Reader::Jina).calls(),
        0,
        "an unsupported type is not sent to a premium reader"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trickle_runs_out_of_time_a_huge_body_is_too_large_and_a_wrong_charset_decodes() {
    let s = ReadStack::start(
        &[],
        &[("FETCH_TIMEOUT_SECONDS", "1"), ("FETCH_MAX_BYTES", "65536")],
    )
    .await;
    s.site.set(
        "/trickle",
        Page::Trickle {
            content_type: "text/plain".into(),
            body: vec![b'x'; 600],
            chunk: 1,
            every: Duration::from_millis(100),
        },
    );
    s.site.set(
        "/huge",
        Page::Huge {
            len: 4 * 1024 * 1024,
        },
    );
    s.site.set(
        "/latin1",
        Page::ok(
            "text/html; charset=iso-8859-1",
            b"<html><body><p>Cr\xe8me br\xfbl\xe9e, a caf\xe9 classic with words enough to be a page of text for anyone who reads it.</p></body></html>".to_vec(),
        ),
    );
    s.site.set(
        "/lies",
        Page::ok(
            "text/html; charset=utf-8",
            b"<html><body><p>Caf\xe9 \xff\xfe bytes that are not UTF-8, in a page that says it is, long enough to read.</p></body></html>".to_vec(),
        ),
    );
    let reply = s
        .extract(
            json!({"urls": [s.site.url("/trickle"), s.site.url("/huge"), s.site.url("/latin1"), s.site.url("/lies")], "format": "text"}),
            "?explain=1",
        )
        .await;
    let failed = reply.json["failed_results"].as_array().expect("a list");
    let why = |url: &str| {
        failed
            .iter()
            .find(|f| f["url"] == url)
            .map(|f| f["gateway"]["outcome"].clone())
    };
    assert_eq!(why(&s.site.url("/trickle")), Some(json!("timeout")));
    assert_eq!(why(&s.site.url("/huge")), Some(json!("too_large")));
    let results = reply.json["results"].as_array().expect("a list");
    let text = |url: &str| {
        results
            .iter()
            .find(|r| r["url"] == url)
            .and_then(|r| r["raw_content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(text(&s.site.url("/latin1")).contains("Crème brûlée, a café classic"));
    assert!(
        text(&s.site.url("/lies")).contains('\u{fffd}'),
        "bad bytes, no panic"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn private_addresses_are_refused_and_never_contacted_unless_allowed() {
    // The default: public addresses only. The site (loopback) and `localhost` are refused.
    let s = ReadStack::start(&[Reader::Jina], &[("FETCH_ALLOW_PRIVATE", "false")]).await;
    s.site
        .set("/page", Page::ok("text/plain", "a page on loopback"));
    let by_name = s.site.url("/page").replace("127.0.0.1", "localhost");
    let reply = s
        .extract(
            json!({"urls": [s.site.url("/page"), by_name, "http://169.254.169.254/latest/meta-data/", "http://[::1]:9/", "ftp://127.0.0.1/x"]}),
            "?explain=1",
        )
        .await;
    let failed = reply.json["failed_results"].as_array().expect("a list");
    assert_eq!(failed.len(), 5, "{}", reply.json);
    for entry in &failed[..4] {
        assert_eq!(entry["gateway"]["outcome"], "forbidden_address", "{entry}");
    }
    assert_eq!(failed[4]["gateway"]["outcome"], "invalid_url");
    assert_eq!(s.site.total_hits(), 0, "nothing was contacted");
    assert_eq!(
        s.reader(Reader::Jina).calls(),
        0,
        "nor sent to a premium reader"
    );
    assert_eq!(s.reads("forbidden").await, 5.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_from_an_allowed_page_to_cloud_metadata_is_refused_at_the_hop() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set(
        "/innocent",
        Page::redirect("http://169.254.169.254/latest/meta-data/iam/security-credentials/"),
    );
    s.site.set("/to-self", Page::redirect("/page"));
    let reply = s
        .extract(json!({"urls": s.site.url("/innocent")}), "?explain=1")
        .await;
    assert_eq!(
        reply.json["failed_results"][0]["gateway"]["outcome"],
        "forbidden_address"
    );
    assert_eq!(
        s.site.hits("/innocent"),
        1,
        "the allowed page was read, the hop refused"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gateways_own_address_is_refused_even_with_private_addresses_allowed() {
    let s = ReadStack::start(&[], &[("FETCH_ALLOW_PRIVATE", "true")]).await;
    let own = format!("{}/healthz", s.gateway.url);
    let reply = s.extract(json!({"urls": own}), "?explain=1").await;
    assert_eq!(
        reply.json["failed_results"][0]["gateway"]["outcome"],
        "forbidden_address"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn identical_reads_share_one_fetch_and_the_next_is_a_cache_hit() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set(
        "/slow",
        Page::Trickle {
            content_type: "text/plain".into(),
            body: b"a page that takes a moment to arrive, for everyone at once".to_vec(),
            chunk: 8,
            every: Duration::from_millis(50),
        },
    );
    let body = json!({"urls": s.site.url("/slow")});
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let gateway = s.gateway.url.clone();
            let http = s.gateway.http.clone();
            let body = body.clone();
            tokio::spawn(async move {
                let response = http
                    .post(format!("{gateway}/tavily/extract"))
                    .bearer_auth("k")
                    .json(&body)
                    .send()
                    .await
                    .expect("answer");
                TestGateway::reply(response).await
            })
        })
        .collect();
    for call in calls {
        let reply = call.await.expect("the call finishes");
        assert!(reply.json["results"][0]["raw_content"]
            .as_str()
            .expect("a string")
            .starts_with("a page that takes"));
    }
    assert_eq!(
        s.site.hits("/slow"),
        1,
        "one fetch for five identical reads"
    );
    let again = s.extract(body, "?explain=1").await;
    assert_eq!(
        again.json["results"][0]["gateway"]["cache"]["status"],
        "hit"
    );
    assert_eq!(s.site.hits("/slow"), 1);
    assert_eq!(s.reads("cache_hit").await, 1.0);
    assert!(
        s.gateway
            .metric("searxng_gateway_read_cache_bytes", &[])
            .await
            > 0.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_with_raw_content_reads_the_results_it_returns() {
    let s = ReadStack::start(&[], &[]).await;
    // Every result points at the site; the pages there are plain text naming their path.
    let search = s
        .gateway
        .http
        .post(format!("{}/tavily/search", s.gateway.url))
        .bearer_auth("k")
        .json(&json!({"query": "rust", "max_results": 3}))
        .send()
        .await
        .expect("an answer");
    let plain: Value = search.json().await.expect("JSON");
    let urls: Vec<String> = plain["results"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["url"].as_str().expect("a string").to_owned())
        .collect();
    assert_eq!(urls.len(), 3);
    assert!(
        plain["results"][0]["raw_content"].is_null(),
        "not read unless asked"
    );
    for url in &urls[..2] {
        let path = url.trim_start_matches(&s.site.origin()).to_owned();
        s.site
            .set(&path, Page::ok("text/plain", format!("the page at {path}")));
    }
    let reply = s
        .gateway
        .http
        .post(format!("{}/tavily/search", s.gateway.url))
        .bearer_auth("k")
        .json(&json!({"query": "rust", "max_results": 3, "include_raw_content": "text"}))
        .send()
        .await
        .expect("an answer");
    let json: Value = reply.json().await.expect("JSON");
    let results = json["results"].as_array().expect("a list");
    for (i, result) in results.iter().enumerate() {
        let path = urls[i].trim_start_matches(&s.site.origin());
        if i < 2 {
            assert_eq!(result["raw_content"], format!("the page at {path}"));
        } else {
            assert!(
                result["raw_content"].is_null(),
                "a page that could not be read is null"
            );
        }
    }
}

/// A page one replica read is served to another sharing its Redis, not read again; Redis keeps it
/// compressed (`packed`: the blob is shorter than the page's text alone).
#[tokio::test(flavor = "multi_thread")]
async fn a_page_one_replica_read_is_served_by_another_from_redis_kept_compressed() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let s = ReadStack::start(&[], &[("REDIS_URL", &redis.url())]).await;
    let other = s.replica().await;
    let (source, _) = corpus("ars-1");
    s.site.set("/shared", Page::html(source));
    let url = s.site.url("/shared");
    let body = json!({"urls": [url], "format": "text"});
    let first = s.extract(body.clone(), "").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let text = first.json["results"][0]["raw_content"]
        .as_str()
        .expect("the page's text")
        .to_owned();
    let second = ReadStack::extract_on(&other, body, "").await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(second.json["results"][0]["raw_content"], text.as_str());
    assert_eq!(s.site.hits("/shared"), 1, "the replica read it from Redis");

    let mut connection = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*page*")
        .query(&mut connection)
        .expect("KEYS");
    let blobs: Vec<Vec<u8>> = keys
        .iter()
        .filter_map(|key| redis::cmd("GET").arg(key).query(&mut connection).ok())
        .filter(|blob: &Vec<u8>| blob.starts_with(b"sxgp"))
        .collect();
    assert_eq!(blobs.len(), 1, "one page kept: {keys:?}");
    assert_eq!(blobs[0][4], 2, "the compressed version");
    // Plain JSON of the document would be longer than its text alone.
    assert!(
        blobs[0].len() < text.len(),
        "{} bytes kept for {} of text",
        blobs[0].len(),
        text.len()
    );
}
