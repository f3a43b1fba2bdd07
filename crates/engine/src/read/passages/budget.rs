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

    fn bpe(self) -> &'static CoreBPE {
        match self.encoding {
            TokenizerEncoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            TokenizerEncoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

#[cfg(test)]
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
}
