//! What every upstream call shares, SearXNG and premium APIs alike: the closed set of failure
//! classes ([`error`]) and the HTTP mechanics written once ([`http`]: the shared clients, the body
//! cap, transport-error classification, `Retry-After`; [`lean`]: SearXNG's client).

mod error;
mod http;
mod lean;

pub use error::{ErrorClass, UpstreamError};
pub use http::parse_retry_after;
pub use http::{
    classify_transport, read_body_capped, retry_after, SetupError, UpstreamHttp, BODY_CAP,
};
