//! What a search finds, deterministically: each engine's results for a query and page (some URLs shared
//! between engines, so merging has work to do), merged by URL as SearXNG's result container does, scored,
//! and rendered as SearXNG's JSON (with the infobox, suggestions and `unresponsive_engines`) or HTML, plus the
//! `Server-Timing` header.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::instance::Engine;
use super::query::SearchRequest;
use super::reply::{escape_html, html_page};

/// One engine's result before merging.
pub(super) struct EngineResult {
    url: String,
    host: String,
    path: String,
    title: String,
    content: String,
    published_date: Option<String>,
    thumbnail: String,
    engine: String,
    category: String,
    position: usize,
    extra: (&'static str, Value),
}

impl EngineResult {
    /// Puts the result on `origin` (`http://127.0.0.1:PORT`), keeping its path.
    pub(super) fn move_to(&mut self, origin: &str) {
        self.url = format!("{origin}{}", self.path);
    }
}

/// A result after merging: one URL, every engine that found it.
struct MergedResult {
    first: EngineResult,
    content: String,
    engines: Vec<String>,
    positions: Vec<usize>,
    extras: Vec<(&'static str, Value)>,
    score: f64,
}

/// Deterministic results of one engine for one page.
///
/// The result at overall rank `r` (counting from page 1) is shared between engines when `r + index % 3` is a
/// multiple of 3: any two engines with three or more results share at least one URL (at different positions when
/// their indexes differ by other than a multiple of 3), and every other URL belongs to one engine.
pub(super) fn engine_results(
    index: usize,
    engine: &Engine,
    category: &str,
    count: usize,
    request: &SearchRequest,
) -> Vec<EngineResult> {
    let query_slug = slug(&request.query);
    let engine_slug = slug(&engine.name);
    let offset = (index % 3) as u64;
    (1..=count)
        .map(|position| {
            let rank = request
                .pageno
                .saturating_sub(1)
                .saturating_mul(count as u64)
                .saturating_add(position as u64);
            let shifted = rank.saturating_add(offset);
            let (host, path, title) = match shifted % 3 {
                0 => {
                    let key = shifted / 3;
                    (
                        "www.shared.example.com".to_owned(),
                        format!("/{query_slug}/{key}"),
                        format!("{} — shared result {key}", request.query),
                    )
                }
                _ => (
                    format!("{engine_slug}.example.org"),
                    format!("/{query_slug}/{rank}"),
                    format!("{} — {} result {rank}", request.query, engine.name),
                ),
            };
            // Each engine words its snippet differently, so merging has a longer content to prefer.
            let content = format!(
                "{} describes {}{}",
                engine.name,
                request.query,
                " in detail".repeat(index % 4 + 1)
            );
            let extra = match index % 3 {
                0 => ("author", json!(format!("{} author {rank}", engine.name))),
                1 => (
                    "length",
                    json!(format!("{}:{:02}", rank % 60, rank.wrapping_mul(7) % 60)),
                ),
                _ => (
                    "metadata",
                    json!(format!("{} metadata {rank}", engine.name)),
                ),
            };
            EngineResult {
                url: format!("https://{host}{path}"),
                host,
                path,
                title,
                content,
                published_date: match rank % 2 {
                    0 => Some(format!("2026-07-{:02}T00:00:00", rank % 28 + 1)),
                    _ => None,
                },
                thumbnail: match rank % 4 {
                    0 => format!("https://img.example.net/{engine_slug}/{rank}.jpg"),
                    _ => String::new(),
                },
                engine: engine.name.clone(),
                category: category.to_owned(),
                position,
                extra,
            }
        })
        .collect()
}

/// Lower-case letters and digits, other runs turned into one `-`: a URL path segment or host label.
fn slug(text: &str) -> String {
    let mut slug = String::new();
    for character in text.chars().flat_map(char::to_lowercase) {
        if character.is_ascii_alphanumeric() {
            slug.push(character);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "empty".to_owned()
    } else {
        slug.chars().take(60).collect()
    }
}

/// SearXNG's score for an engine weight of 1: every position counts `1/position`, times how many engines found it.
fn score(positions: &[usize]) -> f64 {
    let weight = positions.len() as f64;
    positions
        .iter()
        .map(|position| weight / *position as f64)
        .sum()
}

fn infobox(query: &str, engine: &str) -> Value {
    let slug = slug(query);
    json!({
        "infobox": query,
        "id": format!("https://en.wikipedia.org/wiki/{slug}"),
        "content": format!("{query} is the subject of this simulated infobox."),
        "img_src": null,
        "urls": [{"title": "Official site", "url": format!("https://www.shared.example.com/{slug}")}],
        "attributes": [],
        "engine": engine,
        "engines": [engine],
    })
}

/// What one search produced, before it is rendered.
#[derive(Default)]
pub(super) struct SearchOutcome {
    results: Vec<MergedResult>,
    suggestions: Vec<String>,
    infoboxes: Vec<Value>,
    /// `(engine, message)` of every engine that failed.
    pub(super) unresponsive: Vec<(String, String)>,
    /// Every engine queried, in order.
    pub(super) queried: Vec<String>,
    /// How long the slowest queried engine took (scripted latency): the search takes that long.
    pub(super) slowest_engine: Duration,
}

impl SearchOutcome {
    /// One engine's results: the first engine with results on page 1 gives the infobox, every engine with
    /// results adds the suggestions, and each result is merged.
    pub(super) fn add_found(
        &mut self,
        engine: &str,
        found: Vec<EngineResult>,
        request: &SearchRequest,
    ) {
        if request.pageno == 1 && !found.is_empty() && self.infoboxes.is_empty() {
            self.infoboxes.push(infobox(&request.query, engine));
        }
        if !found.is_empty() {
            for suggestion in [
                format!("{} tutorial", request.query),
                format!("{} examples", request.query),
            ] {
                if !self.suggestions.contains(&suggestion) {
                    self.suggestions.push(suggestion);
                }
            }
        }
        for result in found {
            self.merge(result);
        }
    }

    /// How many results the answer holds (after merging).
    pub(super) fn result_count(&self) -> usize {
        self.results.len()
    }

    /// Once every engine answered: failures sorted by engine name (once each), results scored and sorted.
    pub(super) fn finish(&mut self) {
        self.unresponsive.sort_by(|a, b| a.0.cmp(&b.0));
        self.unresponsive.dedup_by(|a, b| a.0 == b.0);
        for result in &mut self.results {
            result.score = score(&result.positions);
        }
        // A stable sort keeps arrival order among equal scores, as SearXNG's sorted() does.
        self.results.sort_by(|a, b| b.score.total_cmp(&a.score));
    }

    /// SearXNG keys results by URL: a second engine adds itself and its position, and its longer content wins.
    fn merge(&mut self, result: EngineResult) {
        if let Some(existing) = self
            .results
            .iter_mut()
            .find(|merged| merged.first.url == result.url)
        {
            if !existing.engines.contains(&result.engine) {
                existing.engines.push(result.engine.clone());
            }
            existing.positions.push(result.position);
            if result.content.len() > existing.content.len() {
                existing.content = result.content.clone();
            }
            if !existing
                .extras
                .iter()
                .any(|(key, _)| *key == result.extra.0)
            {
                existing.extras.push(result.extra);
            }
            return;
        }
        self.results.push(MergedResult {
            content: result.content.clone(),
            engines: vec![result.engine.clone()],
            positions: vec![result.position],
            extras: vec![result.extra.clone()],
            score: 0.0,
            first: result,
        });
    }

    pub(super) fn into_json(self, query: &str, number_of_results: Option<u64>) -> Value {
        let results: Vec<Value> = self.results.iter().map(MergedResult::to_json).collect();
        let mut body = Map::new();
        body.insert("query".into(), json!(query));
        if let Some(number) = number_of_results {
            body.insert("number_of_results".into(), json!(number));
        }
        body.insert("results".into(), Value::Array(results));
        body.insert("answers".into(), json!([]));
        body.insert("corrections".into(), json!([]));
        body.insert("infoboxes".into(), Value::Array(self.infoboxes));
        body.insert("suggestions".into(), json!(self.suggestions));
        let unresponsive: Vec<Value> = self
            .unresponsive
            .iter()
            .map(|(engine, message)| json!([engine, message]))
            .collect();
        body.insert("unresponsive_engines".into(), Value::Array(unresponsive));
        // Not a SearXNG key: it lets tests prove the gateway keeps keys it does not know.
        body.insert(
            "sim_extra".into(),
            json!({"simulator": "searxng", "engines_queried": self.queried}),
        );
        Value::Object(body)
    }

    pub(super) fn into_html(self, query: &str) -> String {
        let items: String = self
            .results
            .iter()
            .map(|result| {
                format!(
                    "<article class=\"result\"><a href=\"{}\">{}</a><p>{}</p></article>\n",
                    escape_html(&result.first.url),
                    escape_html(&result.first.title),
                    escape_html(&result.content)
                )
            })
            .collect();
        html_page(&format!("{} - SearXNG", escape_html(query)), &items)
    }
}

impl MergedResult {
    fn to_json(&self) -> Value {
        let first = &self.first;
        let mut result = Map::new();
        result.insert("url".into(), json!(first.url));
        result.insert("title".into(), json!(first.title));
        result.insert("content".into(), json!(self.content));
        result.insert("publishedDate".into(), json!(first.published_date));
        result.insert("thumbnail".into(), json!(first.thumbnail));
        result.insert("engine".into(), json!(first.engine));
        result.insert("template".into(), json!("default.html"));
        // Python's urlparse tuple: scheme, netloc, path, params, query, fragment.
        result.insert(
            "parsed_url".into(),
            json!(["https", first.host, first.path, "", "", ""]),
        );
        result.insert("img_src".into(), json!(""));
        result.insert("priority".into(), json!(""));
        result.insert("engines".into(), json!(self.engines));
        result.insert("positions".into(), json!(self.positions));
        result.insert("score".into(), json!(self.score));
        result.insert("category".into(), json!(first.category));
        for (key, value) in &self.extras {
            result.insert((*key).to_owned(), value.clone());
        }
        Value::Object(result)
    }
}

/// `Server-Timing` as SearXNG sends it: total time, then per engine (deterministic, made-up milliseconds).
pub(super) fn server_timing(queried: &[String]) -> String {
    let mut parts = Vec::with_capacity(queried.len() * 2 + 1);
    let mut total: f64 = 1.0;
    for (index, engine) in queried.iter().enumerate() {
        let duration = 1.5 + index as f64 * 0.5;
        total = total.max(duration + 1.0);
        parts.push(format!("total_0_{engine};dur={duration:.3}"));
        parts.push(format!("load_0_{engine};dur={:.3}", duration - 0.5));
    }
    parts.insert(0, format!("total;dur={total:.3}"));
    parts.join(", ")
}
