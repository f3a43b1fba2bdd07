//! Reading a JSON object one field at a time, so that a value of the wrong type or out of range is
//! refused naming the field and what it should be — a message a client, or a model calling a tool,
//! can act on. The JSON surfaces (the MCP tool and the Tavily, Firecrawl, Perplexity and Open
//! WebUI APIs) read their input this way.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A field whose value is not what it should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for {name}: expected {expected}")]
pub(crate) struct InvalidField {
    /// The field.
    pub(crate) name: &'static str,
    /// What would have been accepted.
    pub(crate) expected: &'static str,
}

/// The first field of `fields` a door cannot honour, named as a client would find it (`name:
/// value` for a scalar): not one the door `reads`, not one whose every value is `harmless`, and not
/// at a value `harmless_at` takes for it (a null is always harmless: it asks for nothing). A door
/// refuses it by name rather than silently drop what a client asked for.
pub(crate) fn unhonoured(
    fields: &Map<String, Value>,
    reads: &[&str],
    harmless: &[&str],
    harmless_at: impl Fn(&str, &Value) -> bool,
) -> Option<String> {
    fields
        .iter()
        .find(|(name, value)| {
            let name = name.as_str();
            !value.is_null()
                && !reads.contains(&name)
                && !harmless.contains(&name)
                && !harmless_at(name, value)
        })
        .map(|(name, value)| match value {
            Value::Bool(_) | Value::Number(_) | Value::String(_) => format!("{name}: {value}"),
            _ => name.clone(),
        })
}

/// A body as a JSON object, or `None` when it is not one.
pub(crate) fn object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => Some(fields),
        _ => None,
    }
}

/// One field: `None` when absent or null, the typed value, or [`InvalidField`].
pub(crate) fn field<T: DeserializeOwned>(
    fields: &Map<String, Value>,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<T>, InvalidField> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::deserialize(value)
            .map(Some)
            .map_err(|_| InvalidField { name, expected }),
    }
}

/// One number field that must lie in `range`.
pub(crate) fn number_in(
    fields: &Map<String, Value>,
    name: &'static str,
    range: std::ops::RangeInclusive<u32>,
    expected: &'static str,
) -> Result<Option<u32>, InvalidField> {
    match field::<u32>(fields, name, expected)? {
        Some(n) if !range.contains(&n) => Err(InvalidField { name, expected }),
        n => Ok(n),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_and_null_are_none_and_a_wrong_type_names_the_field() {
        let fields = json!({"a": null, "n": 3, "s": "x"})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(field::<String>(&fields, "a", "a string"), Ok(None));
        assert_eq!(field::<String>(&fields, "missing", "a string"), Ok(None));
        assert_eq!(
            field::<String>(&fields, "s", "a string"),
            Ok(Some("x".into()))
        );
        assert_eq!(
            field::<String>(&fields, "n", "a string"),
            Err(InvalidField {
                name: "n",
                expected: "a string"
            })
        );
        assert_eq!(number_in(&fields, "n", 1..=3, "1 to 3"), Ok(Some(3)));
        assert!(number_in(&fields, "n", 1..=2, "1 to 2").is_err());
        assert!(number_in(&fields, "s", 1..=2, "1 to 2").is_err());
    }
}
