//! [`Splits`]: each read page's split kept with the page, so the second query on a page the cache
//! holds costs its ranking only, not a second split (#41 point 4; the split was a third of a
//! 50 kB page's ranking time).
//!
//! Owns: the splits of the documents still alive — each keyed by its document's allocation and
//! the passage length it was cut to, and kept only while that document is (it is held by the page
//! cache, or by a request still using it): a document dropped from the cache takes its split
//! with it at the next insertion. A page from the Redis tier is a new document in this process
//! and is split once here.
//!
//! Hand-written, and why: the key is a document's identity, not its value (two reads of one URL
//! are two documents, and a value key would hash 50 kB of text per query), and an entry must end
//! with its document; the caches in the tree (`moka`) key by value and end by time or size. A
//! [`Weak`] to the document is the key's proof: while it is held the allocation cannot be reused
//! by another document, and it upgrades only while the document lives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use gateway_upstreams::reader::Document;

use super::split::{split, Passage};

/// Splits kept at most (a bound for a cache without a byte weigher: the page cache holds fewer
/// documents than this in any setting seen).
const MAX_SPLITS: usize = 4096;

/// The splits of live documents, shared by every request of a process. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Splits {
    inner: Arc<Mutex<Memo>>,
}

/// What a split is kept by: its document's address, and the passages' length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    document: usize,
    max_chars: usize,
}

/// One kept split, with its document (the proof the address is still that document's).
#[derive(Debug)]
struct Kept {
    document: Weak<Document>,
    passages: Arc<[Passage]>,
}

#[derive(Debug, Default)]
struct Memo {
    kept: HashMap<Key, Kept>,
    /// Splits made (not found kept): what the tests count.
    made: u64,
}

impl Splits {
    /// `document`'s text cut into passages of at most `max_chars`: the kept split when this
    /// document was cut to that length before, else cut now and kept while it lives.
    pub(crate) fn of(&self, document: &Arc<Document>, max_chars: usize) -> Arc<[Passage]> {
        let key = Key {
            document: Arc::as_ptr(document) as usize,
            max_chars,
        };
        if let Some(kept) = self
            .lock()
            .kept
            .get(&key)
            .filter(|kept| kept.document.strong_count() > 0)
        {
            return Arc::clone(&kept.passages);
        }
        // Cut outside the lock: another request may cut the same page meanwhile (both cuts are
        // the same; the later one is kept).
        let passages: Arc<[Passage]> = split(&document.content, max_chars).into();
        let mut memo = self.lock();
        memo.made += 1;
        memo.kept.retain(|_, kept| kept.document.strong_count() > 0);
        if memo.kept.len() < MAX_SPLITS {
            memo.kept.insert(
                key,
                Kept {
                    document: Arc::downgrade(document),
                    passages: Arc::clone(&passages),
                },
            );
        }
        passages
    }

    /// Splits made so far (not found kept).
    #[cfg(test)]
    pub(crate) fn made(&self) -> u64 {
        self.lock().made
    }

    /// Splits kept now.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().kept.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        // A panic while holding it leaves a map that is still whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;

    fn document(content: &str) -> Arc<Document> {
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

    #[test]
    fn a_document_is_split_once_per_length_while_it_lives() {
        let splits = Splits::default();
        let page = document("# Title\n\nOne paragraph.\n\nAnother paragraph.");
        let first = splits.of(&page, 500);
        let again = splits.of(&page, 500);
        assert!(Arc::ptr_eq(&first, &again), "the kept split");
        assert_eq!(splits.made(), 1);
        let shorter = splits.of(&page, 10);
        assert_eq!(splits.made(), 2, "another length is another split");
        assert!(shorter.len() > first.len());
        // The same text in another document is another page.
        let twin = document(&page.content);
        let _ = splits.of(&twin, 500);
        assert_eq!(splits.made(), 3);
    }

    #[test]
    fn a_split_goes_with_its_document() {
        let splits = Splits::default();
        let page = document("Some text.");
        let _ = splits.of(&page, 500);
        assert_eq!(splits.kept(), 1);
        drop(page);
        let other = document("Other text.");
        let passages = splits.of(&other, 500);
        assert_eq!(splits.kept(), 1, "the dropped page's split went");
        assert_eq!(passages[0].text, "Other text.");
    }
}
