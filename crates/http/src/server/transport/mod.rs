//! HTTP below every route: [`read_guard`] (a socket's idle and slow-head clocks), [`request_id`] and
//! [`search_span`] (requests run in their spans, through [`span_layer`]), [`metrics`], what the
//! server limits turn away, and [`unread_body`] (`Connection: close` on an answer that left its
//! request's body unread). The accept loop itself is `server::connection`.

pub(crate) mod metrics;
pub(crate) mod read_guard;
pub(crate) mod request_id;
pub(crate) mod search_span;
pub(crate) mod span_layer;
pub(crate) mod unread_body;
