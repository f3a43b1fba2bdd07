//! A search request's parameters as SearXNG reads them (the form body merged with the query string) and the
//! UI language its `unresponsive_engines` messages are translated into.

use axum::http::{header, HeaderMap};

/// The UI language SearXNG translates `unresponsive_engines` messages into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UiLanguage {
    /// `locale=en`, or no preference.
    English,
    /// `locale=de` or a German browser.
    German,
}

impl UiLanguage {
    /// The `locale` preference wins; without it SearXNG follows the browser's `Accept-Language`.
    pub(super) fn of(params: &Params, headers: &HeaderMap) -> Self {
        let locale = params.get("locale").map(str::to_owned).or_else(|| {
            headers
                .get(header::ACCEPT_LANGUAGE)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        });
        match locale {
            Some(locale) if locale.trim_start().starts_with("de") => UiLanguage::German,
            _ => UiLanguage::English,
        }
    }
}

/// A search request's parameters as SearXNG sees them: it merges the query string into the form, keeping the
/// form's value where both have a key.
pub(super) struct Params {
    /// Every pair in SearXNG's order: the body's, then the query string's for keys the body lacks.
    pub(super) pairs: Vec<(String, String)>,
    /// The request carried [`super::PROBE_HEADER`]: a client's own probe of an engine, not a search.
    pub(super) probe: bool,
}

impl Params {
    pub(super) fn from_request(query_string: Option<&str>, body: &[u8]) -> Self {
        let mut pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(body).into_owned().collect();
        let body_keys: Vec<String> = pairs.iter().map(|(key, _)| key.clone()).collect();
        if let Some(query_string) = query_string {
            pairs.extend(
                url::form_urlencoded::parse(query_string.as_bytes())
                    .into_owned()
                    .filter(|(key, _)| !body_keys.contains(key)),
            );
        }
        Self {
            pairs,
            probe: false,
        }
    }

    /// The first value, as Flask's `request.form.get` gives.
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(candidate, _)| candidate == key)
            .map(|(_, value)| value.as_str())
    }

    /// Each key once with its first value, in order: SearXNG iterates a dict.
    pub(super) fn distinct(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs
            .iter()
            .enumerate()
            .filter_map(|(index, (key, value))| {
                let first = !self.pairs[..index]
                    .iter()
                    .any(|(earlier, _)| earlier == key);
                first.then_some((key.as_str(), value.as_str()))
            })
    }
}
