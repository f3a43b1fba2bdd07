//! A PDF's text, with `pdf-extract` (pure Rust, on `lopdf`): the text of every page in reading
//! order, as plain text (the same in Markdown). A PDF is arbitrary bytes from outside: a parser
//! that panics on one (malformed streams, cycles in the object graph) is caught here and the read
//! fails as `unreadable_pdf`, never the process. The caller runs this on a blocking thread.

use super::extract::tidy;
use super::ReadFailure;

/// The text of the PDF in `body`, its whitespace tidied (runs of blank lines collapsed).
pub(crate) fn text(body: &[u8]) -> Result<String, ReadFailure> {
    let extracted = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(body));
    match extracted {
        Ok(Ok(text)) => Ok(tidy(&text)),
        Ok(Err(_)) | Err(_) => Err(ReadFailure::UnreadablePdf),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_pdfs_fail_as_unreadable_without_a_panic() {
        for body in [
            &b""[..],
            b"%PDF-1.4\n",
            b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
            b"not a pdf at all",
        ] {
            assert_eq!(text(body), Err(ReadFailure::UnreadablePdf));
        }
    }
}
