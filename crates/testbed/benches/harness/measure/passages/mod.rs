//! k. Query-relevant passages (issue #41, point 5): does the gateway's passage selector find the
//! answer to a question about one fact of a long page, in Tavily's default of 3 chunks of at most
//! 500 characters? And what does choosing them cost for a 50 kB page?
//!
//! The questions (`questions.json` beside this file, written by hand from WCXB's development
//! split): each paraphrases one fact of a page whose main content has at least 1,500 words, with
//! a short answer found verbatim in that main content and not in its first 1,500 characters. A
//! question whose answer is not where it should be is a data error, which fails the run (smoke
//! included); the recall numbers themselves never fail a smoke.
//!
//! Each page is read in-process as Tavily's extract reads it (the reader's Markdown, through
//! `searxng_gateway::bench`), and three answers are taken from the same text: the gateway's
//! chunks (`PassageSelector` with Tavily's selection, as `tavily/chunks.rs` builds it); the first
//! 1,500 characters (what truncation gives); the best three of plain BM25 over fixed 500-character
//! windows ([`windows`]: what a character splitter and a BM25 retriever give). An answer counts
//! when its words, lower-cased, stand in that order in the returned text — case, spacing,
//! punctuation, Markdown marks and links' targets aside. Recall is over every question, a page
//! the reader could not read (or whose text lost the answer) counting as a miss for all three.
//!
//! The time: the gateway's choice of chunks on a 50 kB text per question — its page's text
//! followed by the next pages' of the set (most are shorter than 50 kB), cut to 50 kB — with its
//! question and its page's title, one choice after the other on one thread, the texts in turn.
//!
//! The corpus is found as the WCXB row finds it (`measure/wcxb/corpus.rs`); without it the row
//! fails as that row does. Each question's passages go to `target/harness/passages.json`.

mod windows;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::wcxb::corpus::{Corpus, Truth};
use crate::loadgen::BoxError;
use crate::report::Row;
use crate::{ms, Bench};

/// The question set, next to this file.
const QUESTIONS: &str = "benches/harness/measure/passages/questions.json";
/// Every page of the split is UTF-8 HTML.
const CONTENT_TYPE: &str = "text/html; charset=utf-8";
/// Tavily's default: chunks per page.
const CHUNKS: usize = 3;
/// What truncation keeps, in characters (Tavily's 3 × 500).
const TRUNCATED_CHARS: usize = 1_500;
/// #41's targets: the gateway's recall, and its lead over BM25 windows.
const RECALL_TARGET: f64 = 0.85;
const LEAD_TARGET: f64 = 0.10;
/// The page the time is measured on, in bytes of text.
const TIMED_BYTES: usize = 50_000;
/// #41's target for choosing the chunks of a 50 kB page.
const P50_TARGET: Duration = Duration::from_millis(2);
/// Timed choices: the full run's, the smoke's.
const TIMED_RUNS: usize = 500;
const SMOKE_TIMED_RUNS: usize = 20;

/// One question of the set.
struct Question {
    page: String,
    page_type: String,
    question: String,
    answer: String,
}

/// Who returns the passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Gateway,
    Truncation,
    Windows,
}

impl Method {
    const ALL: [Self; 3] = [Self::Gateway, Self::Truncation, Self::Windows];

    fn label(self) -> &'static str {
        match self {
            Self::Gateway => "the gateway's 3 chunks of ≤ 500 characters (Tavily's default)",
            Self::Truncation => "the first 1,500 characters (truncation)",
            Self::Windows => "plain BM25 over 500-character windows, best 3",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::Truncation => "first 1,500",
            Self::Windows => "BM25 windows",
        }
    }
}

/// What each method returned for one question, and whether the answer is in it.
struct Outcome {
    /// The question's index in the set.
    index: usize,
    /// The reader's text holds the answer.
    read: bool,
    /// Per [`Method::ALL`]: the answer is in what it returned.
    found: [bool; 3],
    /// Per [`Method::ALL`]: what it returned.
    texts: [String; 3],
}

/// The measurement's results.
struct Measured {
    outcomes: Vec<Outcome>,
    /// The choice's time on a 50 kB text, every run, sorted.
    times: Vec<Duration>,
    /// How many 50 kB texts the runs took in turn.
    timed_texts: usize,
}

/// `text`'s words, lower-cased, each between spaces (`" the 2 overall "`), its Markdown links'
/// targets left out (`[id](https://…) and [headers](https://…)` reads `id and headers`).
fn words(text: &str) -> String {
    let mut out = String::from(" ");
    for word in without_link_targets(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        out.push_str(&word.to_lowercase());
        out.push(' ');
    }
    out
}

/// `text` without the `(target)` of its Markdown links: from `](` to the next `)` on the same
/// line (a passage cut inside a link leaves its target open: that is kept as text).
fn without_link_targets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..=at]);
        let target = &rest[at + 1..];
        let line = target.find('\n').unwrap_or(target.len());
        rest = match target[..line].find(')') {
            Some(end) => &target[end + 1..],
            None => target,
        };
    }
    out.push_str(rest);
    out
}

/// The first `chars` characters of `text`.
fn head(text: &str, chars: usize) -> &str {
    text.char_indices()
        .nth(chars)
        .map_or(text, |(end, _)| &text[..end])
}

/// `text` cut to at most `bytes` bytes, at a character's boundary.
fn cut_to(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The question set, checked for its shape.
fn load_questions(path: &Path) -> Result<Vec<Question>, BoxError> {
    let file: Value = serde_json::from_slice(
        &std::fs::read(path).map_err(|err| format!("{}: {err}", path.display()))?,
    )?;
    let field = |item: &Value, name: &str| -> Result<String, BoxError> {
        item.get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("{}: a question without {name}: {item}", path.display()).into())
    };
    let questions = file
        .as_array()
        .ok_or_else(|| format!("{}: not a list", path.display()))?
        .iter()
        .map(|item| {
            Ok(Question {
                page: field(item, "page")?,
                page_type: field(item, "type")?,
                question: field(item, "question")?,
                answer: field(item, "answer")?,
            })
        })
        .collect::<Result<Vec<_>, BoxError>>()?;
    if questions.is_empty() {
        return Err(format!("{}: no questions", path.display()).into());
    }
    Ok(questions)
}

/// The question's page, its answer checked against the hand-reviewed main content: there, and
/// not in its first 1,500 characters.
fn page_of<'c>(corpus: &'c Corpus, question: &Question) -> Result<&'c Truth, BoxError> {
    let truth = corpus
        .truths
        .iter()
        .find(|truth| truth.id == question.page)
        .ok_or_else(|| format!("page {} is not in {}", question.page, corpus.dir.display()))?;
    let answer = words(&question.answer);
    if !words(&truth.main_content).contains(&answer) {
        return Err(format!(
            "page {}: the answer {:?} is not in its main content",
            question.page, question.answer
        )
        .into());
    }
    if words(head(&truth.main_content, TRUNCATED_CHARS)).contains(&answer) {
        return Err(format!(
            "page {}: the answer {:?} is in its first {TRUNCATED_CHARS} characters",
            question.page, question.answer
        )
        .into());
    }
    Ok(truth)
}

/// Every question through the three methods, then the timed choices; on this thread.
fn measure(corpus: &Corpus, questions: &[Question], runs: usize) -> Result<Measured, BoxError> {
    let mut outcomes = Vec::with_capacity(questions.len());
    let mut read: Vec<(String, Option<String>, &str)> = Vec::new();
    for (index, question) in questions.iter().enumerate() {
        let truth = page_of(corpus, question)?;
        let html = corpus.html(truth)?;
        let answer = words(&question.answer);
        let Some(document) = searxng_gateway::bench::read_document(&html, CONTENT_TYPE, &truth.url)
        else {
            outcomes.push(Outcome {
                index,
                read: false,
                found: [false; 3],
                texts: Default::default(),
            });
            continue;
        };
        let content = document.content();
        let texts = Method::ALL.map(|method| match method {
            Method::Gateway => searxng_gateway::bench::tavily_chunks(
                content,
                document.title(),
                &question.question,
                CHUNKS,
            )
            .join("\n"),
            Method::Truncation => head(content, TRUNCATED_CHARS).to_owned(),
            Method::Windows => {
                windows::best_windows(content, &question.question, CHUNKS).join("\n")
            }
        });
        outcomes.push(Outcome {
            index,
            read: words(content).contains(&answer),
            found: texts.clone().map(|text| words(&text).contains(&answer)),
            texts,
        });
        read.push((
            content.to_owned(),
            document.title().map(str::to_owned),
            &question.question,
        ));
    }
    let timed = fifty_kb_texts(&read);
    if timed.is_empty() {
        return Err("no page of the question set was read".into());
    }
    let mut times = Vec::with_capacity(runs);
    for run in 0..runs {
        let (content, title, question) = &timed[run % timed.len()];
        let started = Instant::now();
        let chosen = searxng_gateway::bench::tavily_chunks(content, *title, question, CHUNKS);
        times.push(started.elapsed());
        std::hint::black_box(chosen);
    }
    times.sort_unstable();
    Ok(Measured {
        outcomes,
        times,
        timed_texts: timed.len(),
    })
}

/// One 50 kB text per page read (its text, title and question): the page's text, then the next
/// pages' in turn, cut to 50 kB.
fn fifty_kb_texts<'r>(
    read: &'r [(String, Option<String>, &'r str)],
) -> Vec<(String, Option<&'r str>, &'r str)> {
    (0..read.len())
        .map(|first| {
            let mut text = String::with_capacity(TIMED_BYTES + 1);
            for (content, ..) in read.iter().cycle().skip(first).take(read.len()) {
                if text.len() >= TIMED_BYTES {
                    break;
                }
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(content);
            }
            let (_, title, question) = &read[first];
            (
                cut_to(&text, TIMED_BYTES).to_owned(),
                title.as_deref(),
                *question,
            )
        })
        .collect()
}

/// The `q` quantile of sorted `times`.
fn quantile(times: &[Duration], q: f64) -> Duration {
    let last = times.len().saturating_sub(1);
    times
        .get(((last as f64) * q).round() as usize)
        .copied()
        .unwrap_or_default()
}

impl Measured {
    /// The share of questions whose answer `method` returned.
    fn recall(&self, method: Method) -> f64 {
        self.recall_of(method, |_| true)
    }

    fn recall_of(&self, method: Method, keep: impl Fn(&Outcome) -> bool) -> f64 {
        let slot = Method::ALL.iter().position(|m| *m == method).unwrap_or(0);
        let kept: Vec<&Outcome> = self.outcomes.iter().filter(|o| keep(o)).collect();
        let found = kept.iter().filter(|o| o.found[slot]).count();
        found as f64 / kept.len().max(1) as f64
    }

    fn found(&self, method: Method) -> usize {
        let slot = Method::ALL.iter().position(|m| *m == method).unwrap_or(0);
        self.outcomes.iter().filter(|o| o.found[slot]).count()
    }
}

impl Bench {
    /// k. Query-relevant passages on hand-written questions over WCXB's development split.
    pub(crate) async fn passages(&mut self, repo: &Path) -> Result<(), BoxError> {
        let dir = Corpus::locate(repo);
        let questions = load_questions(&Path::new(env!("CARGO_MANIFEST_DIR")).join(QUESTIONS))?;
        let runs = if self.plan.smoke {
            SMOKE_TIMED_RUNS
        } else {
            TIMED_RUNS
        };
        let started = Instant::now();
        let (questions, measured) = tokio::task::spawn_blocking(move || {
            let corpus = Corpus::load(&dir, 1)?;
            let measured = measure(&corpus, &questions, runs)?;
            Ok::<_, BoxError>((questions, measured))
        })
        .await??;
        println!(
            "   {} questions measured in {:.1} s",
            questions.len(),
            started.elapsed().as_secs_f64()
        );
        let log: Vec<Value> = measured
            .outcomes
            .iter()
            .map(|o| {
                let q = &questions[o.index];
                json!({
                    "page": q.page, "question": q.question, "answer": q.answer,
                    "in_text": o.read, "found": o.found,
                    "gateway": o.texts[0], "windows": o.texts[2],
                })
            })
            .collect();
        std::fs::create_dir_all(&self.log_dir)?;
        std::fs::write(
            self.log_dir.join("passages.json"),
            serde_json::to_vec_pretty(&log)?,
        )?;
        self.passages_report(&questions, &measured);
        Ok(())
    }

    /// The rows and details of the passage measurement.
    fn passages_report(&mut self, questions: &[Question], measured: &Measured) {
        let total = measured.outcomes.len();
        let gateway = measured.recall(Method::Gateway);
        let windows = measured.recall(Method::Windows);
        for method in Method::ALL {
            let recall = measured.recall(method);
            let (target, met) = match method {
                Method::Gateway => (
                    format!(
                        "≥ {RECALL_TARGET:.2}, and ≥ {:.0} points above BM25 windows",
                        LEAD_TARGET * 100.0
                    ),
                    Some(recall >= RECALL_TARGET && recall - windows >= LEAD_TARGET - 1e-9),
                ),
                Method::Truncation | Method::Windows => {
                    ("report (beside the gateway)".to_owned(), None)
                }
            };
            let kept = measured.outcomes.iter().filter(|o| o.read).count();
            let lead = if method == Method::Gateway {
                format!(
                    "; {:+.0} points on BM25 windows",
                    (gateway - windows) * 100.0
                )
            } else {
                String::new()
            };
            let lead = format!(
                "{lead}; {:.2} of the {kept} whose answer the reader's text holds",
                measured.recall_of(method, |o| o.read)
            );
            self.rows.push(Row {
                name: format!("k. passages, answer recall: {}", method.label()),
                result: format!(
                    "{recall:.2} ({} of {total} questions on WCXB dev pages ≥ 1,500 words){lead}",
                    measured.found(method)
                ),
                target,
                met,
            });
        }
        let (p50, p99) = (
            quantile(&measured.times, 0.5),
            quantile(&measured.times, 0.99),
        );
        self.rows.push(Row {
            name: "k. passages: time to choose Tavily's 3 chunks of a 50 kB page (one core)".into(),
            result: format!(
                "p50 {}, p99 {} over {} choices ({} texts of 50 kB)",
                ms(p50),
                ms(p99),
                measured.times.len(),
                measured.timed_texts
            ),
            target: format!("p50 ≤ {}", ms(P50_TARGET)),
            met: Some(p50 <= P50_TARGET),
        });

        let mut types: Vec<&str> = questions.iter().map(|q| q.page_type.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        let per_type: Vec<String> = types
            .iter()
            .map(|t| {
                let of_type = |o: &Outcome| questions[o.index].page_type == *t;
                let count = measured.outcomes.iter().filter(|o| of_type(o)).count();
                let cells: Vec<String> = Method::ALL
                    .iter()
                    .map(|m| format!("{:.2}", measured.recall_of(*m, of_type)))
                    .collect();
                format!("{t} ({count}) {}", cells.join(" / "))
            })
            .collect();
        let columns: Vec<&str> = Method::ALL.iter().map(|m| m.short()).collect();
        let unread = measured.outcomes.iter().filter(|o| !o.read).count();
        self.details.push(format!(
            "k. passages: {total} hand-written questions (`measure/passages/questions.json`), each on one fact of a \
             WCXB dev page of ≥ 1,500 words whose answer is past the main content's first 1,500 characters; each page \
             read in-process as Markdown, as Tavily's extract reads it. Recall per page type (questions), {}: {}. The \
             reader's text lacks the answer for {unread} of them (a miss for all three). An answer counts when its \
             words, lower-cased, stand in that order in the returned text (Markdown links' targets left out). BM25 windows: 500 characters, 50 of \
             overlap, the `bm25` crate (k1 1.2, b 0.75) over lower-cased words, no stemming or stop words (the crate's \
             default tokenizer is not in the lock file). The time: the choice alone (split, rank, pick) on {} \
             texts of 50 kB (each question's page, then the next pages', cut), {} choices in turn with their \
             questions; p50 {}, p99 {}, max {}.",
            columns.join(" / "),
            per_type.join("; "),
            measured.timed_texts,
            measured.times.len(),
            ms(quantile(&measured.times, 0.5)),
            ms(quantile(&measured.times, 0.99)),
            ms(measured.times.last().copied().unwrap_or_default()),
        ));
        let missed: Vec<String> = measured
            .outcomes
            .iter()
            .filter(|o| !o.found[0])
            .map(|o| {
                let q = &questions[o.index];
                let note = match (o.read, o.found[2]) {
                    (false, _) => "; not in the reader's text",
                    (true, true) => "; BM25 windows found it",
                    (true, false) => "",
                };
                format!(
                    "{} ({}) “{}” → “{}”{note}",
                    q.page, q.page_type, q.question, q.answer
                )
            })
            .collect();
        if !missed.is_empty() {
            self.details.push(format!(
                "k. passages, the questions the gateway's chunks missed ({}): {}.",
                missed.len(),
                missed.join("; ")
            ));
        }
    }
}
