//! Pages built to hurt the reader (issue #39), read through the real binary: a PDF whose form
//! XObject draws itself (it overflowed the stack and aborted the gateway), a PDF whose stream is
//! compressed twice and referenced a thousand times (gigabytes once decompressed), and markup that
//! nests 20,000 deep in ways the old guard did not count (`<div/>`, stray end tags). Each must fail
//! alone as `too_complex`, with the gateway alive and reading the next page; the files are in
//! `tests/hostile/` (written by its `make.py`).

use serde_json::{json, Value};
use simulator::searxng::SimulatedSearxng;
use simulator::site::{Page, SimulatedSite};

use crate::support::gateway::metric_value;
use crate::support::process::GatewayProcess;
use crate::support::stack::ENGINES;
use crate::support::wait;

fn hostile(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The site with the hostile pages and a good one, SearXNG, and the binary in front.
async fn start(vars: &[(&str, &str)]) -> (SimulatedSite, SimulatedSearxng, GatewayProcess, String) {
    let site = SimulatedSite::start().await.expect("site starts");
    site.set(
        "/xobject.pdf",
        Page::ok("application/pdf", hostile("xobject-self.pdf")),
    );
    site.set(
        "/bomb.pdf",
        Page::ok("application/pdf", hostile("deflate-bomb.pdf")),
    );
    site.set(
        "/divs.html",
        Page::ok("text/html", hostile("divs-self-closing.html")),
    );
    site.set(
        "/stray.html",
        Page::ok("text/html", hostile("divs-stray-ends.html")),
    );
    site.set(
        "/good.html",
        Page::html(
            "<html><head><title>Good</title></head><body><article><p>A good page of plain \
             words that any reader keeps, read after the hostile ones.</p></article></body></html>",
        ),
    );
    let searxng = SimulatedSearxng::start(&ENGINES)
        .await
        .expect("SearXNG starts");
    let backend = searxng.base_url();
    let mut env = vec![
        ("SEARXNG_BACKEND_URL", backend.as_str()),
        ("FETCH_ALLOW_PRIVATE", "127.0.0.0/8"),
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("LOG_LEVEL", "info"),
    ];
    env.extend_from_slice(vars);
    let mut gateway = GatewayProcess::start(&env);
    let url = gateway.url().await;
    (site, searxng, gateway, url)
}

async fn extract(url: &str, pages: &[String]) -> Value {
    let reply = reqwest::Client::new()
        .post(format!("{url}/tavily/extract"))
        .bearer_auth("any-key")
        .json(&json!({"urls": pages, "format": "text"}))
        .timeout(wait::HANG_GUARD)
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(reply.status(), 200);
    reply.json().await.expect("JSON")
}

async fn metrics(url: &str) -> String {
    reqwest::get(format!("{url}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text")
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_pdfs_and_markup_fail_alone_as_too_complex_and_the_gateway_reads_on() {
    let (site, _searxng, mut gateway, url) = start(&[]).await;
    let hostile: Vec<String> = ["/xobject.pdf", "/bomb.pdf", "/divs.html", "/stray.html"]
        .iter()
        .map(|path| site.url(path))
        .collect();
    let answer = extract(&url, &hostile).await;
    let failed = answer["failed_results"].as_array().expect("a list");
    assert_eq!(failed.len(), 4, "{answer}");
    for (page, failure) in hostile.iter().zip(failed) {
        assert_eq!(&failure["url"], page);
        let error = failure["error"].as_str().expect("a string");
        assert!(error.contains("too_complex"), "{page}: {error}");
    }
    // Alive, and reading: the good page, and the self-drawing PDF once more (a new worker).
    let again = extract(&url, &[site.url("/good.html"), site.url("/xobject.pdf")]).await;
    let results = again["results"].as_array().expect("a list");
    assert_eq!(results.len(), 1, "{again}");
    assert!(results[0]["raw_content"]
        .as_str()
        .expect("text")
        .contains("good page of plain words"));
    let metrics = metrics(&url).await;
    let limit = |limit: &str| {
        metric_value(
            &metrics,
            "searxng_gateway_parse_limits_total",
            &[("limit", limit)],
        )
    };
    assert_eq!(limit("nesting"), 2.0, "the two markup pages");
    assert_eq!(
        limit("resources"),
        3.0,
        "the PDFs (one twice) each ended a worker"
    );
    assert!(
        metric_value(&metrics, "searxng_gateway_parse_workers_started_total", &[]) >= 4.0,
        "every worker a PDF ended was replaced"
    );
    let health = reqwest::get(format!("{url}/healthz")).await.expect("alive");
    assert_eq!(health.status(), 200);
    // The bombs' gigabytes were never the gateway's: its own memory stayed that of a small server.
    let peak = gateway.peak_rss_bytes();
    assert!(
        peak < 256 << 20,
        "the gateway's peak RSS was {} MiB",
        peak >> 20
    );
    let status = gateway.terminate().await;
    assert!(status.success(), "the gateway ends cleanly: {status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parse_past_the_reads_deadline_is_cut_there_and_its_worker_killed() {
    // With room enough for the bomb's gigabytes, the parse runs until the read's deadline.
    let (site, _searxng, mut gateway, url) =
        start(&[("PARSE_MEMORY_MB", "65536"), ("FETCH_TIMEOUT_SECONDS", "1")]).await;
    let answer = extract(&url, &[site.url("/bomb.pdf"), site.url("/good.html")]).await;
    let failed = answer["failed_results"].as_array().expect("a list");
    assert_eq!(failed.len(), 1, "{answer}");
    assert!(failed[0]["error"]
        .as_str()
        .expect("a string")
        .contains("too_complex"));
    assert_eq!(answer["results"].as_array().map(Vec::len), Some(1));
    let metrics = metrics(&url).await;
    let cut = metric_value(
        &metrics,
        "searxng_gateway_parse_limits_total",
        &[("limit", "time")],
    ) + metric_value(
        &metrics,
        "searxng_gateway_parse_limits_total",
        &[("limit", "resources")],
    );
    assert_eq!(
        cut, 1.0,
        "cut at its deadline (or ended by the machine's memory first)"
    );
    assert!(gateway.terminate().await.success());
}
