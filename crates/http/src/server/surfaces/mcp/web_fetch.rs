//! The `web_fetch` tool: one page read with the gateway's decisions (the cache, the host's
//! breaker, the premium readers), its arguments and structured output as typed schemas, and a
//! long page handed out a window at a time — `max_length` characters from `start_index`, with
//! `next_start_index` saying where the next window starts while there is more.
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
use gateway_upstreams::reader::{Document, ReadFailure};

/// The tool's name.
pub(crate) const NAME: &str = "web_fetch";

/// `max_length` when the call has none, in characters.
const DEFAULT_MAX_LENGTH: u32 = 20_000;
/// The longest window one call returns.
const MAX_LENGTH: u32 = 1_000_000;

const DESCRIPTION: &str = "Read a web page through the gateway: its main text (the article, \
     without navigation or ads) as Markdown or plain text, with its title. Blocked pages are read \
     through premium readers when the gateway has them. Long pages come a window at a time: call \
     again with start_index = next_start_index for the rest.";

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
    /// An argument the tool does not take.
    #[error("invalid arguments: {0} is not an argument of web_fetch (url, format, max_length, start_index)")]
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
}

/// The tool as `tools/list` shows it.
pub(crate) fn tool() -> Tool {
    super::read_only_tool(NAME, "Web fetch", DESCRIPTION)
        .with_input_schema::<WebFetchArgs>()
        .with_output_schema::<WebFetchOutput>()
}

/// The call's arguments as the read they ask for.
pub(crate) fn decode(arguments: &JsonObject) -> Result<Fetch, Refusal> {
    const ARGUMENTS: [&str; 4] = ["url", "format", "max_length", "start_index"];
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
    Ok(Fetch {
        url,
        format,
        max_length: max_length as usize,
        start_index: usize::try_from(start_index).unwrap_or(usize::MAX),
    })
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
        }
    }

    /// The tool's result: the text (with its title and where it goes on) as content, the window
    /// as structured content.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut text = String::new();
        if let Some(title) = &self.title {
            text.push_str(&format!("# {title}\n\n"));
        }
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
            decode(&args(json!({"url": "https://a.example/", "query": "q"}))).unwrap_err(),
            Refusal::Unknown("query: \"q\"".into())
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
