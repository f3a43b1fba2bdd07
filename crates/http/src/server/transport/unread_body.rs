//! Whether a request's body was read to its end by the time its answer leaves, and
//! `Connection: close` on an answer given without it.
//!
//! A refusal often comes before the body is read: a missing or wrong key (the gate answers from
//! the head), a head over `MAX_URL_BYTES` or `MAX_HEADER_BYTES`. hyper cannot keep such a
//! connection alive — after the answer it drains what of the body has already arrived and closes
//! otherwise — but its answer, written before it finds out, does not say so. A client then puts
//! the connection back in its pool and may send its next request into the close ("Server
//! disconnected without sending a response": the MCP SDK's OAuth client, whose first `POST /mcp`
//! gets its 401 and whose next request went out on the same connection). With the header the
//! client opens a new connection instead, and hyper closes this one after the answer. A request
//! without a body, or whose body was read, keeps its connection.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{header, HeaderValue, Request};
use axum::response::Response;
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

pin_project_lite::pin_project! {
    /// A request's body, telling its [`BodyWatch`] when it has been read to the end.
    pub(crate) struct WatchedBody {
        #[pin]
        inner: Incoming,
        // `None` for a body empty from the start: nothing to watch, nothing allocated.
        read_to_end: Option<Arc<AtomicBool>>,
    }
}

/// What the answer needs to know about its request's body.
pub(crate) struct BodyWatch {
    read_to_end: Option<Arc<AtomicBool>>,
}

/// The request with its body watched, and the watch.
pub(crate) fn watch(request: Request<Incoming>) -> (Request<WatchedBody>, BodyWatch) {
    let read_to_end = (!request.body().is_end_stream()).then(|| Arc::new(AtomicBool::new(false)));
    let watch = BodyWatch {
        read_to_end: read_to_end.clone(),
    };
    let request = request.map(|inner| WatchedBody { inner, read_to_end });
    (request, watch)
}

impl BodyWatch {
    /// Whether the request had a body that nobody read to its end.
    pub(crate) fn left_unread(&self) -> bool {
        self.read_to_end
            .as_ref()
            .is_some_and(|read| !read.load(Ordering::Acquire))
    }

    /// Adds `Connection: close` to `response` if its request's body was left unread.
    pub(crate) fn close_if_unread(&self, response: &mut Response) {
        if self.left_unread() {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

impl Body for WatchedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        if let Some(read) = this.read_to_end {
            let ended = match &polled {
                Poll::Ready(None) => true,
                // A reader that stops at the announced length never polls past the last frame.
                Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
                _ => false,
            };
            if ended {
                read.store(true, Ordering::Release);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
