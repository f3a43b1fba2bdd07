//! The words a passage or a query is matched on: Unicode words (UAX #29, through
//! `unicode-segmentation`), lower-cased (each word segmented once, handed to its counter without a
//! string of its own), without a short list of English stop words and without
//! the targets of Markdown links and images (`](https://…)`: a URL's pieces match every query
//! that names its host). No stemming, by measurement: Snowball English (`rust-stemmers`) on the
//! harness's passage row lost a question net (33 of 48 against 34) and took the ranking of a 50 kB
//! page from 2.6 to 4.3 ms at p50 (docs/src/benchmarks/reading.md).

use unicode_segmentation::UnicodeSegmentation;

/// Words too common to tell passages apart (English; other languages' stop words are common
/// enough in a page of their own language that BM25's IDF discounts them). Sorted: looked up by
/// binary search.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he",
    "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of",
    "on", "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "too", "us", "was", "we", "were", "what", "when",
    "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// Calls `each` with each of `text`'s terms, in order (repeats kept: BM25 counts them), without
/// a string per term: a term that needs lower-casing is written into `scratch`.
pub(super) fn each_term(text: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
    for part in without_link_targets(text) {
        for word in part.unicode_words() {
            let term = if word
                .bytes()
                .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
            {
                scratch.clear();
                scratch.extend(word.chars().flat_map(char::to_lowercase));
                scratch.as_str()
            } else {
                word
            };
            if !is_stop_word(term) {
                each(term);
            }
        }
    }
}

/// [`STOP_WORDS`] as [`key`]s, in the same (sorted) order.
const STOP_KEYS: [u64; STOP_WORDS.len()] = {
    let mut keys = [0; STOP_WORDS.len()];
    let mut i = 0;
    while i < keys.len() {
        keys[i] = key(STOP_WORDS[i]);
        i += 1;
    }
    keys
};

/// A word of at most eight bytes as a number that sorts as the word does (its bytes from the most
/// significant down, zeros after): one comparison instead of a string's.
const fn key(word: &str) -> u64 {
    let bytes = word.as_bytes();
    let mut key = 0u64;
    let mut i = 0;
    while i < 8 {
        key <<= 8;
        if i < bytes.len() {
            key |= bytes[i] as u64;
        }
        i += 1;
    }
    key
}

/// Whether `term` is one of [`STOP_WORDS`] (none is longer than five bytes: most words are
/// told apart by their length alone).
fn is_stop_word(term: &str) -> bool {
    term.len() <= 5 && STOP_KEYS.binary_search(&key(term)).is_ok()
}

/// `text`'s terms, in order (repeats kept: BM25 counts them).
pub(super) fn terms(text: &str) -> Vec<String> {
    let mut all = Vec::new();
    each_term(text, &mut String::new(), |term| all.push(term.to_owned()));
    all
}

/// `text` without the `(target)` of each `[label](target)`: the pieces between them.
fn without_link_targets(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut piece = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..].iter().position(|b| *b == b']') {
        let close = at + found;
        at = close + 1;
        if bytes.get(at) != Some(&b'(') {
            continue;
        }
        parts.push(&text[piece..close]);
        let target = at + 1;
        match bytes[target..].iter().position(|b| *b == b')') {
            Some(end) => {
                piece = target + end + 1;
                at = piece;
            }
            None => {
                piece = target;
                break;
            }
        }
    }
    parts.push(&text[piece..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lower_cased_unicode_words_without_stop_words() {
        assert_eq!(
            terms("The Café's  MENU, in Zürich: 3.5 francs — and ÉTÉ!"),
            ["café's", "menu", "zürich", "3.5", "francs", "été"]
        );
        assert_eq!(
            terms("東京は日本の首都"),
            ["東", "京", "は", "日", "本", "の", "首", "都"]
        );
    }

    #[test]
    fn the_stop_words_are_sorted_and_short_for_the_lookup() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| w.len() <= 5));
        assert!(
            STOP_KEYS.windows(2).all(|k| k[0] < k[1]),
            "keys sort as words"
        );
        assert!(is_stop_word("the") && !is_stop_word("then's") && !is_stop_word("thé"));
    }

    #[test]
    fn link_targets_are_not_words() {
        assert_eq!(
            terms("See [the docs](https://docs.example.com/install) and ![logo](/a.png) now"),
            ["see", "docs", "logo", "now"]
        );
        assert_eq!(
            terms("a] b [c](unclosed target"),
            ["b", "c", "unclosed", "target"],
            "no link without its closing parenthesis"
        );
    }
}
