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
//! Crates, not hand-written: `unicode-segmentation` (word and sentence boundaries), `tiktoken-rs`
//! (the encodings, vocabularies built in). BM25 itself is counted for the query's terms alone
//! ([`rank`] says why the `bm25` crate, used before, is not).
//!
//! Measured (2026-12-05, release build without LTO on the shared two-core machine, 300 runs each,
//! four 56–57 kB Markdown pages of the WCXB dev corpus, with the `bm25` crate): Tavily's 3 × 500
//! characters took 2.3–3.2 ms p50 on the three prose pages (the split 0.2–0.55 ms of it, the rest
//! cutting words and the crate's hashing), 4.1 ms on a page that is one JSON blob; with a
//! 1,000-token budget 4.5–5.8 ms (tiktoken counting each candidate). The harness's row k.
//! passages has the time now. A door runs a selection on the blocking pool.
//!
//! Surfaces: Tavily's extract (`query`, `chunks_per_source`) and advanced search (each result's
//! chunks), Exa's highlights, Perplexity's `max_tokens_per_page` and `max_tokens`, MCP's
//! `web_fetch` (`query`, `max_tokens`) and `web_research` (passages of several pages scored as one
//! corpus, [`PassageSelector::select_across`]), and the `/v1/rerank` door, whose client's own texts
//! [`PassageSelector::rank_texts`] scores.
//!
//! A reranker (`RERANK_URL`, [`rerank`]) re-scores the lexical ranking's best [`CANDIDATES`] when
//! the operator configures one: a door ranks through [`crate::engine::Engine::rank_passages`]
//! (lexical on the blocking pool, then the reranker within its timeout and breaker, the lexical
//! order as the fallback) and chooses from the [`Ranked`] passages as often as it needs.
//!
//! A read page's split is kept with it ([`memo`]): the cache holds the document, and a query
//! on it after the first is ranked from the kept passages. Stemming was measured and left out
//! ([`terms`]).

mod budget;
pub(crate) mod memo;
mod rank;
pub(crate) mod rerank;
mod select;
mod split;
mod terms;

pub use budget::{TokenBudget, TokenCounter};
pub(crate) use memo::Splits;
pub use rerank::{Fallback, RankedBy, CANDIDATES};
pub use select::{Chosen, Merge, PassageOrder, Selection};
pub use split::{split, Passage};

use select::Ranking;

use std::sync::Arc;

use gateway_upstreams::reader::Document;

use crate::settings::TokenizerEncoding;

/// A page whose passages are ranked: a read document, or a text (and title) a door holds.
pub trait PageText: Send + 'static {
    /// Its text.
    fn text(&self) -> &str;
    /// Its title, when it has one.
    fn title(&self) -> Option<&str>;
    /// The read document it is, when it is one: its split is kept with it ([`Splits`]).
    fn document(&self) -> Option<&Arc<Document>> {
        None
    }
}

impl PageText for Arc<Document> {
    fn text(&self) -> &str {
        &self.content
    }

    fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    fn document(&self) -> Option<&Arc<Document>> {
        Some(self)
    }
}

impl PageText for (String, Option<String>) {
    fn text(&self) -> &str {
        &self.0
    }

    fn title(&self) -> Option<&str> {
        self.1.as_deref()
    }
}

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

    /// The passages of `pages` (each its text and title) split to at most `max_chars` each and
    /// ranked for `query` as one corpus (each page's title in the context field), lexically: what
    /// [`Ranked::choose`] takes, as often as a door asks. CPU work for long pages: a door runs it
    /// on the blocking pool ([`crate::engine::Engine::rank_passages`] does, and reranks).
    pub fn rank(&self, pages: &[(&str, Option<&str>)], query: &str, max_chars: usize) -> Ranked {
        let splits: Vec<Vec<Passage>> = pages
            .iter()
            .map(|(text, _)| split(text, max_chars))
            .collect();
        let split_pages: Vec<(&[Passage], Option<&str>)> = splits
            .iter()
            .zip(pages)
            .map(|(split, (_, title))| (split.as_slice(), *title))
            .collect();
        self.rank_split(&split_pages, query)
    }

    /// [`Self::rank`] over pages already split (each its passages and title): a cached page's
    /// kept split ([`Splits`]).
    pub(crate) fn rank_split(&self, pages: &[(&[Passage], Option<&str>)], query: &str) -> Ranked {
        let (passages, page_of, first_of_page, scores) = select::score_split(pages, query);
        Ranked {
            passages,
            page_of,
            first_of_page,
            ranking: Ranking::lexical(scores),
            by: RankedBy::Lexical,
            counter: self.counter,
        }
    }

    /// [`Self::rank`] over read documents.
    pub fn rank_documents(&self, documents: &[&Document], query: &str, max_chars: usize) -> Ranked {
        let pages: Vec<(&str, Option<&str>)> = documents
            .iter()
            .map(|d| (d.content.as_str(), d.title.as_deref()))
            .collect();
        self.rank(&pages, query, max_chars)
    }

    /// The passages of a page's `text` (titled `title`) that best answer `query`, as `selection`
    /// asks, ranked lexically: [`Self::select`] for a door that holds the text alone.
    pub fn select_text(
        &self,
        text: &str,
        title: Option<&str>,
        query: &str,
        selection: &Selection,
    ) -> Vec<Chosen> {
        self.rank(&[(text, title)], query, selection.max_chars)
            .choose(selection)
    }

    /// The passages of `document` that best answer `query`, as `selection` asks, ranked
    /// lexically.
    pub fn select(&self, document: &Document, query: &str, selection: &Selection) -> Vec<Chosen> {
        self.rank_documents(&[document], query, selection.max_chars)
            .choose(selection)
    }

    /// The passages of several `documents` that best answer `query`, scored as one corpus (each
    /// page's title in the context field), as `selection` asks, ranked lexically; each with the
    /// index of its document in `documents`.
    pub fn select_across(
        &self,
        documents: &[&Document],
        query: &str,
        selection: &Selection,
    ) -> Vec<(usize, Chosen)> {
        self.rank_documents(documents, query, selection.max_chars)
            .choose_across(selection)
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

/// The passages of one or several pages ranked for a query: split and scored once (and reranked
/// when a reranker is configured), then chosen from as often as a door asks — a door that fits
/// its answer to a token budget asks again with a smaller one.
#[derive(Debug, Clone)]
pub struct Ranked {
    passages: Vec<Passage>,
    /// Each passage's page, an index into the pages ranked.
    page_of: Vec<usize>,
    /// Where each page's passages start.
    first_of_page: Vec<usize>,
    ranking: Ranking,
    by: RankedBy,
    counter: TokenCounter,
}

impl Ranked {
    /// Nothing ranked: what a door gets when ranking failed (its task panicked).
    pub fn empty(counter: TokenCounter) -> Self {
        Self {
            passages: Vec::new(),
            page_of: Vec::new(),
            first_of_page: Vec::new(),
            ranking: Ranking::lexical(Vec::new()),
            by: RankedBy::Lexical,
            counter,
        }
    }

    /// Which ranking ordered the passages: lexical, the reranker, or lexical because the reranker
    /// could not be used.
    pub fn ranked_by(&self) -> RankedBy {
        self.by
    }

    /// The best passages of the first (or only) page ranked, as `selection` asks (its `max_chars`
    /// the one the passages were ranked with). CPU work when there is a token budget (tiktoken
    /// counts candidates).
    pub fn choose(&self, selection: &Selection) -> Vec<Chosen> {
        self.choose_across(selection)
            .into_iter()
            .filter(|(page, _)| *page == 0)
            .map(|(_, chosen)| chosen)
            .collect()
    }

    /// The best passages of every page ranked, as `selection` asks, each with the index of its
    /// page and its `passages` counted within that page.
    pub fn choose_across(&self, selection: &Selection) -> Vec<(usize, Chosen)> {
        select::within_pages(
            select::choose(
                &self.passages,
                &self.ranking,
                &self.page_of,
                selection,
                self.counter,
            ),
            &self.first_of_page,
        )
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
