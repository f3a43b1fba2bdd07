//! Each passage scored against a query with BM25 (Okapi, k1 = 1.2, b = 0.75), through the `bm25`
//! crate — its embedder (term weights, fitted to the page's passages for the mean length) and its
//! scorer (inverse document frequencies over the page's passages) — fed with our own
//! [`terms`](super::terms), each text segmented once. Two fields, each its own BM25: the passage's text, and its context —
//! the page's title and the passage's heading path — weighted [`CONTEXT_WEIGHT`]; a passage's score
//! is the text's plus the weighted context's. (The title is the same for every passage of a page,
//! so within one page its IDF is near zero: it weighs when passages of several pages are compared.)

use bm25::{Embedder, EmbedderBuilder, Embedding, Scorer};

use super::split::Passage;
use super::terms::{spaced, terms, Spaced};

/// What the context field (title and heading path) weighs against the passage's own text: less
/// than the text, which holds the answer, but enough that a passage under a heading naming the
/// question's subject wins a tie. Not measured yet (the harness row of #41 will).
pub(super) const CONTEXT_WEIGHT: f32 = 0.5;

/// One BM25 field over the page's passages.
struct Field {
    embedder: Embedder<u32, Spaced>,
    scorer: Scorer<usize>,
}

impl Field {
    /// The field over `texts`, each [`spaced`] already.
    fn new(texts: &[String]) -> Self {
        let corpus: Vec<&str> = texts.iter().map(String::as_str).collect();
        // The mean length counted here rather than by the crate's fit, which tokenizes every
        // text once more.
        let terms: usize = corpus
            .iter()
            .map(|t| t.split(' ').filter(|w| !w.is_empty()).count())
            .sum();
        let avgdl = terms as f32 / corpus.len().max(1) as f32;
        let embedder = EmbedderBuilder::<u32, Spaced>::with_avgdl(avgdl).build();
        let mut scorer = Scorer::new();
        for (i, text) in corpus.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(text));
        }
        Self { embedder, scorer }
    }

    fn score(&self, passage: usize, query: &Embedding) -> f32 {
        self.scorer.score(&passage, query).unwrap_or(0.0)
    }
}

/// The score of each passage for `query`, in the passages' order (zero for no term in common).
pub(super) fn scores(passages: &[Passage], title: Option<&str>, query: &str) -> Vec<f32> {
    scores_titled(passages, |_| title, query)
}

/// [`scores`] over passages of several pages, one corpus for all: `title_of(i)` is the title of
/// the page passage `i` comes from.
pub(super) fn scores_titled<'t>(
    passages: &[Passage],
    title_of: impl Fn(usize) -> Option<&'t str>,
    query: &str,
) -> Vec<f32> {
    let mut asked = terms(query);
    asked.sort_unstable();
    asked.dedup();
    if asked.is_empty() || passages.is_empty() {
        return vec![0.0; passages.len()];
    }
    let asked = asked.join(" ");
    let texts: Vec<String> = passages.iter().map(|p| spaced(&p.text)).collect();
    let contexts: Vec<String> = passages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut context = title_of(i).unwrap_or_default().to_owned();
            for heading in p.heading_path.iter() {
                context.push('\n');
                context.push_str(heading);
            }
            spaced(&context)
        })
        .collect();
    let text = Field::new(&texts);
    let context = Field::new(&contexts);
    let in_text = text.embedder.embed(&asked);
    let in_context = context.embedder.embed(&asked);
    (0..passages.len())
        .map(|i| text.score(i, &in_text) + CONTEXT_WEIGHT * context.score(i, &in_context))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(text: &str, path: &[&str]) -> Passage {
        Passage {
            text: text.to_owned(),
            heading_path: path
                .iter()
                .map(|h| (*h).to_owned())
                .collect::<Vec<_>>()
                .into(),
        }
    }

    fn best(scores: &[f32]) -> usize {
        let mut best = 0;
        for (i, score) in scores.iter().enumerate() {
            if *score > scores[best] {
                best = i;
            }
        }
        best
    }

    #[test]
    fn the_passage_with_the_rare_query_words_wins() {
        let passages = [
            passage("The museum opens every day of the week.", &[]),
            passage("Tickets cost twelve euros; children enter free.", &[]),
            passage("The museum was founded in 1887 by the city.", &[]),
        ];
        let scores = scores(
            &passages,
            Some("City Museum"),
            "How much do museum tickets cost?",
        );
        assert_eq!(best(&scores), 1, "{scores:?}");
        let founded = super::scores(&passages, None, "When was it FOUNDED?");
        assert_eq!(best(&founded), 2, "{founded:?}");
        assert_eq!(founded[0], 0.0, "no word in common");
    }

    #[test]
    fn the_heading_path_counts_as_context() {
        let passages = [
            passage("Run the installer and follow its steps.", &["Windows"]),
            passage("Run the installer and follow its steps.", &["Linux"]),
        ];
        let scores = scores(&passages, None, "installer on linux");
        assert!(scores[1] > scores[0], "{scores:?}");
    }

    #[test]
    fn a_query_of_stop_words_scores_nothing() {
        let passages = [passage("Anything at all.", &[])];
        assert_eq!(scores(&passages, None, "what is the"), [0.0]);
        assert!(scores(&[], None, "query").is_empty());
    }
}
