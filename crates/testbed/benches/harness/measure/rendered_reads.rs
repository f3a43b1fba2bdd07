//! k. Rendered reads (#42, point 6): pages whose text arrives by script, read through the release
//! gateway's local headless Chromium (`BROWSER=auto`, `BROWSER_TABS=2`) with `POST /tavily/extract`,
//! two clients at once (one per tab), each page a new URL (no cache hit): rendered reads per second,
//! p50/p99 time per page, the browser's resident memory, and the share of the single-page apps read
//! locally — with no premium reader configured, the share answered with their text, which would
//! otherwise each have been a premium reader's call.
//!
//! The pages are made here from WCXB's development split (articles whose main content has at least
//! 150 words): each an HTML shell whose script fetches `/<id>.json` and writes the article's
//! paragraphs into the page (the app), beside a few plain pages of the same text (a direct read, no
//! render). Nothing outside loopback is requested: the app's text is the corpus's, not its page's
//! markup, so no image or script of the original site is asked for.
//!
//! The browser's memory is its process tree's own pages (`RssAnon` + `RssShmem` of every Chromium
//! process under the gateway; the libraries Chromium maps are counted by neither), as the gateway's
//! supervisor reads it against `BROWSER_MEMORY_MB`, sampled every 50 ms; the first read, which
//! starts the browser, is timed apart.
//!
//! Without a Chromium (`BROWSER_PATH`, or `chromium`, `chromium-browser`, `google-chrome` on
//! `PATH`) the row says it was not measured; the smoke fails only when a read does not answer or no
//! app was read with its text.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use simulator::site::{Page, SimulatedSite};

use super::wcxb::corpus::{Corpus, PageType, Truth};
use crate::loadgen::BoxError;
use crate::report::Row;
use crate::Bench;

/// Concurrent pages, as the gateway is configured (`BROWSER_TABS`): one client per tab.
const TABS: usize = 2;
/// Words an article needs to be made an app of.
const MIN_WORDS: usize = 150;

/// The Chromium the gateway would find, if any.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BROWSER_PATH") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// One field of `/proc/PID/status`, in kB.
fn status_kb(status: &str, name: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The own resident bytes (`RssAnon` + `RssShmem`) of every Chromium process descending from
/// `root` (the gateway).
fn browser_rss(root: u32) -> u64 {
    let mut parent_of = std::collections::HashMap::new();
    let mut chromium = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        parent_of.insert(pid, status_kb(&status, "PPid:") as u32);
        let name = status
            .lines()
            .find_map(|line| line.strip_prefix("Name:"))
            .unwrap_or("")
            .trim();
        if name.starts_with("chrom") {
            let own = status_kb(&status, "RssAnon:") + status_kb(&status, "RssShmem:");
            chromium.push((pid, own * 1024));
        }
    }
    let descends = |mut pid: u32| {
        for _ in 0..64 {
            match parent_of.get(&pid) {
                Some(&parent) if parent == root => return true,
                Some(&parent) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    chromium
        .into_iter()
        .filter(|(pid, _)| descends(*pid))
        .map(|(_, rss)| rss)
        .sum()
}

/// An article's paragraphs as HTML, escaped.
fn article_html(truth: &Truth) -> String {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut html = String::from("<article>");
    for paragraph in truth
        .main_content
        .split('\n')
        .filter(|p| !p.trim().is_empty())
    {
        html.push_str("<p>");
        html.push_str(&escape(paragraph.trim()));
        html.push_str("</p>");
    }
    html.push_str("</article>");
    html
}

/// A few words from the middle of the article's first long paragraph: found in a reply that has
/// its text.
fn probe(truth: &Truth) -> String {
    let paragraph = truth
        .main_content
        .split('\n')
        .max_by_key(|p| p.split_whitespace().count().min(40))
        .unwrap_or("");
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let from = words.len().saturating_sub(6) / 2;
    words[from..(from + 6).min(words.len())].join(" ")
}

/// Serves `truth` as an app at `/app/<id>` (its text from `/app/<id>.json` by script) and as a
/// plain page at `/plain/<id>`.
fn serve(site: &SimulatedSite, truth: &Truth) {
    let id = &truth.id;
    site.set(
        &format!("/app/{id}"),
        Page::html(format!(
            "<!DOCTYPE html><html><head><title>Page {id}</title>\
             <script src=\"/app/{id}.js\"></script></head>\
             <body><div id=\"root\">Loading…</div></body></html>"
        )),
    );
    site.set(
        &format!("/app/{id}.js"),
        Page::ok(
            "text/javascript",
            format!(
                "document.addEventListener('DOMContentLoaded', () => fetch('/app/{id}.json')\
                 .then(r => r.json()).then(d => {{ document.getElementById('root').innerHTML = d.html; }}));"
            ),
        ),
    );
    site.set(
        &format!("/app/{id}.json"),
        Page::ok(
            "application/json",
            serde_json::json!({ "html": article_html(truth) }).to_string(),
        ),
    );
    site.set(
        &format!("/plain/{id}"),
        Page::html(format!(
            "<!DOCTYPE html><html><head><title>Page {id}</title></head><body>{}</body></html>",
            article_html(truth)
        )),
    );
}

/// How one read went.
struct Read {
    elapsed: Duration,
    /// The reply has the article's text.
    with_text: bool,
    /// `explain` says the local browser read it.
    rendered: bool,
}

/// Reads `url` through `POST /tavily/extract` with `explain`.
async fn read(
    client: &reqwest::Client,
    base: &str,
    url: &str,
    probe: &str,
) -> Result<Read, BoxError> {
    let started = Instant::now();
    let response = client
        .post(format!("{base}/tavily/extract?explain=1"))
        .bearer_auth("bench")
        .json(&serde_json::json!({ "urls": [url], "format": "text" }))
        .send()
        .await?;
    let status = response.status();
    let reply: serde_json::Value = response.json().await?;
    let elapsed = started.elapsed();
    if !status.is_success() {
        return Err(format!("{url}: {status} {reply}").into());
    }
    let result = &reply["results"][0];
    Ok(Read {
        elapsed,
        with_text: result["raw_content"]
            .as_str()
            .is_some_and(|text| text.contains(probe)),
        rendered: result["gateway"]["read"]["browser"]["outcome"] == "ok",
    })
}

/// Reads `jobs` (URL, probe) with [`TABS`] clients at once, each taking the next page as it is
/// done: the reads, and the time they all took.
async fn phase(
    client: &reqwest::Client,
    base: &str,
    jobs: Vec<(String, String)>,
) -> Result<(Vec<Read>, Duration), BoxError> {
    let queue = Arc::new(std::sync::Mutex::new(jobs.into_iter()));
    let started = Instant::now();
    let clients: Vec<_> = (0..TABS)
        .map(|_| {
            let (queue, client, base) = (queue.clone(), client.clone(), base.to_owned());
            tokio::spawn(async move {
                let mut done = Vec::new();
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .next();
                    let Some((url, probe)) = next else {
                        return Ok::<_, String>(done);
                    };
                    done.push(
                        read(&client, &base, &url, &probe)
                            .await
                            .map_err(|e| e.to_string())?,
                    );
                }
            })
        })
        .collect();
    let mut reads = Vec::new();
    for client in clients {
        reads.extend(client.await.map_err(|e| e.to_string())??);
    }
    Ok((reads, started.elapsed()))
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

impl Bench {
    /// k. Rendered reads: single-page apps made of WCXB articles, read by the local browser.
    pub(crate) async fn rendered_reads(&mut self, repo: &Path) -> Result<(), BoxError> {
        let Some(program) = chromium() else {
            println!(
                "   skipped: no Chromium found (BROWSER_PATH, or chromium, chromium-browser, google-chrome on PATH)"
            );
            self.rows.push(Row {
                name: "k. rendered reads (local browser)".to_owned(),
                result: "not measured: no Chromium found".to_owned(),
                target: "report".to_owned(),
                met: None,
            });
            return Ok(());
        };
        let (apps, plain) = if self.plan.smoke { (4, 2) } else { (40, 10) };
        let corpus = Corpus::load(&Corpus::locate(repo), 1)?;
        let articles: Vec<&Truth> = corpus
            .truths
            .iter()
            .filter(|t| {
                t.page_type == PageType::Article
                    && t.main_content.split_whitespace().count() >= MIN_WORDS
            })
            .take(apps + plain + 1)
            .collect();
        if articles.len() < apps + plain + 1 {
            return Err(format!(
                "the WCXB corpus has {} articles of {MIN_WORDS} words or more, {} needed",
                articles.len(),
                apps + plain + 1
            )
            .into());
        }
        let site = SimulatedSite::start().await?;
        for truth in &articles {
            serve(&site, truth);
        }
        let env = vec![
            ("SEARXNG_BACKEND_URL".to_owned(), site.url("/searxng")),
            ("FETCH_ALLOW_PRIVATE".to_owned(), "127.0.0.0/8".to_owned()),
            ("BROWSER".to_owned(), "auto".to_owned()),
            ("BROWSER_PATH".to_owned(), program.display().to_string()),
            ("BROWSER_TABS".to_owned(), TABS.to_string()),
        ];
        let gateway = self.gateway(&env, "gateway-rendered-reads").await?;
        let base = format!("http://{}", gateway.addr);
        let client = reqwest::Client::new();
        let pid = gateway.pid();
        // The first read starts the browser.
        let (first, rest) = articles.split_first().ok_or("no article")?;
        let start_up = read(
            &client,
            &base,
            &site.url(&format!("/app/{}", first.id)),
            &probe(first),
        )
        .await?;
        let idle = browser_rss(pid);
        let running = Arc::new(AtomicBool::new(true));
        let peak = Arc::new(AtomicU64::new(idle));
        let sampler = {
            let (running, peak) = (running.clone(), peak.clone());
            std::thread::spawn(move || {
                while running.load(Ordering::Relaxed) {
                    peak.fetch_max(browser_rss(pid), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        let (app_pages, plain_pages) = rest.split_at(apps);
        let jobs = |pages: &[&Truth], path: &str| -> Vec<(String, String)> {
            pages
                .iter()
                .map(|t| (site.url(&format!("/{path}/{}", t.id)), probe(t)))
                .collect()
        };
        let apps_read = phase(&client, &base, jobs(app_pages, "app")).await;
        running.store(false, Ordering::Relaxed);
        let _ = sampler.join();
        let after = browser_rss(pid);
        let plain_read = phase(&client, &base, jobs(plain_pages, "plain")).await;
        gateway.stop();
        let ((app_reads, wall), (plain_reads, _)) = (apps_read?, plain_read?);
        let mut app_times: Vec<Duration> = app_reads.iter().map(|r| r.elapsed).collect();
        let app_text = app_reads.iter().filter(|r| r.with_text).count();
        let app_rendered = app_reads
            .iter()
            .filter(|r| r.with_text && r.rendered)
            .count();
        let plain_text = plain_reads.iter().filter(|r| r.with_text).count();
        let plain_rendered = plain_reads.iter().filter(|r| r.rendered).count();
        app_times.sort();
        let (p50, p99) = (quantile(&app_times, 0.5), quantile(&app_times, 0.99));
        let per_second = app_rendered as f64 / wall.as_secs_f64();
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        let summary = format!(
            "{per_second:.2} rendered reads/s with {TABS} tabs ({apps} apps in {:.1} s); \
             time per app p50 {:.0} ms, p99 {:.0} ms; the first read, starting the browser, {:.0} ms; \
             browser RSS {:.0} MiB after the first page, peak {:.0} MiB, {:.0} MiB at the end; \
             apps read locally with their text: {app_text} of {apps} ({:.0} %; {app_rendered} by the browser), \
             plain pages read: {plain_text} of {plain} ({plain_rendered} rendered)",
            wall.as_secs_f64(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            start_up.elapsed.as_secs_f64() * 1e3,
            mib(idle),
            mib(peak.load(Ordering::Relaxed)),
            mib(after),
            app_text as f64 * 100.0 / apps as f64,
        );
        println!("   {summary}");
        self.details.push(format!(
            "k. rendered reads: {} Chromium at {}; each app page a shell whose script fetches its WCXB \
             article's paragraphs as JSON; no premium reader configured, so an app not read locally \
             would have had no text (with one, a premium call each).",
            if self.plan.smoke { "smoke," } else { "full run," },
            program.display()
        ));
        self.rows.push(Row {
            name: "k. rendered reads (local browser, BROWSER_TABS=2)".to_owned(),
            result: summary,
            target: "report".to_owned(),
            met: None,
        });
        if app_text == 0 || plain_text < plain {
            return Err(format!(
                "apps read with their text {app_text} of {apps}, plain pages {plain_text} of {plain}"
            )
            .into());
        }
        if !start_up.with_text {
            return Err("the first app was not read with its text".into());
        }
        Ok(())
    }
}
