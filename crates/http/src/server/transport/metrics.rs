//! The HTTP surface's own families: `http_rejections_total{reason}`, every request or connection
//! the server limits turned away before the pipeline saw it (the reasons are a closed set), and
//! `http_connections_accepted_total{worker}`, the connections each worker accepted (one worker
//! under `RUNTIME=work-stealing`; under thread-per-core it shows how the kernel spreads them).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use gateway_core::metrics::{label_value_as_str, Registry};

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

/// `{worker}`: the worker's index (0 is the runtime the server was started on).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WorkerLabels {
    worker: u64,
}

/// The server's families. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ServerMetrics {
    rejections: Family<RejectionLabels, Counter>,
    accepted: Family<WorkerLabels, Counter>,
}

impl ServerMetrics {
    /// Registers the family on `registry`, every reason at 0.
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let m = Self {
            rejections: Family::default(),
            accepted: Family::default(),
        };
        registry.register(
            "http_connections_accepted",
            "Client connections accepted, by the worker that serves them (one worker unless RUNTIME=thread-per-core)",
            m.accepted.clone(),
        );
        let _ = m.accepted.get_or_create(&WorkerLabels { worker: 0 });
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

    /// The counter of the connections worker `worker` accepted (held by its accept loop).
    pub(crate) fn accepted(&self, worker: usize) -> Counter {
        let worker = u64::try_from(worker).unwrap_or(u64::MAX);
        self.accepted
            .get_or_create(&WorkerLabels { worker })
            .clone()
    }

    /// Counts one rejection.
    pub(crate) fn count(&self, reason: Rejection) {
        self.rejections
            .get_or_create(&RejectionLabels { reason })
            .inc();
    }
}
