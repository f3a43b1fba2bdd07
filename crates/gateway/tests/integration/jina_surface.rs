//! Jina Reader's door as Jina's clients call it: `GET /r/<url>` and `POST /r/` for one page,
//! `GET /s/<query>` for a search whose hits are read — text by default, Jina's JSON envelope with
//! `Accept: application/json`, the headers that change the answer honoured (`X-Return-Format`,
//! `X-No-Cache`, the summaries, `X-Respond-With: no-content`, `X-Site`) or refused by name in
//! Jina's error shape, the inbound key as `Authorization: Bearer`.

use std::io::Write;

use simulator::site::Page;

use crate::support::gateway::{Reply, TestGateway};
use crate::support::reading::{corpus, ReadStack};

const ALICE_KEY: &str = "alice-key-0123456789";

async fn get(g: &TestGateway, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = g.http.get(format!("{}{path}", g.url));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    TestGateway::reply(request.send().await.expect("the gateway answers")).await
}

/// The page every path of the stack's site serves: an article of the Readability corpus.
async fn stack() -> ReadStack {
    let s = ReadStack::start(&[], &[]).await;
    let (source, _) = corpus("ars-1");
    s.site.set_default(Page::html(source));
    s
}

fn assert_refused(reply: &Reply, status: u16, name: &str, named: &str) {
    assert_eq!(reply.status, status, "{}", reply.text);
    assert_eq!(reply.json["code"], status, "{}", reply.text);
    assert_eq!(reply.json["status"], u64::from(status) * 100 + 1);
    assert_eq!(reply.json["name"], name, "{}", reply.text);
    assert!(reply.json["data"].is_null());
    let message = reply.json["message"].as_str().expect("a message");
    assert!(message.contains(named), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reader_answers_jinas_text_by_default_and_its_envelope_as_json() {
    let s = stack().await;
    let g = &s.gateway;
    let page = s.site.url("/article");
    let text = get(g, &format!("/r/{page}?ref=feed&x=1"), &[]).await;
    assert_eq!(text.status, 200, "{}", text.text);
    assert!(
        text.content_type.starts_with("text/plain"),
        "{}",
        text.content_type
    );
    assert!(text.text.starts_with("Title: "), "{}", &text.text[..200]);
    assert!(
        text.text
            .contains(&format!("\n\nURL Source: {page}?ref=feed&x=1\n\n")),
        "the page's own query string is part of its URL: {}",
        &text.text[..300]
    );
    let (head, content) = text
        .text
        .split_once("Markdown Content:\n")
        .expect("the content after its label");
    assert!(head.contains("Title: "));
    assert!(content.split_whitespace().count() > 300, "{content}");

    let json = get(g, &format!("/r/{page}"), &[("accept", "application/json")]).await;
    assert_eq!(json.status, 200, "{}", json.text);
    assert_eq!(json.json["code"], 200);
    assert_eq!(json.json["status"], 20000);
    let data = &json.json["data"];
    assert_eq!(data["url"], page.as_str());
    assert!(
        data["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{data}"
    );
    assert!(data["content"].as_str().is_some_and(|c| c.len() > 1000));
    assert!(
        json.json.get("gateway").is_none(),
        "explain only when asked"
    );

    let plain = get(
        g,
        &format!("/r/{page}"),
        &[
            ("x-return-format", "text"),
            ("x-with-links-summary", "true"),
        ],
    )
    .await;
    assert_eq!(plain.status, 200, "{}", plain.text);
    assert!(
        !plain.text.starts_with("Title: "),
        "text is the content alone"
    );
    let (content, links) = plain
        .text
        .split_once("\n\nLinks/Buttons:\n- [http")
        .expect("the links summary after the content");
    assert!(!content.contains("](http"), "no markdown links in text");
    assert!(links
        .lines()
        .all(|line| line.is_empty() || !line.starts_with("- [http") || line.ends_with(')')));

    let posted = s
        .gateway
        .http
        .post(format!("{}/r/", g.url))
        .header("accept", "application/json")
        .header("x-gateway-explain", "1")
        .json(&serde_json::json!({"url": page}))
        .send()
        .await
        .expect("the gateway answers");
    let posted = TestGateway::reply(posted).await;
    assert_eq!(posted.status, 200, "{}", posted.text);
    assert_eq!(posted.json["data"]["content"], data["content"]);
    assert_eq!(posted.json["gateway"]["outcome"], "ok", "{}", posted.text);
    assert_eq!(posted.json["gateway"]["cache"]["status"], "hit");
}

#[tokio::test(flavor = "multi_thread")]
async fn x_no_cache_reads_the_page_again_and_a_cached_read_does_not() {
    let s = stack().await;
    let g = &s.gateway;
    let page = s.site.url("/fresh");
    for _ in 0..2 {
        assert_eq!(get(g, &format!("/r/{page}"), &[]).await.status, 200);
    }
    assert_eq!(
        s.site.hits("/fresh"),
        1,
        "the second read came from the cache"
    );
    let fresh = get(g, &format!("/r/{page}"), &[("x-no-cache", "true")]).await;
    assert_eq!(fresh.status, 200, "{}", fresh.text);
    assert_eq!(s.site.hits("/fresh"), 2, "X-No-Cache reached the page");
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_reader_cannot_honour_or_read_is_refused_in_jinas_shape() {
    let s = stack().await;
    let g = &s.gateway;
    let page = s.site.url("/article");
    let selector = get(g, &format!("/r/{page}"), &[("x-target-selector", "#main")]).await;
    assert_refused(&selector, 400, "ParamValidationError", "X-Target-Selector");
    let browser = get(g, &format!("/r/{page}"), &[("x-engine", "browser")]).await;
    assert_refused(&browser, 400, "ParamValidationError", "X-Engine: browser");
    assert_eq!(s.site.total_hits(), 0, "a refused read reads nothing");

    s.site.set("/gone", Page::status(404, "no such page"));
    let gone = get(g, &format!("/r/{}", s.site.url("/gone")), &[]).await;
    assert_refused(&gone, 422, "AssertionFailureError", "HTTP 404");
    let private = get(g, "/r/http://10.1.2.3/admin", &[]).await;
    assert_refused(
        &private,
        451,
        "SecurityCompromiseError",
        "forbidden_address",
    );
    let nothing = get(g, "/r/not-a-url", &[]).await;
    assert_refused(&nothing, 400, "ParamValidationError", "URL");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_search_reads_its_hits_or_lists_them_with_no_content() {
    let s = stack().await;
    let g = &s.gateway;
    let listed = get(
        g,
        "/s/jina%20door%20search?num=3",
        &[
            ("accept", "application/json"),
            ("x-respond-with", "no-content"),
        ],
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let data = listed.json["data"].as_array().expect("data");
    assert_eq!(data.len(), 3);
    for hit in data {
        assert!(hit["url"].as_str().is_some_and(|u| u.starts_with("http")));
        assert!(hit["title"].is_string() && hit["description"].is_string());
        assert!(hit.get("content").is_none(), "no-content: {hit}");
    }
    assert_eq!(s.site.total_hits(), 0, "no-content reads nothing");

    let read = get(g, "/s/jina%20door%20search?num=2", &[]).await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert!(
        read.text.starts_with("[1] Title: "),
        "{}",
        &read.text[..200]
    );
    assert!(read.text.contains("\n[2] URL Source: http"));
    assert!(read.text.contains("[1] Markdown Content:\n"));
    assert!(read.text.contains("[2] Markdown Content:\n"));
    assert_eq!(s.site.total_hits(), 2, "each hit was read");
    let counted = g
        .metric(
            "searxng_gateway_surface_requests_total",
            &[("surface", "jina")],
        )
        .await;
    assert!(counted >= 2.0, "searches counted by surface: {counted}");

    let refused = get(g, "/s/x?location=Paris", &[]).await;
    assert_refused(&refused, 400, "ParamValidationError", "location");
}

#[tokio::test(flavor = "multi_thread")]
async fn x_site_keeps_the_hits_on_that_domain() {
    let s = stack().await;
    let g = &s.gateway;
    let reply = get(
        g,
        "/s/?q=site+filter",
        &[
            ("accept", "application/json"),
            ("x-respond-with", "no-content"),
            ("x-site", "docs.example.org"),
        ],
    )
    .await;
    // The simulated SearXNG's hits are all on the loopback site: none is on that domain.
    assert_refused(&reply, 422, "AssertionFailureError", "No search results");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_key_rides_as_a_bearer_token() {
    let mut keys = tempfile::NamedTempFile::new().expect("a keys file");
    let line = searxng_gateway::clients::keys_file::hash_line("alice", ALICE_KEY).expect("valid");
    writeln!(keys, "{line}").expect("written");
    let path = keys.path().to_str().expect("utf-8 path").to_owned();
    let s = ReadStack::start(&[], &[("API_KEYS_FILE", path.as_str())]).await;
    s.site.set_default(Page::html(corpus("ars-1").0));
    let g = &s.gateway;
    let page = s.site.url("/keyed");
    let bearer = format!("Bearer {ALICE_KEY}");
    let admitted = get(g, &format!("/r/{page}"), &[("authorization", &bearer)]).await;
    assert_eq!(admitted.status, 200, "{}", admitted.text);
    let missing = get(g, &format!("/r/{page}"), &[]).await;
    assert_eq!(missing.status, 401, "{}", missing.text);
    assert!(missing.json["name"]
        .as_str()
        .is_some_and(|n: &str| n.starts_with("Authentication")));
    let wrong = get(
        g,
        "/s/keyed",
        &[("authorization", "Bearer wrong-key-0123456789")],
    )
    .await;
    assert_refused(&wrong, 401, "AuthenticationFailedError", "");
}
