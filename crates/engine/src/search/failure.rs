//! Why an upstream gave a request nothing, as types: the 502 body, the log lines and (later) the
//! explain view all name an upstream and a closed-set reason, never free text.

use std::fmt;

use hyper::StatusCode;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use gateway_core::upstream::{ErrorClass, UpstreamError};
use gateway_upstreams::providers::ProviderKind;

/// An upstream of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Upstream {
    /// The SearXNG instance.
    Searxng,
    /// A premium API.
    Provider(ProviderKind),
}

impl Upstream {
    /// `searxng` or the provider's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Provider(kind) => kind.as_str(),
        }
    }
}

/// Why an upstream did not contribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shortfall {
    /// It was called and failed: the class, and the HTTP status the class was read from when it
    /// came from one (an `http_status` failure always has it).
    Failed {
        /// The error class: the `error_class` value, and the only part a metric label may carry.
        class: ErrorClass,
        /// The status the upstream answered (`404`), for the log line and the 502 body.
        status: Option<StatusCode>,
    },
    /// SearXNG was skipped: it is cooling down after repeated failures.
    Cooldown,
    /// A provider was skipped: its breaker is open.
    BreakerOpen,
    /// A provider was skipped: none of its keys is usable (each rate-limited, parked for a spent
    /// quota, or refused).
    KeysUnusable,
    /// It was still running when the request's budget ended.
    Deadline,
    /// A provider was skipped: the client's premium budget (`PREMIUM_CALLS_PER_DAY`) is spent.
    BudgetSpent,
}

impl Shortfall {
    /// Every reason that is not a failed call, for reading a 502 body back.
    const SKIPPED: [Self; 5] = [
        Self::Cooldown,
        Self::BreakerOpen,
        Self::KeysUnusable,
        Self::Deadline,
        Self::BudgetSpent,
    ];

    /// The reason an `error_class` value of the 502 body names, read back (the body carries the
    /// class alone, so a failure's status is not known).
    pub fn from_label(label: &str) -> Option<Self> {
        ErrorClass::from_label(label)
            .map(Self::from)
            .or_else(|| Self::SKIPPED.into_iter().find(|why| why.as_str() == label))
    }

    /// The upstream refused for rate or quota: the client should slow down.
    pub fn tells_to_slow_down(self) -> bool {
        matches!(
            self,
            Self::Failed {
                class: ErrorClass::RateLimited | ErrorClass::Quota,
                ..
            }
        )
    }

    /// The `error_class` value shown to clients and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed { class, .. } => class.as_str(),
            Self::Cooldown => "cooldown",
            Self::BreakerOpen => "breaker_open",
            Self::KeysUnusable => "keys_unusable",
            Self::Deadline => "deadline",
            Self::BudgetSpent => "budget_spent",
        }
    }

    /// The HTTP status a failure was read from (`http_status 404`), if it was.
    pub(crate) fn status(self) -> Option<StatusCode> {
        match self {
            Self::Failed { status, .. } => status,
            _ => None,
        }
    }
}

/// A call that failed: its class and status.
impl From<UpstreamError> for Shortfall {
    fn from(err: UpstreamError) -> Self {
        Self::Failed {
            class: err.class,
            status: err.status,
        }
    }
}

/// A failure that no HTTP status explains (SearXNG's degraded 200).
impl From<ErrorClass> for Shortfall {
    fn from(class: ErrorClass) -> Self {
        Self::Failed {
            class,
            status: None,
        }
    }
}

/// `http_status 404`, `timeout`, `cooldown`: the `error_class` value, then the status it was read
/// from, if any.
impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        match self.status() {
            Some(status) => write!(f, " {}", status.as_u16()),
            None => Ok(()),
        }
    }
}

/// One upstream that did not contribute, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UpstreamFailure {
    /// Who.
    pub(crate) upstream: Upstream,
    /// Why.
    pub(crate) why: Shortfall,
}

impl UpstreamFailure {
    /// A failure of SearXNG.
    pub(crate) fn searxng(why: Shortfall) -> Self {
        Self {
            upstream: Upstream::Searxng,
            why,
        }
    }
}

/// `{"name": "searxng", "error_class": "timeout"}`: the shape of the 502 body's `upstreams`.
impl Serialize for UpstreamFailure {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("UpstreamFailure", 2)?;
        s.serialize_field("name", self.upstream.as_str())?;
        s.serialize_field("error_class", self.why.as_str())?;
        s.end()
    }
}

impl fmt::Display for UpstreamFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.upstream.as_str(), self.why)
    }
}

/// A list of failures for one log field: `searxng: timeout, brave: rate_limited`.
pub(crate) struct Failures<'a>(pub(crate) &'a [UpstreamFailure]);

impl fmt::Display for Failures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, failure) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{failure}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_serialize_as_name_and_class_and_display_as_text() {
        let failures = [
            UpstreamFailure::searxng(Shortfall::from(ErrorClass::Timeout)),
            UpstreamFailure {
                upstream: Upstream::Provider(ProviderKind::Brave),
                why: Shortfall::BreakerOpen,
            },
        ];
        assert_eq!(
            serde_json::to_value(failures).ok(),
            Some(serde_json::json!([
                {"name": "searxng", "error_class": "timeout"},
                {"name": "brave", "error_class": "breaker_open"},
            ]))
        );
        assert_eq!(
            Failures(&failures).to_string(),
            "searxng: timeout, brave: breaker_open"
        );
    }

    /// The log line of a failed search says the status an `http_status` failure was read from;
    /// the `error_class` value stays the class alone.
    #[test]
    fn a_failure_read_from_a_status_says_the_status() {
        let err = UpstreamError::new(ErrorClass::HttpStatus).at_status(StatusCode::NOT_FOUND);
        let failure = UpstreamFailure::searxng(Shortfall::from(err));
        assert_eq!(failure.why.status(), Some(StatusCode::NOT_FOUND));
        assert_eq!(failure.why.as_str(), "http_status");
        assert_eq!(Failures(&[failure]).to_string(), "searxng: http_status 404");
    }
}
