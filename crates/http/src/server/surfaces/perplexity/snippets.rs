//! Perplexity's token budgets over a query's results: each result's snippet the page's passages
//! that best answer the query within `max_tokens_per_page` tokens, the best first ([`read_into`],
//! the pages read through the kit, the passages chosen by the engine's ranker), and the snippets
//! of one query within `max_tokens` together, the first results first ([`share_tokens`]). Tokens
//! are counted with the configured tokenizer (`TOKENIZER_ENCODING`), never estimated, and a
//! budget is never exceeded.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::gateway::Gateway;
use crate::server::kit::gate::Admitted;
use crate::server::kit::search_read;
use gateway_core::request::ReadFormat;
use gateway_engine::read::passages::{
    Merge, PassageOrder, PassageSelector, Ranked, Selection, TokenBudget, TokenCounter,
};

/// The longest passage a snippet is made of, in characters: about half the budget (a token is
/// about four characters of English), so several passages fit, within these bounds.
const PASSAGE_CHARS: std::ops::RangeInclusive<usize> = 100..=800;
/// Between two passages that are not adjacent on the page.
const GAP: &str = "\n\n";

/// Each result read as text, its snippet the page's best passages for `query` within `tokens`
/// tokens, the best first (the search's snippet stays when the page could not be read).
pub(crate) async fn read_into(
    gateway: &Gateway,
    admitted: &Admitted,
    list: &mut [Map<String, Value>],
    query: &str,
    tokens: usize,
    budget: Duration,
) {
    let started = tokio::time::Instant::now();
    let urls = list
        .iter()
        .map(|r| r.get("url").and_then(Value::as_str).unwrap_or(""));
    let texts = search_read::read_texts(gateway, admitted, urls, ReadFormat::Text, budget).await;
    let titles: Vec<Option<String>> = list
        .iter()
        .map(|r| r.get("title").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let max_chars = (tokens * 2).clamp(*PASSAGE_CHARS.start(), *PASSAGE_CHARS.end());
    // Each page ranked at once (a reranker's call per page, when one is configured), within
    // what is left of the budget.
    let left = budget.saturating_sub(started.elapsed());
    let ranked = futures::future::join_all(texts.into_iter().zip(titles).map(
        |(text, title)| async move {
            match text {
                Some(text) => Some(
                    gateway
                        .rank_passages(vec![(text, title)], query.to_owned(), max_chars, left)
                        .await,
                ),
                None => None,
            }
        },
    ))
    .await;
    let counter = gateway.passages().counter();
    let snippets = tokio::task::spawn_blocking(move || {
        ranked
            .into_iter()
            .map(|ranked| ranked.map(|ranked| best_passages(&ranked, counter, max_chars, tokens)))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for (result, snippet) in list.iter_mut().zip(snippets) {
        if let Some(snippet) = snippet {
            result.insert("snippet".into(), Value::from(snippet));
        }
    }
}

/// The passages `ranked` (split to `max_chars`) that best answer its query, the best first,
/// within `tokens` tokens.
fn best_passages(
    ranked: &Ranked,
    counter: TokenCounter,
    max_chars: usize,
    tokens: usize,
) -> String {
    let budget = TokenBudget::new(tokens);
    let mut selection = Selection {
        max_chars,
        max_passages: None,
        budget: Some(budget),
        // The best first: a cut for the gaps' tokens takes from the least relevant end.
        order: PassageOrder::Score,
        relevant_only: false,
        merge: Merge::Adjacent,
    };
    let mut chosen = ranked.choose(&selection);
    if chosen.is_empty() {
        // Not one passage fits: the best one, cut to the budget below.
        selection.budget = None;
        selection.max_passages = Some(1);
        chosen = ranked.choose(&selection);
    }
    let joined = chosen
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(GAP);
    // The gaps are tokens too: the budget holds for the snippet as sent.
    counter.prefix(&joined, budget).to_owned()
}

/// The snippets of one list cut so that together they hold at most `tokens` tokens, the first
/// results first.
pub(crate) fn share_tokens(
    selector: PassageSelector,
    list: &mut [Map<String, Value>],
    tokens: usize,
) {
    let counter = selector.counter();
    let mut left = tokens;
    for result in list {
        let snippet = result
            .get("snippet")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let kept = counter.prefix(&snippet, TokenBudget::new(left)).to_owned();
        left = left.saturating_sub(counter.count(&kept));
        result.insert("snippet".into(), Value::from(kept));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use gateway_engine::settings::TokenizerEncoding;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    const SELECTOR: PassageSelector = PassageSelector::new(TokenizerEncoding::O200kBase);

    #[test]
    fn the_snippets_of_a_list_share_the_tokens_the_first_first() {
        let mut list = vec![
            fields(json!({"snippet": "one two three four"})),
            fields(json!({"snippet": "five six seven"})),
            fields(json!({"snippet": "eight"})),
        ];
        share_tokens(SELECTOR, &mut list, 6);
        assert_eq!(list[0]["snippet"], "one two three four");
        assert_eq!(list[1]["snippet"], "five six");
        assert_eq!(list[2]["snippet"], "", "nothing left");
    }

    #[test]
    fn a_page_gives_the_passages_that_answer_the_query_within_its_tokens() {
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!(
                "Paragraph {i} talks about the weather and the harbour at some length.\n\n"
            ));
        }
        text.push_str("The lighthouse foghorn was silenced in 1987.\n\n");
        for i in 40..60 {
            text.push_str(&format!("Paragraph {i} is about gardens.\n\n"));
        }
        let lexical = |query: &str, tokens: usize| {
            let max_chars = (tokens * 2).clamp(*PASSAGE_CHARS.start(), *PASSAGE_CHARS.end());
            let ranked = SELECTOR.rank(&[(&text, None)], query, max_chars);
            best_passages(&ranked, SELECTOR.counter(), max_chars, tokens)
        };
        for tokens in [30, 200] {
            let snippet = lexical("when was the foghorn silenced", tokens);
            assert!(snippet.contains("silenced in 1987"), "{tokens}: {snippet}");
            assert!(SELECTOR.counter().count(&snippet) <= tokens, "{snippet}");
        }
        let tiny = lexical("foghorn", 3);
        assert!(
            !tiny.is_empty() && SELECTOR.counter().count(&tiny) <= 3,
            "{tiny}"
        );
    }
}
