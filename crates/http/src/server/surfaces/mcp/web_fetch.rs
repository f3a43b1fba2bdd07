//! The `web_fetch` tool: one page read with the gateway's decisions (the cache, the host's
//! breaker, the premium readers), its arguments and structured output as typed schemas, and a
//! long page handed out a window at a time — `max_length` characters from `start_index`, with
//! `next_start_index` saying where the next window starts while there is more.
//!
//! With `query`, the call returns instead the page's passages that best answer it, in page order,
//! each under its heading path, within `max_tokens` tokens (default [`DEFAULT_QUERY_TOKENS`]);
//! with `max_tokens` alone, the page's text cut to that many tokens at a passage boundary. Tokens
//! are counted by the gateway's tokenizer (`TOKENIZER_ENCODING`) over the whole text the tool
//! returns, title included, and never exceed `max_tokens`. The passages are chosen by
//! [`gateway_engine::read::passages`] from the page as read or cached.
//!
//! `render` says whether the gateway's local browser renders the page: `auto` (when the direct
//! read is a script shell or has too little text), `always` (first; refused when no browser
//! runs), `never`.
//!
//! Arguments are read one field at a time, as `web_search`'s: a value of the wrong type is a tool
//! error naming the field. A page that could not be read is a tool error saying why, with the
//! failure's code (`read_call::unread_reason`).

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use super::web_search::tool_error;
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use crate::server::kit::read_call;
use gateway_core::request::ReadFormat;
use gateway_engine::read::passages::{
    Chosen, Merge, PassageOrder, PassageSelector, Ranked, Selection, TokenBudget,
};
use gateway_engine::read::Render;
use gateway_upstreams::reader::{Document, ReadFailure};

/// The tool's name.
pub(crate) const NAME: &str = "web_fetch";

/// `max_length` when the call has none, in characters.
const DEFAULT_MAX_LENGTH: u32 = 20_000;
/// The longest window one call returns.
const MAX_LENGTH: u32 = 1_000_000;

/// `max_tokens` when a query comes without it.
const DEFAULT_QUERY_TOKENS: u32 = 2_000;
/// What `max_tokens` may be.
const MAX_TOKENS: std::ops::RangeInclusive<u32> = 50..=100_000;
const MAX_TOKENS_EXPECTED: &str = "an integer from 50 to 100000";
/// The longest passage the MCP tools choose, in characters: Tavily's chunk, a paragraph — small
/// enough that a budget of a few hundred tokens holds several, and the passages chosen side by
/// side merge, so a longer answer still comes whole.
pub(crate) const PASSAGE_CHARS: usize = 500;

const DESCRIPTION: &str = "Read a web page through the gateway: its main text (the article, \
     without navigation or ads) as Markdown or plain text, with its title. Blocked pages are read \
     through premium readers when the gateway has them. When you read the page to answer a \
     question, pass query: you get only the passages of the page that best answer it (in page \
     order, each under its section headings), within max_tokens tokens (default 2000) — far \
     less context than the whole page, and the answer even when it is deep in a long page. \
     max_tokens alone cuts the page's text to that many tokens at a passage boundary. Without \
     either, long pages come a window of characters at a time: call again with start_index = \
     next_start_index for the rest.";

/// `web_fetch`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
pub(crate) struct WebFetchArgs {
    /// The page's URL (http or https).
    url: String,
    /// markdown (default) or text.
    format: Option<FormatArg>,
    /// The most characters to return (default 20000).
    #[schemars(range(min = 1, max = 1_000_000))]
    max_length: Option<u32>,
    /// The character to start at (default 0): the previous call's next_start_index.
    start_index: Option<u64>,
    /// A question or topic: return only the page's passages that best answer it, in page order,
    /// within max_tokens.
    query: Option<String>,
    /// The most tokens to return, 50 to 100000 (default 2000 with a query): with a query, the
    /// budget of the passages; alone, the page's text cut at a passage boundary.
    #[schemars(range(min = 50, max = 100_000))]
    max_tokens: Option<u32>,
    /// Whether the gateway's local browser renders the page: auto (default: when the page's
    /// text arrives by script), always (rendered first; an error when the gateway has no
    /// browser), or never.
    render: Option<RenderArg>,
}

/// `render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum RenderArg {
    Auto,
    Always,
    Never,
}

/// The text's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum FormatArg {
    Markdown,
    Text,
}

/// A call, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fetch {
    pub(crate) url: Url,
    pub(crate) format: ReadFormat,
    pub(crate) max_length: usize,
    pub(crate) start_index: usize,
    /// `query` or `max_tokens`: a part of the page within a token budget, instead of a window.
    pub(crate) focus: Option<Focus>,
    /// `render`.
    pub(crate) render: Render,
}

/// A part of the page within a token budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Focus {
    /// The passages that best answer `query`.
    Query { query: String, budget: TokenBudget },
    /// The text cut at a passage boundary.
    Cut(TokenBudget),
}

impl Focus {
    fn budget(&self) -> TokenBudget {
        match self {
            Self::Query { budget, .. } | Self::Cut(budget) => *budget,
        }
    }
}

/// Why a call did not become a read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// An argument of the wrong type or out of range.
    #[error("invalid arguments: {0}")]
    Argument(#[from] InvalidField),
    /// `url` is missing or not an http(s) URL.
    #[error("invalid arguments: url must be an http or https URL")]
    Url,
    /// A window's argument beside `query` or `max_tokens`.
    #[error("invalid arguments: {0} windows the whole text by characters; it does not go with query or max_tokens")]
    Windowed(&'static str),
    /// An argument the tool does not take.
    #[error("invalid arguments: {0} is not an argument of web_fetch (url, format, max_length, start_index, query, max_tokens, render)")]
    Unknown(String),
    /// `render: always` where no local browser runs.
    #[error("invalid arguments: render: always needs the gateway's local browser, which is off here (BROWSER)")]
    NoBrowser,
}

impl Refusal {
    /// The stable code of the log line.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Argument(_) => "invalid_argument",
            Self::Url => "invalid_url",
            Self::Windowed(_) => "invalid_argument",
            Self::Unknown(_) => "unknown_argument",
            Self::NoBrowser => "no_browser",
        }
    }
}

/// `web_fetch`'s structured output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct WebFetchOutput {
    /// The page's title, when it has one.
    title: Option<String>,
    /// The URL asked for.
    url: String,
    /// Where it was read from, after redirects.
    final_url: String,
    /// This window of the page's text.
    content: String,
    /// The page's text length, in characters.
    total_length: usize,
    /// Where the next window starts, while there is more.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_start_index: Option<usize>,
    /// When the page says it was published.
    #[serde(skip_serializing_if = "Option::is_none")]
    published: Option<String>,
    /// Who the page says wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<String>,
    /// The site the page says it is part of.
    #[serde(skip_serializing_if = "Option::is_none")]
    site_name: Option<String>,
    /// With `query`: the passages returned, in page order.
    #[serde(skip_serializing_if = "Option::is_none")]
    passages: Option<Vec<PagePassage>>,
    /// With `query` or `max_tokens`: the tokens of the text returned (title included).
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<usize>,
    /// Whether the text opens with the title (not when the title alone is over the budget).
    #[serde(skip)]
    #[schemars(skip)]
    title_in_text: bool,
}

/// One passage of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct PagePassage {
    /// The headings it sits under, outermost first.
    heading_path: Vec<String>,
    /// Its text as the page has it.
    text: String,
}

/// The tool as `tools/list` shows it.
pub(crate) fn tool() -> Tool {
    super::read_only_tool(NAME, "Web fetch", DESCRIPTION)
        .with_input_schema::<WebFetchArgs>()
        .with_output_schema::<WebFetchOutput>()
}

/// The call's arguments as the read they ask for.
pub(crate) fn decode(arguments: &JsonObject) -> Result<Fetch, Refusal> {
    const ARGUMENTS: [&str; 7] = [
        "url",
        "format",
        "max_length",
        "start_index",
        "query",
        "max_tokens",
        "render",
    ];
    if let Some(named) = json_fields::unhonoured(arguments, &ARGUMENTS, &[], |_, _| false) {
        return Err(Refusal::Unknown(named));
    }
    let raw: String = field(arguments, "url", "an http or https URL")?.unwrap_or_default();
    let url = Url::parse(raw.trim()).map_err(|_| Refusal::Url)?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Refusal::Url);
    }
    let format = match field::<FormatArg>(arguments, "format", "markdown or text")? {
        None | Some(FormatArg::Markdown) => ReadFormat::Markdown,
        Some(FormatArg::Text) => ReadFormat::Text,
    };
    let max_length = number_in(
        arguments,
        "max_length",
        1..=MAX_LENGTH,
        "an integer from 1 to 1000000",
    )?
    .unwrap_or(DEFAULT_MAX_LENGTH);
    let start_index: u64 = field(arguments, "start_index", "a non-negative integer")?.unwrap_or(0);
    let query = field::<String>(arguments, "query", "a string")?
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty());
    let max_tokens = number_in(arguments, "max_tokens", MAX_TOKENS, MAX_TOKENS_EXPECTED)?;
    let focus = match (query, max_tokens) {
        (None, None) => None,
        (Some(query), tokens) => Some(Focus::Query {
            query,
            budget: TokenBudget::new(tokens.unwrap_or(DEFAULT_QUERY_TOKENS) as usize),
        }),
        (None, Some(tokens)) => Some(Focus::Cut(TokenBudget::new(tokens as usize))),
    };
    if focus.is_some() {
        for window in ["max_length", "start_index"] {
            if arguments.contains_key(window) {
                return Err(Refusal::Windowed(window));
            }
        }
    }
    let render = match field::<RenderArg>(arguments, "render", "auto, always or never")? {
        None | Some(RenderArg::Auto) => Render::Auto,
        Some(RenderArg::Always) => Render::Always,
        Some(RenderArg::Never) => Render::Never,
    };
    Ok(Fetch {
        url,
        format,
        max_length: max_length as usize,
        start_index: usize::try_from(start_index).unwrap_or(usize::MAX),
        focus,
        render,
    })
}

/// The heading of the tool's text: the page's title, when it has one.
fn title_line(title: Option<&str>) -> String {
    title.map_or_else(String::new, |title| format!("# {title}\n\n"))
}

/// Passages in page order as the tool's text shows them: each under its heading path, those not
/// adjacent on the page parted by an ellipsis.
fn passages_text(chosen: &[Chosen]) -> String {
    let mut text = String::new();
    for (i, passage) in chosen.iter().enumerate() {
        if i > 0 {
            text.push_str("\n\n[…]\n\n");
        }
        if !passage.heading_path.is_empty() {
            text.push_str(&format!("[{}]\n", passage.heading_path.join(" > ")));
        }
        text.push_str(&passage.text);
    }
    text
}

impl WebFetchOutput {
    /// The window of `document` the call asked for.
    pub(crate) fn new(fetch: &Fetch, document: &Document) -> Self {
        let total_length = document.content.chars().count();
        let start = byte_at(&document.content, fetch.start_index);
        let end = byte_at(
            &document.content,
            fetch.start_index.saturating_add(fetch.max_length),
        );
        let next = fetch.start_index.saturating_add(fetch.max_length);
        Self {
            title: document.title.clone(),
            url: fetch.url.to_string(),
            final_url: document.final_url.clone(),
            content: document.content[start..end].to_owned(),
            total_length,
            next_start_index: (next < total_length).then_some(next),
            published: document.published.clone(),
            author: document.author.clone(),
            site_name: document.site_name.clone(),
            passages: None,
            tokens: None,
            title_in_text: true,
        }
    }

    /// The part of `document` `focus` asks for, its tokens (title included) counted by
    /// `selector`: the best passages for a query — chosen from `ranked` when the caller ranked
    /// them (the reranker's order, [`gateway_engine::Engine::rank_passages`]), else ranked here
    /// lexically —, or the text cut at a passage boundary. CPU work for a long page: a caller
    /// runs it on the blocking pool.
    pub(crate) fn focused(
        fetch: &Fetch,
        focus: &Focus,
        document: &Document,
        selector: PassageSelector,
        ranked: Option<&Ranked>,
    ) -> Self {
        let counter = selector.counter();
        let budget = focus.budget();
        let mut title = title_line(document.title.as_deref());
        let title_in_text = counter.count(&title) <= budget.tokens();
        if !title_in_text {
            title.clear();
        }
        let (content, passages) = match focus {
            Focus::Query { query, .. } => {
                let choose = |budget| {
                    let selection = Selection {
                        max_chars: PASSAGE_CHARS,
                        max_passages: None,
                        budget: Some(budget),
                        order: PassageOrder::Page,
                        relevant_only: false,
                        merge: Merge::Adjacent,
                    };
                    match ranked {
                        Some(ranked) => ranked.choose(&selection),
                        None => selector.select(document, query, &selection),
                    }
                };
                let (chosen, content) = counter
                    .pack(
                        budget,
                        choose,
                        |c| c.score,
                        |c| title.clone() + &passages_text(c),
                    )
                    .map(|(chosen, text)| (chosen, text[title.len()..].to_owned()))
                    .unwrap_or_default();
                let passages = chosen
                    .into_iter()
                    .map(|c| PagePassage {
                        heading_path: c.heading_path.to_vec(),
                        text: c.text,
                    })
                    .collect();
                (content, Some(passages))
            }
            Focus::Cut(_)
                if counter.count(&(title.clone() + &document.content)) <= budget.tokens() =>
            {
                (document.content.clone(), None)
            }
            Focus::Cut(_) => {
                let left = budget.tokens().saturating_sub(counter.count(&title));
                let cut = selector
                    .leading(document, PASSAGE_CHARS, TokenBudget::new(left))
                    .map(|c| c.text)
                    .unwrap_or_default();
                // A join can change how the tokenizer cuts: the cut's own count decides.
                let content = if counter.count(&(title.clone() + &cut)) <= budget.tokens() {
                    cut
                } else {
                    String::new()
                };
                (content, None)
            }
        };
        let tokens = counter.count(&(title + &content));
        Self {
            title: document.title.clone(),
            url: fetch.url.to_string(),
            final_url: document.final_url.clone(),
            content,
            total_length: document.content.chars().count(),
            next_start_index: None,
            published: document.published.clone(),
            author: document.author.clone(),
            site_name: document.site_name.clone(),
            passages,
            tokens: Some(tokens),
            title_in_text,
        }
    }

    /// The tool's result: the text (with its title and where it goes on) as content, the window
    /// as structured content.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut text = if self.title_in_text {
            title_line(self.title.as_deref())
        } else {
            String::new()
        };
        text.push_str(&self.content);
        if let Some(next) = self.next_start_index {
            text.push_str(&format!(
                "\n\n[{} of {} characters shown; call web_fetch again with start_index={next} for more]",
                next.min(self.total_length),
                self.total_length
            ));
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(&self).ok();
        result
    }
}

/// The byte offset of character `chars` of `text` (its end when it is shorter).
fn byte_at(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(at, _)| at)
}

/// The tool error of a page that could not be read: a sentence ending with the failure's code.
pub(crate) fn unread(failure: ReadFailure) -> CallToolResult {
    tool_error(format!(
        "web_fetch failed: {}",
        read_call::unread_reason(failure)
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: serde_json::Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn document(content: &str) -> Document {
        Document {
            url: "https://a.example/".into(),
            final_url: "https://a.example/final".into(),
            title: Some("A page".into()),
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
        }
    }

    #[test]
    fn arguments_are_read_and_checked_by_name() {
        let fetch = decode(&args(json!({"url": "https://a.example/x", "format": "text", "max_length": 5, "start_index": 3}))).unwrap();
        assert_eq!(fetch.format, ReadFormat::Text);
        assert_eq!((fetch.max_length, fetch.start_index), (5, 3));
        let defaults = decode(&args(json!({"url": "http://a.example/"}))).unwrap();
        assert_eq!((defaults.max_length, defaults.start_index), (20_000, 0));
        assert_eq!(decode(&args(json!({}))).unwrap_err(), Refusal::Url);
        assert_eq!(
            decode(&args(json!({"url": "https://a.example/", "question": "q"}))).unwrap_err(),
            Refusal::Unknown("question: \"q\"".into())
        );
        assert_eq!(
            decode(&args(json!({"url": "file:///etc/passwd"}))).unwrap_err(),
            Refusal::Url
        );
        assert!(matches!(
            decode(&args(json!({"url": "https://a.example/", "max_length": 0}))),
            Err(Refusal::Argument(_))
        ));
        assert!(matches!(
            decode(&args(
                json!({"url": "https://a.example/", "format": "html"})
            )),
            Err(Refusal::Argument(_))
        ));
    }

    #[test]
    fn a_long_page_comes_a_window_at_a_time_on_character_boundaries() {
        let doc = document("ééééé12345");
        let first = decode(&args(json!({"url": "https://a.example/", "max_length": 4}))).unwrap();
        let out = WebFetchOutput::new(&first, &doc);
        assert_eq!(
            (out.content.as_str(), out.next_start_index, out.total_length),
            ("éééé", Some(4), 10)
        );
        let last = decode(&args(
            json!({"url": "https://a.example/", "max_length": 100, "start_index": 8}),
        ))
        .unwrap();
        let out = WebFetchOutput::new(&last, &doc);
        assert_eq!((out.content.as_str(), out.next_start_index), ("45", None));
        let past = decode(&args(
            json!({"url": "https://a.example/", "start_index": 99}),
        ))
        .unwrap();
        assert_eq!(WebFetchOutput::new(&past, &doc).content, "");
        let result = WebFetchOutput::new(&first, &doc).into_result();
        assert!(result.structured_content.unwrap()["next_start_index"] == 4);
    }
    const SELECTOR: PassageSelector =
        PassageSelector::new(gateway_engine::settings::TokenizerEncoding::O200kBase);

    /// Twelve sections; the tenth holds the answer.
    fn long_page() -> String {
        let mut page = String::from("# Guide\n\n");
        for i in 0..12 {
            let fact = if i == 9 {
                "The mirror is 74 centimetres across."
            } else {
                "The doors open every day."
            };
            page.push_str(&format!(
                "## Part {i}\n\nThis part of the guide tells the long story of place {i}. {fact}\n\n"
            ));
        }
        page
    }

    #[test]
    fn with_a_query_the_best_passages_come_under_their_headings_within_max_tokens() {
        let doc = document(&long_page());
        let fetch = decode(&args(
            json!({"url": "https://a.example/", "query": "how wide is the mirror", "max_tokens": 60}),
        ))
        .unwrap();
        let out =
            WebFetchOutput::focused(&fetch, fetch.focus.as_ref().unwrap(), &doc, SELECTOR, None);
        assert!(out.content.contains("74 centimetres"), "{}", out.content);
        assert!(out.content.contains("[Guide > Part 9]"), "{}", out.content);
        let result = out.into_result();
        let text = result.content[0].as_text().unwrap().text.clone();
        let counter = SELECTOR.counter();
        assert!(counter.count(&text) <= 60, "{text}");
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["tokens"], counter.count(&text));
        assert_eq!(
            structured["passages"][0]["heading_path"],
            json!(["Guide", "Part 9"])
        );
    }

    #[test]
    fn max_tokens_alone_cuts_the_text_at_a_passage_boundary() {
        let page = long_page();
        let doc = document(&page);
        let fetch = decode(&args(
            json!({"url": "https://a.example/", "max_tokens": 80}),
        ))
        .unwrap();
        assert_eq!(fetch.focus, Some(Focus::Cut(TokenBudget::new(80))));
        let out =
            WebFetchOutput::focused(&fetch, fetch.focus.as_ref().unwrap(), &doc, SELECTOR, None);
        assert!(
            out.content.starts_with("# Guide\n## Part 0"),
            "{}",
            out.content
        );
        assert!(
            out.content.ends_with("The doors open every day."),
            "{}",
            out.content
        );
        assert!(out.passages.is_none());
        let text = out.into_result().content[0].as_text().unwrap().text.clone();
        assert!(SELECTOR.counter().count(&text) <= 80, "{text}");
        let whole = decode(&args(
            json!({"url": "https://a.example/", "max_tokens": 100_000}),
        ))
        .unwrap();
        let out =
            WebFetchOutput::focused(&whole, whole.focus.as_ref().unwrap(), &doc, SELECTOR, None);
        assert_eq!(out.content, page, "a page within the budget comes whole");
    }

    #[test]
    fn a_bad_max_tokens_or_a_window_beside_a_query_is_refused_naming_it() {
        for value in [json!(49), json!(100_001), json!("500"), json!(1.5)] {
            let refused = decode(&args(
                json!({"url": "https://a.example/", "max_tokens": value}),
            ));
            match refused {
                Err(Refusal::Argument(InvalidField { name, .. })) => assert_eq!(name, "max_tokens"),
                other => panic!("{value}: {other:?}"),
            }
        }
        let refused = decode(&args(
            json!({"url": "https://a.example/", "query": "q", "start_index": 5}),
        ));
        assert_eq!(refused.unwrap_err(), Refusal::Windowed("start_index"));
        assert!(Refusal::Windowed("max_length")
            .to_string()
            .contains("max_length"));
    }

    #[test]
    fn a_page_that_could_not_be_read_is_a_tool_error_saying_why_with_its_code() {
        let result = unread(ReadFailure::Upstream(
            gateway_core::upstream::ErrorClass::TooLarge,
        ));
        assert_eq!(result.is_error, Some(true));
        let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
        assert_eq!(
            text,
            "web_fetch failed: the answer is larger than the gateway reads (too_large)"
        );
    }
}
