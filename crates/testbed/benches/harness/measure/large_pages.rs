//! k. Large pages: what one read of a 4 MB PDF and of a 5 MB HTML page costs the release gateway —
//! the time of the read through `POST /tavily/extract` (median of three, each from a new URL so
//! none is a cache hit) and the peak resident memory of the gateway and of its parse workers
//! (issue #39: before the parse moved into worker processes, an ordinary 4 MB PDF took ≈ 290 MB
//! of the gateway's own memory per read). Memory is sampled from `/proc` every 2 ms over the
//! process and its children while the reads run.
//!
//! The pages are made here: the PDF is 400 pages of text lines in Helvetica
//! (`simulator::site::pdf_with_pages`), the HTML an article of paragraphs under headings.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use simulator::site::{pdf_with_pages, Page, SimulatedSite};

use crate::loadgen::BoxError;
use crate::report::Row;
use crate::Bench;

/// One read must answer well inside `FETCH_TIMEOUT_SECONDS` (10 s).
const READ_TARGET: Duration = Duration::from_secs(5);

/// A PDF of about `bytes` bytes: pages of numbered lines of plain text.
fn large_pdf(bytes: usize) -> Vec<u8> {
    let line = |page: usize, n: usize| {
        format!(
            "Page {page} line {n}: the quick brown fox jumps over the lazy dog, again and again."
        )
    };
    let per_page = 40;
    let page_bytes = per_page * (line(0, 0).len() + 8);
    let pages: Vec<Vec<String>> = (0..bytes / page_bytes)
        .map(|page| (0..per_page).map(|n| line(page, n)).collect())
        .collect();
    pdf_with_pages(&pages)
}

/// An HTML article of about `bytes` bytes.
fn large_html(bytes: usize) -> Vec<u8> {
    let mut html = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><title>A long report</title></head><body>\
         <nav><a href=\"/\">Home</a></nav><article><h1>A long report</h1>",
    );
    let mut section = 0;
    while html.len() < bytes {
        section += 1;
        html.push_str(&format!("<h2>Section {section}</h2>"));
        for n in 0..8 {
            html.push_str(&format!(
                "<p>Paragraph {n} of section {section} says what a long report says, in plain words that a \
                 reader keeps: findings, numbers such as {section}.{n}, and a sentence or two more.</p>"
            ));
        }
    }
    html.push_str("</article><footer>Footer</footer></body></html>");
    html.into_bytes()
}

/// Resident bytes of `pid` and of its children, and of the largest child alone. Children are
/// listed per thread (`/proc/PID/task/TID/children`): workers are started from the runtime's threads.
fn tree_rss(pid: u32) -> (u64, u64) {
    let rss = |pid: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/statm"))
            .ok()
            .and_then(|statm| statm.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(0, |pages| pages * 4096)
    };
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let listed = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        children.extend(listed.split_whitespace().map(rss));
    }
    let own = rss(&pid.to_string());
    (
        own + children.iter().sum::<u64>(),
        children.into_iter().max().unwrap_or(0),
    )
}

impl Bench {
    /// k. A 4 MB PDF and a 5 MB HTML page through the release gateway: time and peak memory.
    pub(crate) async fn large_pages(&mut self) -> Result<(), BoxError> {
        let site = SimulatedSite::start().await?;
        let pdf = large_pdf(4_000_000);
        let html = large_html(5_000_000);
        let (pdf_len, html_len) = (pdf.len(), html.len());
        for n in 0..3 {
            site.set(
                &format!("/report-{n}.pdf"),
                Page::ok("application/pdf", pdf.clone()),
            );
            site.set(
                &format!("/report-{n}.html"),
                Page::ok("text/html; charset=utf-8", html.clone()),
            );
        }
        let env = vec![
            ("SEARXNG_BACKEND_URL".to_owned(), site.url("/searxng")),
            ("FETCH_ALLOW_PRIVATE".to_owned(), "127.0.0.0/8".to_owned()),
        ];
        let gateway = self.gateway(&env, "gateway-large-pages").await?;
        let base = format!("http://{}", gateway.addr);
        let client = reqwest::Client::new();
        let pid = gateway.pid();
        let idle = tree_rss(pid).0;
        for (kind, len) in [("pdf", pdf_len), ("html", html_len)] {
            let running = Arc::new(AtomicBool::new(true));
            let (peak_all, peak_worker) =
                (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
            let sampler = {
                let (running, peak_all, peak_worker) =
                    (running.clone(), peak_all.clone(), peak_worker.clone());
                std::thread::spawn(move || {
                    while running.load(Ordering::Relaxed) {
                        let (all, worker) = tree_rss(pid);
                        peak_all.fetch_max(all, Ordering::Relaxed);
                        peak_worker.fetch_max(worker, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(2));
                    }
                })
            };
            let mut times = Vec::new();
            let mut words = 0;
            for n in 0..3 {
                let started = Instant::now();
                let reply: serde_json::Value = client
                    .post(format!("{base}/tavily/extract"))
                    .bearer_auth("bench")
                    .json(&serde_json::json!({"urls": [site.url(&format!("/report-{n}.{kind}"))], "format": "text"}))
                    .send()
                    .await?
                    .json()
                    .await?;
                times.push(started.elapsed());
                let text = reply["results"][0]["raw_content"].as_str().unwrap_or("");
                words = text.split_whitespace().count();
                if words == 0 {
                    running.store(false, Ordering::Relaxed);
                    let _ = sampler.join();
                    gateway.stop();
                    return Err(format!("the {kind} page was not read: {reply}").into());
                }
            }
            running.store(false, Ordering::Relaxed);
            let _ = sampler.join();
            times.sort();
            let median = times[1];
            let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
            println!(
                "   a {:.1} MB {kind}: read in {:.0} ms (median of 3), {words} words; peak RSS gateway and workers {:.0} MiB (idle {:.0} MiB), largest worker {:.0} MiB",
                len as f64 / 1e6,
                median.as_secs_f64() * 1e3,
                mib(peak_all.load(Ordering::Relaxed)),
                mib(idle),
                mib(peak_worker.load(Ordering::Relaxed)),
            );
            self.rows.push(Row {
                name: format!("k. reader: a {:.0} MB {kind} page", len as f64 / 1e6),
                result: format!(
                    "read in {:.0} ms; peak RSS {:.0} MiB (gateway and workers; idle {:.0} MiB), largest worker {:.0} MiB",
                    median.as_secs_f64() * 1e3,
                    mib(peak_all.load(Ordering::Relaxed)),
                    mib(idle),
                    mib(peak_worker.load(Ordering::Relaxed)),
                ),
                target: format!("≤ {} s; a worker ≤ PARSE_MEMORY_MB (1024)", READ_TARGET.as_secs()),
                met: Some(median <= READ_TARGET && peak_worker.load(Ordering::Relaxed) <= 1 << 30),
            });
        }
        gateway.stop();
        Ok(())
    }
}
