//! A page as the shared tier keeps it: the document and who read it (its record stays with the
//! replica that read it), as compressed JSON (`crate::packed`). Pages written before as plain
//! JSON (version 1) are still read; a replica of before takes a compressed page for a miss and
//! reads the page itself.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::page::{ReadDone, ReadSource};
use super::record::ReadRecord;
use crate::packed;
use gateway_upstreams::reader::Document;

/// The first bytes of a page stored in the shared tier, then its version.
const MAGIC: &[u8; 4] = b"sxgp";

/// A page as the shared tier keeps it.
#[derive(Deserialize)]
struct StoredPage {
    document: Document,
    source: ReadSource,
}

/// [`StoredPage`] as written, borrowing the document.
#[derive(Serialize)]
struct StoredPageOf<'a> {
    document: &'a Document,
    source: ReadSource,
}

pub(super) fn encode(done: &ReadDone) -> Option<Bytes> {
    let page = StoredPageOf {
        document: &done.document,
        source: done.source,
    };
    Some(Bytes::from(packed::pack(MAGIC, &page)))
}

/// A page another replica read (its record stayed there); `None` for another version's blob.
pub(super) fn decode(blob: &[u8]) -> Option<ReadDone> {
    let stored: StoredPage = packed::unpack(MAGIC, blob)?;
    Some(ReadDone {
        document: Arc::new(stored.document),
        source: stored.source,
        record: Arc::new(ReadRecord::default()),
        premium_calls: 0,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::request::ReadFormat;

    fn done() -> ReadDone {
        ReadDone {
            document: Arc::new(Document {
                url: "https://example.org/".into(),
                final_url: "https://example.org/".into(),
                title: Some("Example".into()),
                bytes_read: 5,
                content: "hello".into(),
                format: ReadFormat::Text,
                published: None,
                language: None,
                author: None,
                site_name: None,
                images: Vec::new(),
                links: Vec::new(),
                content_type: "text/plain".into(),
            }),
            source: ReadSource::Jina,
            record: Arc::new(ReadRecord::default()),
            premium_calls: 2,
        }
    }

    #[test]
    fn a_stored_page_comes_back_with_its_source_and_costs_the_reader_nothing() {
        let back = decode(&encode(&done()).unwrap()).unwrap();
        assert_eq!(back.document.content, "hello");
        assert_eq!(back.source, ReadSource::Jina);
        assert_eq!(back.premium_calls, 0, "another replica paid for it");
    }

    #[test]
    fn a_page_is_kept_compressed_and_a_plain_page_of_before_is_still_read() {
        let mut page = done();
        let text = "A paragraph of the page, and another like it. ".repeat(400);
        Arc::make_mut(&mut page.document).content = text.clone();
        let blob = encode(&page).unwrap();
        assert_eq!(blob[MAGIC.len()], packed::PACKED);
        assert!(blob.len() < text.len() / 4, "{} bytes", blob.len());
        assert_eq!(decode(&blob).unwrap().document.content, text);
        let mut plain = MAGIC.to_vec();
        plain.push(packed::PLAIN);
        let json = StoredPageOf {
            document: &done().document,
            source: ReadSource::Direct,
        };
        plain.extend(serde_json::to_vec(&json).unwrap());
        let back = decode(&plain).unwrap();
        assert_eq!(back.document.content, "hello");
        assert_eq!(back.source, ReadSource::Direct);
    }

    #[test]
    fn another_version_or_another_blob_is_no_page() {
        let blob = encode(&done()).unwrap();
        let mut other_version = blob.to_vec();
        other_version[MAGIC.len()] = packed::PACKED + 1;
        assert!(decode(&other_version).is_none());
        assert!(
            decode(b"sxgw\x02{}").is_none(),
            "an answer blob is not a page"
        );
        assert!(decode(&blob[..MAGIC.len()]).is_none());
    }
}
