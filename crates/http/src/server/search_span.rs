//! The `search` span ([`gateway_core::trace`]) of one search through a surface: opened before the request
//! is read, continuing the client's W3C `traceparent`. The SearXNG API and the Tavily API get it
//! around the whole request ([`TracedLayer`], closed with the response's status); the MCP surface around
//! each `tools/call` of `web_search` ([`tool_call`]), since one `/mcp` message is not always a
//! search. The shared search step (`server::search`) records the outcome and cache on it, refusals
//! their error code. With tracing off the span is disabled and this is one callsite check.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_layer::Layer;
use tower_service::Service;
use tracing::field::Empty;
use tracing::instrument::Instrumented;
use tracing::{Instrument, Span};

use gateway_core::trace::{self, TARGET};

/// A `search` span continuing the trace in `headers`, if any.
fn open(method: Option<&str>, headers: Option<&HeaderMap>) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "search",
        otel.kind = "server",
        http.request.method = Empty,
        http.response.status_code = Empty,
        outcome = Empty,
        cache = Empty,
        error_class = Empty,
        otel.status_code = Empty,
    );
    if let Some(method) = method {
        span.record("http.request.method", method);
    }
    if let Some(headers) = headers {
        trace::continue_client_trace(&span, headers);
    }
    span
}

/// The layer that runs each request inside its `search` span (a hand-made `tower` service, like
/// [`super::request_id::TagLayer`] and for the same reason).
#[derive(Debug, Clone, Copy)]
pub(super) struct TracedLayer;

impl<S> Layer<S> for TracedLayer {
    type Service = Traced<S>;

    fn layer(&self, inner: S) -> Traced<S> {
        Traced { inner }
    }
}

/// [`TracedLayer`]'s service.
#[derive(Debug, Clone)]
pub(super) struct Traced<S> {
    inner: S,
}

impl<S> Service<Request> for Traced<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = InSpan<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let span = open(Some(request.method().as_str()), Some(request.headers()));
        let inner = span.in_scope(|| self.inner.call(request));
        InSpan {
            inner: inner.instrument(span),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response in its `search` span, which records the response's status when it is ready.
    pub(super) struct InSpan<F> {
        #[pin]
        inner: Instrumented<F>,
    }
}

impl<F, E> Future for InSpan<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut inner = self.project().inner;
        let response = ready!(inner.as_mut().poll(cx))?;
        inner
            .span()
            .record("http.response.status_code", response.status().as_u16());
        Poll::Ready(Ok(response))
    }
}

/// The `search` span of a `tools/call` of `web_search`: over Streamable HTTP, `http` is the
/// request that carried the call (the MCP SDK hands it to the tool), whose `traceparent` the span
/// continues; over stdio there is none and the span starts a trace.
pub(super) fn tool_call(http: Option<&axum::http::request::Parts>) -> Span {
    open(
        http.map(|parts| parts.method.as_str()),
        http.map(|parts| &parts.headers),
    )
}
