//! SearXNG's `unresponsive_engines` entries: `[engine, message]` with one of SearXNG's fixed English
//! messages (the gateway always sends `locale=en`, because the message is translated otherwise).
//! Each message maps to a closed [`EngineReason`]; `Suspended: <message>` means SearXNG parked the
//! engine itself and did not even try, with the same reason as the inner message. These are facts;
//! what they mean for an engine's breaker is the pipeline's decision.

use serde_json::Value;

/// Why SearXNG reported an engine unresponsive: the closed set of its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineReason {
    /// `access denied` (or `blocked`): upstream 402/403, a firewall.
    AccessDenied,
    /// `too many requests`: upstream 429.
    TooManyRequests,
    /// `CAPTCHA`: a challenge page.
    Captcha,
    /// `timeout`.
    Timeout,
    /// `HTTP error`: any other status ≥ 400.
    HttpError,
    /// `HTTP connection error`: refused, DNS, TLS.
    ConnectionError,
    /// `HTTP protocol error`.
    ProtocolError,
    /// `network error`.
    NetworkError,
    /// `proxy error`.
    ProxyError,
    /// `parsing error`.
    ParsingError,
    /// `server API error`.
    ServerApiError,
    /// `unexpected crash`.
    UnexpectedCrash,
    /// A message this gateway does not know (a newer SearXNG): treated as transient.
    Unknown,
}

impl EngineReason {
    /// The metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AccessDenied => "access_denied",
            Self::TooManyRequests => "too_many_requests",
            Self::Captcha => "captcha",
            Self::Timeout => "timeout",
            Self::HttpError => "http_error",
            Self::ConnectionError => "connection_error",
            Self::ProtocolError => "protocol_error",
            Self::NetworkError => "network_error",
            Self::ProxyError => "proxy_error",
            Self::ParsingError => "parsing_error",
            Self::ServerApiError => "server_api_error",
            Self::UnexpectedCrash => "unexpected_crash",
            Self::Unknown => "unknown",
        }
    }

    /// Reads one of SearXNG's messages (case-insensitive; `Suspended: ` unwrapped).
    /// Returns the reason and whether SearXNG had suspended the engine itself.
    pub fn parse(message: &str) -> (Self, bool) {
        let trimmed = message.trim();
        let (inner, suspended) = match trimmed.get(..10) {
            Some(prefix) if prefix.eq_ignore_ascii_case("suspended:") => {
                (trimmed[10..].trim(), true)
            }
            _ => (trimmed, false),
        };
        let lower = inner.to_ascii_lowercase();
        let reason = match lower.as_str() {
            "access denied" | "blocked" => Self::AccessDenied,
            "too many requests" => Self::TooManyRequests,
            "captcha" => Self::Captcha,
            "timeout" => Self::Timeout,
            "http error" => Self::HttpError,
            "http connection error" => Self::ConnectionError,
            "http protocol error" => Self::ProtocolError,
            "network error" => Self::NetworkError,
            "proxy error" => Self::ProxyError,
            "parsing error" => Self::ParsingError,
            "server api error" => Self::ServerApiError,
            "unexpected crash" => Self::UnexpectedCrash,
            _ => Self::Unknown,
        };
        (reason, suspended)
    }
}

/// One engine SearXNG reported unresponsive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresponsive {
    /// The SearXNG engine name.
    pub engine: String,
    /// Why.
    pub reason: EngineReason,
    /// SearXNG had parked the engine itself (`Suspended: …`).
    pub suspended: bool,
}

/// Reads `unresponsive_engines`, deduplicated by engine name (first entry wins). Malformed
/// entries are skipped.
pub fn parse_unresponsive(value: Option<&Value>) -> Vec<Unresponsive> {
    let Some(Value::Array(entries)) = value else {
        return Vec::new();
    };
    let mut out: Vec<Unresponsive> = Vec::new();
    for entry in entries {
        let (Some(engine), Some(message)) = (
            entry.get(0).and_then(Value::as_str),
            entry.get(1).and_then(Value::as_str),
        ) else {
            continue;
        };
        if out.iter().any(|u| u.engine == engine) {
            continue;
        }
        let (reason, suspended) = EngineReason::parse(message);
        out.push(Unresponsive {
            engine: engine.to_owned(),
            reason,
            suspended,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_searxng_message_has_its_reason() {
        let table = [
            ("access denied", EngineReason::AccessDenied),
            ("too many requests", EngineReason::TooManyRequests),
            ("CAPTCHA", EngineReason::Captcha),
            ("timeout", EngineReason::Timeout),
            ("HTTP error", EngineReason::HttpError),
            ("HTTP connection error", EngineReason::ConnectionError),
            ("HTTP protocol error", EngineReason::ProtocolError),
            ("network error", EngineReason::NetworkError),
            ("proxy error", EngineReason::ProxyError),
            ("parsing error", EngineReason::ParsingError),
            ("server API error", EngineReason::ServerApiError),
            ("unexpected crash", EngineReason::UnexpectedCrash),
            ("Zeitüberschreitung", EngineReason::Unknown),
        ];
        for (message, reason) in table {
            assert_eq!(EngineReason::parse(message), (reason, false), "{message}");
            assert_eq!(
                EngineReason::parse(&format!("Suspended: {message}")),
                (reason, true),
                "{message}"
            );
        }
    }

    #[test]
    fn unresponsive_list_is_deduplicated_and_tolerant() {
        let v = json!([
            ["beta", "too many requests"],
            ["beta", "timeout"],
            ["alpha"],
            7,
            ["gamma", "Suspended: CAPTCHA"]
        ]);
        let parsed = parse_unresponsive(Some(&v));
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].reason, EngineReason::TooManyRequests);
        assert_eq!(
            (parsed[1].reason, parsed[1].suspended),
            (EngineReason::Captcha, true)
        );
    }
}
