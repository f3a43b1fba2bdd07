//! WCXB's scorer (the corpus's `evaluate.py`), ported exactly so that the harness's figures are
//! the benchmark's: a text's tokens are the runs of word characters of its lower-cased form
//! (`re.findall(r'\w+', text.lower())`: a word character is `_` or a letter or number by Unicode
//! general category, as Python's `str.isalnum`); a page's precision, recall and F1 compare the
//! predicted and the reference tokens as multisets (an empty reference scores 1 against an empty
//! prediction, else 0); its `with` and `without` rates are the shares of its snippets found in the
//! prediction, case-insensitive (a page without snippets counts 1.0 for both, as `evaluate.py`
//! counts it). Every figure is the mean over pages, overall and per page type; a page an extractor
//! did not read is scored as the empty text, and stays in the means.

use std::collections::HashMap;
use std::time::Duration;

use unicode_general_category::{get_general_category, GeneralCategory};

use super::corpus::{PageType, Truth};

/// Python's `\w` on `str`: `str.isalnum()` or `_`.
fn is_word_char(c: char) -> bool {
    use GeneralCategory::*;
    c == '_'
        || matches!(
            get_general_category(c),
            UppercaseLetter
                | LowercaseLetter
                | TitlecaseLetter
                | ModifierLetter
                | OtherLetter
                | DecimalNumber
                | LetterNumber
                | OtherNumber
        )
}

/// The tokens of already lower-cased text, counted, and how many there are.
fn bag(lower: &str) -> (HashMap<&str, usize>, usize) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut total = 0;
    let mut rest = lower;
    while let Some(start) = rest.find(is_word_char) {
        let word = &rest[start..];
        let end = word.find(|c| !is_word_char(c)).unwrap_or(word.len());
        *counts.entry(&word[..end]).or_default() += 1;
        total += 1;
        rest = &word[end..];
    }
    (counts, total)
}

/// `evaluate.py`'s `word_f1`: precision, recall and F1 of `predicted` against `reference`.
fn word_f1(predicted: &str, reference: &str) -> (f64, f64, f64) {
    let (predicted, reference) = (predicted.to_lowercase(), reference.to_lowercase());
    let (predicted, predicted_len) = bag(&predicted);
    let (reference, reference_len) = bag(&reference);
    if reference_len == 0 {
        return if predicted_len == 0 {
            (1.0, 1.0, 1.0)
        } else {
            (0.0, 0.0, 0.0)
        };
    }
    if predicted_len == 0 {
        return (0.0, 0.0, 0.0);
    }
    let overlap: usize = predicted
        .iter()
        .map(|(word, n)| (*n).min(reference.get(word).copied().unwrap_or(0)))
        .sum();
    let precision = overlap as f64 / predicted_len as f64;
    let recall = overlap as f64 / reference_len as f64;
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    (precision, recall, f1)
}

/// Whether `reference` has no tokens: any prediction with words then scores 0 against it.
pub(super) fn has_no_words(reference: &str) -> bool {
    bag(&reference.to_lowercase()).1 == 0
}

/// `evaluate.py`'s `snippet_check`: the share of `snippets` in `lower` (lower-cased text).
fn snippet_rate(lower: &str, snippets: &[String]) -> f64 {
    if snippets.is_empty() {
        return 1.0;
    }
    let found = snippets
        .iter()
        .filter(|snippet| lower.contains(&snippet.to_lowercase()))
        .count();
    found as f64 / snippets.len() as f64
}

/// One page's scores.
#[derive(Debug, Clone, Copy, Default)]
struct PageScore {
    precision: f64,
    recall: f64,
    f1: f64,
    with: f64,
    without: f64,
}

/// Means over a set of pages.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Means {
    pub(super) pages: usize,
    pub(super) precision: f64,
    pub(super) recall: f64,
    pub(super) f1: f64,
    /// Share of the `with` snippets found (higher is better).
    pub(super) with: f64,
    /// Share of the `without` snippets found (lower is better).
    pub(super) without: f64,
}

/// One extractor's scores over the pages it was given, what it could not read, and its time per
/// page.
#[derive(Default)]
pub(super) struct Scorecard {
    pages: Vec<(String, PageType, PageScore)>,
    /// Pages not read: id, and why.
    pub(super) unread: Vec<(String, String)>,
    times: Vec<Duration>,
}

impl Scorecard {
    /// Scores `read` (the text, or why there is none) against `truth`; `took` is the read's time.
    pub(super) fn add(&mut self, truth: &Truth, read: &Result<String, String>, took: Duration) {
        let text = match read {
            Ok(text) => text.as_str(),
            Err(why) => {
                self.unread.push((truth.id.clone(), why.clone()));
                ""
            }
        };
        let (precision, recall, f1) = word_f1(text, &truth.main_content);
        let lower = text.to_lowercase();
        let score = PageScore {
            precision,
            recall,
            f1,
            with: snippet_rate(&lower, &truth.with),
            without: snippet_rate(&lower, &truth.without),
        };
        self.pages.push((truth.id.clone(), truth.page_type, score));
        self.times.push(took);
    }

    fn means<'a>(scores: impl Iterator<Item = &'a PageScore>) -> Means {
        let mut sum = Means::default();
        for score in scores {
            sum.pages += 1;
            sum.precision += score.precision;
            sum.recall += score.recall;
            sum.f1 += score.f1;
            sum.with += score.with;
            sum.without += score.without;
        }
        let n = sum.pages.max(1) as f64;
        Means {
            pages: sum.pages,
            precision: sum.precision / n,
            recall: sum.recall / n,
            f1: sum.f1 / n,
            with: sum.with / n,
            without: sum.without / n,
        }
    }

    /// Means over every page.
    pub(super) fn overall(&self) -> Means {
        Self::means(self.pages.iter().map(|(_, _, score)| score))
    }

    /// Means over the pages of one type (`pages == 0`: none).
    pub(super) fn of_type(&self, page_type: PageType) -> Means {
        Self::means(
            self.pages
                .iter()
                .filter(|(_, t, _)| *t == page_type)
                .map(|(_, _, score)| score),
        )
    }

    /// The `n` pages of `page_type` with the lowest F1: id and F1.
    pub(super) fn worst(&self, page_type: PageType, n: usize) -> Vec<(&str, f64)> {
        let mut pages: Vec<(&str, f64)> = self
            .pages
            .iter()
            .filter(|(_, t, _)| *t == page_type)
            .map(|(id, _, score)| (id.as_str(), score.f1))
            .collect();
        pages.sort_by(|a, b| a.1.total_cmp(&b.1));
        pages.truncate(n);
        pages
    }

    /// The time per page at quantile `q` (nearest rank).
    pub(super) fn time_quantile(&self, q: f64) -> Duration {
        let mut sorted = self.times.clone();
        sorted.sort();
        let at = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted.get(at).copied().unwrap_or_default()
    }

    /// The mean time per page.
    pub(super) fn time_mean(&self) -> Duration {
        self.times.iter().sum::<Duration>() / (self.times.len().max(1) as u32)
    }
}
