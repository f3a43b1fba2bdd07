//! The baseline the passage row compares the gateway with: what a LangChain-style pipeline gives
//! — the page's text cut into fixed windows of 500 characters (50 of overlap: each starts 450
//! characters after the previous one, wherever that falls, as a character splitter cuts), scored
//! with plain BM25 (the `bm25` crate, k1 = 1.2, b = 0.75, fitted to the page's windows) over
//! lower-cased words, with no stemming, no stop words, no title or headings; the best three.
//!
//! The crate's own tokenizer (its `default_tokenizer` feature: stemming and stop words) is not
//! built here: its crates are not in the workspace's lock file, so [`Words`] stands in for it —
//! closer to a plain retriever's split on spaces than to the gateway's terms.

use bm25::{EmbedderBuilder, Scorer, Tokenizer};

/// The window's length, in characters (Tavily's chunk).
pub(super) const WINDOW_CHARS: usize = 500;
/// How many characters a window shares with the next.
pub(super) const OVERLAP_CHARS: usize = 50;

/// Lower-cased runs of letters and digits.
struct Words;

impl Tokenizer for Words {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    }
}

/// `text` cut into windows of [`WINDOW_CHARS`] characters, each starting [`OVERLAP_CHARS`]
/// before the previous one ends; the last may be shorter.
pub(super) fn windows(text: &str) -> Vec<&str> {
    let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let stride = WINDOW_CHARS - OVERLAP_CHARS;
    let mut out = Vec::new();
    let mut first = 0;
    while first < starts.len() {
        let start = starts[first];
        let end = starts
            .get(first + WINDOW_CHARS)
            .copied()
            .unwrap_or(text.len());
        out.push(&text[start..end]);
        if first + WINDOW_CHARS >= starts.len() {
            break;
        }
        first += stride;
    }
    out
}

/// The `best` windows of `text` for `query` by BM25, best first (ties in page order).
pub(super) fn best_windows<'t>(text: &'t str, query: &str, best: usize) -> Vec<&'t str> {
    let windows = windows(text);
    if windows.is_empty() {
        return Vec::new();
    }
    let embedder =
        EmbedderBuilder::<u32, Words>::with_tokenizer_and_fit_to_corpus(Words, &windows).build();
    let mut scorer = Scorer::<usize, u32>::new();
    for (i, window) in windows.iter().enumerate() {
        scorer.upsert(&i, embedder.embed(window));
    }
    let asked = embedder.embed(query);
    let mut scored: Vec<(usize, f32)> = (0..windows.len())
        .map(|i| (i, scorer.score(&i, &asked).unwrap_or(0.0)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .take(best)
        .map(|(i, _)| windows[i])
        .collect()
}
