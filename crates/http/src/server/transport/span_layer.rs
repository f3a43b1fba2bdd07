//! A request run inside its own tracing span, the layer every such span uses: the request ID's
//! `request` span ([`crate::server::transport::request_id`]) and a search's `search` span ([`crate::server::transport::search_span`]).
//! A [`SpanHook`] says what each opens from the request and what it does to the response once it
//! is ready; the layer, its service and its future are written once here.
//!
//! Hand-made `tower` types rather than `axum::middleware::from_fn`: they run on every request,
//! and `from_fn` clones and boxes the inner service and boxes its future per request (measured in
//! BENCHMARKS.md, #16).

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use tower_layer::Layer;
use tower_service::Service;
use tracing::instrument::Instrumented;
use tracing::{Instrument, Span};

/// What one kind of span does around a request.
pub(crate) trait SpanHook: Clone {
    /// What the response needs from the request (the request ID it echoes).
    type Carry;

    /// The span the request runs in (the hook may tag the request), and what the response needs.
    fn open(&self, request: &mut Request) -> (Span, Self::Carry);

    /// The response, once ready, in its span.
    fn close(carry: Self::Carry, span: &Span, response: &mut Response);
}

/// The layer: each request through the inner service inside the span `H` opens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpanLayer<H>(pub(crate) H);

impl<S, H: Clone> Layer<S> for SpanLayer<H> {
    type Service = InSpan<S, H>;

    fn layer(&self, inner: S) -> InSpan<S, H> {
        InSpan {
            inner,
            hook: self.0.clone(),
        }
    }
}

/// [`SpanLayer`]'s service.
#[derive(Debug, Clone)]
pub(crate) struct InSpan<S, H> {
    inner: S,
    hook: H,
}

impl<S, H> Service<Request> for InSpan<S, H>
where
    S: Service<Request, Response = Response>,
    H: SpanHook,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Spanned<S::Future, H::Carry, H>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let (span, carry) = self.hook.open(&mut request);
        // The layers below may log while they are called (a refused key), not only when polled.
        let inner = span.in_scope(|| self.inner.call(request));
        Spanned {
            inner: inner.instrument(span),
            carry: Some(carry),
            hook: std::marker::PhantomData,
        }
    }
}

pin_project_lite::pin_project! {
    /// A response in its span, closed by the hook when it is ready.
    pub(crate) struct Spanned<F, C, H> {
        #[pin]
        inner: Instrumented<F>,
        carry: Option<C>,
        hook: std::marker::PhantomData<fn() -> H>,
    }
}

impl<F, E, H> Future for Spanned<F, H::Carry, H>
where
    F: Future<Output = Result<Response, E>>,
    H: SpanHook,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut inner = this.inner;
        let mut response = ready!(inner.as_mut().poll(cx))?;
        if let Some(carry) = this.carry.take() {
            H::close(carry, inner.span(), &mut response);
        }
        Poll::Ready(Ok(response))
    }
}
