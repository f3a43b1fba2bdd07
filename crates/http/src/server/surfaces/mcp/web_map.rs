//! The `web_map` tool (#43): a site's URLs without reading them — its sitemaps (indexes and gzip
//! included, those `robots.txt` names) and its start page's links, the URLs `robots.txt`
//! disallows left out — as Firecrawl's `/map` finds them ([`gateway_engine::read::site_map`]),
//! within the request's budget. For an agent deciding what of a site to read.
//!
//! Arguments are read one field at a time, as the other tools'; an argument the tool does not
//! take is refused by name.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::JsonSchema;
use serde::Serialize;
use url::Url;

use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use gateway_engine::read::site_map::{MapRequest, SiteMap, SitemapMode};

/// The tool's name.
pub(crate) const NAME: &str = "web_map";

/// URLs returned when the call does not say.
const DEFAULT_LIMIT: u32 = 200;
/// The most URLs one call returns.
const MAX_LIMIT: u32 = 5_000;

const DESCRIPTION: &str = "List a website's pages without reading them: the URLs its sitemaps \
     and its start page link to (those robots.txt disallows left out), at most limit of them \
     (default 200, at most 5000); with search, the URLs containing its words come first. Use it \
     to find which pages of a site to read with web_fetch or web_crawl.";

/// `web_map`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
pub(crate) struct WebMapArgs {
    /// The site's start page (an http or https URL).
    url: String,
    /// Words URLs are ranked by (those containing them first).
    search: Option<String>,
    /// The most URLs returned, 1 to 5000 (default 200).
    #[schemars(range(min = 1, max = 5000))]
    limit: Option<u32>,
    /// Whether pages on the start page's subdomains count as the site's (default false).
    include_subdomains: Option<bool>,
}

/// Why a call did not become a map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// An argument of the wrong type or out of range.
    #[error("invalid arguments: {0}")]
    Argument(#[from] InvalidField),
    /// `url` is missing or not an http(s) URL.
    #[error("invalid arguments: url must be an http or https URL")]
    Url,
    /// An argument the tool does not take.
    #[error("invalid arguments: {0} is not an argument of web_map (url, search, limit, include_subdomains)")]
    Unknown(String),
}

impl Refusal {
    /// The stable code of the log line.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Argument(_) => "invalid_argument",
            Self::Url => "invalid_url",
            Self::Unknown(_) => "unknown_argument",
        }
    }
}

/// An http(s) URL with a host, from argument `url`.
pub(super) fn site_url(arguments: &JsonObject) -> Result<Option<Url>, InvalidField> {
    let raw: String = field(arguments, "url", "an http or https URL")?.unwrap_or_default();
    Ok(Url::parse(raw.trim())
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.host_str().is_some()))
}

/// The call's arguments as the map they ask for.
pub(crate) fn decode(arguments: &JsonObject) -> Result<MapRequest, Refusal> {
    const ARGUMENTS: [&str; 4] = ["url", "search", "limit", "include_subdomains"];
    if let Some(named) = json_fields::unhonoured(arguments, &ARGUMENTS, &[], |_, _| false) {
        return Err(Refusal::Unknown(named));
    }
    let url = site_url(arguments)?.ok_or(Refusal::Url)?;
    let search = field::<String>(arguments, "search", "a string")?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let limit = number_in(
        arguments,
        "limit",
        1..=MAX_LIMIT,
        "an integer from 1 to 5000",
    )?
    .unwrap_or(DEFAULT_LIMIT);
    let include_subdomains =
        field::<bool>(arguments, "include_subdomains", "true or false")?.unwrap_or(false);
    Ok(MapRequest {
        url,
        sitemap: SitemapMode::Include,
        include_subdomains,
        ignore_query: false,
        search,
        limit: limit as usize,
    })
}

/// `web_map`'s structured output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct WebMapOutput {
    /// The start page asked for.
    url: String,
    /// The site's URLs, matches of the search first, then in the order found.
    links: Vec<MappedLink>,
}

/// One URL of the site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct MappedLink {
    /// The URL.
    url: String,
    /// Its title, where the map read the page (the start page).
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
}

impl WebMapOutput {
    pub(crate) fn new(url: &Url, map: SiteMap) -> Self {
        Self {
            url: url.to_string(),
            links: map
                .links
                .into_iter()
                .map(|link| MappedLink {
                    url: link.url,
                    title: link.title,
                })
                .collect(),
        }
    }

    /// The tool's result: one URL a line as text, the links as structured content.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut text = format!("{} URLs of {}:", self.links.len(), self.url);
        for link in &self.links {
            text.push('\n');
            text.push_str(&link.url);
            if let Some(title) = &link.title {
                text.push_str(" — ");
                text.push_str(title);
            }
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(&self).ok();
        result
    }
}

/// The tool as `tools/list` shows it.
pub(crate) fn tool() -> Tool {
    super::read_only_tool(NAME, "Web map", DESCRIPTION)
        .with_input_schema::<WebMapArgs>()
        .with_output_schema::<WebMapOutput>()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: serde_json::Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_call_becomes_a_map_and_what_it_cannot_honour_is_refused_by_name() {
        let map = decode(&args(
            json!({"url": "https://docs.example/", "search": " install ", "limit": 10}),
        ))
        .unwrap();
        assert_eq!(map.url.as_str(), "https://docs.example/");
        assert_eq!(map.search.as_deref(), Some("install"));
        assert_eq!((map.limit, map.include_subdomains), (10, false));
        assert_eq!(
            decode(&args(json!({"url": "file:///etc/passwd"}))),
            Err(Refusal::Url)
        );
        assert_eq!(
            decode(&args(json!({"url": "https://a.example/", "depth": 2}))),
            Err(Refusal::Unknown("depth: 2".into()))
        );
        assert!(matches!(
            decode(&args(json!({"url": "https://a.example/", "limit": 0}))),
            Err(Refusal::Argument(_))
        ));
    }
}
