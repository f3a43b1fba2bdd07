//! The passages of a read page that answer a query, within a length and a token budget (#41).
//!
//! Owns: cutting a read [`Document`]'s text into passages along its own structure ([`split`]:
//! headings, paragraphs, list items, table rows, code fences; whole sentences where a block is
//! too long; each passage with its heading path), scoring them against a query ([`rank`]: BM25 on
//! the text, plus the title and heading path as a second, lighter field, over [`terms`]), choosing
//! the best within what a door asks ([`select`]: at most so many passages, at most so many tokens,
//! page or score order, adjacent ones merged), and counting tokens ([`budget`]: tiktoken's
//! encodings, `TOKENIZER_ENCODING`). It works on a document already read — the cached one when
//! there is one —, so a query never costs a second fetch.
//!
//! Crates, not hand-written: `bm25` (the scorer and the term weights; its own tokenizer and
//! stemmer left out for [`terms`]), `unicode-segmentation` (word and sentence boundaries),
//! `tiktoken-rs` (the encodings, vocabularies built in).
//!
//! Measured (2026-12-05, release build without LTO on the shared two-core machine, 300 runs each,
//! four 56–57 kB Markdown pages of the WCXB dev corpus): Tavily's 3 × 500 characters take 2.3–3.2
//! ms p50 on the three prose pages (the split 0.2–0.55 ms of it, the rest cutting words and the
//! `bm25` crate's hashing), 4.1 ms on a page that is one JSON blob; with a 1,000-token budget
//! 4.5–5.8 ms (tiktoken counting each candidate). Above #41's 2 ms target: the `bm25` crate's
//! per-passage hash maps are the next place to look. A door runs a selection on the blocking pool.
//!
//! Surfaces: Tavily's extract (`query`, `chunks_per_source`) and advanced search (each result's
//! chunks), Exa's highlights, Perplexity's `max_tokens_per_page` and `max_tokens`, MCP's
//! `web_fetch` (`query`, `max_tokens`) and `web_research` (passages of several pages scored as one
//! corpus, [`PassageSelector::select_across`]), and the `/v1/rerank` door, whose client's own texts
//! [`PassageSelector::rank_texts`] scores.
//!
//! Not yet (#41): a reranker (`RERANK_URL`), the split cached with the page. Stemming was measured
//! and left out ([`terms`]).

mod budget;
mod rank;
mod select;
mod split;
mod terms;

pub use budget::{TokenBudget, TokenCounter};
pub use select::{Chosen, Merge, PassageOrder, Selection};
pub use split::{split, Passage};

use std::sync::Arc;

use gateway_upstreams::reader::Document;

use crate::settings::TokenizerEncoding;

/// Tavily's longest chunk, in characters.
pub const TAVILY_CHUNK_CHARS: usize = 500;

/// Chooses passages of read pages; cheap to copy (the encodings are shared by the process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassageSelector {
    counter: TokenCounter,
}

impl PassageSelector {
    /// A selector counting budgets with `encoding` (`TOKENIZER_ENCODING`).
    pub const fn new(encoding: TokenizerEncoding) -> Self {
        Self {
            counter: TokenCounter::new(encoding),
        }
    }

    /// What it counts tokens with.
    pub const fn counter(&self) -> TokenCounter {
        self.counter
    }

    /// How well each of `texts` answers `query`, in their order: BM25 over the texts as one
    /// collection (each text one passage, no title or headings), zero for no word in common. The
    /// `/v1/rerank` door's scores.
    pub fn rank_texts(&self, query: &str, texts: &[&str]) -> Vec<f32> {
        let passages: Vec<Passage> = texts
            .iter()
            .map(|text| Passage {
                text: (*text).to_owned(),
                heading_path: Arc::from([]),
            })
            .collect();
        rank::scores(&passages, None, query)
    }

    /// The passages of a page's `text` (titled `title`) that best answer `query`, as `selection`
    /// asks: [`Self::select`] for a door that holds the text alone.
    pub fn select_text(
        &self,
        text: &str,
        title: Option<&str>,
        query: &str,
        selection: &Selection,
    ) -> Vec<Chosen> {
        select::select(text, title, query, selection, self.counter)
    }

    /// The passages of `document` that best answer `query`, as `selection` asks.
    pub fn select(&self, document: &Document, query: &str, selection: &Selection) -> Vec<Chosen> {
        select::select(
            &document.content,
            document.title.as_deref(),
            query,
            selection,
            self.counter,
        )
    }

    /// The passages of several `documents` that best answer `query`, scored as one corpus (each
    /// page's title in the context field), as `selection` asks; each with the index of its
    /// document in `documents`.
    pub fn select_across(
        &self,
        documents: &[&Document],
        query: &str,
        selection: &Selection,
    ) -> Vec<(usize, Chosen)> {
        let pages: Vec<(&str, Option<&str>)> = documents
            .iter()
            .map(|d| (d.content.as_str(), d.title.as_deref()))
            .collect();
        select::select_across(&pages, query, selection, self.counter)
    }

    /// `document`'s text cut to `budget` at a passage boundary (passages of at most `max_chars`):
    /// the first passages in page order that fit together, as one run; `None` when the first
    /// alone does not.
    pub fn leading(
        &self,
        document: &Document,
        max_chars: usize,
        budget: TokenBudget,
    ) -> Option<Chosen> {
        select::leading(&document.content, max_chars, budget, self.counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_ranked_in_their_order_and_one_without_the_query_scores_nothing() {
        let selector = PassageSelector::new(TokenizerEncoding::O200kBase);
        let scores = selector.rank_texts(
            "capital of france",
            &[
                "Berlin is the capital of Germany.",
                "Paris is the capital of France.",
                "Bananas are yellow.",
            ],
        );
        assert_eq!(scores.len(), 3);
        assert!(scores[1] > scores[0], "{scores:?}");
        assert_eq!(scores[2], 0.0, "{scores:?}");
        assert!(selector.rank_texts("anything", &[]).is_empty());
    }
}
