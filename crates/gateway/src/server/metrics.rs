//! The HTTP surface's own family: `http_rejections_total{reason}`, every request or connection the
//! server limits turned away before the pipeline saw it. The reasons are a closed set.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::metrics::{label_value_as_str, Registry};

/// Why the server turned a client away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Rejection {
    /// `MAX_CONNECTIONS` were open: 503 `overloaded`, then the connection closes.
    TooManyConnections,
    /// The request head did not arrive within `REQUEST_READ_TIMEOUT_SECONDS` of its first byte: 408.
    HeadTimeout,
    /// The form body did not arrive within `REQUEST_READ_TIMEOUT_SECONDS`: 408.
    BodyTimeout,
    /// The body is over `MAX_BODY_BYTES`: 413.
    BodyTooLarge,
    /// The request target is over `MAX_URL_BYTES`: 414.
    UrlTooLong,
    /// The headers are over `MAX_HEADER_BYTES`: 431.
    HeadersTooLarge,
}

impl Rejection {
    /// Every reason, for series that exist from the first scrape.
    pub(crate) const ALL: [Rejection; 6] = [
        Self::TooManyConnections,
        Self::HeadTimeout,
        Self::BodyTimeout,
        Self::BodyTooLarge,
        Self::UrlTooLong,
        Self::HeadersTooLarge,
    ];

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::TooManyConnections => "too_many_connections",
            Self::HeadTimeout => "head_timeout",
            Self::BodyTimeout => "body_timeout",
            Self::BodyTooLarge => "body_too_large",
            Self::UrlTooLong => "url_too_long",
            Self::HeadersTooLarge => "headers_too_large",
        }
    }
}

label_value_as_str!(Rejection);

/// `{reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RejectionLabels {
    reason: Rejection,
}

/// The server's families. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ServerMetrics {
    rejections: Family<RejectionLabels, Counter>,
}

impl ServerMetrics {
    /// Registers the family on `registry`, every reason at 0.
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let m = Self {
            rejections: Family::default(),
        };
        registry.register(
            "http_rejections",
            "Requests and connections the server limits turned away before the pipeline saw them, by reason",
            m.rejections.clone(),
        );
        for reason in Rejection::ALL {
            let _ = m.rejections.get_or_create(&RejectionLabels { reason });
        }
        m
    }

    /// The counter of one reason (held by the code that counts it).
    pub(crate) fn counter(&self, reason: Rejection) -> Counter {
        self.rejections
            .get_or_create(&RejectionLabels { reason })
            .clone()
    }

    /// Counts one rejection.
    pub(crate) fn count(&self, reason: Rejection) {
        self.rejections
            .get_or_create(&RejectionLabels { reason })
            .inc();
    }
}
