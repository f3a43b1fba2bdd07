//! The words a passage or a query is matched on: Unicode words (UAX #29, through
//! `unicode-segmentation`), lower-cased (each word segmented once, handed to its counter without a
//! string of its own), cut where an identifier joins its words, without an English possessive, a
//! short list of English stop words, Markdown's backslash escapes and
//! the targets of Markdown links and images (`](https://…)`: a URL's pieces match every query
//! that names its host). No stemming, by measurement: Snowball English (`rust-stemmers`) on the
//! harness's passage row lost a question net (33 of 48 against 34) and took the ranking of a 50 kB
//! page from 2.6 to 4.3 ms at p50 (docs/src/benchmarks/reading.md). The identifier cut, the escapes and
//! the possessive found one more (40 of 48; 1.2 to 1.45 ms at p50).

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
///
/// Link targets go first; then Markdown's backslash escapes are undone (`zip\_longest` is the
/// page's `zip_longest`). Each Unicode word is then cut where an identifier joins its parts
/// ([`parts`]: `itertools.zip_longest` holds `itertools`, `zip` and `longest`, as a query's
/// `zip_longest` does) and loses an English possessive ending (`OpenAI's` is `openai`), as
/// Lucene's word-delimiter and English possessive filters do.
pub(super) fn each_term(text: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
    for part in without_link_targets(text) {
        let unescaped;
        let part = if part.contains('\\') {
            unescaped = without_escapes(part);
            unescaped.as_str()
        } else {
            part
        };
        for word in part.unicode_words() {
            for piece in parts(word) {
                let piece = without_possessive(piece);
                let term = if piece
                    .bytes()
                    .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
                {
                    scratch.clear();
                    scratch.extend(piece.chars().flat_map(char::to_lowercase));
                    scratch.as_str()
                } else {
                    piece
                };
                if !term.is_empty() && !is_stop_word(term) {
                    each(term);
                }
            }
        }
    }
}

/// `text` with each Markdown backslash escape (a backslash before ASCII punctuation) replaced by
/// the character it escapes.
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(char::is_ascii_punctuation) {
            continue;
        }
        out.push(c);
    }
    out
}

/// The pieces of one Unicode word that are words of their own: cut at each `_` (an identifier's
/// joint; one at either end is dropped), and at each `.` or `:` with a letter on both sides
/// (`itertools.zip`, `std::fs` — not `3.5` or `v1.2`, which stay whole).
fn parts(word: &str) -> impl Iterator<Item = &str> {
    let bytes = word.as_bytes();
    // `_`, `.` and `:` are ASCII: never inside a character of more than one byte.
    let is_joint = move |at: usize| match bytes[at] {
        b'_' => true,
        b'.' | b':' => {
            word[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_alphabetic)
                && word[at + 1..]
                    .chars()
                    .next()
                    .is_some_and(char::is_alphabetic)
        }
        _ => false,
    };
    let mut start = 0;
    let mut at = 0;
    std::iter::from_fn(move || {
        while at <= bytes.len() {
            let here = at;
            at += 1;
            if here == bytes.len() || is_joint(here) {
                let piece = &word[start..here];
                start = here + 1;
                if !piece.is_empty() {
                    return Some(piece);
                }
            }
        }
        None
    })
}

/// `word` without an English possessive `'s` (or `’s`) at its end.
fn without_possessive(word: &str) -> &str {
    for ending in ["'s", "'S", "\u{2019}s", "\u{2019}S"] {
        if let Some(stem) = word.strip_suffix(ending) {
            if !stem.is_empty() {
                return stem;
            }
        }
    }
    word
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
            ["café", "menu", "zürich", "3.5", "francs", "été"]
        );
        assert_eq!(
            terms("東京は日本の首都"),
            ["東", "京", "は", "日", "本", "の", "首", "都"]
        );
    }

    #[test]
    fn identifiers_are_cut_into_their_words_and_escapes_undone() {
        assert_eq!(
            terms(r"itertools.zip\_longest(*\*iterables*) and `zip_longest()`"),
            ["itertools", "zip", "longest", "iterables", "zip", "longest"]
        );
        assert_eq!(
            terms("std::fs::read_to_string, Node.js 3.5 v1.2 __init__ e.g. ٣.٥"),
            ["std", "fs", "read", "string", "node", "js", "3.5", "v1.2", "init", "e", "g", "٣.٥"]
        );
        assert_eq!(
            terms(r"[x\_y](https://x.example/c_d) \[e\]\(f\)"),
            ["x", "y", "e", "f"],
            "a link's target goes before escapes are undone; an escaped bracket is text"
        );
        assert_eq!(
            terms("OpenAI's spec, the user\u{2019}s guide, don't"),
            ["openai", "spec", "user", "guide", "don't"]
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
        assert!(is_stop_word("the") && !is_stop_word("thens") && !is_stop_word("thé"));
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
