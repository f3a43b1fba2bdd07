//! Firecrawl's `webhook` on a crawl or a batch scrape, read: a URL, or `{"url", "headers",
//! "metadata", "events"}` (`events` among `started`, `page`, `completed`, `failed`; all of them
//! when absent or empty). What the gateway sends, and how it signs it, is the engine's
//! ([`gateway_engine::crawl::webhook`]); a field of the object it does not take is refused by
//! name.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{unsupported, FirecrawlError};
use crate::server::kit::json_fields::InvalidField;
use gateway_engine::crawl::{Webhook, WebhookEvent};

const URL: InvalidField = InvalidField {
    name: "webhook",
    expected: "an http or https URL, or {url, headers, metadata, events}",
};

/// The `webhook` field's value as the job's webhook.
pub(crate) fn read(value: &Value) -> Result<Webhook, FirecrawlError> {
    let fields = match value {
        Value::String(url) => {
            return Ok(Webhook {
                url: http_url(url).ok_or(URL)?,
                headers: BTreeMap::new(),
                metadata: Value::Object(Map::new()),
                events: WebhookEvent::ALL.to_vec(),
            })
        }
        Value::Object(fields) => fields,
        _ => return Err(URL.into()),
    };
    if let Some(name) = fields
        .keys()
        .find(|name| !["url", "headers", "metadata", "events"].contains(&name.as_str()))
    {
        return Err(unsupported(format!(
            "webhook.{} is not a webhook option this gateway takes (url, headers, metadata, events)",
            name.chars().take(40).collect::<String>()
        )));
    }
    let url = fields
        .get("url")
        .and_then(Value::as_str)
        .and_then(http_url)
        .ok_or(URL)?;
    let headers = match fields.get("headers") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(headers)) => headers
            .iter()
            .map(|(name, value)| match value {
                Value::String(value) => Ok((name.clone(), value.clone())),
                _ => Err(InvalidField {
                    name: "webhook.headers",
                    expected: "an object of strings",
                }),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(InvalidField {
                name: "webhook.headers",
                expected: "an object of strings",
            }
            .into())
        }
    };
    let metadata = match fields.get("metadata") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(metadata)) => Value::Object(metadata.clone()),
        Some(_) => {
            return Err(InvalidField {
                name: "webhook.metadata",
                expected: "an object",
            }
            .into())
        }
    };
    const EVENTS: InvalidField = InvalidField {
        name: "webhook.events",
        expected: "a list of started, page, completed and failed",
    };
    let events = match fields.get("events") {
        None | Some(Value::Null) => WebhookEvent::ALL.to_vec(),
        Some(Value::Array(named)) if named.is_empty() => WebhookEvent::ALL.to_vec(),
        Some(Value::Array(named)) => named
            .iter()
            .map(|event| event.as_str().and_then(WebhookEvent::parse).ok_or(EVENTS))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(EVENTS.into()),
    };
    Ok(Webhook {
        url,
        headers,
        metadata,
        events,
    })
}

fn http_url(raw: &str) -> Option<url::Url> {
    url::Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_url_or_an_object_with_firecrawls_fields() {
        let plain = read(&json!("https://hooks.example/in")).unwrap();
        assert_eq!(plain.url.as_str(), "https://hooks.example/in");
        assert_eq!(plain.events, WebhookEvent::ALL);
        let full = read(&json!({
            "url": "https://hooks.example/in",
            "headers": {"X-Team": "docs"},
            "metadata": {"run": 7},
            "events": ["page", "completed"],
        }))
        .unwrap();
        assert_eq!(full.headers["X-Team"], "docs");
        assert_eq!(full.metadata, json!({"run": 7}));
        assert_eq!(full.events, [WebhookEvent::Page, WebhookEvent::Completed]);
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for bad in [
            json!("file:///tmp/x"),
            json!(7),
            json!({"url": "https://hooks.example/", "events": ["finished"]}),
            json!({"url": "https://hooks.example/", "headers": {"X": 1}}),
            json!({"url": "https://hooks.example/", "metadata": "run 7"}),
            json!({"url": "https://hooks.example/", "secret": "s"}),
        ] {
            let err = read(&bad).unwrap_err();
            assert!(format!("{err:?}").contains("webhook"), "{bad}: {err:?}");
        }
    }
}
