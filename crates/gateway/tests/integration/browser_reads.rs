//! Pages that need a browser, end to end through `POST /tavily/extract`: a loopback single-page
//! app whose text arrives by script from a JSON endpoint is read by the gateway's local headless
//! Chromium before any premium reader (and `explain` says so), goes to the premium reader with
//! `BROWSER=off`, and is read in keyless mode too. Needs Debian's `chromium`.

use serde_json::{json, Value};
use simulator::readers::{page_text, Reader};
use simulator::site::Page;

use crate::support::external::needs;
use crate::support::reading::ReadStack;

/// Words the app's script writes into the page.
const ARTICLE: &str =
    "Tidal marshes store carbon in deep peat layers that build up over centuries as \
    sediment settles between the roots of cordgrass and rushes. When the marsh is drained the peat \
    dries, oxidises and releases that carbon back to the air, which is why restoring the tides to \
    a diked marsh is one of the cheapest climate measures a coastal county can take.";

/// The app: an empty shell whose script fetches `/data.json` and writes the article.
fn serve_app(s: &ReadStack) {
    s.site.set(
        "/app",
        Page::html(
            "<!DOCTYPE html><html><head><title>Marsh</title><script src=\"/app.js\"></script></head>\
             <body><div id=\"root\"></div></body></html>",
        ),
    );
    s.site.set(
        "/app.js",
        Page::ok(
            "text/javascript",
            "document.addEventListener('DOMContentLoaded', () => fetch('/data.json')\
               .then(r => r.json()).then(d => { document.getElementById('root').innerHTML = \
               '<article><h1>' + d.title + '</h1><p>' + d.text + '</p></article>'; }));",
        ),
    );
    s.site.set(
        "/data.json",
        Page::ok(
            "application/json",
            json!({"title": "Restoring the tides", "text": ARTICLE}).to_string(),
        ),
    );
}

fn content(reply: &Value) -> &str {
    reply["results"][0]["raw_content"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_apps_text_is_read_by_the_local_browser_before_any_premium_reader() {
    needs!(HeadlessChromium);
    let s = ReadStack::start(&[Reader::Jina], &[("BROWSER", "auto")]).await;
    serve_app(&s);
    let reply = s
        .extract(json!({"urls": s.site.url("/app")}), "?explain=1")
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(
        content(&reply.json).contains("cheapest climate measures"),
        "{}",
        reply.json
    );
    let read = &reply.json["results"][0]["gateway"]["read"];
    assert_eq!(read["browser"]["outcome"], "ok", "{read}");
    assert_eq!(read["browser"]["read"], "ok", "{read}");
    assert!(
        ["javascript_shell", "no_readable_text", "thin"]
            .contains(&read["browser"]["why"].as_str().unwrap_or("")),
        "{read}"
    );
    assert_eq!(
        s.reader(Reader::Jina).calls(),
        0,
        "no premium reader was paid"
    );
    assert_eq!(s.reads("browser_ok").await, 1.0);
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_browser_reads_total", &[("outcome", "ok")])
            .await,
        1.0
    );
    let capabilities = s.gateway.get("/v1/capabilities").await;
    assert_eq!(capabilities.json["read"]["browser"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_browser_the_app_goes_to_the_premium_reader() {
    let s = ReadStack::start(&[Reader::Jina], &[("BROWSER", "off")]).await;
    serve_app(&s);
    let reply = s.extract(json!({"urls": s.site.url("/app")}), "").await;
    assert_eq!(
        content(&reply.json),
        page_text(Reader::Jina, &s.site.url("/app")),
        "{}",
        reply.json
    );
    assert_eq!(s.reader(Reader::Jina).calls(), 1);
    assert_eq!(s.site.hits("/data.json"), 0, "nothing ran the app's script");
}

#[tokio::test(flavor = "multi_thread")]
async fn keyless_reads_the_app_locally_and_cannot_without_the_browser() {
    needs!(HeadlessChromium);
    let s = ReadStack::start(&[], &[("BROWSER", "auto")]).await;
    serve_app(&s);
    let reply = s.extract(json!({"urls": s.site.url("/app")}), "").await;
    assert!(
        content(&reply.json).contains("cheapest climate measures"),
        "{}",
        reply.json
    );
    let off = ReadStack::start(&[], &[("BROWSER", "off")]).await;
    serve_app(&off);
    let reply = off.extract(json!({"urls": off.site.url("/app")}), "").await;
    assert!(
        !content(&reply.json).contains("cheapest climate measures"),
        "{}",
        reply.json
    );
}

/// `POST path` with `body` (a Bearer key, as the SDKs send).
async fn post(s: &ReadStack, path: &str, body: Value) -> crate::support::gateway::Reply {
    let response = s
        .gateway
        .http
        .post(format!("{}{path}", s.gateway.url))
        .bearer_auth("any-key")
        .json(&body)
        .send()
        .await
        .expect("the gateway answers");
    crate::support::gateway::TestGateway::reply(response).await
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawls_wait_for_renders_the_page_and_raw_html_is_its_rendered_dom() {
    needs!(HeadlessChromium);
    let s = ReadStack::start(&[], &[("BROWSER", "auto")]).await;
    serve_app(&s);
    let reply = post(
        &s,
        "/firecrawl/v1/scrape",
        json!({"url": s.site.url("/app"), "formats": ["markdown", "rawHtml"], "waitFor": 200}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let data = &reply.json["data"];
    assert!(
        data["markdown"]
            .as_str()
            .unwrap_or("")
            .contains("cheapest climate measures"),
        "{data}"
    );
    let raw = data["rawHtml"].as_str().unwrap_or("");
    assert!(
        raw.contains("<article>") && raw.contains("cheapest climate measures"),
        "the rendered DOM, not the shell: {raw}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_browser_wait_for_and_jinas_browser_engine_are_refused_by_name() {
    let s = ReadStack::start(&[], &[("BROWSER", "off")]).await;
    serve_app(&s);
    let reply = post(
        &s,
        "/firecrawl/v1/scrape",
        json!({"url": s.site.url("/app"), "waitFor": 200}),
    )
    .await;
    assert_eq!(reply.json["success"], false, "{}", reply.text);
    assert!(
        reply.json["error"]
            .as_str()
            .unwrap_or("")
            .contains("waitFor: 200"),
        "{}",
        reply.text
    );
    let jina = s
        .gateway
        .http
        .get(format!("{}/r/{}", s.gateway.url, s.site.url("/app")))
        .bearer_auth("any-key")
        .header("x-engine", "browser")
        .send()
        .await
        .expect("the gateway answers");
    let jina = crate::support::gateway::TestGateway::reply(jina).await;
    assert!(jina.text.contains("X-Engine: browser"), "{}", jina.text);
    assert_eq!(s.site.hits("/app"), 0, "nothing was read");
}

#[tokio::test(flavor = "multi_thread")]
async fn jinas_browser_engine_renders_the_page_first() {
    needs!(HeadlessChromium);
    let s = ReadStack::start(&[], &[("BROWSER", "auto")]).await;
    serve_app(&s);
    let jina = s
        .gateway
        .http
        .get(format!("{}/r/{}", s.gateway.url, s.site.url("/app")))
        .bearer_auth("any-key")
        .header("x-engine", "browser")
        .send()
        .await
        .expect("the gateway answers");
    let jina = crate::support::gateway::TestGateway::reply(jina).await;
    assert!(
        jina.text.contains("cheapest climate measures"),
        "{}",
        jina.text
    );
    assert_eq!(
        s.site.hits("/app"),
        1,
        "rendered first: no direct read before"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mcps_render_never_keeps_the_browser_out_and_always_needs_one() {
    needs!(HeadlessChromium);
    let s = ReadStack::start(&[], &[("BROWSER", "auto")]).await;
    serve_app(&s);
    let never = s
        .gateway
        .web_fetch(json!({"url": s.site.url("/app"), "render": "never"}))
        .await;
    assert!(
        !never.to_string().contains("cheapest climate measures"),
        "{never}"
    );
    assert_eq!(s.site.hits("/data.json"), 0, "the app's script never ran");
    let auto = s
        .gateway
        .web_fetch(json!({"url": s.site.url("/app"), "render": "auto"}))
        .await;
    assert!(
        auto["result"]["structuredContent"]["content"]
            .as_str()
            .unwrap_or("")
            .contains("cheapest climate measures"),
        "{auto}"
    );
    let off = ReadStack::start(&[], &[("BROWSER", "off")]).await;
    let always = off
        .gateway
        .web_fetch(json!({"url": off.site.url("/app"), "render": "always"}))
        .await;
    assert_eq!(always["result"]["isError"], true, "{always}");
    assert!(always.to_string().contains("render: always"), "{always}");
}

/// A page four times as tall as the viewport, its text in the HTML (a direct read reads it).
fn serve_tall_page(s: &ReadStack) {
    s.site.set(
        "/tall",
        Page::html(format!(
            "<!DOCTYPE html><html><head><title>Tall</title></head>\
             <body style=\"margin:0\"><article style=\"height:3200px;background:#cde\">\
             <h1>Restoring the tides</h1><p>{ARTICLE}</p></article></body></html>"
        )),
    );
}

/// The width and height in a PNG's header, or why it is not one.
fn png_size(data_url: &str) -> Result<(u32, u32), String> {
    use base64::Engine as _;
    let encoded = data_url
        .strip_prefix("data:image/png;base64,")
        .ok_or_else(|| format!("not a PNG data URL: {:.80}", data_url))?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|err| format!("not base64: {err}"))?;
    if !png.starts_with(b"\x89PNG\r\n\x1a\n") || png.get(12..16) != Some(b"IHDR".as_slice()) {
        return Err("no PNG signature and IHDR".to_owned());
    }
    let word = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    Ok((word(16), word(20)))
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawls_screenshots_are_pngs_of_the_viewport_or_the_whole_page() {
    needs!(HeadlessChromium);
    let s = ReadStack::start(&[], &[("BROWSER", "auto"), ("BROWSER_TABS", "2")]).await;
    serve_tall_page(&s);
    serve_app(&s);
    let url = s.site.url("/tall");
    for (path, formats, size) in [
        (
            "/firecrawl/v1/scrape",
            json!(["screenshot"]),
            Some((1280, 800)),
        ),
        (
            "/firecrawl/v1/scrape",
            json!(["markdown", "screenshot@fullPage"]),
            None,
        ),
        (
            "/firecrawl/v2/scrape",
            json!([{"type": "screenshot"}]),
            Some((1280, 800)),
        ),
        (
            "/firecrawl/v2/scrape",
            json!([{"type": "screenshot", "fullPage": true}]),
            None,
        ),
    ] {
        let reply = post(&s, path, json!({"url": url, "formats": formats})).await;
        assert_eq!(reply.status, 200, "{path} {formats}: {}", reply.text);
        let data = &reply.json["data"];
        let (width, height) = png_size(data["screenshot"].as_str().unwrap_or(""))
            .unwrap_or_else(|why| panic!("{path} {formats}: {why}"));
        match size {
            Some(viewport) => assert_eq!((width, height), viewport, "{path} {formats}"),
            None => {
                assert_eq!(width, 1280, "{path} {formats}");
                assert!(
                    height >= 3200,
                    "the whole page, taller than the viewport: {height} ({path} {formats})"
                );
            }
        }
        assert_eq!(data["metadata"]["sourceURL"], url.as_str(), "{data}");
    }
    // With text asked for too, the text is there beside the picture.
    let both = post(
        &s,
        "/firecrawl/v2/scrape",
        json!({"url": s.site.url("/app"), "formats": ["markdown", "screenshot"]}),
    )
    .await;
    assert_eq!(both.status, 200, "{}", both.text);
    assert!(
        both.json["data"]["markdown"]
            .as_str()
            .unwrap_or("")
            .contains("cheapest climate measures"),
        "{}",
        both.json
    );
    assert!(png_size(both.json["data"]["screenshot"].as_str().unwrap_or("")).is_ok());
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_browser_reads_total", &[("outcome", "ok")])
            .await,
        6.0,
        "four screenshots, one of the app, the app's text rendered"
    );
    let capabilities = s.gateway.get("/v1/capabilities").await;
    assert_eq!(
        capabilities.json["read"]["screenshot_formats"],
        json!(["screenshot", "screenshot@fullPage"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_browser_a_screenshot_is_refused_by_name() {
    let s = ReadStack::start(&[], &[("BROWSER", "off")]).await;
    serve_tall_page(&s);
    for (path, formats, named) in [
        (
            "/firecrawl/v1/scrape",
            json!(["screenshot"]),
            "\"screenshot\"",
        ),
        (
            "/firecrawl/v2/scrape",
            json!([{"type": "screenshot", "fullPage": true}]),
            "\"screenshot@fullPage\"",
        ),
    ] {
        let reply = post(
            &s,
            path,
            json!({"url": s.site.url("/tall"), "formats": formats}),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        let error = reply.json["error"].as_str().unwrap_or("");
        assert!(
            error.contains(named) && error.contains("BROWSER is off"),
            "{}",
            reply.text
        );
    }
    assert_eq!(s.site.hits("/tall"), 0, "nothing was read");
    let capabilities = s.gateway.get("/v1/capabilities").await;
    assert_eq!(capabilities.json["read"]["screenshot_formats"], json!([]));
}
