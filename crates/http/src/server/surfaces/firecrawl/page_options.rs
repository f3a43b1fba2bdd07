//! The page options of a scrape (and of a search's `scrapeOptions`): honoured, harmless to ignore,
//! or refused by name — never silently dropped.
//!
//! - Honoured: `maxAge` (`0`: the page is read afresh and replaces the cached one; more: the page
//!   cache, which keeps pages `FETCH_CACHE_TTL_SECONDS`, answers).
//! - Harmless, and what firecrawl-py sends by default: `onlyMainContent: true` (the gateway keeps
//!   the main content; `rawHtml` is the whole page), `removeBase64Images`, `blockAds`, `fastMode`,
//!   `storeInCache`, `parsers`, `origin`, `integration`, and the defaults of the options below
//!   (`mobile: false`, `waitFor: 0`, empty `actions`, `headers`, `includeTags`, `excludeTags`,
//!   `skipTlsVerification: false`, `zeroDataRetention: false`, `proxy` `basic` or `auto`).
//! - Refused: `onlyMainContent: false`, `mobile: true`, `actions` (no browser actions here),
//!   `waitFor` where the caller does not take it (a single scrape does, with the local browser), `headers` (the gateway sends its own), `includeTags`/`excludeTags` (no selectors),
//!   `skipTlsVerification: true`, `zeroDataRetention: true` (the gateway caches pages it reads),
//!   `proxy` `stealth` or `enhanced`, `location`, `jsonOptions`, `changeTrackingOptions`, and any
//!   field Firecrawl's API does not have.

use serde_json::{Map, Value};

use super::{unsupported, FirecrawlError};
use gateway_engine::read::Freshness;

/// Options whose every value is harmless to ignore.
const HARMLESS: [&str; 7] = [
    "removeBase64Images",
    "blockAds",
    "fastMode",
    "storeInCache",
    "parsers",
    "origin",
    "integration",
];

/// Reads the page options of `fields`, those in `taken` left to the caller: how fresh the page
/// must be, or the first option that cannot be honoured.
pub(super) fn check(
    fields: &Map<String, Value>,
    taken: &[&str],
) -> Result<Freshness, FirecrawlError> {
    let mut freshness = Freshness::Cached;
    for (name, value) in fields {
        let name = name.as_str();
        if taken.contains(&name) || HARMLESS.contains(&name) || value.is_null() {
            continue;
        }
        let honoured = match name {
            "maxAge" => match value.as_u64() {
                Some(0) => {
                    freshness = Freshness::Fresh;
                    true
                }
                Some(_) => true,
                None => false,
            },
            "onlyMainContent" => value == &Value::Bool(true),
            "mobile" | "skipTlsVerification" | "zeroDataRetention" => value == &Value::Bool(false),
            "waitFor" => value.as_u64() == Some(0),
            "actions" | "includeTags" | "excludeTags" => {
                value.as_array().is_some_and(Vec::is_empty)
            }
            "headers" => value.as_object().is_some_and(Map::is_empty),
            "proxy" => matches!(value.as_str(), Some("basic" | "auto")),
            _ => false,
        };
        if !honoured {
            return Err(unsupported(refusal(name, value)));
        }
    }
    Ok(freshness)
}

/// Why `name` with `value` is refused, in words that say what to do instead.
fn refusal(name: &str, value: &Value) -> String {
    let why = match name {
        "onlyMainContent" => {
            "the gateway keeps the main content; ask for rawHtml for the whole page"
        }
        "waitFor" => "honoured by a single scrape, with the local browser",
        "actions" | "mobile" => "no browser actions here",
        "headers" => "the gateway sends its own request headers",
        "includeTags" | "excludeTags" => "the gateway applies no selectors",
        "skipTlsVerification" => "the gateway verifies every certificate",
        "zeroDataRetention" => "the gateway caches the pages it reads",
        "maxAge" => "maxAge is milliseconds, 0 or more",
        "proxy" => "the gateway reads pages directly (basic and auto only)",
        _ => "not an option this gateway honours",
    };
    let shown = match value {
        Value::Bool(_) | Value::Number(_) | Value::String(_) => format!("{name}: {value}"),
        _ => name.to_owned(),
    };
    format!("{shown} is not supported by this gateway ({why})")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::kit::refusal::Refusal;
    use serde_json::json;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn what_firecrawl_py_sends_by_default_is_taken() {
        let sent = fields(json!({"url": "https://a.example/", "formats": ["markdown"],
            "onlyMainContent": true, "mobile": false, "removeBase64Images": true, "fastMode": false,
            "blockAds": true, "maxAge": 14_400_000, "storeInCache": true, "waitFor": 0,
            "actions": [], "headers": {}, "proxy": "auto", "origin": "python-sdk@4.55.0",
            "location": null}));
        assert_eq!(
            check(&sent, &["url", "formats"]).unwrap(),
            Freshness::Cached
        );
        let fresh = fields(json!({"maxAge": 0}));
        assert_eq!(check(&fresh, &[]).unwrap(), Freshness::Fresh);
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (body, named) in [
            (json!({"onlyMainContent": false}), "onlyMainContent: false"),
            (json!({"waitFor": 2000}), "waitFor: 2000"),
            (
                json!({"actions": [{"type": "click", "selector": "#more"}]}),
                "actions",
            ),
            (json!({"mobile": true}), "mobile: true"),
            (json!({"headers": {"Cookie": "a=b"}}), "headers"),
            (json!({"includeTags": ["article"]}), "includeTags"),
            (json!({"location": {"country": "DE"}}), "location"),
            (json!({"proxy": "stealth"}), "proxy: \"stealth\""),
            (json!({"jsonOptions": {"prompt": "x"}}), "jsonOptions"),
            (json!({"somethingNew": 1}), "somethingNew"),
        ] {
            match check(&fields(body.clone()), &[]) {
                Err(Refusal::Own(own)) => {
                    let message = own.to_string();
                    assert!(message.contains(named), "{body}: {message}");
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }
}
