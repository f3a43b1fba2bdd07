//! Mapping a site through Firecrawl's `/map` (issue #43): the sitemaps `robots.txt` lists (an
//! index, a gzip sitemap under it), the start page's links, `robots.txt`'s disallowed paths left
//! out, the v1 and v2 shapes and their sitemap modes, a search's matches first, the limit, and the
//! address fence for a site the gateway may not read.

use std::io::Write;

use serde_json::{json, Value};
use simulator::site::Page;

use crate::support::gateway::TestGateway;
use crate::support::reading::ReadStack;
use crate::support::stack::SimStack;

fn start_page() -> String {
    let words = "The observatory keeps its telescopes on the hill above the town, and its notes \
        on every night of watching are open to anyone who asks for them at the front desk. "
        .repeat(6);
    format!(
        "<html><head><title>Observatory home</title></head><body><article><h1>Observatory</h1>\
         <p>{words} Read the <a href=\"/docs/intro#top\">introduction</a>, the \
         <a href=\"/docs/telescopes?ref=home\">telescopes</a>, the \
         <a href=\"/private/ledger\">ledger</a> and a \
         <a href=\"https://elsewhere.example/x\">friend's page</a>.</p><p>{words}</p></article></body></html>"
    )
}

fn gzip(text: &str) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).expect("gzip");
    gz.finish().expect("gzip")
}

async fn mapped_site() -> ReadStack {
    let stack = ReadStack::start(&[], &[]).await;
    let site = &stack.site;
    let origin = site.origin();
    site.set("/", Page::html(start_page()));
    site.set(
        "/robots.txt",
        Page::ok(
            "text/plain",
            format!("User-agent: *\nDisallow: /private\nSitemap: {origin}/sitemap_index.xml\n"),
        ),
    );
    site.set(
        "/sitemap_index.xml",
        Page::ok(
            "application/xml",
            format!(
                "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <sitemap><loc>{origin}/sitemap-pages.xml</loc></sitemap>\
                 <sitemap><loc>{origin}/sitemap-blog.xml.gz</loc></sitemap></sitemapindex>"
            ),
        ),
    );
    site.set(
        "/sitemap-pages.xml",
        Page::ok(
            "application/xml",
            format!(
                "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <url><loc>{origin}/about</loc></url><url><loc>{origin}/docs/intro</loc></url>\
                 <url><loc>{origin}/private/ledger-2</loc></url></urlset>"
            ),
        ),
    );
    site.set(
        "/sitemap-blog.xml.gz",
        Page::ok(
            "application/gzip",
            gzip(&format!(
                "<urlset><url><loc>{origin}/blog/first-light</loc></url>\
                 <url><loc>{origin}/blog/comet?utm=x&amp;b=1</loc></url></urlset>"
            )),
        ),
    );
    stack
}

async fn map(g: &TestGateway, path: &str, body: Value) -> (u16, Value) {
    let response = g
        .http
        .post(format!("{}{path}", g.url))
        .json(&body)
        .send()
        .await
        .expect("the gateway answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

fn urls(answer: &Value) -> Vec<String> {
    answer["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| l["url"].as_str().or(l.as_str()).expect("a URL").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn v2_map_gives_the_sitemaps_and_the_start_pages_links_that_robots_allows() {
    let stack = mapped_site().await;
    let origin = stack.site.origin();
    let (status, answer) = map(
        &stack.gateway,
        "/firecrawl/v2/map",
        json!({"url": format!("{origin}/")}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true);
    let found = urls(&answer);
    let expected = [
        format!("{origin}/"),
        format!("{origin}/docs/intro"),
        format!("{origin}/docs/telescopes"),
        format!("{origin}/about"),
        format!("{origin}/blog/first-light"),
        format!("{origin}/blog/comet"),
    ];
    assert_eq!(found, expected, "{answer}");
    // The start page was read: its title is given.
    assert_eq!(answer["links"][0]["title"], "Observatory home");
    // robots.txt, the index, both sitemaps (one gzip) were read; nothing under /private.
    assert_eq!(stack.site.hits("/robots.txt"), 1);
    assert_eq!(stack.site.hits("/sitemap-blog.xml.gz"), 1);
    assert!(found.iter().all(|u| !u.contains("/private")));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sitemap_modes_the_search_and_the_limit() {
    let stack = mapped_site().await;
    let origin = stack.site.origin();
    let g = &stack.gateway;
    let (_, only) = map(
        g,
        "/v2/map",
        json!({"url": format!("{origin}/"), "sitemap": "only"}),
    )
    .await;
    assert_eq!(
        urls(&only),
        [
            format!("{origin}/about"),
            format!("{origin}/docs/intro"),
            format!("{origin}/blog/first-light"),
            format!("{origin}/blog/comet"),
        ]
    );
    let (_, skip) = map(
        g,
        "/firecrawl/v2/map",
        json!({"url": format!("{origin}/"), "sitemap": "skip",
        "ignoreQueryParameters": false}),
    )
    .await;
    assert_eq!(
        urls(&skip),
        [
            format!("{origin}/"),
            format!("{origin}/docs/intro"),
            format!("{origin}/docs/telescopes?ref=home"),
        ]
    );
    let (_, searched) = map(
        g,
        "/firecrawl/v2/map",
        json!({"url": format!("{origin}/"), "search": "blog comet",
        "limit": 2}),
    )
    .await;
    assert_eq!(
        urls(&searched),
        [
            format!("{origin}/blog/comet"),
            format!("{origin}/blog/first-light")
        ]
    );
    // v1: links as strings; its default ignores sitemaps (as Firecrawl's v1).
    let (status, v1) = map(g, "/firecrawl/v1/map", json!({"url": format!("{origin}/")})).await;
    assert_eq!(status, 200);
    assert!(v1["links"][0].is_string());
    assert_eq!(urls(&v1).len(), 3);
    let (_, v1_sitemap) = map(
        g,
        "/firecrawl/v1/map",
        json!({"url": format!("{origin}/"), "sitemapOnly": true}),
    )
    .await;
    assert_eq!(urls(&v1_sitemap).len(), 4);
    // What the gateway cannot take is refused by name, in Firecrawl's shape.
    let (status, refused) = map(
        g,
        "/firecrawl/v2/map",
        json!({"url": format!("{origin}/"), "sitemap": "sometimes"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(refused["success"], false);
    assert!(refused["error"].as_str().expect("text").contains("sitemap"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_site_behind_the_fence_is_not_mapped() {
    let stack = mapped_site().await;
    // A gateway without FETCH_ALLOW_PRIVATE: the loopback site is a private address.
    let fenced = SimStack::start(&[], &[]).await;
    let origin = stack.site.origin();
    let before = stack.site.total_hits();
    let (status, answer) = map(
        &fenced.gateway,
        "/firecrawl/v2/map",
        json!({"url": format!("{origin}/")}),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(stack.site.total_hits(), before, "nothing reached the site");
}
