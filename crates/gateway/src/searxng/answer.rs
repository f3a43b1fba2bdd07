//! One SearXNG answer, decoded for the pipeline: the top-level keys (kept in SearXNG's order, each
//! value as SearXNG wrote it, to be returned as they came), the results (only those with a `url`
//! and a `title`; each kept as SearXNG's bytes of it, with the few fields the gateway reads
//! decoded), and the `unresponsive_engines` facts; and SearXNG's bytes themselves when every
//! result was kept, so an answer made of SearXNG's results alone is forwarded as it came instead of
//! being rendered again. No tree of the whole answer is built (issue #16).

use std::fmt;

use bytes::Bytes;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use super::unresponsive::{parse_unresponsive, Unresponsive};
use crate::search_result::{slice_of, SearchResult};

/// One SearXNG answer, split for the merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SearxngAnswer {
    /// Every top-level key SearXNG returned (`results` too, replaced when the answer is rendered),
    /// in SearXNG's order.
    pub(crate) top: TopLevel,
    /// The results (each has at least `url` and `title`), every field kept.
    pub(crate) results: Vec<SearchResult>,
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

/// The top level of a SearXNG answer: its keys in SearXNG's order, each value as SearXNG wrote it
/// (valid JSON) — except `results`' (empty): the answer's results take its place. A key appears
/// once.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TopLevel(Vec<(String, Bytes)>);

impl TopLevel {
    /// The value of `key` as written.
    pub(crate) fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &v[..])
    }

    /// Sets `key` to `value` (valid JSON): where the key is, or appended.
    pub(crate) fn set(&mut self, key: &str, value: Bytes) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// The keys and their values, in order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.0.iter().map(|(k, v)| (k.as_str(), &v[..]))
    }

    /// The top level of a JSON object given as a tree (tests).
    #[cfg(test)]
    pub(crate) fn from_object(object: &serde_json::Map<String, Value>) -> Self {
        Self(
            object
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
                    )
                })
                .collect(),
        )
    }
}

/// The engines a result came from: `engines`, or `engine` when `engines` is absent — never both,
/// so a result is not counted twice for the same engine.
pub(crate) fn result_engines(result: &SearchResult) -> Vec<&str> {
    let mut names: Vec<&str> = result.engines().iter().map(String::as_str).collect();
    if names.is_empty() {
        if let Some(engine) = result.engine() {
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
    parse(&Bytes::copy_from_slice(body)).map(|(answer, _)| answer)
}

/// The answer, and whether every result in the body is in it. Each value kept is a slice of
/// `body`, not a copy.
fn parse(body: &Bytes) -> Option<(SearxngAnswer, bool)> {
    let text = std::str::from_utf8(body).ok()?;
    let Sent { entries, results } = serde_json::from_str(text).ok()?;
    let raw_results = results?;
    let sent = raw_results.len();
    let results: Vec<SearchResult> = raw_results
        .into_iter()
        .filter_map(|raw| SearchResult::from_sent(raw, body))
        .collect();
    let unresponsive = entries
        .iter()
        .find(|(k, _)| k == "unresponsive_engines")
        .and_then(|(_, raw)| *raw)
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
    let unresponsive = parse_unresponsive(unresponsive.as_ref());
    let kept_all = results.len() == sent;
    let mut top = Vec::with_capacity(entries.len());
    for (key, raw) in entries {
        let value = match raw {
            Some(raw) => slice_of(body, raw.get().as_bytes())?,
            None => Bytes::new(),
        };
        top.push((key, value));
    }
    let top = TopLevel(top);
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

/// SearXNG's body read in one pass: the top-level entries as raw values (`None` for `results`),
/// and the results as raw values when `results` is an array. A key that repeats keeps its first
/// place and takes its last value, as a tree of the body would.
struct Sent<'a> {
    entries: Vec<(String, Option<&'a RawValue>)>,
    results: Option<Vec<&'a RawValue>>,
}

impl<'de> Deserialize<'de> for Sent<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SentVisitor;
        impl<'de> Visitor<'de> for SentVisitor {
            type Value = Sent<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SearXNG answer object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sent<'de>, A::Error> {
                let mut entries: Vec<(String, Option<&'de RawValue>)> = Vec::with_capacity(12);
                let mut results = None;
                while let Some(key) = map.next_key::<String>()? {
                    let value = if key == "results" {
                        results = map.next_value::<ResultList<'de>>()?.0;
                        None
                    } else {
                        Some(map.next_value::<&'de RawValue>()?)
                    };
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some(entry) => entry.1 = value,
                        None => entries.push((key, value)),
                    }
                }
                Ok(Sent { entries, results })
            }
        }
        deserializer.deserialize_map(SentVisitor)
    }
}

/// `results`: each element as a raw value when it is an array, `None` when it is anything else.
struct ResultList<'a>(Option<Vec<&'a RawValue>>);

impl<'de> Deserialize<'de> for ResultList<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ResultListVisitor;
        impl<'de> Visitor<'de> for ResultListVisitor {
            type Value = ResultList<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ResultList<'de>, A::Error> {
                let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(32));
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    list.push(raw);
                }
                Ok(ResultList(Some(list)))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultList<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ResultList(None))
            }

            fn visit_str<E>(self, _: &str) -> Result<ResultList<'de>, E> {
                Ok(ResultList(None))
            }

            fn visit_bool<E>(self, _: bool) -> Result<ResultList<'de>, E> {
                Ok(ResultList(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<ResultList<'de>, E> {
                Ok(ResultList(None))
            }

            fn visit_u64<E>(self, _: u64) -> Result<ResultList<'de>, E> {
                Ok(ResultList(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<ResultList<'de>, E> {
                Ok(ResultList(None))
            }

            fn visit_unit<E>(self) -> Result<ResultList<'de>, E> {
                Ok(ResultList(None))
            }
        }
        deserializer.deserialize_any(ResultListVisitor)
    }
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
        let keys: Vec<&str> = answer.top.entries().map(|(k, _)| k).collect();
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
        assert_eq!(answer.results[0].to_object()["author"], "x");
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
    fn a_repeated_results_key_counts_with_its_last_value_as_a_tree_would() {
        let last_is_a_list = parse_answer(
            br#"{"results": {"a": [1]}, "q": 1, "results": [{"url": "u", "title": "t"}]}"#,
        )
        .unwrap();
        assert_eq!(last_is_a_list.results.len(), 1);
        let keys: Vec<&str> = last_is_a_list.top.entries().map(|(k, _)| k).collect();
        assert_eq!(keys, ["results", "q"]);
        assert!(parse_answer(br#"{"results": [], "results": "x"}"#).is_none());
        assert!(parse_answer(br#"{"results": null}"#).is_none());
        assert!(parse_answer(br#"{"results": [1, "x", {"url": "u"}]}"#)
            .is_some_and(|answer| answer.results.is_empty()));
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
