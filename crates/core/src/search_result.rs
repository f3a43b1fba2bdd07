//! One search result as the gateway carries it from an upstream to the answer: the few fields the
//! merge and the engine accounting read (`url`'s deduplication key, `engine`, `engines`,
//! `positions`), decoded once, and the result's JSON object itself — SearXNG's own bytes, or an
//! object built from a premium hit — with the fields the merge set. A result is rendered once,
//! into the answer: SearXNG's bytes are copied as they came unless the merge changed the result,
//! so a miss never builds a tree of every field SearXNG sent (decoding and freeing that tree was
//! half of a miss's CPU, issue #16).
//!
//! An upstream's result list is read where it is ([`SentElement`], by the SearXNG answer's
//! one-pass reader, which keeps each element's text); a result the merge changed is written back
//! over serde_json's `RawValue` (which finds where each value is in the text). A field of the wrong
//! type is read as absent, never as an error, as the tree the gateway used before read it.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use bytes::Bytes;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::canonical_url::canonical_url;

/// One result: what the merge reads, and the object the client gets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResult {
    /// The deduplication key of the result's `url` ([`canonical_url`]), computed once.
    key: String,
    engine: Option<String>,
    engines: Vec<String>,
    positions: Vec<u64>,
    object: Object,
}

/// The result's JSON object.
#[derive(Debug, Clone, PartialEq)]
enum Object {
    /// An upstream's own bytes of the object (`{…}`, valid JSON), and what the merge set in it.
    Sent {
        bytes: Bytes,
        merged: Option<Box<MergedFields>>,
    },
    /// An object the gateway built (a premium hit), the merge's fields set in it directly.
    Built(Map<String, Value>),
}

impl Default for Object {
    fn default() -> Self {
        Self::Built(Map::new())
    }
}

/// The fields the merge sets on a result several sources returned.
#[derive(Debug, Clone, PartialEq)]
struct MergedFields {
    engines: Value,
    positions: Option<Value>,
    score: Value,
}

impl SearchResult {
    /// A result from an upstream's JSON value `raw`, read from `body` (kept as a slice of
    /// `body`, not a copy): `None` unless it is an object with a string `url` and a string `title`.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn from_sent(raw: &RawValue, body: &Bytes) -> Option<Self> {
        let element: SentElement = serde_json::from_str(raw.get()).ok()?;
        Self::from_element(element, raw.get(), body)
    }

    /// A result from one element of an upstream's result list, read where it is: `element` is
    /// what was read of `text`, a part of `body` (kept as a slice of `body`, not a copy). `None`
    /// unless it is an object with a string `url` and a string `title`.
    pub fn from_element(element: SentElement, text: &str, body: &Bytes) -> Option<Self> {
        let fields = element.0?;
        let object = slice_of(body, text.as_bytes())?;
        let url = fields.url.filter(|_| fields.title)?;
        Some(Self {
            key: canonical_url(&url),
            engine: fields.engine,
            engines: fields.engines,
            positions: fields.positions,
            object: Object::Sent {
                bytes: object,
                merged: None,
            },
        })
    }

    /// A result the gateway built; `url`, `engine`, `engines` and `positions` are read from it
    /// (the object must have a string `url`).
    pub fn from_built(object: Map<String, Value>) -> Option<Self> {
        let url = object.get("url")?.as_str()?;
        let engine = object
            .get("engine")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let engines = match object.get("engines") {
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let positions = match object.get("positions") {
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_u64).collect(),
            _ => Vec::new(),
        };
        Some(Self {
            key: canonical_url(url),
            engine,
            engines,
            positions,
            object: Object::Built(object),
        })
    }

    /// A result decoded from a JSON value as if an upstream had sent it (tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn from_json(value: &Value) -> Option<Self> {
        let body = Bytes::from(serde_json::to_vec(value).ok()?);
        let raw: &RawValue = serde_json::from_slice(&body).ok()?;
        Self::from_sent(raw, &body)
    }

    /// The deduplication key of the result's `url`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The host of the result's `url` ([`crate::canonical_url::key_host`]).
    pub fn host(&self) -> Option<&str> {
        crate::canonical_url::key_host(&self.key)
    }

    /// The result's `engine`, when it is a string.
    pub fn engine(&self) -> Option<&str> {
        self.engine.as_deref()
    }

    /// The strings of the result's `engines` list, as listed.
    pub fn engines(&self) -> &[String] {
        &self.engines
    }

    /// The non-negative integers of the result's `positions` list.
    pub fn positions(&self) -> &[u64] {
        &self.positions
    }

    /// Sets what the merge computed for a result several sources returned: `engines`,
    /// `positions` (unless `None`) and `score`, each where it is in the object or else appended,
    /// in that order.
    pub fn set_merged(&mut self, engines: Vec<String>, positions: Option<Vec<u64>>, score: f64) {
        let engines = Value::Array(engines.into_iter().map(Value::String).collect());
        let positions =
            positions.map(|list| Value::Array(list.into_iter().map(Value::from).collect()));
        let score = Value::from(score);
        match &mut self.object {
            Object::Built(object) => {
                object.insert("engines".into(), engines);
                if let Some(positions) = positions {
                    object.insert("positions".into(), positions);
                }
                object.insert("score".into(), score);
            }
            Object::Sent { merged, .. } => {
                *merged = Some(Box::new(MergedFields {
                    engines,
                    positions,
                    score,
                }));
            }
        }
    }

    /// About how many bytes [`SearchResult::write_json`] appends (exactly, for an object sent and
    /// not changed): what the answer's buffer is sized for, so it is not grown and copied.
    pub fn json_size(&self) -> usize {
        match &self.object {
            Object::Sent { bytes, merged } => bytes.len() + merged.as_ref().map_or(0, |_| 128),
            Object::Built(object) => {
                let strings: usize = object
                    .values()
                    .map(|value| value.as_str().map_or(16, str::len))
                    .sum();
                strings + 24 * object.len()
            }
        }
    }

    /// Appends the result's JSON object to `out`: an upstream's bytes as they came, or with the
    /// merge's fields put in (each other value still as it came).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match &self.object {
            Object::Built(object) => write_value(out, object),
            Object::Sent {
                bytes,
                merged: None,
            } => out.extend_from_slice(bytes),
            Object::Sent {
                bytes,
                merged: Some(merged),
            } => write_with_merged(out, bytes, merged),
        }
    }

    /// The object as a tree, as the client decodes it (tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn to_object(&self) -> Map<String, Value> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        serde_json::from_slice(&out).unwrap_or_default()
    }
}

/// `bytes` (a JSON object) with `engines`, `positions` and `score` replaced where they are, or
/// appended: what inserting them into the object's tree and serialising it gives, without the tree.
fn write_with_merged(out: &mut Vec<u8>, bytes: &[u8], merged: &MergedFields) {
    let entries = std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| object_entries(text).ok());
    let Some(entries) = entries else {
        // `from_sent` read these bytes as an object: not reached.
        out.extend_from_slice(bytes);
        return;
    };
    let mut set = [
        ("engines", Some(&merged.engines)),
        ("positions", merged.positions.as_ref()),
        ("score", Some(&merged.score)),
    ];
    out.push(b'{');
    let mut first = true;
    let mut entry = |out: &mut Vec<u8>, key: &str| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        write_value(out, key);
        out.push(b':');
    };
    for (key, raw) in &entries {
        entry(out, key);
        match set.iter_mut().find(|(name, _)| *name == key) {
            Some((_, value)) if value.is_some() => {
                write_value(out, value.take().unwrap_or(&Value::Null))
            }
            _ => out.extend_from_slice(raw.get().as_bytes()),
        }
    }
    for (key, value) in set {
        if let Some(value) = value {
            entry(out, key);
            write_value(out, value);
        }
    }
    out.push(b'}');
}

/// Serialises `value` compactly onto `out`. Serialising a string, a map of JSON values or a
/// list of numbers and strings into memory cannot fail.
fn write_value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

/// `part` of `body` as a `Bytes` sharing `body`'s buffer; `None` when `part` is not in `body`.
pub fn slice_of(body: &Bytes, part: &[u8]) -> Option<Bytes> {
    let start = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= body.len()).then(|| body.slice(start..end))
}

/// A JSON object's entries in order, each value as it is in `text`. A key that repeats keeps its
/// first place and takes its last value, as a tree of the object would.
fn object_entries(text: &str) -> serde_json::Result<Vec<(Cow<'_, str>, &RawValue)>> {
    serde_json::from_str::<Entries<'_>>(text).map(|entries| entries.0)
}

struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// An object key, borrowed from the text unless it has escapes.
struct KeyText<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyText<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Borrowed(key)))
            }

            fn visit_str<E>(self, key: &str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de>, A::Error> {
                let mut entries: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::with_capacity(16);
                while let Some(KeyText(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some(entry) => entry.1 = value,
                        None => entries.push((key, value)),
                    }
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// What the gateway reads of a result; every other field is skipped unread.
#[derive(Default)]
struct Fields {
    url: Option<String>,
    title: bool,
    engine: Option<String>,
    engines: Vec<String>,
    positions: Vec<u64>,
}

/// The keys [`Fields`] reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Url,
    Title,
    Engine,
    Engines,
    Positions,
    #[serde(other)]
    Other,
}

/// One element of an upstream's result list: the [`Fields`] of an object, `None` for any other
/// value (read and skipped).
pub struct SentElement(Option<Fields>);

impl<'de> Deserialize<'de> for SentElement {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor(PhantomData))
    }
}

impl ByKind for SentElement {
    const EXPECTING: &'static str = "a search result object";

    fn skipped() -> Self {
        SentElement(None)
    }

    fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        // A repeated key: the last value counts, as in a tree of the object.
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Url => fields.url = into_string(map.next_value()?),
                Key::Title => fields.title = map.next_value::<IsString>()?.0,
                Key::Engine => fields.engine = into_string(map.next_value()?),
                Key::Engines => {
                    fields.engines = match map.next_value()? {
                        Value::Array(list) => list.into_iter().filter_map(into_string).collect(),
                        _ => Vec::new(),
                    }
                }
                Key::Positions => {
                    fields.positions = match map.next_value()? {
                        Value::Array(list) => list.iter().filter_map(Value::as_u64).collect(),
                        _ => Vec::new(),
                    }
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(SentElement(Some(fields)))
    }
}

/// Whether a value is a string, read without keeping it.
struct IsString(bool);

impl<'de> Deserialize<'de> for IsString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor(PhantomData))
    }
}

impl ByKind for IsString {
    const EXPECTING: &'static str = "any JSON value";

    fn skipped() -> Self {
        IsString(false)
    }

    fn string() -> Self {
        IsString(true)
    }
}

/// A value decided by the kind of JSON value sent, which reads what it needs of one kind and
/// skips everything else unread; [`KindVisitor`] visits every kind for it.
trait ByKind: Sized {
    /// What the visitor says it expected, in a decoding error.
    const EXPECTING: &'static str;

    /// The value for a kind it does not read.
    fn skipped() -> Self;

    /// The value for a string (by default skipped).
    fn string() -> Self {
        Self::skipped()
    }

    /// The value for an object (by default skipped unread).
    fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::skipped())
    }
}

/// Visits any JSON value for a [`ByKind`] type.
struct KindVisitor<T>(PhantomData<T>);

impl<'de, T: ByKind> Visitor<'de> for KindVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(T::skipped())
    }

    fn visit_str<E>(self, _: &str) -> Result<T, E> {
        Ok(T::string())
    }

    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::skipped())
    }

    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::skipped())
    }

    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::skipped())
    }

    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::skipped())
    }

    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::skipped())
    }
}

fn into_string(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(text: &'static str) -> Option<SearchResult> {
        let body = Bytes::from_static(text.as_bytes());
        SearchResult::from_sent(serde_json::from_str(text).unwrap(), &body)
    }

    #[test]
    fn the_fields_are_read_and_the_object_goes_out_as_it_came() {
        let text = r#"{"url": "https://a.example/", "title": "A", "engine": "alpha",
            "engines": ["alpha", 3, "beta"], "positions": [2, -1, "x", 5], "content": "\u00e9", "x": {"y": [1.50]}}"#;
        let result = sent(text).unwrap();
        assert_eq!(result.key(), "//a.example");
        assert_eq!(result.engine(), Some("alpha"));
        assert_eq!(result.engines(), ["alpha", "beta"]);
        assert_eq!(result.positions(), [2, 5]);
        let mut out = Vec::new();
        result.write_json(&mut out);
        assert_eq!(out, text.as_bytes());
    }

    #[test]
    fn a_result_without_a_string_url_and_title_is_refused() {
        assert!(sent(r#"{"url": "u"}"#).is_none());
        assert!(sent(r#"{"title": "t"}"#).is_none());
        assert!(sent(r#"{"url": 1, "title": "t"}"#).is_none());
        assert!(sent(r#"{"url": "u", "title": null}"#).is_none());
        assert!(sent(r#"["url", "title"]"#).is_none());
        assert!(sent(r#"{"url": "u", "title": "t"}"#).is_some());
    }

    #[test]
    fn a_repeated_key_counts_once_with_its_last_value() {
        let result =
            sent(r#"{"url": "a", "title": "t", "url": "b", "score": 1, "score": 2}"#).unwrap();
        assert_eq!(result.key(), "b");
        assert_eq!(
            result.to_object(),
            *json!({"url": "b", "title": "t", "score": 2})
                .as_object()
                .unwrap()
        );
    }

    #[test]
    fn the_merged_fields_are_what_setting_them_in_the_tree_gives() {
        let objects = [
            json!({"url": "u", "title": "t", "engines": ["a"], "score": 1.5, "positions": [3], "z": [{"k": "\n"}]}),
            json!({"url": "u", "title": "t", "engine": "a", "content": "c"}),
            json!({"score": 0, "url": "u", "title": "t", "engines": "wrong"}),
        ];
        for object in objects {
            for positions in [None, Some(vec![1, 3])] {
                let mut tree = object.as_object().unwrap().clone();
                let mut built = SearchResult::from_built(tree.clone()).unwrap();
                let mut raw = SearchResult::from_json(&object).unwrap();
                let engines = vec!["a".to_owned(), "b".to_owned()];
                built.set_merged(engines.clone(), positions.clone(), 0.25);
                raw.set_merged(engines.clone(), positions.clone(), 0.25);
                tree.insert("engines".into(), json!(engines));
                if let Some(p) = &positions {
                    tree.insert("positions".into(), json!(p));
                }
                tree.insert("score".into(), json!(0.25));
                let expected = serde_json::to_vec(&tree).unwrap();
                for result in [&built, &raw] {
                    let mut out = Vec::new();
                    result.write_json(&mut out);
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        String::from_utf8(expected.clone()).unwrap(),
                        "same keys, same order, same values"
                    );
                }
            }
        }
    }

    #[test]
    fn object_entries_keep_the_order_and_the_raw_values() {
        let entries = object_entries(r#"{"b": [1, 2], "a": "x", "b": {"c": null}}"#).unwrap();
        let seen: Vec<(&str, &str)> = entries.iter().map(|(k, v)| (&**k, v.get())).collect();
        assert_eq!(seen, [("b", r#"{"c": null}"#), ("a", r#""x""#)]);
        assert!(object_entries("[]").is_err());
        assert!(object_entries("{").is_err());
    }
}
