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
}
