//! Each passage scored against a query with BM25 (Okapi, k1 = 1.2, b = 0.75; the IDF
//! ln(1 + (N − df + 0.5) / (df + 0.5)), Lucene's and the `bm25` crate's). Two fields, each its own
//! BM25: the passage's text, and its context — the page's title and the passage's heading path —
//! weighted [`CONTEXT_WEIGHT`]; a passage's score is the text's plus the weighted context's. (The
//! title is the same for every passage of a page, so within one page its IDF is near zero: it
//! weighs when passages of several pages are compared.)
//!
//! Hand-written, and why: BM25 for one query needs, per passage, its length and how often each of
//! the query's few terms occurs in it, and per term the passages holding it. The `bm25` crate
//! (used here before, and still the harness's baseline) builds an index for many queries: a
//! string, a hash and a map entry for every word of every passage, then an inverted index of
//! every term. On the harness's 50 kB pages that was most of the ranking's time (p50 2.62 ms for
//! Tavily's three chunks, the split and the word cutting included); counting only the query's
//! terms over the words as they are cut gives the same scores (checked against the crate in the
//! tests) in a fraction of it (docs/src/benchmarks/reading.md).

use super::split::Passage;
use super::terms::{each_term, terms};

/// What the context field (title and heading path) weighs against the passage's own text: less
/// than the text, which holds the answer, but enough that a passage under a heading naming the
/// question's subject wins a tie. Not measured yet (the harness row of #41 will).
pub(super) const CONTEXT_WEIGHT: f32 = 0.5;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;

/// One BM25 field over the page's passages, counted for one query's terms.
struct Field {
    /// Each passage's length in terms.
    lengths: Vec<u32>,
    /// How often each asked term occurs in each passage: passage-major, `asked` terms per row.
    counts: Vec<u32>,
    /// The number of asked terms.
    asked: usize,
}

impl Field {
    /// The field over `texts` (one per passage) for the distinct terms `asked`.
    fn new<'t>(texts: impl Iterator<Item = &'t str>, asked: &[String]) -> Self {
        let mut field = Self {
            lengths: Vec::new(),
            counts: Vec::new(),
            asked: asked.len(),
        };
        let mut scratch = String::new();
        for text in texts {
            field.add(text, asked, &mut scratch);
        }
        field
    }

    /// Counts one more passage's `text`.
    fn add(&mut self, text: &str, asked: &[String], scratch: &mut String) {
        let row = self.counts.len();
        self.counts.resize(row + self.asked, 0);
        let mut length = 0u32;
        each_term(text, scratch, |term| {
            length += 1;
            if let Some(j) = asked.iter().position(|a| a == term) {
                self.counts[row + j] += 1;
            }
        });
        self.lengths.push(length);
    }

    /// Each passage's score.
    fn scores(&self) -> Vec<f32> {
        let n = self.lengths.len();
        let total: u64 = self.lengths.iter().map(|l| u64::from(*l)).sum();
        let avgdl = (total as f32 / n.max(1) as f32).max(f32::MIN_POSITIVE);
        let idf: Vec<f32> = (0..self.asked)
            .map(|j| {
                let df = (0..n)
                    .filter(|i| self.counts[i * self.asked + j] > 0)
                    .count() as f32;
                (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        (0..n)
            .map(|i| {
                let norm = K1 * (1.0 - B + B * self.lengths[i] as f32 / avgdl);
                self.counts[i * self.asked..(i + 1) * self.asked]
                    .iter()
                    .zip(&idf)
                    .filter(|(tf, _)| **tf > 0)
                    .map(|(tf, idf)| {
                        let tf = *tf as f32;
                        idf * tf * (K1 + 1.0) / (tf + norm)
                    })
                    .sum()
            })
            .collect()
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
    let text = Field::new(passages.iter().map(|p| p.text.as_str()), &asked);
    let mut context = Field {
        lengths: Vec::with_capacity(passages.len()),
        counts: Vec::with_capacity(passages.len() * asked.len()),
        asked: asked.len(),
    };
    let (mut scratch, mut words) = (String::new(), String::new());
    for (i, passage) in passages.iter().enumerate() {
        words.clear();
        words.push_str(title_of(i).unwrap_or_default());
        for heading in passage.heading_path.iter() {
            words.push('\n');
            words.push_str(heading);
        }
        context.add(&words, &asked, &mut scratch);
    }
    text.scores()
        .into_iter()
        .zip(context.scores())
        .map(|(text, context)| text + CONTEXT_WEIGHT * context)
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

    /// The `bm25` crate's tokenizer over [`terms`].
    #[derive(Default)]
    struct Terms;

    impl bm25::Tokenizer for Terms {
        fn tokenize(&self, text: &str) -> Vec<String> {
            terms(text)
        }
    }

    /// One field's scores as the `bm25` crate gives them.
    fn crate_scores(texts: &[&str], query: &str) -> Vec<f32> {
        use bm25::{EmbedderBuilder, Scorer};
        let total: usize = texts.iter().map(|t| terms(t).len()).sum();
        let avgdl = total as f32 / texts.len() as f32;
        let embedder = EmbedderBuilder::<u32, Terms>::with_avgdl(avgdl).build();
        let mut scorer = Scorer::new();
        for (i, text) in texts.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(text));
        }
        let mut asked = terms(query);
        asked.sort_unstable();
        asked.dedup();
        let query = embedder.embed(&asked.join(" "));
        (0..texts.len())
            .map(|i| scorer.score(&i, &query).unwrap_or(0.0))
            .collect()
    }

    #[test]
    fn the_scores_are_the_bm25_crates() {
        let texts = [
            "The river Aare flows through Bern; the Aare is green in summer.",
            "Bern's old town is a UNESCO site, with arcades of six kilometres.",
            "Trams and buses run every few minutes; a day ticket costs 13.60 francs.",
            "In summer people swim in the Aare, drifting from Eichholz to the Marzili.",
            "",
            "Ticket machines take cards. The Aare, the Aare, the Aare!",
        ];
        let passages: Vec<Passage> = texts.iter().map(|t| passage(t, &[])).collect();
        for query in [
            "swim in the Aare in summer",
            "how much is a day ticket",
            "UNESCO arcades",
            "nothing matches zebra",
        ] {
            let ours = scores(&passages, None, query);
            let theirs = crate_scores(&texts, query);
            for (a, b) in ours.iter().zip(&theirs) {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "{query}: {ours:?} against {theirs:?}"
                );
            }
        }
    }

    #[test]
    fn a_query_of_stop_words_scores_nothing() {
        let passages = [passage("Anything at all.", &[])];
        assert_eq!(scores(&passages, None, "what is the"), [0.0]);
        assert!(scores(&[], None, "query").is_empty());
    }
}
