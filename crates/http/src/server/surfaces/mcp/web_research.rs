//! The `web_research` tool (#41): one call for an agent that wants context, not pages — a search
//! (as `web_search` runs it), its top results read at once within the request's budget (as every
//! read: the cache, the address fence, the host's breaker, the premium readers), and the passages
//! of all of them that best answer the query, scored as one corpus
//! ([`PassageSelector::select_across`]), best first, each with its page's URL and title, within
//! `max_tokens` tokens. The budget holds for the whole text the tool returns (URLs, titles and
//! the list of pages not read included), counted by the gateway's tokenizer, and is never
//! exceeded. A page that could not be read is listed with why and never fails the tool.
//!
//! Arguments are read one field at a time, as `web_search`'s; an argument the tool does not take
//! is refused by name.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::web_fetch::PASSAGE_CHARS;
use super::web_search::tool_error;
use crate::server::kit::document::FailedUpstream;
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use gateway_core::request::{RequestError, SearchInput, SearchRequest};
use gateway_engine::read::passages::{
    Merge, PassageOrder, PassageSelector, Ranked, Selection, TokenBudget,
};
use gateway_upstreams::reader::Document;

/// The tool's name.
pub(crate) const NAME: &str = "web_research";

/// Results read when the call does not say.
const DEFAULT_MAX_RESULTS: u32 = 5;
/// The most results one call reads.
const MAX_RESULTS: u32 = 10;
/// `max_tokens` when the call does not say.
const DEFAULT_MAX_TOKENS: u32 = 4_000;
/// What `max_tokens` may be.
const MAX_TOKENS: std::ops::RangeInclusive<u32> = 200..=20_000;

const DESCRIPTION: &str = "Research a question on the web in one call: searches (as web_search), \
     reads the top max_results pages (default 5) and returns only the passages of those pages \
     that best answer the query, best first, each with its page's URL and title and its section \
     headings — within max_tokens tokens in all (default 4000, at most 20000), so the answer \
     fits your context. Use it instead of web_search followed by web_fetch when you want facts \
     to answer a question; pages that could not be read are listed with the reason.";

/// `web_research`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
pub(crate) struct WebResearchArgs {
    /// The question or topic to research.
    query: String,
    /// How many of the top results to read, 1 to 10 (default 5).
    #[schemars(range(min = 1, max = 10))]
    max_results: Option<u32>,
    /// The most tokens the answer holds in all, 200 to 20000 (default 4000).
    #[schemars(range(min = 200, max = 20_000))]
    max_tokens: Option<u32>,
}

/// A call, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Research {
    /// The search, validated as every search is.
    pub(crate) request: SearchRequest,
    /// How many of its results to read.
    pub(crate) max_results: usize,
    /// The answer's tokens, at most.
    pub(crate) budget: TokenBudget,
}

/// Why a call did not become a search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// An argument of the wrong type or out of range.
    #[error("invalid arguments: {0}")]
    Argument(#[from] InvalidField),
    /// The query failed the gateway's validation.
    #[error("invalid arguments: {}", .0.message_naming_query("query"))]
    Request(#[from] RequestError),
    /// An argument the tool does not take.
    #[error("invalid arguments: {0} is not an argument of web_research (query, max_results, max_tokens)")]
    Unknown(String),
}

impl Refusal {
    /// The stable code of the log line.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Argument(_) => "invalid_argument",
            Self::Request(err) => err.code(),
            Self::Unknown(_) => "unknown_argument",
        }
    }
}

/// The call's arguments as the research they ask for.
pub(crate) fn decode(arguments: &JsonObject, max_query_bytes: usize) -> Result<Research, Refusal> {
    const ARGUMENTS: [&str; 3] = ["query", "max_results", "max_tokens"];
    if let Some(named) = json_fields::unhonoured(arguments, &ARGUMENTS, &[], |_, _| false) {
        return Err(Refusal::Unknown(named));
    }
    let query: String = field(arguments, "query", "a string")?.unwrap_or_default();
    let max_results = number_in(
        arguments,
        "max_results",
        1..=MAX_RESULTS,
        "an integer from 1 to 10",
    )?
    .unwrap_or(DEFAULT_MAX_RESULTS);
    let max_tokens = number_in(
        arguments,
        "max_tokens",
        MAX_TOKENS,
        "an integer from 200 to 20000",
    )?
    .unwrap_or(DEFAULT_MAX_TOKENS);
    let input = SearchInput {
        query,
        ..SearchInput::default()
    };
    Ok(Research {
        request: SearchRequest::new(input, max_query_bytes)?,
        max_results: max_results as usize,
        budget: TokenBudget::new(max_tokens as usize),
    })
}

/// A page read for the research.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// The result's URL.
    pub(crate) url: String,
    /// The result's title (the page's own when the result has none).
    pub(crate) title: String,
    /// The page as read.
    pub(crate) document: Arc<Document>,
}

/// `web_research`'s structured output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct WebResearchOutput {
    /// The query as searched.
    query: String,
    /// The passages that best answer it, best first.
    passages: Vec<SourcedPassage>,
    /// The results that could not be read, and why.
    failed: Vec<Unread>,
    /// The tokens of the text returned.
    tokens: usize,
}

/// One passage of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct SourcedPassage {
    /// The page's URL.
    url: String,
    /// The page's title.
    title: String,
    /// The headings the passage sits under, outermost first.
    heading_path: Vec<String>,
    /// Its text as the page has it.
    text: String,
}

/// A result that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct Unread {
    /// The result's URL.
    pub(crate) url: String,
    /// Why, ending with the failure's stable code.
    pub(crate) reason: String,
}

/// The tool as `tools/list` shows it.
pub(crate) fn tool() -> Tool {
    super::read_only_tool(NAME, "Web research", DESCRIPTION)
        .with_input_schema::<WebResearchArgs>()
        .with_output_schema::<WebResearchOutput>()
}

/// The tool's text: the passages, each under its number, title, URL and heading path; then the
/// pages not read, when `failed` is listed.
fn render(passages: &[(SourcedPassage, f32)], failed: &[Unread]) -> String {
    let mut text = if passages.is_empty() {
        "No passages found.".to_owned()
    } else {
        format!("{} passages, best first:", passages.len())
    };
    for (i, (passage, _)) in passages.iter().enumerate() {
        text.push_str(&format!(
            "\n\n[{}] {}\n{}\n",
            i + 1,
            passage.title,
            passage.url
        ));
        if !passage.heading_path.is_empty() {
            text.push_str(&format!("[{}]\n", passage.heading_path.join(" > ")));
        }
        text.push_str(&passage.text);
    }
    if !failed.is_empty() {
        text.push_str("\n\nNot read:");
        for unread in failed {
            text.push_str(&format!("\n- {}: {}", unread.url, unread.reason));
        }
    }
    text
}

impl WebResearchOutput {
    /// The passages of `sources` that best answer `query` within `budget`, counted by
    /// `selector`, with the pages not read: chosen from `ranked` when the caller ranked the
    /// sources' documents (in their order, with the reranker when one is configured), else
    /// ranked here lexically. CPU work: a caller runs it on the blocking pool.
    pub(crate) fn new(
        query: String,
        sources: &[Source],
        failed: Vec<Unread>,
        budget: TokenBudget,
        selector: PassageSelector,
        ranked: Option<&Ranked>,
    ) -> (Self, String) {
        let documents: Vec<&Document> = sources.iter().map(|s| s.document.as_ref()).collect();
        let choose = |budget| -> Vec<(SourcedPassage, f32)> {
            let selection = Selection {
                max_chars: PASSAGE_CHARS,
                max_passages: None,
                budget: Some(budget),
                order: PassageOrder::Score,
                relevant_only: true,
                merge: Merge::Adjacent,
            };
            match ranked {
                Some(ranked) => ranked.choose_across(&selection),
                None => selector.select_across(&documents, &query, &selection),
            }
            .into_iter()
            .map(|(page, chosen)| {
                let source = &sources[page];
                (
                    SourcedPassage {
                        url: source.url.clone(),
                        title: source.title.clone(),
                        heading_path: chosen.heading_path.to_vec(),
                        text: chosen.text,
                    },
                    chosen.score,
                )
            })
            .collect()
        };
        let counter = selector.counter();
        // The passages give way to the list of pages not read; the list goes only when nothing
        // else is left and it alone is over the budget.
        let (kept, text) = counter
            .pack(budget, choose, |c| c.1, |c| render(c, &failed))
            .unwrap_or_else(|| (Vec::new(), render(&[], &[])));
        let output = Self {
            query,
            passages: kept.into_iter().map(|(p, _)| p).collect(),
            failed,
            tokens: counter.count(&text),
        };
        (output, text)
    }

    /// The tool's result: `text` as content, the passages as structured content.
    pub(crate) fn into_result(self, text: String) -> CallToolResult {
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(&self).ok();
        result
    }
}

/// The tool error for a search every upstream failed, naming each upstream and its error class.
pub(crate) fn all_failed(upstreams: &[FailedUpstream]) -> CallToolResult {
    let named: Vec<String> = upstreams
        .iter()
        .map(|u| format!("{}: {}", u.name, u.error_class.as_str()))
        .collect();
    tool_error(format!(
        "web_research failed: every search upstream failed ({})",
        named.join(", ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use gateway_core::request::ReadFormat;
    use gateway_engine::read::passages::TokenCounter;
    use gateway_engine::settings::TokenizerEncoding;

    fn args(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn source(n: usize, content: &str) -> Source {
        Source {
            url: format!("https://p{n}.example/"),
            title: format!("Page {n}"),
            document: Arc::new(Document {
                url: format!("https://p{n}.example/"),
                final_url: format!("https://p{n}.example/"),
                title: Some(format!("Page {n}")),
                content: content.into(),
                format: ReadFormat::Markdown,
                published: None,
                language: None,
                author: None,
                site_name: None,
                images: Vec::new(),
                links: Vec::new(),
                content_type: "text/html".into(),
                bytes_read: 10,
            }),
        }
    }

    const SELECTOR: PassageSelector = PassageSelector::new(TokenizerEncoding::O200kBase);

    #[test]
    fn arguments_are_read_with_defaults_and_refused_by_name() {
        let research = decode(&args(json!({"query": "rust async"})), 2048).unwrap();
        assert_eq!(research.request.query, "rust async");
        assert_eq!((research.max_results, research.budget.tokens()), (5, 4000));
        let research = decode(
            &args(json!({"query": "q", "max_results": 2, "max_tokens": 500})),
            2048,
        )
        .unwrap();
        assert_eq!((research.max_results, research.budget.tokens()), (2, 500));
        for (value, name) in [
            (json!({"query": "q", "max_results": 11}), "max_results"),
            (json!({"query": "q", "max_tokens": 199}), "max_tokens"),
            (json!({"query": "q", "max_tokens": 20_001}), "max_tokens"),
            (json!({"query": 3}), "query"),
        ] {
            match decode(&args(value.clone()), 2048) {
                Err(Refusal::Argument(InvalidField { name: got, .. })) => {
                    assert_eq!(got, name, "{value}")
                }
                other => panic!("{value}: {other:?}"),
            }
        }
        assert_eq!(
            decode(&args(json!({"query": "q", "urls": ["x"]})), 2048).unwrap_err(),
            Refusal::Unknown("urls".into())
        );
        assert!(matches!(
            decode(&args(json!({"query": "  "})), 2048),
            Err(Refusal::Request(_))
        ));
    }

    #[test]
    fn the_best_passages_of_every_page_come_with_their_url_within_the_budget() {
        let filler = "Nothing here speaks of the subject at all, only of the weather. ".repeat(8);
        let one = format!(
            "# Bridges\n\n{filler}\n\n## Span\n\nThe suspension bridge has a main span of 1,280 metres.\n\n{filler}"
        );
        let two = format!(
            "# Towers\n\n{filler}\n\n## Height\n\nThe bridge towers rise 227 metres above the water.\n\n{filler}"
        );
        let sources = [source(1, &one), source(2, &two)];
        let failed = vec![Unread {
            url: "https://p3.example/".into(),
            reason: "the site blocked the read (blocked: cloudflare)".into(),
        }];
        let budget = TokenBudget::new(400);
        let (output, text) = WebResearchOutput::new(
            "suspension bridge span height metres".into(),
            &sources,
            failed,
            budget,
            SELECTOR,
            None,
        );
        let counter = TokenCounter::new(TokenizerEncoding::O200kBase);
        assert!(counter.count(&text) <= 400, "{text}");
        assert_eq!(output.tokens, counter.count(&text));
        let urls: Vec<&str> = output.passages.iter().map(|p| p.url.as_str()).collect();
        assert!(urls.contains(&"https://p1.example/") && urls.contains(&"https://p2.example/"));
        assert!(
            text.contains("1,280 metres") && text.contains("227 metres"),
            "{text}"
        );
        assert!(text.contains("https://p3.example/: the site blocked the read"));
        let result = output.into_result(text).structured_content.unwrap();
        assert_eq!(result["failed"][0]["url"], "https://p3.example/");
        assert!(result["passages"][0]["heading_path"].is_array());
    }

    #[test]
    fn nothing_read_is_an_answer_listing_what_failed() {
        let failed = vec![Unread {
            url: "https://p1.example/".into(),
            reason: "timeout (timeout)".into(),
        }];
        let (output, text) = WebResearchOutput::new(
            "q".into(),
            &[],
            failed,
            TokenBudget::new(200),
            SELECTOR,
            None,
        );
        assert!(output.passages.is_empty());
        assert!(
            text.starts_with("No passages found.\n\nNot read:"),
            "{text}"
        );
    }

    #[test]
    fn the_tool_declares_its_arguments_and_output() {
        let tool = tool();
        let input = Value::Object((*tool.input_schema).clone());
        assert_eq!(input["required"], json!(["query"]));
        for name in ["query", "max_results", "max_tokens"] {
            assert!(input["properties"].get(name).is_some(), "{name}: {input}");
        }
        let output = Value::Object((*tool.output_schema.unwrap()).clone()).to_string();
        for name in [
            "passages",
            "failed",
            "url",
            "title",
            "heading_path",
            "reason",
        ] {
            assert!(output.contains(&format!("\"{name}\"")), "{name}: {output}");
        }
    }
}
