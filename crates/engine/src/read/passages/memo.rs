//! [`Splits`]: a read page's split kept with the page, so the next query on a page the cache holds
//! costs its scoring (and a copy of the kept passages), not a second split (#41 point 4; the split
//! was 0.2–0.55 ms of a 50 kB page's 1.2–1.5 ms ranking).
//!
//! Owns: one split per live document — keyed by its document's allocation, kept only while that
//! document is (held by the page cache, or by a request still using it), the length asked last (a
//! page is cut to another length only when a door asks for one: Tavily's and MCP's 500, Exa's
//! highlight length). What it may hold is bounded in bytes, as the page cache is
//! (`FETCH_CACHE_BYTES`, so pages and their splits take at most twice that): a split that would
//! pass the bound is not kept, and splits of passages shorter than [`MIN_CHARS`] never are (a split
//! of one-character passages weighs some 60 times its text); neither pushes out the page's kept
//! split. A dropped document's split goes at the next insertion, or with `purge_cache`.
//!
//! Hand-written, and why: the key is a document's identity, not its value (two reads of one URL
//! are two documents, and a value key would hash 50 kB of text per query), and an entry must end
//! with its document; the gateway's caches (`AnswerCache`, over the `lru` crate) key by value and
//! end by size or time. A [`Weak`] to the document is the key's proof: while it is held, the
//! allocation cannot be reused by another document, and it upgrades only while the document lives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use gateway_upstreams::reader::Document;

use super::split::{split, Passage};

/// Passages shorter than this are cut afresh for each query, never kept.
const MIN_CHARS: usize = 100;

/// What one passage weighs beyond its text: the `String` and the heading path's `Arc`.
const PASSAGE_OVERHEAD: usize = 64;

/// The splits of live documents, shared by every request of a process. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Splits {
    inner: Arc<Mutex<Memo>>,
}

#[derive(Debug)]
struct Memo {
    /// By the document's address.
    kept: HashMap<usize, Kept>,
    /// What the kept splits weigh together, and at most.
    bytes: usize,
    max_bytes: usize,
    /// Splits made (not found kept): what the tests count.
    made: u64,
}

/// One kept split, with its document (the proof the address is still that document's).
#[derive(Debug)]
struct Kept {
    document: Weak<Document>,
    max_chars: usize,
    passages: Arc<[Passage]>,
    bytes: usize,
}

impl Splits {
    /// Splits weighing at most `max_bytes` together (the page cache's `FETCH_CACHE_BYTES`; 0
    /// keeps none).
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Memo {
                kept: HashMap::new(),
                bytes: 0,
                max_bytes,
                made: 0,
            })),
        }
    }

    /// `document`'s text cut into passages of at most `max_chars`: the kept split when this
    /// document was last cut to that length, else cut now (and kept, within the bounds).
    pub(crate) fn of(&self, document: &Arc<Document>, max_chars: usize) -> Arc<[Passage]> {
        let key = Arc::as_ptr(document) as usize;
        if let Some(kept) = self.lock().kept.get(&key) {
            // The caller holds `document`: an entry at its address is its own.
            if kept.max_chars == max_chars {
                return Arc::clone(&kept.passages);
            }
        }
        // Cut outside the lock: another request may cut the same page meanwhile (both cuts are
        // the same; the later one is kept).
        let passages: Arc<[Passage]> = split(&document.content, max_chars).into();
        let bytes = passages
            .iter()
            .map(|p| p.text.len() + PASSAGE_OVERHEAD)
            .sum::<usize>();
        let gone = {
            let mut memo = self.lock();
            memo.made += 1;
            let mut gone: Vec<Kept> = memo
                .kept
                .extract_if(|_, kept| kept.document.strong_count() == 0)
                .map(|(_, kept)| kept)
                .collect();
            memo.bytes -= gone.iter().map(|kept| kept.bytes).sum::<usize>();
            // This document's split of another length gives way only to one that is kept.
            let replaced = memo.kept.get(&key).map_or(0, |kept| kept.bytes);
            if max_chars >= MIN_CHARS
                && memo.max_bytes > 0
                && memo.bytes - replaced + bytes <= memo.max_bytes
            {
                if let Some(old) = memo.kept.remove(&key) {
                    memo.bytes -= old.bytes;
                    gone.push(old);
                }
                memo.bytes += bytes;
                let kept = Kept {
                    document: Arc::downgrade(document),
                    max_chars,
                    passages: Arc::clone(&passages),
                    bytes,
                };
                memo.kept.insert(key, kept);
            }
            gone
        };
        // Dropped without the lock: a large page's passages take a while to free.
        drop(gone);
        passages
    }

    /// Drops every kept split (the page cache purged).
    pub(crate) fn clear(&self) {
        let gone = {
            let mut memo = self.lock();
            memo.bytes = 0;
            std::mem::take(&mut memo.kept)
        };
        drop(gone);
    }

    /// Splits made so far (not found kept).
    #[cfg(test)]
    pub(crate) fn made(&self) -> u64 {
        self.lock().made
    }

    /// Splits kept now, and what they weigh.
    #[cfg(test)]
    fn kept(&self) -> (usize, usize) {
        let memo = self.lock();
        (memo.kept.len(), memo.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        // A panic while holding it leaves a map that is still whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;

    /// A Markdown document of `content` (the engine's tests read one too).
    pub(crate) fn document(content: &str) -> Arc<Document> {
        Arc::new(Document {
            url: "https://example.com/".into(),
            final_url: "https://example.com/".into(),
            title: None,
            content: content.into(),
            format: ReadFormat::Markdown,
            published: None,
            language: None,
            author: None,
            site_name: None,
            images: Vec::new(),
            links: Vec::new(),
            content_type: "text/html".into(),
            bytes_read: 0,
        })
    }

    const PAGE: &str = "# Title\n\nOne paragraph of the page.\n\nAnother paragraph of it.";

    #[test]
    fn a_document_is_split_once_while_it_lives_and_asked_the_same_length() {
        let splits = Splits::new(1 << 20);
        let page = document(PAGE);
        let first = splits.of(&page, 500);
        let again = splits.of(&page, 500);
        assert!(Arc::ptr_eq(&first, &again), "the kept split");
        assert_eq!(splits.made(), 1);
        let other = splits.of(&page, 200);
        assert_eq!(splits.made(), 2, "another length is another split");
        assert_eq!(splits.kept().0, 1, "one kept per document: the last length");
        assert!(Arc::ptr_eq(&other, &splits.of(&page, 200)));
        // The same text in another document is another page.
        let twin = document(&page.content);
        let _ = splits.of(&twin, 500);
        assert_eq!(splits.made(), 3);
        assert_eq!(splits.kept().0, 2);
    }

    #[test]
    fn a_split_goes_with_its_document_or_the_purge() {
        let splits = Splits::new(1 << 20);
        let page = document("Some text.");
        let _ = splits.of(&page, 500);
        assert_eq!(splits.kept().0, 1);
        drop(page);
        let other = document("Other text.");
        let passages = splits.of(&other, 500);
        assert_eq!(splits.kept().0, 1, "the dropped page's split went");
        assert_eq!(passages[0].text, "Other text.");
        splits.clear();
        assert_eq!(splits.kept(), (0, 0));
    }

    #[test]
    fn what_is_kept_stays_within_its_bytes_and_short_passages_are_never_kept() {
        let page = document(PAGE);
        let one = Splits::new(1 << 20);
        let _ = one.of(&page, 500);
        let weight = one.kept().1;
        assert!(weight > PAGE.len() / 2, "{weight}");

        let tight = Splits::new(weight - 1);
        let _ = tight.of(&page, 500);
        let _ = tight.of(&page, 500);
        assert_eq!(tight.kept(), (0, 0), "over the bound: not kept");
        assert_eq!(tight.made(), 2);

        let short = Splits::new(1 << 20);
        let kept = short.of(&page, 500);
        let cut = short.of(&page, 5);
        assert!(cut.len() > 5);
        assert_eq!(short.kept(), (1, weight), "one-word passages are not kept");
        assert!(
            Arc::ptr_eq(&kept, &short.of(&page, 500)),
            "nor do they push out the split that is kept"
        );

        let none = Splits::new(0);
        let _ = none.of(&document(""), 500);
        assert_eq!(none.kept(), (0, 0), "0 keeps none");
    }
}
