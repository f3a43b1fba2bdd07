//! The local browser with the real Chromium, against loopback sites: a single-page app's text
//! read, the fence holding inside the page, a page looping forever cut at its time, a browser
//! killed mid-read or outgrowing its memory started again. Without a Chromium these tests return
//! at once — unless `GATEWAY_EXTERNAL_TESTS=required` (CI), where a missing Chromium fails them.

use std::sync::Arc;
use std::time::Duration;

use simulator::site::{Page, SimulatedSite};
use url::Url;

use super::super::{ReadFailure, Reader, ReaderMetrics, ReaderSettings, SystemLookup};
use super::metrics::{OutcomeLabels, RestartLabels};
use super::{process, RenderOptions, RenderOutcome, RestartReason};
use gateway_core::env::Env;
use gateway_core::metrics::Registry;
use gateway_core::request::ReadFormat;

/// Words the app's script writes into the page (from its JSON).
const ARTICLE: &str =
    "Tidal marshes store carbon in deep peat layers that build up over centuries as \
    sediment settles between the roots of cordgrass and rushes. When the marsh is drained the peat \
    dries, oxidises and releases that carbon back to the air, which is why restoring the tides to \
    a diked marsh is one of the cheapest climate measures a coastal county can take. Surveys along \
    the estuary counted herons, rails and wintering ducks returning within three seasons.";

/// A page whose text arrives by script from `/data.json`, and whatever else `extra` adds.
fn app(extra: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><title>Marsh</title><script src=\"/app.js\"></script></head>\
         <body><div id=\"root\"></div>{extra}</body></html>"
    )
}

const APP_JS: &str = "document.addEventListener('DOMContentLoaded', () => {\
    fetch('/data.json').then(r => r.json()).then(d => {\
      document.getElementById('root').innerHTML = '<article><h1>' + d.title + '</h1><p>' + d.text + '</p></article>';\
    });\
  });";

/// Whether the test may run: a Chromium is on `PATH`, or it is missing and that fails the test
/// under `GATEWAY_EXTERNAL_TESTS=required`.
fn chromium_present() -> bool {
    let settings = read_settings(&[]);
    if settings.browser.program.is_some() {
        return true;
    }
    let required = std::env::var("GATEWAY_EXTERNAL_TESTS").is_ok_and(|v| v == "required");
    assert!(
        !required,
        "Chromium is not installed (apt-get install chromium)"
    );
    eprintln!("note: the browser tests did not run: no Chromium on PATH");
    false
}

fn read_settings(vars: &[(&str, &str)]) -> ReaderSettings {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    ReaderSettings::read(&Env::new(&lookup)).expect("valid settings")
}

/// How long any wait of these tests may take before the test fails as hung: so generous that
/// only a hang reaches it, never a slow machine.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Polls `condition` every 20 ms until it holds; fails the test naming `what` after
/// [`HANG_GUARD`] (real time, whatever tokio's clock does).
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited {HANG_GUARD:?} for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A reader with the browser on, loopback 127.0.0.1 allowed (and no other private address).
fn reader(vars: &[(&str, &str)]) -> (Reader, ReaderMetrics) {
    let mut all = vec![
        ("BROWSER", "always"),
        ("FETCH_ALLOW_PRIVATE", "127.0.0.1/32"),
    ];
    all.extend_from_slice(vars);
    let settings = read_settings(&all);
    let metrics = ReaderMetrics::new(&mut Registry::new());
    (
        Reader::new(&settings, Arc::new(SystemLookup), metrics.clone()),
        metrics,
    )
}

async fn site_with_app() -> SimulatedSite {
    let site = SimulatedSite::start().await.expect("site starts");
    site.set("/app", Page::html(app("")));
    site.set("/app.js", Page::ok("text/javascript", APP_JS));
    site.set(
        "/data.json",
        Page::ok(
            "application/json",
            serde_json::json!({"title": "Restoring the tides", "text": ARTICLE}).to_string(),
        ),
    );
    site
}

async fn render(
    reader: &Reader,
    url: &str,
    timeout: Duration,
) -> (Result<String, ReadFailure>, RenderOutcome) {
    let url = Url::parse(url).expect("a URL");
    let (read, outcome) = reader
        .render(&url, ReadFormat::Text, RenderOptions::default(), timeout)
        .await;
    (read.map(|d| d.content), outcome)
}

fn renders(metrics: &ReaderMetrics, outcome: RenderOutcome) -> u64 {
    metrics
        .browser
        .reads
        .get_or_create(&OutcomeLabels { outcome })
        .get()
}

fn restarts(metrics: &ReaderMetrics, reason: RestartReason) -> u64 {
    metrics
        .browser
        .restarts
        .get_or_create(&RestartLabels { reason })
        .get()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_page_apps_text_is_read_when_rendered_and_not_without() {
    if !chromium_present() {
        return;
    }
    let site = site_with_app().await;
    let (reader, metrics) = reader(&[]);
    let direct = reader
        .read(
            &Url::parse(&site.url("/app")).expect("url"),
            ReadFormat::Text,
            Duration::from_secs(10),
        )
        .await;
    assert!(
        direct.is_err(),
        "the shell has no text of its own: {direct:?}"
    );
    let (text, outcome) = render(&reader, &site.url("/app"), Duration::from_secs(30)).await;
    let text = text.expect("the rendered app is read");
    assert_eq!(outcome, RenderOutcome::Ok);
    assert!(text.contains("cheapest climate measures"), "{text}");
    assert_eq!(
        site.hits("/data.json"),
        1,
        "the JSON came through the fence"
    );
    assert_eq!(renders(&metrics, RenderOutcome::Ok), 1);
    assert_eq!(
        metrics.browser.tabs_in_use.get(),
        0,
        "the tab was given back"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pages_requests_to_an_address_the_policy_refuses_never_leave() {
    if !chromium_present() {
        return;
    }
    let site = site_with_app().await;
    let secret = SimulatedSite::start_on("127.0.0.2:0".parse().expect("addr"))
        .await
        .expect("second site starts");
    secret.set_default(Page::ok("application/json", "{\"secret\": \"found\"}"));
    let target = secret.url("/secret");
    let ws = target.replace("http://", "ws://");
    site.set(
        "/nosy",
        Page::html(app(&format!(
            "<img src=\"{target}?img\"><iframe src=\"{target}?frame\"></iframe>\
             <iframe src=\"file:///etc/passwd\"></iframe>\
             <script>fetch('{target}?fetch').then(r => r.text()).then(t => document.title = t);\
             try {{ new WebSocket('{ws}?ws'); }} catch (e) {{}}\
             new Worker(URL.createObjectURL(new Blob([\"fetch('{target}?worker')\"])));\
             navigator.sendBeacon('{target}?beacon', 'x');</script>"
        ))),
    );
    let (reader, metrics) = reader(&[]);
    let (text, _) = render(&reader, &site.url("/nosy"), Duration::from_secs(30)).await;
    let text = text.expect("the page itself is read");
    assert!(text.contains("cheapest climate measures"), "{text}");
    assert!(!text.contains("found") && !text.contains("root:"), "{text}");
    assert_eq!(secret.total_hits(), 0, "nothing reached 127.0.0.2");
    // The page's own address refused: the render fails as the direct read would.
    let (read, outcome) = render(&reader, &target, Duration::from_secs(30)).await;
    assert_eq!(read, Err(ReadFailure::ForbiddenAddress));
    assert_eq!(outcome, RenderOutcome::Forbidden);
    assert_eq!(secret.total_hits(), 0);
    assert_eq!(renders(&metrics, RenderOutcome::Forbidden), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_looping_forever_is_cut_at_its_time_and_the_browser_reads_the_next() {
    if !chromium_present() {
        return;
    }
    let site = site_with_app().await;
    site.set(
        "/loop",
        Page::html("<html><body><p>Spin</p><script>while (true) {}</script></body></html>"),
    );
    let (reader, metrics) = reader(&[]);
    let (read, outcome) = render(&reader, &site.url("/loop"), Duration::from_secs(3)).await;
    assert_eq!(outcome, RenderOutcome::Timeout, "{read:?}");
    assert_eq!(
        read,
        Err(ReadFailure::Upstream(
            gateway_core::upstream::ErrorClass::Timeout
        ))
    );
    let (text, outcome) = render(&reader, &site.url("/app"), Duration::from_secs(30)).await;
    assert_eq!(outcome, RenderOutcome::Ok, "{text:?}");
    assert!(text.expect("read").contains("cheapest climate measures"));
    assert_eq!(renders(&metrics, RenderOutcome::Timeout), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_killed_mid_read_is_started_again_for_the_next() {
    if !chromium_present() {
        return;
    }
    let site = site_with_app().await;
    site.set(
        "/slow.json",
        Page::Trickle {
            content_type: "application/json".to_owned(),
            body: vec![b' '; 200],
            chunk: 1,
            every: Duration::from_millis(100),
        },
    );
    site.set(
        "/waits",
        Page::html("<html><body><script>fetch('/slow.json')</script><p>Waiting</p></body></html>"),
    );
    let (reader, metrics) = reader(&[]);
    let browser = reader.browser.clone().expect("the browser is on");
    let url = site.url("/waits");
    let reading = tokio::spawn({
        let reader = reader.clone();
        async move { render(&reader, &url, Duration::from_secs(60)).await }
    });
    until(
        "the page to request /slow.json (or its render to end)",
        || site.hits("/slow.json") > 0 || reading.is_finished(),
    )
    .await;
    let pid = browser
        .inner
        .supervisor
        .running()
        .await
        .expect("a browser runs");
    process::kill_group(pid);
    let (read, outcome) = reading.await.expect("the render ends");
    assert_eq!(outcome, RenderOutcome::Crashed, "{read:?}");
    let (text, outcome) = render(&reader, &site.url("/app"), Duration::from_secs(30)).await;
    assert_eq!(outcome, RenderOutcome::Ok, "{text:?}");
    assert_eq!(restarts(&metrics, RestartReason::Crashed), 1);
    assert_ne!(
        browser.inner.supervisor.running().await,
        Some(pid),
        "a new browser"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_allocating_without_bound_gets_the_browser_restarted_and_the_next_read_answered() {
    if !chromium_present() {
        return;
    }
    let site = site_with_app().await;
    site.set(
        "/hog",
        Page::html(
            "<html><body><p>Hungry</p><script>const kept = [];\
             setInterval(() => { kept.push(new Float64Array(8 << 20).fill(1)); }, 50);</script></body></html>",
        ),
    );
    let (reader, metrics) = reader(&[("BROWSER_MEMORY_MB", "700")]);
    let url = Url::parse(&site.url("/hog")).expect("url");
    let options = RenderOptions {
        wait_for: Some(Duration::from_secs(60)),
    };
    let (_, outcome) = reader
        .render(&url, ReadFormat::Text, options, Duration::from_secs(60))
        .await;
    assert_eq!(outcome, RenderOutcome::Crashed);
    assert_eq!(restarts(&metrics, RestartReason::Memory), 1);
    let (text, outcome) = render(&reader, &site.url("/app"), Duration::from_secs(30)).await;
    assert_eq!(outcome, RenderOutcome::Ok, "{text:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_refusing_proxy_port_stays_taken_for_the_browsers_whole_life() {
    if !chromium_present() {
        return;
    }
    let program = read_settings(&[]).browser.program.expect("a Chromium");
    let chromium = process::launch(&program, HANG_GUARD)
        .await
        .expect("Chromium starts");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", chromium.pid)).expect("its cmdline");
    let port: u16 = cmdline
        .split(|b| *b == 0)
        .filter_map(|arg| std::str::from_utf8(arg).ok())
        .find_map(|arg| arg.strip_prefix("--proxy-server=http://127.0.0.1:"))
        .and_then(|port| port.parse().ok())
        .expect("Chromium's proxy is a loopback port");
    let refused = std::net::TcpStream::connect(("127.0.0.1", port)).expect_err("nothing answers");
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let taken = std::net::TcpListener::bind(("127.0.0.1", port)).expect_err("the port is held");
    assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);
    drop(chromium);
}
