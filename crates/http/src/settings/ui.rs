//! The operator's page (`UI_ENABLED`, `UI_SHOW_QUERIES`): whether the gateway serves `/ui` at all,
//! and whether the page's list of recent searches keeps what was searched for.

use gateway_core::env::{ConfigError, Env};

/// Whether the recent searches keep their queries (`UI_SHOW_QUERIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queries {
    /// Each recent search keeps its query, for the page to show.
    Shown,
    /// Queries are never kept: the list says who searched and how it went, not for what.
    Hidden,
}

/// The page, when it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UiSettings {
    /// Whether recent searches keep their queries.
    pub queries: Queries,
}

impl UiSettings {
    /// The page's settings, or `None` when `UI_ENABLED=false` (no `/ui` route, nothing recorded
    /// for it).
    pub(super) fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        if !env.flag("UI_ENABLED")? {
            return Ok(None);
        }
        let queries = if env.flag("UI_SHOW_QUERIES")? {
            Queries::Shown
        } else {
            Queries::Hidden
        };
        Ok(Some(Self { queries }))
    }
}
