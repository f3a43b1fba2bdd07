//! The frames between the gateway and a parse worker, over the worker's stdin and stdout: a job is
//! a length-prefixed JSON header and the length-prefixed body; a reply is one length-prefixed JSON
//! value. Lengths are little-endian `u32`, each checked against a cap before anything is
//! allocated, so a confused or hostile peer cannot make the other side allocate more than a page.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::super::{Document, ReadFailure, Wall};
use gateway_core::request::ReadFormat;

/// A header or a reply is at most this long (a reply carries the page's text: at most the body cap
/// of 16 MiB, escaped as JSON).
pub(super) const MAX_FRAME: usize = 64 * 1024 * 1024;

/// What a worker is asked to parse, besides the body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobHeader {
    /// The URL that was asked for.
    pub(crate) url: String,
    /// Where the page was read from, after redirects.
    pub(crate) final_url: String,
    /// Its `Content-Type` header, if any.
    pub(crate) content_type: Option<String>,
    /// The format asked for.
    pub(crate) format: ReadFormat,
}

/// What a worker answers: the document or why the page has none. Only failures a parse can give
/// cross this line; anything else is the worker's bug and reads as `internal_error`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum Reply {
    Document(Box<Document>),
    InvalidUrl,
    UnsupportedContentType,
    Blocked(Wall),
    NoReadableText,
    UnreadablePdf,
    TooDeep,
}

impl From<Result<Document, ReadFailure>> for Reply {
    fn from(result: Result<Document, ReadFailure>) -> Self {
        match result {
            Ok(document) => Self::Document(Box::new(document)),
            Err(ReadFailure::InvalidUrl) => Self::InvalidUrl,
            Err(ReadFailure::UnsupportedContentType) => Self::UnsupportedContentType,
            Err(ReadFailure::Blocked(wall)) => Self::Blocked(wall),
            Err(ReadFailure::UnreadablePdf) => Self::UnreadablePdf,
            Err(ReadFailure::TooComplex(super::ParseLimit::Nesting)) => Self::TooDeep,
            Err(_) => Self::NoReadableText,
        }
    }
}

impl From<Reply> for Result<Document, ReadFailure> {
    fn from(reply: Reply) -> Self {
        match reply {
            Reply::Document(document) => Ok(*document),
            Reply::InvalidUrl => Err(ReadFailure::InvalidUrl),
            Reply::UnsupportedContentType => Err(ReadFailure::UnsupportedContentType),
            Reply::Blocked(wall) => Err(ReadFailure::Blocked(wall)),
            Reply::NoReadableText => Err(ReadFailure::NoReadableText),
            Reply::UnreadablePdf => Err(ReadFailure::UnreadablePdf),
            Reply::TooDeep => Err(ReadFailure::TooComplex(super::ParseLimit::Nesting)),
        }
    }
}

/// Writes one frame.
pub(super) async fn write_frame<W: AsyncWrite + Unpin>(
    out: &mut W,
    bytes: &[u8],
) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|len| *len as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "frame too long"))?;
    out.write_all(&len.to_le_bytes()).await?;
    out.write_all(bytes).await
}

/// Reads one frame; `Ok(None)` at a clean end of the stream.
pub(super) async fn read_frame<R: AsyncRead + Unpin>(
    input: &mut R,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len).await {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "frame too long",
        ));
    }
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes).await?;
    Ok(Some(bytes))
}
