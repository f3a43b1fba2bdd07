//! The pipeline's answer as the JSON surfaces (the MCP tool, the Tavily API) read it: the merged
//! results and SearXNG's direct answers, or the failure naming each upstream and its error class.
//! Read from the JSON bytes the pipeline rendered and cached — the same document a SearXNG client
//! gets — so a surface depends on that contract only, never on the pipeline's internals.

use serde::Deserialize;
use serde_json::Value;

use gateway_engine::search::Shortfall;
use gateway_engine::Served;

/// One merged result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The URL the best source gave.
    pub(crate) url: String,
    /// Title (empty when no source had one).
    pub(crate) title: String,
    /// Snippet (empty when no source had one).
    pub(crate) content: String,
    /// Every engine and provider that found it.
    pub(crate) engines: Vec<String>,
    /// Publication date as the source gave it, when it gave one.
    pub(crate) published_date: Option<String>,
}

impl Hit {
    /// The day of its publication date as `YYYY-MM-DD` (which orders as text), when its source
    /// gave one in a shape that starts with it (`2026-11-30T08:00:00`, `2026-11-30 08:00`, …).
    pub(crate) fn day(&self) -> Option<String> {
        let day = self.published_date.as_deref()?.trim().get(..10)?;
        let b = day.as_bytes();
        let shaped =
            b[4] == b'-' && b[7] == b'-' && day.chars().filter(char::is_ascii_digit).count() == 8;
        shaped.then(|| day.to_owned())
    }
}

/// A search that found something, or found nothing in good health.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found {
    /// The merged results, in the answer's order.
    pub(crate) hits: Vec<Hit>,
    /// SearXNG's direct answers (`answers`), as text.
    pub(crate) answers: Vec<String>,
    /// SearXNG's suggested queries (`suggestions`).
    pub(crate) suggestions: Vec<String>,
    /// SearXNG's infoboxes (`infoboxes`: an encyclopedia's card on the query's subject).
    pub(crate) infoboxes: Vec<Infobox>,
}

/// An infobox: an engine's card on the query's subject (Wikipedia's, Wikidata's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Infobox {
    /// Its subject (`infobox`).
    pub(crate) title: String,
    /// Its text (`content`).
    pub(crate) content: String,
    /// Its page (`id`, a URL).
    pub(crate) url: Option<String>,
    /// Its image (`img_src`).
    pub(crate) image: Option<String>,
    /// Its facts, label and value (`attributes`).
    pub(crate) attributes: Vec<(String, String)>,
}

/// One upstream that gave nothing, as the 502 body names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FailedUpstream {
    /// `searxng` or a provider.
    pub(crate) name: String,
    /// Why (`timeout`, `rate_limited`, `breaker_open`, …).
    pub(crate) error_class: Shortfall,
}

impl FailedUpstream {
    /// Whether every upstream refused for rate or quota: the client should slow down (each
    /// surface's 429).
    pub(crate) fn all_told_to_slow_down(upstreams: &[Self]) -> bool {
        !upstreams.is_empty() && upstreams.iter().all(|u| u.error_class.tells_to_slow_down())
    }

    /// `name: class, …`, for an error message.
    pub(crate) fn list(upstreams: &[Self]) -> String {
        let named: Vec<String> = upstreams
            .iter()
            .map(|u| format!("{}: {}", u.name, u.error_class.as_str()))
            .collect();
        named.join(", ")
    }
}

/// What a search gave a surface to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Document {
    /// A 200: results (possibly none).
    Found(Found),
    /// A 502: every upstream failed.
    AllFailed(Vec<FailedUpstream>),
}

#[derive(Deserialize)]
struct WireFound {
    #[serde(default)]
    results: Vec<Value>,
    #[serde(default)]
    answers: Vec<Value>,
    #[serde(default)]
    suggestions: Vec<Value>,
    #[serde(default)]
    infoboxes: Vec<Value>,
}

#[derive(Deserialize)]
struct WireInfobox {
    infobox: Option<String>,
    content: Option<String>,
    id: Option<String>,
    img_src: Option<String>,
    #[serde(default)]
    attributes: Vec<WireAttribute>,
}

#[derive(Deserialize)]
struct WireAttribute {
    label: Option<String>,
    value: Option<Value>,
}

#[derive(Deserialize)]
struct WireHit {
    url: Option<String>,
    title: Option<String>,
    content: Option<String>,
    engines: Option<Vec<String>>,
    engine: Option<String>,
    #[serde(rename = "publishedDate")]
    published_date: Option<String>,
}

#[derive(Deserialize)]
struct WireFailure {
    #[serde(default)]
    upstreams: Vec<WireUpstream>,
}

#[derive(Deserialize)]
struct WireUpstream {
    name: String,
    error_class: String,
}

impl WireUpstream {
    /// The upstream, when its reason is one this gateway names (a replica of another version may
    /// name one this one does not know: left out of the list, the failure stands).
    fn typed(self) -> Option<FailedUpstream> {
        Some(FailedUpstream {
            name: self.name,
            error_class: Shortfall::from_label(&self.error_class)?,
        })
    }
}

impl Document {
    /// Reads what the pipeline served. A result without a URL (or of a shape this reader does not
    /// know) is left out rather than failing the whole answer.
    pub(crate) fn of(served: &Served) -> Self {
        let json = &served.answer.json;
        if served.answer.status != axum::http::StatusCode::OK {
            let failure: WireFailure =
                serde_json::from_slice(json).unwrap_or(WireFailure { upstreams: vec![] });
            return Self::AllFailed(
                failure
                    .upstreams
                    .into_iter()
                    .filter_map(WireUpstream::typed)
                    .collect(),
            );
        }
        let wire: WireFound = serde_json::from_slice(json).unwrap_or(WireFound {
            results: vec![],
            answers: vec![],
            suggestions: vec![],
            infoboxes: vec![],
        });
        Self::Found(Found {
            hits: wire.results.into_iter().filter_map(hit).collect(),
            answers: wire.answers.into_iter().filter_map(answer_text).collect(),
            suggestions: wire
                .suggestions
                .into_iter()
                .filter_map(|s| {
                    s.as_str()
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                })
                .collect(),
            infoboxes: wire.infoboxes.into_iter().filter_map(infobox).collect(),
        })
    }
}

fn hit(value: Value) -> Option<Hit> {
    let wire: WireHit = serde_json::from_value(value).ok()?;
    let url = wire.url.filter(|u| !u.is_empty())?;
    let engines = match (wire.engines, wire.engine) {
        (Some(engines), _) if !engines.is_empty() => engines,
        (_, Some(engine)) => vec![engine],
        _ => Vec::new(),
    };
    Some(Hit {
        url,
        title: wire.title.unwrap_or_default(),
        content: wire.content.unwrap_or_default(),
        engines,
        published_date: wire.published_date.filter(|d| !d.is_empty()),
    })
}

/// An infobox, when it names its subject (attributes without a label or a text value left out).
fn infobox(value: Value) -> Option<Infobox> {
    let wire: WireInfobox = serde_json::from_value(value).ok()?;
    let title = wire.infobox.filter(|t| !t.trim().is_empty())?;
    let attributes = wire
        .attributes
        .into_iter()
        .filter_map(|a| match (a.label, a.value) {
            (Some(label), Some(Value::String(value))) => Some((label, value)),
            (Some(label), Some(Value::Number(value))) => Some((label, value.to_string())),
            _ => None,
        })
        .collect();
    Some(Infobox {
        title,
        content: wire.content.unwrap_or_default(),
        url: wire.id.filter(|u| u.starts_with("http")),
        image: wire.img_src.filter(|u| u.starts_with("http")),
        attributes,
    })
}

/// SearXNG's answers are objects with an `answer` text (current versions) or plain strings (older
/// ones); other answer types (translations, weather) have no single text and are left out.
fn answer_text(value: Value) -> Option<String> {
    let text = match value {
        Value::String(text) => text,
        Value::Object(mut object) => match object.remove("answer") {
            Some(Value::String(text)) => text,
            _ => return None,
        },
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use serde_json::json;

    use super::*;
    use gateway_core::cache::CacheStatus;
    use gateway_core::upstream::ErrorClass;
    use gateway_engine::search::{Answer, Outcome};

    fn served(status: u16, body: Value) -> Served {
        let status = axum::http::StatusCode::from_u16(status).unwrap();
        Served {
            answer: Arc::new(Answer {
                outcome: Outcome::SearxngOk,
                status,
                json: Bytes::from(body.to_string()),
                result_count: 0,
                engine_count: 0,
                record: Default::default(),
                computed_at: tokio::time::Instant::now(),
                remote: None,
            }),
            cache: CacheStatus::Miss,
            outcome: Outcome::SearxngOk,
            coalesced: false,
            premium_calls: 0,
            premium_spend_usd: 0.0,
        }
    }

    #[test]
    fn reads_searxngs_suggestions_and_infoboxes() {
        let doc = Document::of(&served(
            200,
            json!({
                "query": "rust", "results": [],
                "suggestions": ["rust book", "  ", 3],
                "infoboxes": [
                    {"infobox": "Rust", "id": "https://en.wikipedia.org/wiki/Rust_(programming_language)",
                     "content": "A language.", "img_src": "https://upload.example/r.png",
                     "attributes": [{"label": "Designed by", "value": "Graydon Hoare"},
                                    {"label": "First appeared", "value": 2015},
                                    {"label": "Logo", "image": {"src": "x"}}],
                     "urls": [{"title": "Official", "url": "https://rust-lang.org"}], "engine": "wikipedia"},
                    {"content": "no subject"}
                ]
            }),
        ));
        let Document::Found(found) = doc else {
            panic!("a 200 is found")
        };
        assert_eq!(found.suggestions, ["rust book"]);
        assert_eq!(
            found.infoboxes,
            [Infobox {
                title: "Rust".into(),
                content: "A language.".into(),
                url: Some("https://en.wikipedia.org/wiki/Rust_(programming_language)".into()),
                image: Some("https://upload.example/r.png".into()),
                attributes: vec![
                    ("Designed by".into(), "Graydon Hoare".into()),
                    ("First appeared".into(), "2015".into()),
                ],
            }]
        );
    }

    #[test]
    fn reads_results_and_both_shapes_of_searxng_answers() {
        let doc = Document::of(&served(
            200,
            json!({
                "query": "q",
                "results": [
                    {"url": "https://a.example/", "title": "A", "content": "a", "engines": ["alpha", "brave"],
                     "publishedDate": "2026-01-02T00:00:00", "score": 2.0},
                    {"url": "https://b.example/", "title": null, "engine": "beta", "publishedDate": null},
                    {"title": "no url"},
                    {"url": 7}
                ],
                "answers": ["  plain  ", {"answer": "object", "engine": "x"}, {"translations": []}, 3]
            }),
        ));
        let Document::Found(found) = doc else {
            panic!("a 200 is found")
        };
        assert_eq!(found.answers, ["plain", "object"]);
        assert_eq!(found.hits.len(), 2);
        assert_eq!(found.hits[0].engines, ["alpha", "brave"]);
        assert_eq!(
            found.hits[0].published_date.as_deref(),
            Some("2026-01-02T00:00:00")
        );
        assert_eq!(
            found.hits[1],
            Hit {
                url: "https://b.example/".into(),
                title: String::new(),
                content: String::new(),
                engines: vec!["beta".into()],
                published_date: None,
            }
        );
    }

    #[test]
    fn reads_the_failure_as_upstreams_and_classes() {
        let doc = Document::of(&served(
            502,
            json!({"error": "all_upstreams_failed", "message": "m",
                   "upstreams": [{"name": "searxng", "error_class": "timeout"},
                                 {"name": "brave", "error_class": "breaker_open"},
                                 {"name": "exa", "error_class": "not_a_class"}]}),
        ));
        assert_eq!(
            doc,
            Document::AllFailed(vec![
                FailedUpstream {
                    name: "searxng".into(),
                    error_class: Shortfall::from(ErrorClass::Timeout),
                },
                FailedUpstream {
                    name: "brave".into(),
                    error_class: Shortfall::BreakerOpen,
                }
            ])
        );
    }
}
