//! A page as the shared tier keeps it: versioned JSON of the document and who read it (its record
//! stays with the replica that read it).

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::page::{ReadDone, ReadSource};
use super::record::ReadRecord;
use gateway_upstreams::reader::Document;

/// The first bytes of a page stored in the shared tier, then its version.
const MAGIC: &[u8; 4] = b"sxgp";
const VERSION: u8 = 1;

/// A page as the shared tier keeps it.
#[derive(Serialize, Deserialize)]
struct StoredPage {
    document: Document,
    source: ReadSource,
}

pub(super) fn encode(done: &ReadDone) -> Option<Bytes> {
    let mut blob = MAGIC.to_vec();
    blob.push(VERSION);
    serde_json::to_writer(
        &mut blob,
        &StoredPage {
            document: (*done.document).clone(),
            source: done.source,
        },
    )
    .ok()?;
    Some(Bytes::from(blob))
}

/// A page another replica read (its record stayed there); `None` for another version's blob.
pub(super) fn decode(blob: &[u8]) -> Option<ReadDone> {
    let rest = blob.strip_prefix(MAGIC.as_slice())?;
    let (&version, json) = rest.split_first()?;
    if version != VERSION {
        return None;
    }
    let stored: StoredPage = serde_json::from_slice(json).ok()?;
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
    fn another_version_or_another_blob_is_no_page() {
        let blob = encode(&done()).unwrap();
        let mut other_version = blob.to_vec();
        other_version[MAGIC.len()] = VERSION + 1;
        assert!(decode(&other_version).is_none());
        assert!(
            decode(b"sxgw\x02{}").is_none(),
            "an answer blob is not a page"
        );
        assert!(decode(&blob[..MAGIC.len()]).is_none());
    }
}
