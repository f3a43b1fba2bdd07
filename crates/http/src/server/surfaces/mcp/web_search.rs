//! The `web_search` tool: its arguments and structured output as typed schemas (what `tools/list`
//! shows), the gateway search the arguments ask for, and the two renderings of an answer — the
//! structured results, and a compact text for clients that read only text.
//!
//! Arguments are read one field at a time ([`crate::server::kit::json_fields`]), so a value of the wrong
//! type comes back as a tool error naming the field, which a model can correct; an argument the
//! tool does not take is refused the same way, by name (a model must not believe it was applied).

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server::kit::document::{FailedUpstream, Found, Hit};
use crate::server::kit::json_fields::{self, field, number_in, InvalidField};
use gateway_core::request::{RequestError, SafeSearch, SearchInput, SearchRequest, TimeRange};

/// The tool's name.
pub(crate) const NAME: &str = "web_search";

/// `max_results` when the call has none.
const DEFAULT_MAX_RESULTS: u32 = 10;
/// The most results one call returns.
const MAX_RESULTS: u32 = 50;
/// Longest snippet in the text rendering, in characters (the structured results keep it whole).
const TEXT_SNIPPET_CHARS: usize = 300;

const DESCRIPTION: &str = "Search the web through the gateway's SearXNG, with premium search APIs \
     as fallback when SearXNG fails or finds too little. Returns results (title, url, content, \
     the engines that found each, publishedDate when known) best first, and SearXNG's direct \
     answers when it has any.";

/// `web_search`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
pub(crate) struct WebSearchArgs {
    /// What to search for.
    query: String,
    /// How many results to return, 1 to 50 (default 10).
    #[schemars(range(min = 1, max = 50))]
    max_results: Option<u32>,
    /// SearXNG categories to search, e.g. ["general"] or ["news"] (default: SearXNG's own).
    categories: Option<Vec<String>>,
    /// Language code such as "en", "de-DE" or "all".
    language: Option<String>,
    /// Only results from the last day, week, month or year.
    time_range: Option<TimeRangeArg>,
    /// Safe search: 0 off, 1 moderate, 2 strict.
    #[schemars(range(min = 0, max = 2))]
    safesearch: Option<u8>,
    /// Result page, 1-based (default 1).
    #[schemars(range(min = 1, max = 1000))]
    pageno: Option<u32>,
}

/// How far back results may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TimeRangeArg {
    Day,
    Week,
    Month,
    Year,
}

impl From<TimeRangeArg> for TimeRange {
    fn from(range: TimeRangeArg) -> Self {
        match range {
            TimeRangeArg::Day => Self::Day,
            TimeRangeArg::Week => Self::Week,
            TimeRangeArg::Month => Self::Month,
            TimeRangeArg::Year => Self::Year,
        }
    }
}

/// `web_search`'s structured output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct WebSearchOutput {
    /// The query as searched.
    query: String,
    /// Results, best first.
    results: Vec<WebResult>,
    /// SearXNG's direct answers (a definition, a conversion, …), when it gave any.
    answers: Vec<String>,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct WebResult {
    /// Page title.
    title: String,
    /// Page URL.
    url: String,
    /// Snippet.
    content: String,
    /// The SearXNG engines and premium providers that found it.
    engines: Vec<String>,
    /// Publication date as the source gave it, when known.
    #[serde(rename = "publishedDate", skip_serializing_if = "Option::is_none")]
    published_date: Option<String>,
}

/// The tool as `tools/list` shows it.
pub(crate) fn tool() -> Tool {
    super::read_only_tool(NAME, "Web search", DESCRIPTION)
        .with_input_schema::<WebSearchArgs>()
        .with_output_schema::<WebSearchOutput>()
}

/// Why a call did not become a search: a tool error the caller reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// An argument of the wrong type or out of range.
    #[error("invalid arguments: {0}")]
    Argument(#[from] InvalidField),
    /// The query or a parameter failed the gateway's validation.
    #[error("invalid arguments: {}", .0.message_naming_query("query"))]
    Request(#[from] RequestError),
    /// An argument the tool does not take.
    #[error("invalid arguments: {0} is not an argument of web_search (query, max_results, categories, language, time_range, safesearch, pageno)")]
    Unknown(String),
}

impl WebSearchArgs {
    /// Reads the call's arguments.
    pub(crate) fn read(arguments: &JsonObject) -> Result<Self, Refusal> {
        const ARGUMENTS: [&str; 7] = [
            "query",
            "max_results",
            "categories",
            "language",
            "time_range",
            "safesearch",
            "pageno",
        ];
        if let Some(named) = json_fields::unhonoured(arguments, &ARGUMENTS, &[], |_, _| false) {
            return Err(Refusal::Unknown(named));
        }
        Ok(Self {
            query: field(arguments, "query", "a string")?.unwrap_or_default(),
            max_results: number_in(
                arguments,
                "max_results",
                1..=MAX_RESULTS,
                "an integer from 1 to 50",
            )?,
            categories: field(arguments, "categories", "a list of category names")?,
            language: field(arguments, "language", "a language code such as en")?,
            time_range: field(arguments, "time_range", "day, week, month or year")?,
            safesearch: field(arguments, "safesearch", "0, 1 or 2")?,
            pageno: field(arguments, "pageno", "an integer from 1 to 1000")?,
        })
    }

    /// The gateway search these arguments ask for, and how many results to return.
    pub(crate) fn into_search(self) -> Result<(SearchInput, usize), Refusal> {
        let safesearch = match self.safesearch {
            None => None,
            Some(level) => Some(SafeSearch::from_level(level.into()).ok_or(InvalidField {
                name: "safesearch",
                expected: "0, 1 or 2",
            })?),
        };
        let input = SearchInput {
            query: self.query,
            pageno: self.pageno,
            categories: self.categories.unwrap_or_default(),
            language: self.language,
            time_range: self.time_range.map(TimeRange::from),
            safesearch,
            ..SearchInput::default()
        };
        Ok((
            input,
            self.max_results.unwrap_or(DEFAULT_MAX_RESULTS) as usize,
        ))
    }
}

/// The call's arguments as the validated search they ask for, and how many results to return.
pub(crate) fn decode(
    arguments: &JsonObject,
    max_query_bytes: usize,
) -> Result<(SearchRequest, usize), Refusal> {
    let (input, max_results) = WebSearchArgs::read(arguments)?.into_search()?;
    Ok((SearchRequest::new(input, max_query_bytes)?, max_results))
}

/// The tool's result for `query` over one result at each of `urls`, for the fuzz target: whether
/// it is a success with at most `max_results` structured results.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise_output(query: String, urls: &[&str], max_results: usize) -> bool {
    let hits = urls
        .iter()
        .map(|url| Hit {
            url: (*url).to_owned(),
            title: query.clone(),
            content: query.repeat(3),
            engines: vec!["fuzz".to_owned()],
            published_date: Some(query.clone()),
        })
        .collect();
    let found = Found {
        hits,
        answers: vec![query.clone()],
        ..Found::default()
    };
    let output = WebSearchOutput::new(query, found, max_results);
    assert!(output.results.len() <= max_results);
    let result = output.into_result();
    assert!(result.structured_content.is_some());
    result.is_error != Some(true)
}

impl WebSearchOutput {
    /// The first `max_results` results of an answer.
    pub(crate) fn new(query: String, found: Found, max_results: usize) -> Self {
        Self {
            query,
            results: found
                .hits
                .into_iter()
                .take(max_results)
                .map(|hit: Hit| WebResult {
                    title: hit.title,
                    url: hit.url,
                    content: hit.content,
                    engines: hit.engines,
                    published_date: hit.published_date,
                })
                .collect(),
            answers: found.answers,
        }
    }

    /// Numbered results, one title, URL and shortened snippet each, after the answers.
    fn text(&self) -> String {
        let mut text = String::new();
        for answer in &self.answers {
            text.push_str(&format!("Answer: {answer}\n\n"));
        }
        if self.results.is_empty() {
            text.push_str(&format!("No results for \"{}\".", self.query));
            return text;
        }
        text.push_str(&format!(
            "{} result{} for \"{}\":\n",
            self.results.len(),
            if self.results.len() == 1 { "" } else { "s" },
            self.query
        ));
        for (i, result) in self.results.iter().enumerate() {
            let title = if result.title.is_empty() {
                &result.url
            } else {
                &result.title
            };
            text.push_str(&format!("\n{}. {title}", i + 1));
            if let Some(date) = &result.published_date {
                text.push_str(&format!(" ({date})"));
            }
            text.push_str(&format!("\n   {}\n", result.url));
            let snippet = shorten(result.content.trim(), TEXT_SNIPPET_CHARS);
            if !snippet.is_empty() {
                text.push_str(&format!("   {snippet}\n"));
            }
        }
        text
    }

    /// The tool's result: the text rendering as content, the results as structured content.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut result = CallToolResult::success(vec![ContentBlock::text(self.text())]);
        result.structured_content = serde_json::to_value(&self).ok();
        result
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
    }
}

/// The tool error for a search every upstream failed, naming each upstream and its error class.
pub(crate) fn all_failed(upstreams: &[FailedUpstream]) -> CallToolResult {
    let named: Vec<String> = upstreams
        .iter()
        .map(|u| format!("{}: {}", u.name, u.error_class.as_str()))
        .collect();
    tool_error(format!(
        "web_search failed: every upstream failed ({})",
        named.join(", ")
    ))
}

/// A tool error with this text.
pub(crate) fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use gateway_core::upstream::ErrorClass;

    fn args(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn hit(n: usize, content: &str) -> Hit {
        Hit {
            url: format!("https://r{n}.example/"),
            title: format!("Result {n}"),
            content: content.into(),
            engines: vec!["alpha".into(), "brave".into()],
            published_date: (n == 1).then(|| "2026-01-02".to_owned()),
        }
    }

    #[test]
    fn the_tool_declares_an_input_and_an_output_schema() {
        let tool = tool();
        let input = Value::Object((*tool.input_schema).clone());
        assert_eq!(input["type"], "object");
        assert_eq!(input["required"], json!(["query"]));
        for name in [
            "query",
            "max_results",
            "categories",
            "language",
            "time_range",
            "safesearch",
            "pageno",
        ] {
            assert!(input["properties"].get(name).is_some(), "{name}: {input}");
        }
        let output = Value::Object((*tool.output_schema.unwrap()).clone());
        let text = output.to_string();
        for name in [
            "results",
            "answers",
            "title",
            "url",
            "content",
            "engines",
            "publishedDate",
        ] {
            assert!(text.contains(&format!("\"{name}\"")), "{name}: {text}");
        }
        assert_eq!(tool.annotations.and_then(|a| a.read_only_hint), Some(true));
    }

    #[test]
    fn arguments_become_the_gateway_search_they_ask_for() {
        let (input, max) = WebSearchArgs::read(&args(json!({
            "query": "rust", "max_results": 3, "categories": ["news"], "language": "de",
            "time_range": "week", "safesearch": 2, "pageno": 2
        })))
        .unwrap()
        .into_search()
        .unwrap();
        assert_eq!(max, 3);
        assert_eq!(
            input,
            SearchInput {
                query: "rust".into(),
                pageno: Some(2),
                categories: vec!["news".into()],
                language: Some("de".into()),
                time_range: Some(TimeRange::Week),
                safesearch: Some(SafeSearch::Strict),
                ..SearchInput::default()
            }
        );
        let unknown = WebSearchArgs::read(&args(json!({"query": "q", "site": "docs.rs"})));
        assert_eq!(
            unknown.unwrap_err(),
            Refusal::Unknown("site: \"docs.rs\"".into())
        );
        let (_, default_max) = WebSearchArgs::read(&args(json!({"query": "q"})))
            .unwrap()
            .into_search()
            .unwrap();
        assert_eq!(default_max, 10);
    }

    #[test]
    fn a_wrong_argument_is_refused_naming_it() {
        for (value, name) in [
            (json!({"query": 42}), "query"),
            (json!({"query": "q", "max_results": 0}), "max_results"),
            (json!({"query": "q", "max_results": "5"}), "max_results"),
            (json!({"query": "q", "categories": "news"}), "categories"),
            (
                json!({"query": "q", "time_range": "fortnight"}),
                "time_range",
            ),
            (json!({"query": "q", "safesearch": 3}), "safesearch"),
        ] {
            let refused =
                WebSearchArgs::read(&args(value.clone())).and_then(WebSearchArgs::into_search);
            match refused {
                Err(Refusal::Argument(InvalidField { name: got, .. })) => {
                    assert_eq!(got, name, "{value}")
                }
                other => panic!("{value}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_result_carries_structured_results_and_a_compact_text() {
        let long = "word ".repeat(200);
        let found = Found {
            hits: vec![hit(1, "short"), hit(2, &long), hit(3, "dropped")],
            answers: vec!["42".into()],
            ..Found::default()
        };
        let result = WebSearchOutput::new("meaning".into(), found, 2).into_result();
        assert_eq!(result.is_error, Some(false));
        let structured = result.structured_content.clone().unwrap();
        assert_eq!(structured["results"].as_array().unwrap().len(), 2);
        assert_eq!(structured["results"][0]["publishedDate"], "2026-01-02");
        assert!(structured["results"][1].get("publishedDate").is_none());
        assert_eq!(structured["results"][1]["content"], long.as_str());
        assert_eq!(structured["answers"], json!(["42"]));
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("Answer: 42\n\n2 results for \"meaning\":\n"),
            "{text}"
        );
        assert!(text.contains("\n1. Result 1 (2026-01-02)\n   https://r1.example/\n   short\n"));
        assert!(text.contains("…"), "long snippets are shortened: {text}");
        assert!(text.len() < 1000, "{text}");
        assert!(!text.contains("dropped"));
    }

    #[test]
    fn nothing_found_and_every_upstream_failing_read_as_sentences() {
        let empty = WebSearchOutput::new("zzz".into(), Found::default(), 10).into_result();
        assert_eq!(
            empty.content[0].as_text().unwrap().text,
            "No results for \"zzz\"."
        );
        let failed = all_failed(&[
            FailedUpstream {
                name: "searxng".into(),
                error_class: ErrorClass::Timeout.into(),
            },
            FailedUpstream {
                name: "brave".into(),
                error_class: ErrorClass::RateLimited.into(),
            },
        ]);
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            failed.content[0].as_text().unwrap().text,
            "web_search failed: every upstream failed (searxng: timeout, brave: rate_limited)"
        );
    }
}
