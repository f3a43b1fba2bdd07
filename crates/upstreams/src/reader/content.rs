//! What a page is: its media type, from `Content-Type` (or, without one, from its first bytes),
//! and its text in the right character encoding. The charset comes from the header, then a byte
//! order mark, then (HTML) a `<meta charset>` or `<meta http-equiv="Content-Type">` in the first
//! kilobyte, else UTF-8; bytes that do not fit it become U+FFFD, never a panic. Decoding is
//! `encoding_rs` (the WHATWG encodings a browser knows).

use encoding_rs::{Encoding, UTF_8};

/// The kinds of page the reader turns into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML or XHTML: the readable article is extracted.
    Html,
    /// Plain text, as it is.
    Plain,
    /// Markdown, as it is.
    Markdown,
    /// JSON, as text.
    Json,
    /// XML (RSS, Atom, …), as text.
    Xml,
    /// PDF: its text.
    Pdf,
}

/// The media type of `content_type` (`None`: not one the reader reads).
pub(crate) fn kind_of(content_type: Option<&str>, body: &[u8]) -> Option<Kind> {
    let Some(declared) = content_type else {
        return Some(sniff(body));
    };
    let essence = essence(declared);
    Some(match essence.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "text/plain" | "" => Kind::Plain,
        "text/markdown" | "text/x-markdown" => Kind::Markdown,
        "application/json" | "text/json" => Kind::Json,
        "application/xml" | "text/xml" => Kind::Xml,
        "application/pdf" | "application/x-pdf" => Kind::Pdf,
        other if other.ends_with("+json") => Kind::Json,
        other if other.ends_with("+xml") => Kind::Xml,
        _ => return None,
    })
}

/// The media type without parameters, lower-case (`text/html; charset=UTF-8` → `text/html`).
pub(crate) fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// A page without `Content-Type`: PDF by its magic bytes, HTML when it opens with markup.
fn sniff(body: &[u8]) -> Kind {
    if body.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |at| &body[at..]);
    let head = start[..start.len().min(64)].to_ascii_lowercase();
    if head.starts_with(b"<!doctype html")
        || head.starts_with(b"<html")
        || head.starts_with(b"<head")
    {
        Kind::Html
    } else {
        Kind::Plain
    }
}

/// The `charset` parameter of a `Content-Type`, if any.
fn header_charset(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']))
    })
}

/// The charset an HTML page declares in its first kilobyte, if any.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(at) = tag.find("charset") {
            let value = tag[at + 7..]
                .trim_start()
                .strip_prefix('=')
                .map(|v| v.trim_start().trim_start_matches(['"', '\'']))
                .unwrap_or("");
            let label: String = value
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
                .collect();
            if let Some(encoding) = Encoding::for_label(label.as_bytes()) {
                return Some(encoding);
            }
        }
    }
    None
}

/// `body` as text, in the encoding its header, byte order mark or (HTML) meta tag names.
pub(crate) fn decode(body: &[u8], content_type: Option<&str>, kind: Kind) -> String {
    let declared = content_type
        .and_then(header_charset)
        .and_then(|label| Encoding::for_label(label.as_bytes()));
    let encoding = match Encoding::for_bom(body) {
        Some((bom, _)) => bom,
        None => declared
            .or_else(|| (kind == Kind::Html).then(|| meta_charset(body)).flatten())
            .unwrap_or(UTF_8),
    };
    // A page that says UTF-16 in its meta tag is ASCII-compatible bytes: WHATWG reads it as UTF-8.
    let encoding = encoding.output_encoding();
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_read_from_the_header_and_sniffed_without_one() {
        let k = |ct: Option<&str>, body: &[u8]| kind_of(ct, body);
        assert_eq!(k(Some("text/html; charset=utf-8"), b""), Some(Kind::Html));
        assert_eq!(k(Some("TEXT/HTML"), b""), Some(Kind::Html));
        assert_eq!(k(Some("application/xhtml+xml"), b""), Some(Kind::Html));
        assert_eq!(k(Some("text/markdown"), b""), Some(Kind::Markdown));
        assert_eq!(k(Some("application/ld+json"), b""), Some(Kind::Json));
        assert_eq!(k(Some("application/rss+xml"), b""), Some(Kind::Xml));
        assert_eq!(k(Some("application/pdf"), b""), Some(Kind::Pdf));
        assert_eq!(k(Some("image/png"), b""), None);
        assert_eq!(k(Some("application/octet-stream"), b"%PDF-1.4"), None);
        assert_eq!(k(None, b"%PDF-1.7\n"), Some(Kind::Pdf));
        assert_eq!(k(None, b"\n <!DOCTYPE html><p>x"), Some(Kind::Html));
        assert_eq!(k(None, b"just words"), Some(Kind::Plain));
    }

    #[test]
    fn the_charset_comes_from_the_header_then_the_bom_then_the_meta_tag() {
        let latin1 = b"<html><head><meta charset=\"iso-8859-1\"></head><p>caf\xe9</p>";
        assert!(decode(latin1, Some("text/html"), Kind::Html).contains("café"));
        let http_equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><p>\x93quoted\x94";
        assert!(decode(http_equiv, None, Kind::Html).contains("\u{201c}quoted\u{201d}"));
        // The header wins over the meta tag.
        let body = b"<meta charset=utf-8><p>caf\xe9";
        assert!(decode(body, Some("text/html; charset=latin1"), Kind::Html).contains("café"));
        let bom = b"\xef\xbb\xbfcaf\xc3\xa9";
        assert_eq!(
            decode(bom, Some("text/plain; charset=latin1"), Kind::Plain),
            "café"
        );
    }

    #[test]
    fn bytes_that_do_not_fit_the_charset_become_replacement_characters() {
        let wrong = b"<p>caf\xe9 \xff\xfe\x80</p>";
        let text = decode(wrong, Some("text/html; charset=utf-8"), Kind::Html);
        assert!(text.contains('\u{fffd}'), "{text}");
        assert_eq!(decode(b"", None, Kind::Plain), "");
        let unknown = decode(
            b"plain",
            Some("text/plain; charset=no-such-charset"),
            Kind::Plain,
        );
        assert_eq!(unknown, "plain");
    }
}
