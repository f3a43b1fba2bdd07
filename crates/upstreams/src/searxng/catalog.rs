//! What SearXNG's `GET /config` says about its engines: names, categories, enabled. The gateway
//! only ever sends SearXNG engine names this catalog reported (SearXNG silently drops unknown
//! names and, when none is known, searches every default engine).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use gateway_core::request::SearchRequest;

/// The category SearXNG searches when a request names neither engines nor categories.
pub(crate) const DEFAULT_CATEGORY: &str = "general";

/// A SearXNG engine's name, checked: 1–64 bytes of what SearXNG's settings use for names
/// (letters, digits, spaces, `_`, `-`, `.`). A name that fails the check is not passed on — to a
/// breaker, a metric label or `engines=` — so a garbled answer cannot grow either.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EngineName(Arc<str>);

/// The longest engine name taken.
const MAX_ENGINE_NAME: usize = 64;

impl EngineName {
    /// `name`, if it is one.
    pub fn checked(name: &str) -> Option<Self> {
        let fits = !name.is_empty()
            && name.len() <= MAX_ENGINE_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'_' | b'-' | b'.'));
        fits.then(|| Self(Arc::from(name)))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One engine of the instance.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EngineInfo {
    /// Engine name (`engines=` takes it).
    pub name: String,
    /// Its categories.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Whether it runs by default.
    #[serde(default = "enabled_default")]
    pub enabled: bool,
    /// Whether it takes part in `pageno > 1` (SearXNG skips it silently otherwise).
    #[serde(default = "enabled_default")]
    pub paging: bool,
    /// Whether it takes part in a search with a `time_range` (SearXNG skips it silently otherwise).
    #[serde(default = "enabled_default")]
    pub time_range_support: bool,
}

/// A field `/config` did not send: assumed on (SearXNG's `/config` sends all three).
fn enabled_default() -> bool {
    true
}

/// The instance's engines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineCatalog {
    engines: Vec<EngineInfo>,
}

impl EngineCatalog {
    /// Reads `/config`; `None` when it has no `engines` list.
    pub fn from_config(config: &Value) -> Option<Self> {
        let list = config.get("engines")?.as_array()?;
        let engines = list
            .iter()
            .filter_map(|e| serde_json::from_value::<EngineInfo>(e.clone()).ok())
            .collect();
        Some(Self { engines })
    }

    /// A catalog from a list of engines (tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn from_engines(engines: Vec<EngineInfo>) -> Self {
        Self { engines }
    }

    /// Whether `/config` reported this engine.
    pub fn knows(&self, name: &str) -> bool {
        self.engines.iter().any(|e| e.name == name)
    }

    /// `name` as an engine of this instance: one `/config` reported (a closed set), checked.
    pub fn engine(&self, name: &str) -> Option<EngineName> {
        self.knows(name)
            .then(|| EngineName::checked(name))
            .flatten()
    }

    /// Whether SearXNG would run `name` for `req` at all: it silently skips an engine without
    /// paging for `pageno > 1` and one without time-range support for a `time_range` (no result,
    /// no `unresponsive_engines` entry). A name `/config` did not report: no.
    pub fn runs_for(&self, name: &str, req: &SearchRequest) -> bool {
        self.engines.iter().any(|e| {
            e.name == name
                && (req.pageno <= 1 || e.paging)
                && (req.time_range.is_none() || e.time_range_support)
        })
    }

    /// Number of engines known.
    pub fn len(&self) -> usize {
        self.engines.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.engines.is_empty()
    }

    /// The engines SearXNG would search for `req`: the requested engines that exist, plus the
    /// enabled engines of the requested categories (SearXNG treats the two as a union); with
    /// neither, the enabled engines of the default category. Sorted, deduplicated.
    pub fn targets(&self, req: &SearchRequest) -> Vec<String> {
        let all: BTreeSet<String> = self.target_groups(req).into_iter().flatten().collect();
        all.into_iter().collect()
    }

    /// The same engines, grouped by what the client asked for: one group per category (the
    /// default category when none was named) and one for the explicitly requested engines. An
    /// exclusion must leave every non-empty group at least one engine.
    pub fn target_groups(&self, req: &SearchRequest) -> Vec<Vec<String>> {
        let mut groups = Vec::new();
        let requested: Vec<String> = req
            .engines
            .iter()
            .filter(|name| self.knows(name))
            .cloned()
            .collect();
        if !requested.is_empty() {
            groups.push(requested);
        }
        let categories: Vec<&str> = if req.categories.is_empty() && req.engines.is_empty() {
            vec![DEFAULT_CATEGORY]
        } else {
            req.categories.iter().map(String::as_str).collect()
        };
        for category in categories {
            let members: Vec<String> = self
                .engines
                .iter()
                .filter(|e| e.enabled && e.categories.iter().any(|c| c == category))
                .map(|e| e.name.clone())
                .collect();
            if !members.is_empty() {
                groups.push(members);
            }
        }
        groups
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> EngineCatalog {
        EngineCatalog::from_config(&json!({"engines": [
            {"name": "alpha", "categories": ["general"], "enabled": true},
            {"name": "beta", "categories": ["general", "news"], "enabled": true},
            {"name": "gamma", "categories": ["news"], "enabled": true},
            {"name": "delta", "categories": ["general"], "enabled": false},
            {"bogus": true}
        ], "categories": ["general", "news"]}))
        .unwrap()
    }

    #[test]
    fn default_request_targets_enabled_general_engines() {
        assert_eq!(
            catalog().targets(&SearchRequest::simple("q")),
            ["alpha", "beta"]
        );
    }

    #[test]
    fn categories_and_engines_are_a_union_of_known_names() {
        let req = SearchRequest {
            categories: vec!["news".into()],
            engines: vec!["delta".into(), "nope".into()],
            ..SearchRequest::simple("q")
        };
        assert_eq!(catalog().targets(&req), ["beta", "delta", "gamma"]);
    }

    #[test]
    fn groups_follow_the_requested_categories_and_engines() {
        let req = SearchRequest {
            categories: vec!["general".into(), "news".into()],
            engines: vec!["delta".into()],
            ..SearchRequest::simple("q")
        };
        assert_eq!(
            catalog().target_groups(&req),
            [vec!["delta"], vec!["alpha", "beta"], vec!["beta", "gamma"]]
        );
    }

    #[test]
    fn an_engine_without_paging_or_time_range_does_not_run_for_such_a_search() {
        let c = EngineCatalog::from_config(&json!({"engines": [
            {"name": "alpha", "categories": ["general"], "paging": true, "time_range_support": false},
            {"name": "beta", "categories": ["general"], "paging": false, "time_range_support": true}
        ]}))
        .unwrap();
        let page_two = SearchRequest {
            pageno: 2,
            ..SearchRequest::simple("q")
        };
        let this_week = SearchRequest {
            time_range: Some(gateway_core::request::TimeRange::Week),
            ..SearchRequest::simple("q")
        };
        assert!(c.runs_for("alpha", &page_two) && !c.runs_for("beta", &page_two));
        assert!(!c.runs_for("alpha", &this_week) && c.runs_for("beta", &this_week));
        assert!(c.runs_for("beta", &SearchRequest::simple("q")));
        assert!(!c.runs_for("nope", &SearchRequest::simple("q")));
    }

    #[test]
    fn only_names_from_config_are_known() {
        let c = catalog();
        assert!(c.knows("alpha") && !c.knows("nope"));
        assert_eq!(c.len(), 4);
    }
}
