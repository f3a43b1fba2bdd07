//! The finished answer of one fan-out: SearXNG's JSON object with `results` replaced by the merged
//! list (every other key SearXNG sent kept; the same keys, empty, when SearXNG did not answer), or
//! the 502 body naming each upstream and its error class. Rendered once, then cached as bytes.

use std::sync::Arc;

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::Value;

use tokio::time::Instant;

use super::admission::Overloaded;
use super::failing_engines::{Hint, InstanceEngines};
use super::failure::{Upstream, UpstreamFailure};
use super::outcome::Outcome;
use super::record::{FanOutRecord, RemoteFanOut};
use gateway_upstreams::merge::Merged;
use gateway_upstreams::searxng::TopLevel;

/// The top-level keys of a SearXNG answer, present (empty) even when SearXNG did not answer.
pub(crate) const SEARXNG_KEYS: [&str; 7] = [
    "query",
    "results",
    "answers",
    "corrections",
    "infoboxes",
    "suggestions",
    "unresponsive_engines",
];

/// What one fan-out produced for every request sharing it: the answer, or the shed verdict of a
/// fan-out that never got a slot (never cached).
pub(crate) type FanOutResult = Result<Arc<Answer>, Overloaded>;

/// What the client gets.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The outcome of the fan-out that produced it.
    pub outcome: Outcome,
    /// 200, or 502 when every upstream failed.
    pub status: StatusCode,
    /// The JSON body, rendered once. It is all a cache entry keeps: csv and rss (rare) parse it
    /// again rather than every entry carrying the document a second time as a tree.
    pub json: Bytes,
    /// Results in the answer.
    pub result_count: usize,
    /// Distinct engines and providers in the answer.
    pub engine_count: usize,
    /// What the fan-out did, for `explain=1` (kept in the cache with the answer).
    pub record: FanOutRecord,
    /// When the fan-out finished (a cache hit's age).
    pub computed_at: Instant,
    /// Set on an answer another replica computed (a hit from the shared tier): who, when, and
    /// its fan-out's record; `record` is then empty.
    pub remote: Option<Arc<RemoteFanOut>>,
}

impl Answer {
    /// A 200 answer from SearXNG's top-level keys (if it answered) and the merged results.
    pub(crate) fn success(
        outcome: Outcome,
        query: &str,
        searxng_top: Option<TopLevel>,
        merged: Merged,
    ) -> Self {
        let mut document = searxng_top.unwrap_or_default();
        complete_document(&mut document, query, merged.results.len());
        Self::render(outcome, document, merged)
    }

    /// A 200 answer made of SearXNG's results alone, exactly as SearXNG listed them (`merged` is
    /// its results after a merge that dropped none): SearXNG's own `body`, not rendered again,
    /// unless its top-level keys need completing — then as [`Answer::success`].
    pub(crate) fn searxng_as_sent(
        outcome: Outcome,
        query: &str,
        mut searxng_top: TopLevel,
        merged: Merged,
        body: Bytes,
    ) -> Self {
        if complete_document(&mut searxng_top, query, merged.results.len()) {
            return Self::render(outcome, searxng_top, merged);
        }
        Self {
            outcome,
            status: StatusCode::OK,
            // Exactly its length: the cache keeps it for the TTL, and the body may have been read
            // into a larger buffer.
            json: Bytes::copy_from_slice(&body),
            result_count: merged.results.len(),
            engine_count: merged.engines.len(),
            record: FanOutRecord::default(),
            computed_at: Instant::now(),
            remote: None,
        }
    }

    /// `document` with `results` set to the merged list, as JSON bytes: each top-level value and
    /// each result SearXNG sent copied as it came, unless the merge changed it.
    fn render(outcome: Outcome, document: TopLevel, merged: Merged) -> Self {
        let result_count = merged.results.len();
        let mut json = Vec::with_capacity(render_size(&document, &merged));
        json.push(b'{');
        for (i, (key, value)) in document.entries().enumerate() {
            if i > 0 {
                json.push(b',');
            }
            // Writing a string into memory cannot fail.
            let _ = serde_json::to_writer(&mut json, key);
            json.push(b':');
            if key == "results" {
                json.push(b'[');
                for (i, result) in merged.results.iter().enumerate() {
                    if i > 0 {
                        json.push(b',');
                    }
                    result.write_json(&mut json);
                }
                json.push(b']');
            } else {
                json.extend_from_slice(value);
            }
        }
        json.push(b'}');
        // The cache keeps these bytes for the TTL: drop the vector's growth slack.
        json.shrink_to_fit();
        let json = Bytes::from(json);
        Self {
            outcome,
            status: StatusCode::OK,
            json,
            result_count,
            engine_count: merged.engines.len(),
            record: FanOutRecord::default(),
            computed_at: Instant::now(),
            remote: None,
        }
    }

    /// The 502 answer: every upstream failed. The message says whether premium providers were
    /// there to try; `searxng` lists each instance's failing engines by SearXNG's reason, and
    /// `hint` says what to do when the failures point at one fix.
    pub(crate) fn all_failed(
        failures: &[UpstreamFailure],
        engines: &[InstanceEngines],
        hint: Option<Hint>,
    ) -> Self {
        let premium_tried = failures
            .iter()
            .any(|f| matches!(f.upstream, Upstream::Provider(_)));
        let message = if premium_tried {
            "no upstream returned results: SearXNG and every premium provider tried failed or was skipped"
        } else {
            "no upstream returned results: SearXNG failed and no premium provider was available to fall back to"
        };
        let mut body = serde_json::json!({
            "error": "all_upstreams_failed",
            "message": message,
            "upstreams": failures,
        });
        if let Some(hint) = hint {
            body["hint"] = Value::String(hint.sentence());
        }
        if !engines.is_empty() {
            body["searxng"] = serde_json::to_value(engines).unwrap_or(Value::Null);
        }
        Self {
            outcome: Outcome::FallbackFail,
            status: StatusCode::BAD_GATEWAY,
            json: Bytes::from(body.to_string()),
            result_count: 0,
            engine_count: 0,
            record: FanOutRecord::default(),
            computed_at: Instant::now(),
            remote: None,
        }
    }
}

/// What [`Answer::render`] writes, give or take the merge's changes to results: its first
/// allocation.
fn render_size(document: &TopLevel, merged: &Merged) -> usize {
    let top: usize = document.entries().map(|(k, v)| k.len() + v.len() + 4).sum();
    let results: usize = merged.results.iter().map(|r| r.json_size() + 1).sum();
    top + results + 2
}

/// Adds what a SearXNG answer must have and `document` lacks: each of [`SEARXNG_KEYS`] (empty, or
/// the query), and a `number_of_results` no lower than the `result_count` returned — SearXNG's
/// estimate counts only its own results. Whether anything changed.
fn complete_document(document: &mut TopLevel, query: &str, result_count: usize) -> bool {
    let mut changed = false;
    for key in SEARXNG_KEYS {
        if document.get(key).is_none() {
            let empty = if key == "query" {
                Bytes::from(serde_json::to_vec(query).unwrap_or_default())
            } else {
                Bytes::from_static(b"[]")
            };
            document.set(key, empty);
            changed = true;
        }
    }
    let reported = document
        .get("number_of_results")
        .and_then(|raw| serde_json::from_slice::<Value>(raw).ok());
    if let Some(Value::Number(n)) = reported {
        if n.as_u64().is_some_and(|n| (n as usize) < result_count) {
            document.set("number_of_results", Bytes::from(result_count.to_string()));
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::search::failure::Shortfall;
    use serde_json::json;

    #[test]
    fn missing_searxng_keys_are_present_and_empty() {
        let a = Answer::success(Outcome::PremiumOk, "Rust", None, Merged::default());
        let doc: Value = serde_json::from_slice(&a.json).unwrap();
        for key in SEARXNG_KEYS {
            assert!(doc.get(key).is_some(), "{key}");
        }
        assert_eq!(doc["query"], "Rust");
    }

    #[test]
    fn searxng_keys_are_kept_in_order_with_results_replaced() {
        let top = TopLevel::from_object(
            json!({"query": "q", "results": null, "answers": ["a"], "extra": 1})
                .as_object()
                .unwrap(),
        );
        let a = Answer::success(Outcome::SearxngOk, "q", Some(top), Merged::default());
        let text = std::str::from_utf8(&a.json).unwrap();
        assert!(
            text.starts_with(r#"{"query":"q","results":[],"answers":["a"],"extra":1"#),
            "{text}"
        );
    }

    #[test]
    fn the_502_body_names_upstreams_and_classes_only() {
        let a = Answer::all_failed(
            &[UpstreamFailure::searxng(Shortfall::from(
                gateway_core::upstream::ErrorClass::Timeout,
            ))],
            &[],
            None,
        );
        let body: Value = serde_json::from_slice(&a.json).unwrap();
        assert_eq!(a.status, StatusCode::BAD_GATEWAY);
        assert_eq!(
            body["upstreams"][0],
            json!({"name": "searxng", "error_class": "timeout"})
        );
        assert_eq!(body["error"], "all_upstreams_failed");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("no premium provider"),
            "keyless: the message does not blame premium providers"
        );
    }
}
