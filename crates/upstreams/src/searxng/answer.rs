//! One SearXNG answer, decoded for the pipeline: the top-level keys (kept in SearXNG's order, each
//! value as SearXNG wrote it, to be returned as they came), the results (only those with a `url`
//! and a `title`; each kept as SearXNG's bytes of it, with the few fields the gateway reads
//! decoded), and the `unresponsive_engines` facts; and SearXNG's bytes themselves when every
//! result was kept, so an answer made of SearXNG's results alone is forwarded as it came instead of
//! being rendered again. No tree of the whole answer is built (issue #16).

use bytes::Bytes;
use serde::de::{Deserialize, IgnoredAny};
use serde_json::value::RawValue;
use serde_json::Value;

use super::unresponsive::{parse_unresponsive, Unresponsive};
use gateway_core::search_result::{slice_of, SearchResult, SentElement};

/// One SearXNG answer, split for the merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearxngAnswer {
    /// Every top-level key SearXNG returned (`results` too, replaced when the answer is rendered),
    /// in SearXNG's order.
    pub top: TopLevel,
    /// The results (each has at least `url` and `title`), every field kept.
    pub results: Vec<SearchResult>,
    /// `unresponsive_engines`, deduplicated.
    pub unresponsive: Vec<Unresponsive>,
    /// SearXNG's body as it came, when it is this answer whole: every result in it is in
    /// `results`. `None` when a result was dropped (or the answer was built, not decoded).
    pub body: Option<Bytes>,
}

impl SearxngAnswer {
    /// HTTP 200 with zero results while engines are listed unresponsive: not "nothing found".
    pub fn is_degraded(&self) -> bool {
        self.results.is_empty() && !self.unresponsive.is_empty()
    }

    /// SearXNG engine names that returned at least one result (each engine once, in the order
    /// they first appear), with how many results each returned.
    pub fn results_per_engine(&self) -> Vec<(&str, u64)> {
        let mut per_engine: Vec<(&str, u64)> = Vec::new();
        for result in &self.results {
            for engine in result_engines(result) {
                match per_engine.iter_mut().find(|(name, _)| *name == engine) {
                    Some((_, count)) => *count += 1,
                    None => per_engine.push((engine, 1)),
                }
            }
        }
        per_engine
    }

    /// SearXNG engine names that returned at least one result (each engine once).
    pub fn engines_with_results(&self) -> Vec<&str> {
        self.results_per_engine()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }
}

/// The top level of a SearXNG answer: its keys in SearXNG's order, each value as SearXNG wrote it
/// (valid JSON) — except `results`' (empty): the answer's results take its place. A key appears
/// once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopLevel(Vec<(String, Bytes)>);

impl TopLevel {
    /// The value of `key` as written.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &v[..])
    }

    /// Sets `key` to `value` (valid JSON): where the key is, or appended.
    pub fn set(&mut self, key: &str, value: Bytes) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// The keys and their values, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.0.iter().map(|(k, v)| (k.as_str(), &v[..]))
    }

    /// The top level of a JSON object given as a tree (tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn from_object(object: &serde_json::Map<String, Value>) -> Self {
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
pub fn result_engines(result: &SearchResult) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::with_capacity(result.engines().len().max(1));
    for engine in result.engines() {
        if !names.contains(&engine.as_str()) {
            names.push(engine);
        }
    }
    if names.is_empty() {
        names.extend(result.engine());
    }
    names
}

/// [`parse_answer`], keeping `body` in the answer when no result was dropped.
pub fn decode_answer(body: Bytes) -> Option<SearxngAnswer> {
    let (mut answer, kept_all) = parse(&body)?;
    if kept_all {
        answer.body = Some(body);
    }
    Some(answer)
}

/// Parses SearXNG's JSON; `None` when it is not an object with a `results` array.
pub fn parse_answer(body: &[u8]) -> Option<SearxngAnswer> {
    parse(&Bytes::copy_from_slice(body)).map(|(answer, _)| answer)
}

/// The answer, and whether every result in the body is in it. Each value kept is a slice of
/// `body`, not a copy.
fn parse(body: &Bytes) -> Option<(SearxngAnswer, bool)> {
    let text = std::str::from_utf8(body).ok()?;
    let Sent { entries, results } = read_sent(text, body)?;
    let (results, sent) = results?;
    let unresponsive = entries
        .iter()
        .find(|(k, _)| k == "unresponsive_engines")
        .and_then(|(_, raw)| *raw)
        .and_then(|raw| serde_json::from_str::<Value>(raw).ok());
    let unresponsive = parse_unresponsive(unresponsive.as_ref());
    let kept_all = results.len() == sent;
    let mut top = Vec::with_capacity(entries.len());
    for (key, raw) in entries {
        let value = match raw {
            Some(raw) => slice_of(body, raw.as_bytes())?,
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

/// SearXNG's body as read: the top-level entries with their values' text (`None` for `results`),
/// and, when `results` is an array, the results kept and how many elements it had. A key that
/// repeats keeps its first place and takes its last value, as a tree of the body would.
struct Sent<'a> {
    entries: Vec<(String, Option<&'a str>)>,
    results: Option<(Vec<SearchResult>, usize)>,
}

/// Reads `text` (`body`'s text) in one pass: every value is read by serde_json where it is — the
/// results straight into their [`SearchResult`]s, each keeping its own text — and only the
/// object's and the array's punctuation is walked here. (Reading each result first as a raw value
/// and then again for its fields scanned every result twice: a fifth of a miss's CPU, issue #16.)
/// `None` for anything that is not one JSON object, as `serde_json::from_str` would refuse it.
fn read_sent<'a>(text: &'a str, body: &Bytes) -> Option<Sent<'a>> {
    let mut at = Cursor { text, pos: 0 };
    let mut entries: Vec<(String, Option<&'a str>)> = Vec::with_capacity(12);
    let mut results = None;
    at.expect(b'{')?;
    if !at.eat(b'}') {
        loop {
            let (key, _) = at.value::<String>()?;
            at.expect(b':')?;
            let value = if key == "results" {
                results = at.results(body)?;
                None
            } else {
                Some(at.value::<&RawValue>()?.1)
            };
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
            if at.eat(b'}') {
                break;
            }
            at.expect(b',')?;
        }
    }
    at.end()?;
    Some(Sent { entries, results })
}

/// A position in SearXNG's text, between JSON tokens.
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.text.as_bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// Steps over `byte` (after whitespace) if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let next = self.text.as_bytes().get(self.pos) == Some(&byte);
        if next {
            self.pos += 1;
        }
        next
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// Nothing but whitespace is left.
    fn end(&mut self) -> Option<()> {
        self.skip_whitespace();
        (self.pos == self.text.len()).then_some(())
    }

    /// The JSON value that starts here (after whitespace), read as a `T` by serde_json, and its
    /// text.
    fn value<T: Deserialize<'a>>(&mut self) -> Option<(T, &'a str)> {
        self.skip_whitespace();
        let rest = self.text.get(self.pos..)?;
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = stream.next()?.ok()?;
        let read = rest.get(..stream.byte_offset())?;
        self.pos += read.len();
        Some((value, read))
    }

    /// `results`' value: when it is an array, the results kept (a slice of `body` each) and how
    /// many elements it had; `Some(None)` for any other value.
    fn results(&mut self, body: &Bytes) -> Option<Option<(Vec<SearchResult>, usize)>> {
        if !self.eat(b'[') {
            self.value::<IgnoredAny>()?;
            return Some(None);
        }
        let mut kept = Vec::with_capacity(32);
        let mut sent = 0;
        if !self.eat(b']') {
            loop {
                let (element, text) = self.value::<SentElement>()?;
                sent += 1;
                kept.extend(SearchResult::from_element(element, text, body));
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        Some(Some((kept, sent)))
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
    fn the_one_pass_reader_accepts_exactly_what_a_tree_of_the_body_accepts() {
        let bodies = [
            r#"{"results":[]}"#,
            " \n{ \"results\" : [ { \"url\" : \"u\" , \"title\" : \"t\" } ] , \"q\" : 1 }\t\r\n",
            r#"{"results":[],"a":1e5,"b":-0.5,"c":true,"d":null,"e":[{}],"f":"x\"y"}"#,
            r#"{"resu\u006cts":[{"url":"u","title":"t"},{"url":1,"title":"t"},[1],"s",2,null]}"#,
            r#"{"results":[{"url":"u","title":"t","x":{"y":[1,{"z":"]}"}]}}]}"#,
            r#"{"results":[],}"#,
            r#"{"results":[{"url":"u","title":"t"},]}"#,
            r#"{"results":[]} x"#,
            r#"{"results":[]"#,
            r#"{"results":[1 2]}"#,
            r#"{,"results":[]}"#,
            r#"{"a":01,"results":[]}"#,
            r#"{"results":[],"a":1x}"#,
            r#"{"results":[],"a":1"b":2}"#,
            r#"{"results" [],"a":1}"#,
            r#"{"results":[]}{}"#,
            r#"{1:2,"results":[]}"#,
            r#"{"results":[{"url":"u","title":"t"}],"results":{}}"#,
            "",
            "   ",
        ];
        for body in bodies {
            let tree = serde_json::from_str::<Value>(body).ok();
            let expected = tree.as_ref().and_then(|tree| {
                let results = tree.as_object()?.get("results")?.as_array()?;
                Some(
                    results
                        .iter()
                        .filter(|r| r["url"].is_string() && r["title"].is_string())
                        .count(),
                )
            });
            let read = parse_answer(body.as_bytes()).map(|answer| answer.results.len());
            assert_eq!(read, expected, "{body}");
        }
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
        assert_eq!(
            answer.results_per_engine(),
            [("alpha", 1), ("beta", 1), ("gamma", 1)]
        );
        assert_eq!(result_engines(&answer.results[1]), ["gamma"]);
        assert_eq!(answer.engines_with_results(), ["alpha", "beta", "gamma"]);
    }
}
