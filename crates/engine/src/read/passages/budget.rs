//! Token budgets, counted with a real tokenizer: tiktoken's encodings through `tiktoken-rs`
//! (`TOKENIZER_ENCODING`: `o200k_base` by default, or `cl100k_base`), whose vocabularies are built
//! into the binary — nothing is fetched at run time. Each encoding is parsed once per process, on
//! its first use, and shared.

use tiktoken_rs::CoreBPE;

use crate::settings::TokenizerEncoding;

/// At most this many tokens, as the configured tokenizer counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TokenBudget(usize);

impl TokenBudget {
    /// A budget of `tokens` tokens.
    pub const fn new(tokens: usize) -> Self {
        Self(tokens)
    }

    /// Its tokens.
    pub const fn tokens(self) -> usize {
        self.0
    }
}

/// Counts tokens with one encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCounter {
    encoding: TokenizerEncoding,
}

impl TokenCounter {
    /// A counter for `encoding` (its vocabulary is parsed on the first count).
    pub const fn new(encoding: TokenizerEncoding) -> Self {
        Self { encoding }
    }

    /// The encoding it counts with.
    pub const fn encoding(self) -> TokenizerEncoding {
        self.encoding
    }

    /// The tokens of `text`, special-token names counted as the plain text they are in a page.
    pub fn count(self, text: &str) -> usize {
        self.bpe().count_ordinary(text)
    }

    /// The longest start of `text` that ends before a space and holds at most `budget` tokens
    /// (all of it when it fits; empty when not even its first word does). Only a start counted
    /// within the budget is returned, so the budget holds whatever the encoding does at a cut.
    pub fn prefix(self, text: &str, budget: TokenBudget) -> &str {
        if self.count(text) <= budget.tokens() {
            return text;
        }
        let ends: Vec<usize> = text
            .char_indices()
            .filter(|(_, c)| c.is_whitespace())
            .map(|(at, _)| at)
            .collect();
        let (mut low, mut high, mut best) = (0, ends.len(), 0);
        while low < high {
            let mid = low + (high - low) / 2;
            let end = ends[mid];
            if self.count(&text[..end]) <= budget.tokens() {
                best = end;
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        text[..best].trim_end()
    }

    /// The most of `items` whose rendering fits `budget`: the lowest-scored item (the later one
    /// on a tie) dropped, one at a time, until `render` of those left holds at most `budget`
    /// tokens; those left, in their order, with their rendering. `None` when even the rendering
    /// of none does not fit. For a door whose answer wraps chosen passages in text of its own
    /// (headings, URLs), so the whole answer keeps the budget, not only the passages.
    pub fn fit<T>(
        self,
        budget: TokenBudget,
        mut items: Vec<T>,
        score: impl Fn(&T) -> f32,
        render: impl Fn(&[T]) -> String,
    ) -> Option<(Vec<T>, String)> {
        loop {
            let text = render(&items);
            if self.count(&text) <= budget.tokens() {
                return Some((items, text));
            }
            let worst = items
                .iter()
                .enumerate()
                .min_by(|a, b| score(a.1).total_cmp(&score(b.1)).then(b.0.cmp(&a.0)))
                .map(|(at, _)| at)?;
            items.remove(worst);
        }
    }

    /// Items chosen within a budget and rendered, the rendering within `budget`: `choose` is
    /// asked for items within a budget shrunk in proportion to how far the last rendering went
    /// over (a few times, as the chosen items change), and what still does not fit is [`fit`](Self::fit) to it. For a
    /// door whose answer wraps chosen passages in text of its own, so the wrapping costs the
    /// fewest passages.
    pub fn pack<T>(
        self,
        budget: TokenBudget,
        choose: impl Fn(TokenBudget) -> Vec<T>,
        score: impl Fn(&T) -> f32,
        render: impl Fn(&[T]) -> String,
    ) -> Option<(Vec<T>, String)> {
        const ATTEMPTS: usize = 4;
        let mut inner = budget.tokens();
        let mut items = choose(TokenBudget::new(inner));
        for _ in 1..ATTEMPTS {
            let text = render(&items);
            let count = self.count(&text);
            if count <= budget.tokens() {
                return Some((items, text));
            }
            // In proportion: the wrapping grows with the items as often as it is fixed.
            inner = inner * budget.tokens() / count;
            items = choose(TokenBudget::new(inner));
        }
        self.fit(budget, items, score, render)
    }

    fn bpe(self) -> &'static CoreBPE {
        match self.encoding {
            TokenizerEncoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            TokenizerEncoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_counted_with_the_configured_encoding() {
        let o200k = TokenCounter::new(TokenizerEncoding::O200kBase);
        let cl100k = TokenCounter::new(TokenizerEncoding::Cl100kBase);
        assert_eq!(o200k.count(""), 0);
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(cl100k.count("hello world"), 2);
        // The two vocabularies differ where it shows: o200k has far more non-English words.
        let hindi = "नमस्ते दुनिया, यह एक परीक्षण है";
        assert!(o200k.count(hindi) < cl100k.count(hindi));
        assert!(
            o200k.count("<|endoftext|>") > 1,
            "a special token's name in a page is text, not the special token"
        );
    }

    #[test]
    fn a_prefix_ends_at_a_word_within_the_budget() {
        let counter = TokenCounter::new(TokenizerEncoding::O200kBase);
        let text = "one two three four five six seven eight nine ten";
        assert_eq!(counter.prefix(text, TokenBudget::new(100)), text);
        let cut = counter.prefix(text, TokenBudget::new(4));
        assert_eq!(cut, "one two three four");
        assert!(counter.count(cut) <= 4);
        assert_eq!(
            counter.prefix("supercalifragilistic", TokenBudget::new(1)),
            ""
        );
        assert_eq!(counter.prefix(text, TokenBudget::new(0)), "");
    }

    #[test]
    fn fitting_drops_the_lowest_scored_items_until_the_rendering_fits() {
        let counter = TokenCounter::new(TokenizerEncoding::O200kBase);
        let items = vec![
            ("alpha beta", 2.0),
            ("gamma delta", 0.5),
            ("epsilon zeta", 1.0),
        ];
        let render = |items: &[(&str, f32)]| {
            let texts: Vec<&str> = items.iter().map(|i| i.0).collect();
            format!("Passages: {}", texts.join(" | "))
        };
        let all = counter.count(&render(&items));
        let (kept, text) = counter
            .fit(TokenBudget::new(all - 1), items.clone(), |i| i.1, render)
            .unwrap();
        assert_eq!(kept, [("alpha beta", 2.0), ("epsilon zeta", 1.0)]);
        assert!(counter.count(&text) < all);
        let (kept, _) = counter
            .fit(TokenBudget::new(all), items.clone(), |i| i.1, render)
            .unwrap();
        assert_eq!(kept.len(), 3, "what fits stays whole");
        assert!(counter
            .fit(TokenBudget::new(1), items, |i| i.1, render)
            .is_none());
    }

    #[test]
    fn packing_asks_for_less_by_what_the_wrapping_costs() {
        let counter = TokenCounter::new(TokenizerEncoding::O200kBase);
        let word = |n: usize| vec![("word", 1.0_f32); n];
        // Each item is one token; the wrapping costs about two per item.
        let choose = |budget: TokenBudget| word(budget.tokens());
        let render = |items: &[(&str, f32)]| {
            let texts: Vec<&str> = items.iter().map(|i| i.0).collect();
            format!("Items: {}", texts.join(" | "))
        };
        let (items, text) = counter
            .pack(TokenBudget::new(30), choose, |i| i.1, render)
            .unwrap();
        assert!(counter.count(&text) <= 30, "{text}");
        assert!(items.len() >= 8, "{} items: {text}", items.len());
    }
}
