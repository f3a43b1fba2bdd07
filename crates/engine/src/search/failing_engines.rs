//! The engines behind a SearXNG failure, and what a person can do about it (#45): each instance's
//! engines whose last word was a failure, grouped by SearXNG's own reason ([`InstanceEngines`] —
//! engine names SearXNG or `/config` reported, checked; reasons from the closed set of its
//! `unresponsive_engines` messages, never free text), and the one-line [`Hint`] a failure gives
//! when its causes point at one fix. The 502 body, the failed search's log line, `explain` and
//! `/readyz` all show these.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

use super::failure::{Shortfall, Upstream, UpstreamFailure};
use crate::searxng_pool::SearxngPool;
use gateway_core::upstream::ErrorClass;
use gateway_upstreams::searxng::{EngineName, EngineReason};

/// One SearXNG instance's failing engines, grouped by SearXNG's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstanceEngines {
    /// The instance's name (`/status`, the `searxng_instance` label).
    pub(crate) instance: String,
    /// Each reason with its engines, by name; reasons in the order first met.
    pub(crate) failing: Vec<(EngineReason, Vec<EngineName>)>,
}

impl InstanceEngines {
    /// `instance`'s failing engines, grouped; `None` when none is failing.
    pub(crate) fn group(instance: &str, engines: Vec<(EngineName, EngineReason)>) -> Option<Self> {
        let mut failing: Vec<(EngineReason, Vec<EngineName>)> = Vec::new();
        for (engine, reason) in engines {
            match failing.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, names)) => names.push(engine),
                None => failing.push((reason, vec![engine])),
            }
        }
        (!failing.is_empty()).then(|| Self {
            instance: instance.to_owned(),
            failing,
        })
    }

    fn reasons(&self) -> impl Iterator<Item = EngineReason> + '_ {
        self.failing.iter().map(|(reason, _)| *reason)
    }
}

/// Every instance's engines whose last word was a failure (see `pool::Instance::failing_engines`).
pub(crate) fn of_pool(pool: &SearxngPool) -> Vec<InstanceEngines> {
    pool.instances()
        .iter()
        .filter_map(|instance| InstanceEngines::group(&instance.name, instance.failing_engines()))
        .collect()
}

/// `{"instance": "127.0.0.1:8888", "engines": {"connection_error": ["alpha", "beta"]}}`.
impl Serialize for InstanceEngines {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct ByReason<'a>(&'a [(EngineReason, Vec<EngineName>)]);
        impl Serialize for ByReason<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (reason, engines) in self.0 {
                    let names: Vec<&str> = engines.iter().map(EngineName::as_str).collect();
                    map.serialize_entry(reason.as_str(), &names)?;
                }
                map.end()
            }
        }
        let mut s = serializer.serialize_struct("InstanceEngines", 2)?;
        s.serialize_field("instance", &self.instance)?;
        s.serialize_field("engines", &ByReason(&self.failing))?;
        s.end()
    }
}

/// Every instance's failing engines for one log field:
/// `127.0.0.1:8888: connection_error=alpha,beta; captcha=gamma`.
pub(crate) struct EnginesFailing<'a>(pub(crate) &'a [InstanceEngines]);

impl fmt::Display for EnginesFailing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, instance) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{}:", instance.instance)?;
            for (j, (reason, engines)) in instance.failing.iter().enumerate() {
                f.write_str(if j > 0 { "; " } else { " " })?;
                write!(f, "{}=", reason.as_str())?;
                for (k, engine) in engines.iter().enumerate() {
                    if k > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(engine.as_str())?;
                }
            }
        }
        Ok(())
    }
}

/// What a person can do about a failure, when its causes point at one fix: a fixed sentence (and
/// a status number), never an upstream's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hint {
    /// Every failing engine failed with `HTTP connection error`.
    NoEgress,
    /// Every failing engine is blocked (`CAPTCHA`, `access denied`, `too many requests`).
    IpBlocked,
    /// SearXNG answered `/search?format=json` with 403: JSON output is off.
    JsonDisabled,
    /// SearXNG answered this unexpected status to `/search`.
    HttpStatus(u16),
}

impl Hint {
    /// The hint for these failures and failing engines, if they point at one fix. SearXNG's own
    /// refusal comes first (no engine ran). The engines speak only when SearXNG itself answered
    /// (degraded) or was skipped for it (cooldown) — not when SearXNG is down — and only when
    /// every failing engine failed the same way.
    pub(crate) fn of(failures: &[UpstreamFailure], engines: &[InstanceEngines]) -> Option<Self> {
        let searxng = || failures.iter().filter(|f| f.upstream == Upstream::Searxng);
        for failure in searxng() {
            if let Shortfall::Failed {
                class,
                status: Some(status),
            } = failure.why
            {
                match (class, status.as_u16()) {
                    (ErrorClass::Blocked, 403) => return Some(Self::JsonDisabled),
                    (ErrorClass::HttpStatus, status) => return Some(Self::HttpStatus(status)),
                    _ => {}
                }
            }
        }
        let engines_failed = searxng().any(|f| {
            matches!(
                f.why,
                Shortfall::Cooldown
                    | Shortfall::Failed {
                        class: ErrorClass::Degraded,
                        ..
                    }
            )
        });
        if !engines_failed {
            return None;
        }
        Self::of_engines(engines)
    }

    /// The hint the failing engines give, when every one failed the same way.
    pub(crate) fn of_engines(engines: &[InstanceEngines]) -> Option<Self> {
        let reasons: Vec<EngineReason> =
            engines.iter().flat_map(InstanceEngines::reasons).collect();
        let blocked = |r: &EngineReason| {
            matches!(
                r,
                EngineReason::Captcha | EngineReason::AccessDenied | EngineReason::TooManyRequests
            )
        };
        if reasons.is_empty() {
            None
        } else if reasons.iter().all(|r| *r == EngineReason::ConnectionError) {
            Some(Self::NoEgress)
        } else if reasons.iter().all(blocked) {
            Some(Self::IpBlocked)
        } else {
            None
        }
    }

    /// The sentence.
    pub(crate) fn sentence(self) -> String {
        match self {
            Self::NoEgress => "every SearXNG engine failed with `HTTP connection error`: SearXNG cannot reach the web from this host: check its egress/DNS".to_owned(),
            Self::IpBlocked => "every engine is blocking this IP (CAPTCHA, access denied, too many requests): the search engines refuse SearXNG's egress address; a premium provider's key lets the gateway fall back".to_owned(),
            Self::JsonDisabled => "SearXNG answered 403 to format=json: JSON output is probably disabled; add `json` to `search.formats` in its settings.yml".to_owned(),
            Self::HttpStatus(status @ (404 | 405)) => format!("SearXNG answered HTTP {status} to /search: SEARXNG_BACKEND_URL should be the instance's base URL (without /search)"),
            Self::HttpStatus(status) => format!("SearXNG answered HTTP {status} to /search"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use hyper::StatusCode;

    fn engines(pairs: &[(&str, EngineReason)]) -> Vec<InstanceEngines> {
        let named = pairs
            .iter()
            .map(|(e, r)| (EngineName::checked(e).unwrap(), *r))
            .collect();
        InstanceEngines::group("127.0.0.1:8888", named)
            .into_iter()
            .collect()
    }

    fn degraded() -> UpstreamFailure {
        UpstreamFailure::searxng(Shortfall::from(ErrorClass::Degraded))
    }

    #[test]
    fn failing_engines_are_grouped_by_searxngs_reason() {
        let report = engines(&[
            ("alpha", EngineReason::ConnectionError),
            ("beta", EngineReason::Captcha),
            ("gamma", EngineReason::ConnectionError),
        ]);
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            serde_json::json!([{"instance": "127.0.0.1:8888",
                "engines": {"connection_error": ["alpha", "gamma"], "captcha": ["beta"]}}])
        );
        assert_eq!(
            EnginesFailing(&report).to_string(),
            "127.0.0.1:8888: connection_error=alpha,gamma; captcha=beta"
        );
    }

    #[test]
    fn every_engine_failing_the_same_way_gives_its_hint() {
        let unreachable = engines(&[
            ("alpha", EngineReason::ConnectionError),
            ("beta", EngineReason::ConnectionError),
        ]);
        assert_eq!(Hint::of(&[degraded()], &unreachable), Some(Hint::NoEgress));
        assert!(Hint::NoEgress
            .sentence()
            .contains("SearXNG cannot reach the web from this host: check its egress/DNS"));
        let cooling = UpstreamFailure::searxng(Shortfall::Cooldown);
        assert_eq!(Hint::of(&[cooling], &unreachable), Some(Hint::NoEgress));
        let blocked = engines(&[
            ("alpha", EngineReason::Captcha),
            ("beta", EngineReason::TooManyRequests),
            ("gamma", EngineReason::AccessDenied),
        ]);
        assert_eq!(Hint::of(&[degraded()], &blocked), Some(Hint::IpBlocked));
        assert!(Hint::IpBlocked
            .sentence()
            .starts_with("every engine is blocking this IP"));
        let mixed = engines(&[
            ("alpha", EngineReason::Captcha),
            ("beta", EngineReason::Timeout),
        ]);
        assert_eq!(Hint::of(&[degraded()], &mixed), None, "no one fix");
        let down = UpstreamFailure::searxng(Shortfall::from(ErrorClass::Connect));
        assert_eq!(
            Hint::of(&[down], &unreachable),
            None,
            "SearXNG itself down: its engines' old failures are no hint"
        );
    }

    #[test]
    fn searxngs_own_refusal_gives_its_hint() {
        let json_off = UpstreamFailure::searxng(Shortfall::from(
            gateway_core::upstream::UpstreamError::new(ErrorClass::Blocked)
                .at_status(StatusCode::FORBIDDEN),
        ));
        assert_eq!(Hint::of(&[json_off], &[]), Some(Hint::JsonDisabled));
        assert!(Hint::JsonDisabled.sentence().contains("search.formats"));
        let wrong_path = UpstreamFailure::searxng(Shortfall::from(
            gateway_core::upstream::UpstreamError::new(ErrorClass::HttpStatus)
                .at_status(StatusCode::NOT_FOUND),
        ));
        assert_eq!(Hint::of(&[wrong_path], &[]), Some(Hint::HttpStatus(404)));
        assert!(Hint::HttpStatus(404).sentence().contains("HTTP 404"));
    }
}
