//! Perplexity's token budgets over a query's results: each result's snippet the page's text cut to
//! about `max_tokens_per_page` tokens ([`read_into`], the pages read through the kit), and the
//! snippets of one query cut to about `max_tokens` together ([`share_tokens`]). Tokens are
//! counted as four characters, the usual rule of thumb for English text.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::gateway::Gateway;
use crate::server::kit::gate::Admitted;
use crate::server::kit::search_read;
use gateway_core::request::ReadFormat;

/// Characters a token is taken to be.
const CHARS_PER_TOKEN: usize = 4;

/// Each result read as text, its snippet the page's text cut to about `tokens` tokens (the
/// search's snippet stays when the page could not be read).
pub(crate) async fn read_into(
    gateway: &Gateway,
    admitted: &Admitted,
    list: &mut [Map<String, Value>],
    tokens: usize,
    budget: Duration,
) {
    let urls = list
        .iter()
        .map(|r| r.get("url").and_then(Value::as_str).unwrap_or(""));
    let texts = search_read::read_texts(gateway, admitted, urls, ReadFormat::Text, budget).await;
    for (result, text) in list.iter_mut().zip(texts) {
        if let Some(text) = text {
            let text = cut(&text, tokens * CHARS_PER_TOKEN);
            result.insert("snippet".into(), Value::from(text));
        }
    }
}

/// The snippets of one list cut so that together they hold about `tokens` tokens, the first
/// results first.
pub(crate) fn share_tokens(list: &mut [Map<String, Value>], tokens: usize) {
    let mut left = tokens * CHARS_PER_TOKEN;
    for result in list {
        let snippet = result
            .get("snippet")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let kept = cut(&snippet, left);
        left = left.saturating_sub(kept.len());
        result.insert("snippet".into(), Value::from(kept));
    }
}

/// `text` cut to at most `max` bytes, at the last whitespace before the cut when there is one.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    head.rfind(char::is_whitespace)
        .filter(|&at| at > 0)
        .map_or(head, |at| &head[..at])
        .trim_end()
        .to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn text_is_cut_at_a_word_within_the_tokens() {
        assert_eq!(cut("one two three four", 9), "one two");
        assert_eq!(cut("short", 100), "short");
        assert_eq!(cut("ééééé", 3), "é");
        let mut list = vec![
            fields(json!({"snippet": "aaaa bbbb cccc"})),
            fields(json!({"snippet": "dddd eeee"})),
        ];
        share_tokens(&mut list, 3);
        assert_eq!(list[0]["snippet"], "aaaa bbbb");
        assert_eq!(
            list[1]["snippet"], "ddd",
            "a word longer than what is left is cut"
        );
    }
}
