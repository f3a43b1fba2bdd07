//! The `web_crawl` tool (#43): read a site from a start page — the start page, the pages it
//! links to on its host and those its sitemaps list, as a crawl job of the engine ([`gateway_engine::crawl`]: `robots.txt`,
//! the address fence for every URL, per-host politeness, the caller's job alone) run within the
//! request's budget — and return, within `max_tokens` tokens, either the passages of all the
//! pages read that best answer `query` (as `web_research` chooses them across its pages), or,
//! without a query, the pages in the order read, the last one cut at the budget.
//!
//! Arguments are read one field at a time, as the other tools'; an argument the tool does not
//! take is refused by name.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::JsonSchema;
use serde::Serialize;
use url::Url;

use super::web_research::{Source, Unread};
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use gateway_core::request::ReadFormat;
use gateway_engine::crawl::scope::{patterns, CrawlScope};
use gateway_engine::crawl::{CrawlRequest, JobKind};
use gateway_engine::read::passages::{TokenBudget, TokenCounter};

/// The tool's name.
pub(crate) const NAME: &str = "web_crawl";

/// Pages read when the call does not say.
const DEFAULT_LIMIT: u32 = 10;
/// The most pages one call reads.
const MAX_LIMIT: u32 = 50;
/// Links away from the start page followed when the call does not say.
const DEFAULT_DEPTH: u32 = 2;
/// `max_tokens` when the call does not say.
const DEFAULT_MAX_TOKENS: u32 = 8_000;
/// What `max_tokens` may be.
const MAX_TOKENS: std::ops::RangeInclusive<u32> = 200..=50_000;

const DESCRIPTION: &str = "Read a website from a start page: the start page, the pages it \
     links to on the same host and those its sitemaps list (robots.txt honoured), at most limit pages (default 10, at most \
     50) up to max_depth links away (default 2, at most 5), paths filtered by include_paths / \
     exclude_paths (regular expressions). With query, returns only the passages of those pages \
     that best answer it, best first, each with its page's URL and title; without, the pages' \
     text in the order read. Within max_tokens tokens in all (default 8000, at most 50000).";

/// `web_crawl`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
pub(crate) struct WebCrawlArgs {
    /// The start page (an http or https URL).
    url: String,
    /// What to look for: with it, the passages that answer it; without, the pages.
    query: Option<String>,
    /// The most pages read, 1 to 50 (default 10).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
    /// Links away from the start page followed, 1 to 5 (default 2).
    #[schemars(range(min = 1, max = 5))]
    max_depth: Option<u32>,
    /// Regular expressions one of which a page's path must match.
    include_paths: Option<Vec<String>>,
    /// Regular expressions none of which a page's path may match.
    exclude_paths: Option<Vec<String>>,
    /// The most tokens the answer holds in all, 200 to 50000 (default 8000).
    #[schemars(range(min = 200, max = 50_000))]
    max_tokens: Option<u32>,
}

/// A call, read and checked.
#[derive(Debug)]
pub(crate) struct Crawl {
    /// The job to run (its owner set by the caller).
    pub(crate) request: CrawlRequest,
    /// With it, passages; without, pages.
    pub(crate) query: Option<String>,
    /// The answer's tokens, at most.
    pub(crate) budget: TokenBudget,
    /// The start page.
    pub(crate) url: Url,
}

/// Why a call did not become a crawl.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// An argument of the wrong type or out of range.
    #[error("invalid arguments: {0}")]
    Argument(#[from] InvalidField),
    /// `url` is missing or not an http(s) URL.
    #[error("invalid arguments: url must be an http or https URL")]
    Url,
    /// A path pattern the gateway does not take.
    #[error("invalid arguments: {0}")]
    Pattern(String),
    /// An argument the tool does not take.
    #[error("invalid arguments: {0} is not an argument of web_crawl (url, query, limit, max_depth, include_paths, exclude_paths, max_tokens)")]
    Unknown(String),
}

impl Refusal {
    /// The stable code of the log line.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Argument(_) | Self::Pattern(_) => "invalid_argument",
            Self::Url => "invalid_url",
            Self::Unknown(_) => "unknown_argument",
        }
    }
}

/// The call's arguments as the crawl they ask for.
pub(crate) fn decode(arguments: &JsonObject, max_pages: usize) -> Result<Crawl, Refusal> {
    const ARGUMENTS: [&str; 7] = [
        "url",
        "query",
        "limit",
        "max_depth",
        "include_paths",
        "exclude_paths",
        "max_tokens",
    ];
    if let Some(named) = json_fields::unhonoured(arguments, &ARGUMENTS, &[], |_, _| false) {
        return Err(Refusal::Unknown(named));
    }
    let url = super::web_map::site_url(arguments)?.ok_or(Refusal::Url)?;
    let query = field::<String>(arguments, "query", "a string")?
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty());
    let limit = number_in(arguments, "limit", 1..=MAX_LIMIT, "an integer from 1 to 50")?
        .unwrap_or(DEFAULT_LIMIT);
    let max_depth = number_in(arguments, "max_depth", 1..=5, "an integer from 1 to 5")?
        .unwrap_or(DEFAULT_DEPTH);
    let max_tokens = number_in(
        arguments,
        "max_tokens",
        MAX_TOKENS,
        "an integer from 200 to 50000",
    )?
    .unwrap_or(DEFAULT_MAX_TOKENS);
    let regexes = |name: &'static str| -> Result<_, Refusal> {
        let raw = field::<Vec<String>>(arguments, name, "a list of regular expressions")?
            .unwrap_or_default();
        patterns(&raw).map_err(|err| Refusal::Pattern(format!("{name}: {err}")))
    };
    let scope = CrawlScope {
        allow_external: false,
        allow_subdomains: false,
        include: regexes("include_paths")?,
        exclude: regexes("exclude_paths")?,
        on_full_url: false,
        max_depth: max_depth as usize,
        ignore_query: false,
        max_breadth: None,
        include_hosts: Vec::new(),
        exclude_hosts: Vec::new(),
    };
    Ok(Crawl {
        request: CrawlRequest {
            owner: String::new(),
            kind: JobKind::Crawl,
            urls: vec![url.clone()],
            scope,
            formats: vec![ReadFormat::Markdown],
            limit: (limit as usize).min(max_pages),
            delay: None,
            concurrency: None,
            sitemap: true,
            discover_only: false,
            links: false,
            markdown: true,
            webhook: None,
        },
        query,
        budget: TokenBudget::new(max_tokens as usize),
        url,
    })
}

/// `web_crawl`'s structured output without a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct WebCrawlOutput {
    /// The start page.
    url: String,
    /// The pages read, in the order read (the last one cut at the budget).
    pages: Vec<CrawledText>,
    /// The pages that could not be read, and why.
    failed: Vec<Unread>,
    /// The tokens of the text returned.
    tokens: usize,
}

/// One page read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct CrawledText {
    /// Its URL.
    url: String,
    /// Its title.
    title: String,
    /// Its text (Markdown), cut where the budget ends.
    content: String,
}

fn heading(i: usize, url: &str, title: &str) -> String {
    format!("\n\n[{}] {title}\n{url}\n", i + 1)
}

impl WebCrawlOutput {
    /// The pages of `sources` in order, within `budget` counted by `counter`: whole pages while
    /// they fit, then the start of the next one; the pages not read listed after. CPU work: a
    /// caller runs it on the blocking pool.
    pub(crate) fn new(
        url: &Url,
        sources: &[Source],
        failed: Vec<Unread>,
        budget: TokenBudget,
        counter: TokenCounter,
    ) -> (Self, String) {
        let opening = format!("Pages of {url}, in the order read:");
        let mut not_read = String::new();
        if !failed.is_empty() {
            not_read.push_str("\n\nNot read:");
            for unread in &failed {
                not_read.push_str(&format!("\n- {}: {}", unread.url, unread.reason));
            }
        }
        let mut left = budget
            .tokens()
            .saturating_sub(counter.count(&opening) + counter.count(&not_read));
        let failed = if left == 0 {
            // The list alone is over the budget: it goes.
            not_read.clear();
            left = budget.tokens().saturating_sub(counter.count(&opening));
            Vec::new()
        } else {
            failed
        };
        let mut pages = Vec::new();
        let mut text = opening;
        for (i, source) in sources.iter().enumerate() {
            let head = heading(i, &source.url, &source.title);
            let head_tokens = counter.count(&head);
            if head_tokens >= left {
                break;
            }
            let room = TokenBudget::new(left - head_tokens);
            let content = counter.prefix(&source.document.content, room).to_owned();
            let whole = content.len() == source.document.content.len();
            left -= head_tokens + counter.count(&content);
            text.push_str(&head);
            text.push_str(&content);
            pages.push(CrawledText {
                url: source.url.clone(),
                title: source.title.clone(),
                content,
            });
            if !whole {
                break;
            }
        }
        text.push_str(&not_read);
        // Joins can change how the tokenizer cuts: the whole text's own count decides.
        while counter.count(&text) > budget.tokens() && pages.pop().is_some() {
            text = format!("Pages of {url}, in the order read:");
            for (i, page) in pages.iter().enumerate() {
                text.push_str(&heading(i, &page.url, &page.title));
                text.push_str(&page.content);
            }
            text.push_str(&not_read);
        }
        let output = Self {
            url: url.to_string(),
            tokens: counter.count(&text),
            pages,
            failed,
        };
        (output, text)
    }

    /// The tool's result: `text` as content, the pages as structured content.
    pub(crate) fn into_result(self, text: String) -> CallToolResult {
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(&self).ok();
        result
    }
}

/// The tool as `tools/list` shows it.
pub(crate) fn tool() -> Tool {
    super::read_only_tool(NAME, "Web crawl", DESCRIPTION)
        .with_input_schema::<WebCrawlArgs>()
        .with_output_schema::<WebCrawlOutput>()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use gateway_engine::settings::TokenizerEncoding;
    use gateway_upstreams::reader::Document;

    fn args(value: serde_json::Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn source(i: usize, words: usize) -> Source {
        Source {
            url: format!("https://docs.example/{i}"),
            title: format!("Page {i}"),
            document: Arc::new(Document {
                url: format!("https://docs.example/{i}"),
                final_url: format!("https://docs.example/{i}"),
                title: Some(format!("Page {i}")),
                content: "river bank boat ".repeat(words).trim_end().to_owned(),
                format: ReadFormat::Markdown,
                published: None,
                language: None,
                author: None,
                site_name: None,
                images: Vec::new(),
                links: Vec::new(),
                content_type: "text/html".into(),
                bytes_read: 0,
            }),
        }
    }

    #[test]
    fn a_call_becomes_a_crawl_and_what_it_cannot_honour_is_refused_by_name() {
        let crawl = decode(
            &args(
                json!({"url": "https://docs.example/guide/", "limit": 40, "max_depth": 3,
                "include_paths": ["^/guide/"], "query": " install "}),
            ),
            20,
        )
        .unwrap();
        assert_eq!(crawl.request.limit, 20, "held to CRAWL_MAX_PAGES");
        assert_eq!(crawl.request.scope.max_depth, 3);
        assert_eq!(crawl.query.as_deref(), Some("install"));
        assert!(crawl
            .request
            .scope
            .matches(&Url::parse("https://docs.example/guide/a").unwrap()));
        assert!(!crawl
            .request
            .scope
            .matches(&Url::parse("https://docs.example/blog").unwrap()));
        assert!(matches!(
            decode(&args(json!({"url": "ftp://docs.example/"})), 20),
            Err(Refusal::Url)
        ));
        assert!(matches!(
            decode(&args(json!({"url": "https://a.example/", "webhook": "x"})), 20),
            Err(Refusal::Unknown(name)) if name.starts_with("webhook")
        ));
        assert!(matches!(
            decode(
                &args(json!({"url": "https://a.example/", "include_paths": ["("]})),
                20
            ),
            Err(Refusal::Pattern(_))
        ));
        assert!(matches!(
            decode(&args(json!({"url": "https://a.example/", "limit": 51})), 20),
            Err(Refusal::Argument(_))
        ));
    }

    #[test]
    fn pages_come_in_order_within_the_budget_the_last_one_cut() {
        let counter = TokenCounter::new(TokenizerEncoding::O200kBase);
        let sources: Vec<Source> = (1..=3).map(|i| source(i, 200)).collect();
        let url = Url::parse("https://docs.example/").unwrap();
        let failed = vec![Unread {
            url: "https://docs.example/broken".into(),
            reason: "the site answered 500 (upstream_error)".into(),
        }];
        let budget = TokenBudget::new(900);
        let (output, text) = WebCrawlOutput::new(&url, &sources, failed, budget, counter);
        assert!(counter.count(&text) <= 900, "{}", counter.count(&text));
        assert_eq!(output.tokens, counter.count(&text));
        assert_eq!(
            output.pages.len(),
            2,
            "a whole page, then the start of the next"
        );
        assert_eq!(output.pages[0].content, sources[0].document.content);
        assert!(output.pages[1].content.len() < sources[1].document.content.len());
        assert!(!output.pages[1].content.is_empty());
        assert!(text.contains("Not read:\n- https://docs.example/broken"));
        // A budget that holds everything returns every page whole.
        let (all, _) = WebCrawlOutput::new(
            &url,
            &sources,
            Vec::new(),
            TokenBudget::new(50_000),
            counter,
        );
        assert_eq!(all.pages.len(), 3);
    }
}
