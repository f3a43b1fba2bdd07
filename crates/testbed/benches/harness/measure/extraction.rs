//! k. Reading pages: the reader's extraction scored on the Readability corpus, timed on one core,
//! and what a cached page costs.
//!
//! Quality: each page's `source.html` through the reader's extraction as plain text
//! (`searxng_gateway::bench::read_page`, the code a direct read runs), against the page's
//! `expected.html` (the article a careful reader keeps) turned into text by one function for
//! every page ([`expected_text`]: the text of every node, a break around each block, scripts and
//! styles left out). Both are split into words — lower-case, at every character that is not
//! alphanumeric, each CJK character a word of its own — and compared as bags: precision is the
//! share of the extracted words that were expected, recall the share of the expected words that
//! were extracted (a word counts as often as it is in both), F1 their harmonic mean. A page the
//! reader fails on scores 0 and stays in the mean.
//!
//! Speed: the same call, on this one thread, each page `repeats` times (the median kept): time per
//! page at p50 and p99, pages per second over the corpus, and the mean for pages of 80–120 kB.
//!
//! Memory: the release gateway reads every page of the corpus from a loopback site through
//! `POST /tavily/extract`; its page cache's bytes divided by its entries is the cost of a cached
//! page (the text kept, plus what the cache keeps with it), beside the mean text length.
//!
//! The corpus: `READABILITY_CORPUS`, else `readability` in `SHARED_CORPUS` or in `../shared/corpus`
//! next to the repository (its 130 pages), else the ten pages the repository carries (`crates/testbed/corpus`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dom_query::Document as Dom;
use simulator::site::{Page, SimulatedSite};

use crate::loadgen::BoxError;
use crate::report::Row;
use crate::Bench;

/// Mean F1 the reader must reach on the corpus.
const F1_TARGET: f64 = 0.95;
/// Median time for a page of about 100 kB.
const P50_TARGET: Duration = Duration::from_millis(5);

/// One page of the corpus.
struct CorpusPage {
    name: String,
    source: Vec<u8>,
    expected: String,
}

/// Where the corpus is, and how it was found.
fn corpus_dir(repo: &Path) -> (PathBuf, &'static str) {
    if let Some(dir) = std::env::var_os("READABILITY_CORPUS") {
        return (PathBuf::from(dir), "READABILITY_CORPUS");
    }
    let shared = std::env::var_os("SHARED_CORPUS")
        .map_or_else(|| repo.join("../shared/corpus"), PathBuf::from)
        .join("readability");
    if shared.join("pages").is_dir() {
        return (shared, "the full corpus next to the repository");
    }
    (
        repo.join("crates/testbed/corpus/readability"),
        "the repository's ten pages",
    )
}

fn load(dir: &Path) -> Result<Vec<CorpusPage>, BoxError> {
    let mut pages = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir.join("pages"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("source.html").is_file() && p.join("expected.html").is_file())
        .collect();
    names.sort();
    for path in names {
        pages.push(CorpusPage {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            source: std::fs::read(path.join("source.html"))?,
            expected: std::fs::read_to_string(path.join("expected.html"))?,
        });
    }
    if pages.is_empty() {
        return Err(format!("no pages in {}", dir.display()).into());
    }
    Ok(pages)
}

/// An HTML fragment as text: every text node, a break around each block element, the content of
/// scripts, styles and templates left out.
fn expected_text(html: &str) -> String {
    let dom = Dom::from(html);
    for noise in ["script", "style", "noscript", "template", "head"] {
        dom.select(noise).remove();
    }
    dom.formatted_text().to_string()
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff)
}

/// Lower-case words: runs of alphanumeric characters, each CJK character a word of its own.
fn words(text: &str) -> HashMap<String, usize> {
    let mut bag: HashMap<String, usize> = HashMap::new();
    let mut word = String::new();
    let flush = |word: &mut String, bag: &mut HashMap<String, usize>| {
        if !word.is_empty() {
            *bag.entry(std::mem::take(word)).or_default() += 1;
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut bag);
            *bag.entry(c.to_string()).or_default() += 1;
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut bag);
        }
    }
    flush(&mut word, &mut bag);
    bag
}

/// Precision, recall and F1 of `got` against `expected`, as bags of words.
fn score(got: &str, expected: &str) -> (f64, f64, f64) {
    let (got, expected) = (words(got), words(expected));
    let total = |bag: &HashMap<String, usize>| bag.values().sum::<usize>() as f64;
    let common: usize = got
        .iter()
        .map(|(w, n)| (*n).min(expected.get(w).copied().unwrap_or(0)))
        .sum();
    let precision = if total(&got) > 0.0 {
        common as f64 / total(&got)
    } else {
        0.0
    };
    let recall = if total(&expected) > 0.0 {
        common as f64 / total(&expected)
    } else {
        0.0
    };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    (precision, recall, f1)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

impl Bench {
    /// k. The reader: quality and speed of the extraction on the corpus, bytes per cached page.
    pub(crate) async fn extraction(&mut self, repo: &Path) -> Result<(), BoxError> {
        let (dir, found_as) = corpus_dir(repo);
        let pages = load(&dir)?;
        let repeats = if self.plan.smoke { 1 } else { 5 };
        let url = |name: &str| format!("https://corpus.example/{name}/");
        let mut sums = (0.0, 0.0, 0.0);
        let mut failed = Vec::new();
        let mut times = Vec::with_capacity(pages.len());
        let mut hundred_kb = Vec::new();
        let mut total = Duration::ZERO;
        for page in &pages {
            let mut samples = Vec::with_capacity(repeats);
            let mut text = None;
            for _ in 0..repeats {
                let started = Instant::now();
                text = searxng_gateway::bench::read_page(
                    &page.source,
                    "text/html; charset=utf-8",
                    &url(&page.name),
                    true,
                );
                samples.push(started.elapsed());
            }
            samples.sort();
            let median = samples[samples.len() / 2];
            times.push(median);
            total += median;
            if (80_000..=120_000).contains(&page.source.len()) {
                hundred_kb.push(median);
            }
            match text {
                Some(text) => {
                    let (p, r, f) = score(&text, &expected_text(&page.expected));
                    sums = (sums.0 + p, sums.1 + r, sums.2 + f);
                }
                None => failed.push(page.name.clone()),
            }
        }
        let n = pages.len() as f64;
        let (precision, recall, f1) = (sums.0 / n, sums.1 / n, sums.2 / n);
        times.sort();
        let (p50, p99) = (quantile(&times, 0.5), quantile(&times, 0.99));
        let per_second = n / total.as_secs_f64().max(f64::EPSILON);
        let hundred = if hundred_kb.is_empty() {
            p50
        } else {
            hundred_kb.iter().sum::<Duration>() / hundred_kb.len() as u32
        };
        println!(
            "   {} pages ({found_as}): F1 {f1:.3} (P {precision:.3}, R {recall:.3}), p50 {:.2} ms, p99 {:.2} ms, {per_second:.0} pages/s, ~100 kB pages {:.2} ms",
            pages.len(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            hundred.as_secs_f64() * 1e3,
        );
        if !failed.is_empty() {
            println!("   pages the reader failed on: {failed:?}");
        }
        let (per_page, mean_text) = self.cached_page_bytes(&pages).await?;
        self.rows.push(Row {
            name: "k. reader: extraction quality".into(),
            result: format!(
                "word F1 {f1:.3} (precision {precision:.3}, recall {recall:.3}) over {} pages ({found_as}); {} failed",
                pages.len(),
                failed.len()
            ),
            target: format!("F1 ≥ {F1_TARGET}"),
            met: Some(f1 >= F1_TARGET),
        });
        self.rows.push(Row {
            name: "k. reader: time per page (one core)".into(),
            result: format!(
                "p50 {:.2} ms, p99 {:.2} ms, {per_second:.0} pages/s; pages of 80–120 kB {:.2} ms ({} pages)",
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3,
                hundred.as_secs_f64() * 1e3,
                hundred_kb.len()
            ),
            target: "p50 ≤ 5 ms for a 100 kB page".into(),
            met: Some(hundred <= P50_TARGET),
        });
        self.rows.push(Row {
            name: "k. reader: bytes per cached page".into(),
            result: format!(
                "{per_page:.0} bytes per cached page (mean text {mean_text:.0} bytes), through the release gateway"
            ),
            target: "report".into(),
            met: None,
        });
        self.details.push(format!(
            "k. scores the reader's plain text against each page's expected article ({found_as}: {}), as bags of lower-case words (CJK characters one word each); time is one thread, median of {repeats} runs per page.",
            dir.display()
        ));
        Ok(())
    }

    /// Every page read once through the release gateway from a loopback site: the page cache's
    /// bytes per entry, and the mean length of the text kept.
    async fn cached_page_bytes(&mut self, pages: &[CorpusPage]) -> Result<(f64, f64), BoxError> {
        let site = SimulatedSite::start().await?;
        for page in pages {
            site.set(
                &format!("/{}/", page.name),
                Page::ok("text/html; charset=utf-8", page.source.clone()),
            );
        }
        let env = vec![
            ("SEARXNG_BACKEND_URL".to_owned(), site.url("/searxng")),
            ("FETCH_ALLOW_PRIVATE".to_owned(), "127.0.0.0/8".to_owned()),
            ("FETCH_CACHE_BYTES".to_owned(), (1u64 << 30).to_string()),
        ];
        let gateway = self.gateway(&env, "gateway-reader").await?;
        let client = reqwest::Client::new();
        let base = format!("http://{}", gateway.addr);
        let mut text_bytes = 0usize;
        let mut read = 0usize;
        for chunk in pages.chunks(20) {
            let urls: Vec<String> = chunk
                .iter()
                .map(|p| site.url(&format!("/{}/", p.name)))
                .collect();
            let reply: serde_json::Value = client
                .post(format!("{base}/tavily/extract"))
                .bearer_auth("bench")
                .json(&serde_json::json!({"urls": urls, "format": "text"}))
                .send()
                .await?
                .json()
                .await?;
            for result in reply["results"].as_array().into_iter().flatten() {
                text_bytes += result["raw_content"].as_str().map_or(0, str::len);
                read += 1;
            }
        }
        let metrics = client
            .get(format!("{base}/metrics"))
            .send()
            .await?
            .text()
            .await?;
        let sample = |name: &str| {
            metrics
                .lines()
                .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
                .and_then(|l| l.rsplit_once(' '))
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let (bytes, entries) = (
            sample("searxng_gateway_read_cache_bytes"),
            sample("searxng_gateway_read_cache_entries"),
        );
        gateway.stop();
        if read == 0 || entries == 0.0 {
            return Err(format!("the gateway read {read} pages and cached {entries}").into());
        }
        Ok((bytes / entries, text_bytes as f64 / read as f64))
    }
}
