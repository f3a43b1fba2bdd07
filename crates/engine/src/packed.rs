//! JSON blobs as the engine keeps them outside the process — a crawl's pages and failures in the
//! shared tier and under `STATE_DIR` (`crawl::record`), a read page in the shared tier
//! (`read::stored`): four bytes naming what the blob holds, a version byte, then zstd-compressed
//! JSON ([`PACKED`]) or, as written before, plain JSON ([`PLAIN`]: still read, a fleet being
//! upgraded has both). A page's text is a third of its JSON or less once compressed, and Redis
//! copies and keeps every byte. Decompression stops at [`MAX_JSON`].

use std::cell::RefCell;
use std::io::Read as _;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Blobs written now: zstd-compressed JSON.
pub(crate) const PACKED: u8 = 2;
/// Blobs of the first version, plain JSON.
pub(crate) const PLAIN: u8 = 1;
/// zstd's fastest level but one: compresses text about 3× at a few hundred MB/s.
const LEVEL: i32 = 1;
/// The most bytes a blob's JSON may take once decompressed (a page is at most `FETCH_MAX_BYTES`
/// of HTML; what is kept of it is less).
const MAX_JSON: u64 = 256 << 20;

/// `value` as a blob named `magic`: compressed, or plain JSON if zstd refused (it allocates).
pub(crate) fn pack<T: Serialize + ?Sized>(magic: &[u8; 4], value: &T) -> Vec<u8> {
    thread_local! {
        /// This thread's compression context: making one allocates and clears about a megabyte.
        static PACKER: RefCell<Option<zstd::bulk::Compressor<'static>>> =
            RefCell::new(zstd::bulk::Compressor::new(LEVEL).ok());
    }
    // Serialising owned strings and documents to a vector cannot fail.
    let json = serde_json::to_vec(value).unwrap_or_default();
    let packed = PACKER.with(|packer| {
        packer
            .borrow_mut()
            .as_mut()
            .and_then(|packer| packer.compress(&json).ok())
    });
    let mut blob =
        Vec::with_capacity(magic.len() + 1 + packed.as_ref().map_or(json.len(), Vec::len));
    blob.extend_from_slice(magic);
    match packed {
        Some(packed) => {
            blob.push(PACKED);
            blob.extend_from_slice(&packed);
        }
        None => {
            blob.push(PLAIN);
            blob.extend_from_slice(&json);
        }
    }
    blob
}

/// The value of a blob named `magic`, of either version; `None` for another name, another
/// version, or bytes that do not decode.
pub(crate) fn unpack<T: DeserializeOwned>(magic: &[u8; 4], blob: &[u8]) -> Option<T> {
    let rest = blob.strip_prefix(magic.as_slice())?;
    let (&version, body) = rest.split_first()?;
    match version {
        PLAIN => serde_json::from_slice(body).ok(),
        PACKED => {
            let mut json = Vec::new();
            zstd::stream::read::Decoder::with_buffer(body)
                .ok()?
                .take(MAX_JSON)
                .read_to_end(&mut json)
                .ok()?;
            serde_json::from_slice(&json).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MAGIC: &[u8; 4] = b"sxgt";

    #[test]
    fn text_is_kept_compressed_and_plain_blobs_are_still_read() {
        let text = "A paragraph of the page, and another like it. ".repeat(400);
        let blob = pack(MAGIC, &text);
        assert_eq!(blob[4], PACKED);
        assert!(
            blob.len() < text.len() / 4,
            "{} bytes kept for {} of text",
            blob.len(),
            text.len()
        );
        assert_eq!(unpack::<String>(MAGIC, &blob).unwrap(), text);
        let mut plain = MAGIC.to_vec();
        plain.push(PLAIN);
        plain.extend(br#""old""#);
        assert_eq!(unpack::<String>(MAGIC, &plain).unwrap(), "old");
    }

    #[test]
    fn another_name_another_version_or_broken_bytes_are_nothing() {
        let blob = pack(MAGIC, &"a value".to_owned());
        assert!(unpack::<String>(b"sxgx", &blob).is_none());
        let mut other = blob.clone();
        other[4] = PACKED + 1;
        assert!(unpack::<String>(MAGIC, &other).is_none());
        let mut broken = blob.clone();
        broken.truncate(blob.len() / 2);
        assert!(unpack::<String>(MAGIC, &broken).is_none());
        assert!(unpack::<String>(MAGIC, &blob[..4]).is_none());
    }
}
