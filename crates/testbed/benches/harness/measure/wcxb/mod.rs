//! k. The reader on WCXB's development split (issue #40): 1,497 real pages of seven types
//! (articles, forums, products, collections, listings, documentation, service pages), each with a
//! hand-reviewed main content, scored as the benchmark scores ([`score`], the corpus's
//! `evaluate.py` ported): word F1 overall and per type, the `with`/`without` snippet rates, the
//! pages not read, time per page. The targets are #40's: overall F1 ≥ 0.90, no type below 0.75,
//! articles ≥ 0.95, p50 ≤ 5 ms and p99 ≤ 40 ms per page on one core.
//!
//! In-process: every page ([`corpus`]) through each [`extractors::Extractor`] — the gateway's
//! reader as a direct read runs it, and the candidates `rs-trafilatura` and `trafilatura` side by
//! side — one after the other per page, on one thread, each read timed alone. `--smoke` takes
//! every tenth page. The title, author and date the reader takes from each page are compared
//! with the truth's ([`metadata`], #40 point 5).
//!
//! Through the gateway (full run only): each page served from a loopback address of its own
//! (`127.10.x.y`, one `SimulatedSite` per page, kernel-chosen port, the page's original path), so
//! that no page's verdict on its host (the host breaker) decides another's, read one at a time
//! through the release gateway's `POST /tavily/extract` with `format: text` (fetch, charset,
//! parse worker, rendering), scored the same way; the time is the request's round trip.
//!
//! Each run's texts go to `target/harness/wcxb/<run>.json` — the `{id: text}` file that
//! `python3 evaluate.py --results FILE --per-type` reads, to check this port of the scorer or look
//! at a page. The Readability-corpus rows (`extraction.rs`) stay as the regression guard.

pub(super) mod corpus;
mod extractors;
mod metadata;
mod score;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use simulator::site::{Page, SimulatedSite};

use crate::loadgen::BoxError;
use crate::report::Row;
use crate::{ms, Bench};
use corpus::{Corpus, PageType, Truth};
use extractors::{Extractor, CONTENT_TYPE};
use metadata::Agreement;
use score::Scorecard;

/// #40's targets for word F1: overall, the floor for every type, articles.
const F1_OVERALL: f64 = 0.90;
const F1_TYPE_FLOOR: f64 = 0.75;
const F1_ARTICLE: f64 = 0.95;
const F1_TARGETS: &str = "overall ≥ 0.90, no type < 0.75, articles ≥ 0.95";
/// #40's targets for time per page on one core.
const P50_TARGET: Duration = Duration::from_millis(5);
const P99_TARGET: Duration = Duration::from_millis(40);
/// The smoke run reads every tenth page.
const SMOKE_EVERY: usize = 10;
/// Pages listed per type among the worst, and among the unread.
const WORST_LISTED: usize = 3;
const UNREAD_LISTED: usize = 10;

/// One extractor's pass over the corpus: its scores and its texts.
struct Run {
    label: String,
    file_stem: &'static str,
    card: Scorecard,
    texts: Map<String, Value>,
}

impl Run {
    fn new(label: String, file_stem: &'static str) -> Self {
        Self {
            label,
            file_stem,
            card: Scorecard::default(),
            texts: Map::new(),
        }
    }

    fn add(&mut self, truth: &Truth, read: Result<String, String>, took: Duration) {
        self.card.add(truth, &read, took);
        self.texts
            .insert(truth.id.clone(), Value::String(read.unwrap_or_default()));
    }

    fn targets_met(&self) -> bool {
        let floor = |page_type: PageType, target: f64| {
            let means = self.card.of_type(page_type);
            means.pages == 0 || means.f1 >= target
        };
        self.card.overall().f1 >= F1_OVERALL
            && PageType::ALL.into_iter().all(|t| floor(t, F1_TYPE_FLOOR))
            && floor(PageType::Article, F1_ARTICLE)
    }

    fn time_met(&self) -> bool {
        self.card.time_quantile(0.5) <= P50_TARGET && self.card.time_quantile(0.99) <= P99_TARGET
    }

    /// `article 0.944, forum 0.702, …` (types with pages only).
    fn per_type(&self) -> String {
        PageType::ALL
            .into_iter()
            .map(|t| (t, self.card.of_type(t)))
            .filter(|(_, means)| means.pages > 0)
            .map(|(t, means)| format!("{} {:.3}", t.name(), means.f1))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Overall F1, per type, snippet rates, pages not read.
    fn summary(&self) -> String {
        let overall = self.card.overall();
        format!(
            "overall {:.3} (P {:.3}, R {:.3}) over {} pages; {}; with-snippets {:.1} %, without-snippets {:.1} %; {} not read",
            overall.f1,
            overall.precision,
            overall.recall,
            overall.pages,
            self.per_type(),
            overall.with * 100.0,
            overall.without * 100.0,
            self.card.unread.len(),
        )
    }

    fn times(&self) -> String {
        format!(
            "p50 {}, p99 {}, mean {}",
            ms(self.card.time_quantile(0.5)),
            ms(self.card.time_quantile(0.99)),
            ms(self.card.time_mean()),
        )
    }
}

/// Every page through every extractor, on this thread; the gateway's metadata against the truth.
fn read_in_process(corpus: &Corpus) -> Result<(Vec<(Extractor, Run)>, Agreement), BoxError> {
    let mut agreement = Agreement::default();
    let mut runs: Vec<(Extractor, Run)> = Extractor::ALL
        .iter()
        .copied()
        .map(|e| {
            (
                e,
                Run::new(format!("{} (in-process)", e.name()), e.file_stem()),
            )
        })
        .collect();
    for truth in &corpus.truths {
        let html = corpus.html(truth)?;
        for (extractor, run) in &mut runs {
            let started = Instant::now();
            let (read, declared) = extractor.read(&html, &truth.url);
            let took = started.elapsed();
            if *extractor == Extractor::Gateway {
                agreement.add(truth, declared.as_ref());
            }
            run.add(truth, read, took);
        }
    }
    Ok((runs, agreement))
}

/// Page `n`'s own loopback address (127.10.0.1, 127.10.0.2, …, 250 to a block), port 0.
fn page_address(n: usize) -> SocketAddr {
    let (block, host) = ((n / 250) % 256, n % 250 + 1);
    SocketAddr::from(([127, 10, block as u8, host as u8], 0))
}

/// The path and query of `url` (`/` when it does not parse).
fn path_of(url: &str) -> String {
    url::Url::parse(url).map_or_else(
        |_| "/".to_owned(),
        |url| url[url::Position::BeforePath..url::Position::AfterQuery].to_owned(),
    )
}

impl Bench {
    /// k. The reader on WCXB's development split: in-process beside the candidates, and through
    /// the release gateway (full run).
    pub(crate) async fn wcxb(&mut self, repo: &Path) -> Result<(), BoxError> {
        let dir = Corpus::locate(repo);
        let every = if self.plan.smoke { SMOKE_EVERY } else { 1 };
        let corpus = Arc::new(Corpus::load(&dir, every)?);
        let subset = if every > 1 {
            format!(", every {every}th page")
        } else {
            String::new()
        };
        let started = Instant::now();
        let (in_process, agreement) = {
            let corpus = Arc::clone(&corpus);
            tokio::task::spawn_blocking(move || read_in_process(&corpus)).await??
        };
        println!(
            "   {} pages{subset} read in-process by {} extractors in {:.0} s",
            corpus.truths.len(),
            in_process.len(),
            started.elapsed().as_secs_f64()
        );
        let (mut reader, mut candidates) = (None, Vec::new());
        for (extractor, run) in in_process {
            if extractor == Extractor::Gateway {
                reader = Some(run);
            } else {
                candidates.push(run);
            }
        }
        let reader = reader.ok_or("the gateway's reader did not run")?;
        let through = if self.plan.smoke {
            None
        } else {
            let started = Instant::now();
            let run = self.wcxb_through_gateway(&corpus).await?;
            println!(
                "   {} pages read through the gateway in {:.0} s",
                corpus.truths.len(),
                started.elapsed().as_secs_f64()
            );
            Some(run)
        };
        let runs: Vec<&Run> = std::iter::once(&reader)
            .chain(&through)
            .chain(&candidates)
            .collect();
        for run in &runs {
            println!("   {}: {}; {}", run.label, run.summary(), run.times());
        }
        let texts = self.log_dir.join("wcxb");
        std::fs::create_dir_all(&texts)?;
        for run in &runs {
            std::fs::write(
                texts.join(format!("{}.json", run.file_stem)),
                serde_json::to_vec(&run.texts)?,
            )?;
        }
        println!("   the reader's metadata: {}", agreement.summary());
        self.rows.push(Row {
            name: "k. reader on WCXB dev: metadata against the truth".into(),
            result: agreement.summary(),
            target: "report".into(),
            met: None,
        });
        self.wcxb_report(&corpus, &subset, &reader, through.as_ref(), &candidates);
        Ok(())
    }

    /// The rows and details of the WCXB measurement.
    fn wcxb_report(
        &mut self,
        corpus: &Corpus,
        subset: &str,
        reader: &Run,
        through: Option<&Run>,
        candidates: &[Run],
    ) {
        let runs: Vec<&Run> = std::iter::once(reader)
            .chain(through)
            .chain(candidates)
            .collect();
        self.rows.push(Row {
            name: "k. reader on WCXB dev: word F1".into(),
            result: format!("{} (in-process{subset})", reader.summary()),
            target: F1_TARGETS.into(),
            met: Some(reader.targets_met()),
        });
        self.rows.push(Row {
            name: "k. reader on WCXB dev: time per page (one core)".into(),
            result: format!("{} over {} pages", reader.times(), corpus.truths.len()),
            target: format!("p50 ≤ {}, p99 ≤ {}", ms(P50_TARGET), ms(P99_TARGET)),
            met: Some(reader.time_met()),
        });
        if let Some(through) = through {
            self.rows.push(Row {
                name: "k. reader on WCXB dev through the gateway: word F1".into(),
                result: format!(
                    "{} (`POST /tavily/extract`, text, one loopback address per page); per read {}",
                    through.summary(),
                    through.times()
                ),
                target: F1_TARGETS.into(),
                met: Some(through.targets_met()),
            });
        }
        for run in candidates {
            self.rows.push(Row {
                name: format!("k. candidate on WCXB dev: {}", run.label),
                result: format!("{}; {}", run.summary(), run.times()),
                target: "report (beside the reader)".into(),
                met: None,
            });
        }

        let columns: Vec<&str> = runs.iter().map(|run| run.label.as_str()).collect();
        let per_type: Vec<String> = PageType::ALL
            .into_iter()
            .map(|t| {
                let cells: Vec<String> = runs
                    .iter()
                    .map(|run| format!("{:.3}", run.card.of_type(t).f1))
                    .collect();
                format!(
                    "{} ({}) {}",
                    t.name(),
                    reader.card.of_type(t).pages,
                    cells.join(" / ")
                )
            })
            .chain(std::iter::once({
                let cells: Vec<String> = runs
                    .iter()
                    .map(|run| format!("{:.3}", run.card.overall().f1))
                    .collect();
                format!("overall ({}) {}", corpus.truths.len(), cells.join(" / "))
            }))
            .collect();
        self.details.push(format!(
            "k. WCXB dev word F1 per page type (pages), {}: {}.",
            columns.join(" / "),
            per_type.join("; ")
        ));
        self.details.push(format!(
            "k. WCXB dev ({}{subset}) is scored as its `evaluate.py` scores (ported in `measure/wcxb/score.rs`): \
             lower-cased `\\w+` tokens as multisets, P/R/F1 per page averaged over pages, snippet rates as shares \
             found (a page without snippets counts 1.0 for both, as `evaluate.py` counts it); a page not read scores \
             as the empty text. In-process, each extractor gets the page's bytes as `{CONTENT_TYPE}` with its \
             original URL, one after the other per page on one thread; the candidates run with their defaults. \
             The texts are in `target/harness/wcxb/` for `python3 evaluate.py --results FILE --per-type`. \
             Published dev-split F1 for reference (the corpus's README): rs-trafilatura 0.859, Python's \
             trafilatura 0.791, dom-smoothie 0.762, Readability 0.675.",
            corpus.dir.display()
        ));
        let wordless: Vec<&str> = corpus
            .truths
            .iter()
            .filter(|truth| score::has_no_words(&truth.main_content))
            .map(|truth| truth.id.as_str())
            .collect();
        if !wordless.is_empty() {
            self.details.push(format!(
                "k. WCXB dev: pages whose main content has no words, where any text read scores F1 0 (as \
                 `evaluate.py` scores them): {} ({}).",
                wordless.len(),
                wordless.join(", ")
            ));
        }
        if through.is_some() {
            self.details.push(
                "k. WCXB through the gateway: the release gateway with its defaults plus \
                 FETCH_ALLOW_PRIVATE=127.0.0.0/8; each page served by its own loopback site on 127.10.x.y \
                 (kernel-chosen port) at its original path, read one at a time through `POST /tavily/extract` \
                 with `format: text`; the time per read is the request's round trip."
                    .to_owned(),
            );
        }
        for run in &runs {
            if run.card.unread.is_empty() {
                continue;
            }
            let listed: Vec<String> = run
                .card
                .unread
                .iter()
                .take(UNREAD_LISTED)
                .map(|(id, why)| format!("{id} ({why})"))
                .collect();
            self.details.push(format!(
                "k. WCXB pages not read by {}: {} — {}{}",
                run.label,
                run.card.unread.len(),
                listed.join(", "),
                if run.card.unread.len() > UNREAD_LISTED {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        let worst: Vec<String> = PageType::ALL
            .into_iter()
            .map(|t| {
                let pages: Vec<String> = reader
                    .card
                    .worst(t, WORST_LISTED)
                    .into_iter()
                    .map(|(id, f1)| format!("{id} {f1:.2}"))
                    .collect();
                format!("{} {}", t.name(), pages.join(", "))
            })
            .collect();
        self.details.push(format!(
            "k. WCXB dev, the reader's worst pages per type (in-process F1): {}.",
            worst.join("; ")
        ));
    }

    /// Every page through the release gateway's `POST /tavily/extract`, each from its own
    /// loopback address, one at a time.
    async fn wcxb_through_gateway(&mut self, corpus: &Corpus) -> Result<Run, BoxError> {
        let home = SimulatedSite::start().await?;
        let env = vec![
            ("SEARXNG_BACKEND_URL".to_owned(), home.url("/searxng")),
            ("FETCH_ALLOW_PRIVATE".to_owned(), "127.0.0.0/8".to_owned()),
        ];
        let gateway = self.gateway(&env, "gateway-wcxb").await?;
        let extract = format!("http://{}/tavily/extract", gateway.addr);
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()?;
        let mut run = Run::new(
            "the gateway's reader (through the gateway)".to_owned(),
            "gateway-through-extract",
        );
        for (n, truth) in corpus.truths.iter().enumerate() {
            let site = SimulatedSite::start_on(page_address(n)).await?;
            site.set_default(Page::ok(CONTENT_TYPE, corpus.html(truth)?));
            let url = site.url(&path_of(&truth.url));
            let started = Instant::now();
            let reply: Value = client
                .post(&extract)
                .bearer_auth("bench")
                .json(&json!({"urls": [url], "format": "text"}))
                .send()
                .await?
                .json()
                .await?;
            let took = started.elapsed();
            let read = match reply["results"][0]["raw_content"].as_str() {
                Some(text) if !text.trim().is_empty() => Ok(text.to_owned()),
                Some(_) => Err("no readable text".to_owned()),
                None => Err(reply["failed_results"][0]["error"]
                    .as_str()
                    .map_or_else(|| format!("unexpected answer {reply}"), str::to_owned)),
            };
            run.add(truth, read, took);
        }
        gateway.stop();
        Ok(run)
    }
}
