//! One SearXNG answer, decoded for the pipeline: the top-level keys (kept in SearXNG's order, to be
//! returned as they came), the results (only those with a `url` and a `title`; every field kept),
//! and the `unresponsive_engines` facts; and SearXNG's bytes themselves when every result was kept,
//! so an answer made of SearXNG's results alone is forwarded as it came instead of being rendered
//! again.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::unresponsive::{parse_unresponsive, Unresponsive};

/// One SearXNG answer, split for the merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SearxngAnswer {
    /// Every top-level key SearXNG returned except `results`, in SearXNG's order.
    pub(crate) top: Map<String, Value>,
    /// The results (each has at least `url` and `title`), every field kept.
    pub(crate) results: Vec<Map<String, Value>>,
    /// `unresponsive_engines`, deduplicated.
    pub(crate) unresponsive: Vec<Unresponsive>,
    /// SearXNG's body as it came, when it is this answer whole: every result in it is in
    /// `results`. `None` when a result was dropped (or the answer was built, not decoded).
    pub(crate) body: Option<Bytes>,
}

impl SearxngAnswer {
    /// HTTP 200 with zero results while engines are listed unresponsive: not "nothing found".
    pub(crate) fn is_degraded(&self) -> bool {
        self.results.is_empty() && !self.unresponsive.is_empty()
    }

    /// SearXNG engine names that returned at least one result (each engine of a result once).
    pub(crate) fn engines_with_results(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for result in &self.results {
            for engine in result_engines(result) {
                if !names.iter().any(|n| n == engine) {
                    names.push(engine.to_owned());
                }
            }
        }
        names
    }
}

/// The engines a result came from: `engines`, or `engine` when `engines` is absent — never both,
/// so a result is not counted twice for the same engine.
pub(crate) fn result_engines(result: &Map<String, Value>) -> Vec<&str> {
    let mut names: Vec<&str> = match result.get("engines") {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if names.is_empty() {
        if let Some(engine) = result.get("engine").and_then(Value::as_str) {
            names.push(engine);
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

/// [`parse_answer`], keeping `body` in the answer when no result was dropped.
pub(crate) fn decode_answer(body: Bytes) -> Option<SearxngAnswer> {
    let (mut answer, kept_all) = parse(&body)?;
    if kept_all {
        answer.body = Some(body);
    }
    Some(answer)
}

/// Parses SearXNG's JSON; `None` when it is not an object with a `results` array.
#[cfg(any(test, feature = "fuzzing", feature = "bench"))]
pub(crate) fn parse_answer(body: &[u8]) -> Option<SearxngAnswer> {
    parse(body).map(|(answer, _)| answer)
}

/// The answer, and whether every result in the body is in it.
fn parse(body: &[u8]) -> Option<(SearxngAnswer, bool)> {
    let Value::Object(mut top) = serde_json::from_slice::<Value>(body).ok()? else {
        return None;
    };
    // Take the results out but keep the key's position: the merged list goes back there.
    let Some(Value::Array(raw_results)) = top.get_mut("results").map(Value::take) else {
        return None;
    };
    let sent = raw_results.len();
    let results: Vec<_> = raw_results
        .into_iter()
        .filter_map(|r| match r {
            Value::Object(obj)
                if obj.get("url").is_some_and(Value::is_string)
                    && obj.get("title").is_some_and(Value::is_string) =>
            {
                Some(obj)
            }
            _ => None,
        })
        .collect();
    let unresponsive = parse_unresponsive(top.get("unresponsive_engines"));
    let kept_all = results.len() == sent;
    Some((
        SearxngAnswer {
            top,
            results,
            unresponsive,
            body: None,
        },
        kept_all,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_top_level_key_and_result_field_is_kept() {
        let body = br#"{"query":"q","number_of_results":0,"results":[
            {"url":"https://a","title":"A","engine":"alpha","engines":["alpha"],"author":"x","thumbnail":null},
            {"title":"no url"}],"answers":[],"infoboxes":[],"suggestions":["s"],"corrections":[],
            "unresponsive_engines":[],"new_key":{"x":1}}"#;
        let answer = parse_answer(body).unwrap();
        let keys: Vec<&str> = answer.top.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "query",
                "number_of_results",
                "results",
                "answers",
                "infoboxes",
                "suggestions",
                "corrections",
                "unresponsive_engines",
                "new_key"
            ]
        );
        assert_eq!(answer.results.len(), 1, "a result without url is dropped");
        assert_eq!(answer.results[0]["author"], "x");
    }

    #[test]
    fn zero_results_with_unresponsive_engines_is_degraded() {
        let degraded =
            parse_answer(br#"{"results":[],"unresponsive_engines":[["alpha","timeout"]]}"#)
                .unwrap();
        assert!(degraded.is_degraded());
        let nothing = parse_answer(br#"{"results":[],"unresponsive_engines":[]}"#).unwrap();
        assert!(!nothing.is_degraded());
    }

    #[test]
    fn not_searxng_json_is_malformed() {
        assert!(parse_answer(b"<html>").is_none());
        assert!(parse_answer(br#"{"error":"search error"}"#).is_none());
        assert!(parse_answer(b"[]").is_none());
    }

    #[test]
    fn engines_are_counted_once_per_result() {
        let answer = parse_answer(
            br#"{"results":[
            {"url":"u1","title":"t","engine":"alpha","engines":["alpha","beta","alpha"]},
            {"url":"u2","title":"t","engine":"gamma"}]}"#,
        )
        .unwrap();
        assert_eq!(result_engines(&answer.results[0]), ["alpha", "beta"]);
        assert_eq!(result_engines(&answer.results[1]), ["gamma"]);
        assert_eq!(answer.engines_with_results(), ["alpha", "beta", "gamma"]);
    }
}
