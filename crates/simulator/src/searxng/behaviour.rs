//! What tests script on the simulated instance: per engine an [`EngineBehaviour`] (results, nothing, or an
//! [`EngineFailure`] rendered as SearXNG's `unresponsive_engines` message), for the whole instance a
//! [`SearxngMode`] (a status, a hang, a delay, garbage, a huge or truncated body).

use std::time::Duration;

use super::params::UiLanguage;
use crate::fault::Fault;

/// Why an engine failed, as SearXNG reports it in `unresponsive_engines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineFailure {
    /// The upstream answered 402 or 403, or a Cloudflare firewall page: `access denied`.
    AccessDenied,
    /// The upstream answered 429: `too many requests`.
    TooManyRequests,
    /// A reCAPTCHA page or a Cloudflare challenge: `CAPTCHA`.
    Captcha,
    /// The engine was slower than the request's timeout: `timeout`.
    Timeout,
    /// Any other upstream status of 400 or more: `HTTP error`.
    HttpError,
    /// Connection refused, DNS or TLS failure: `HTTP connection error`.
    ConnectionError,
    /// A garbled HTTP reply: `HTTP protocol error`.
    ProtocolError,
    /// A hang-up or read error: `network error`.
    NetworkError,
    /// The outgoing proxy failed: `proxy error`.
    ProxyError,
    /// The upstream changed its page or JSON: `parsing error`.
    ParsingError,
    /// The upstream API reported an error: `server API error`.
    ServerApiError,
    /// A bug in the engine: `unexpected crash`.
    UnexpectedCrash,
    /// SearXNG parked the engine after an earlier failure and did not even try it: `Suspended: <inner>`.
    /// SearXNG keeps a single flag, so nested suspensions render with one prefix.
    Suspended(Box<EngineFailure>),
}

impl EngineFailure {
    /// The text SearXNG puts in `unresponsive_engines` for this failure when the request says `locale=en`.
    pub fn message(&self) -> String {
        self.localized(UiLanguage::English)
    }

    pub(super) fn localized(&self, language: UiLanguage) -> String {
        match self {
            EngineFailure::Suspended(inner) => {
                format!(
                    "{}: {}",
                    self.text(language),
                    inner.innermost().text(language)
                )
            }
            failure => failure.text(language).to_owned(),
        }
    }

    fn innermost(&self) -> &EngineFailure {
        match self {
            EngineFailure::Suspended(inner) => inner.innermost(),
            failure => failure,
        }
    }

    /// English text as in SearXNG's `exception_classname_to_text`; the German is an approximation of its
    /// translation, there only so a gateway that forgets `locale=en` sees text it cannot classify.
    fn text(&self, language: UiLanguage) -> &'static str {
        let (english, german) = match self {
            EngineFailure::AccessDenied => ("access denied", "Zugriff verweigert"),
            EngineFailure::TooManyRequests => ("too many requests", "Zu viele Anfragen"),
            EngineFailure::Captcha => ("CAPTCHA", "CAPTCHA"),
            EngineFailure::Timeout => ("timeout", "Zeitüberschreitung"),
            EngineFailure::HttpError => ("HTTP error", "HTTP-Fehler"),
            EngineFailure::ConnectionError => ("HTTP connection error", "HTTP-Verbindungsfehler"),
            EngineFailure::ProtocolError => ("HTTP protocol error", "HTTP-Protokollfehler"),
            EngineFailure::NetworkError => ("network error", "Netzwerkfehler"),
            EngineFailure::ProxyError => ("proxy error", "Proxy-Fehler"),
            EngineFailure::ParsingError => ("parsing error", "Fehler beim Parsen"),
            EngineFailure::ServerApiError => ("server API error", "Server-API-Fehler"),
            EngineFailure::UnexpectedCrash => ("unexpected crash", "Unerwarteter Absturz"),
            EngineFailure::Suspended(_) => ("Suspended", "Ausgesetzt"),
        };
        match language {
            UiLanguage::English => english,
            UiLanguage::German => german,
        }
    }
}

/// What one simulated engine does when a search selects it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineBehaviour {
    /// The engine finds results.
    Ok {
        /// Results per page.
        results: usize,
    },
    /// The engine answers but finds nothing: it is in neither `results` nor `unresponsive_engines`.
    Empty,
    /// The engine fails and is listed in `unresponsive_engines` with this failure's message.
    Fails(EngineFailure),
}

/// What the whole instance does with `/search` requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearxngMode {
    /// Behaves like SearXNG, engines as scripted.
    Normal,
    /// Every search answers this status: 500 `{"error":"search error"}`, 429 as SearXNG's limiter does
    /// (plain text), 502/503/504 as the reverse proxy in front does (HTML), others a JSON error.
    Status(u16),
    /// Accepts the request and never answers (until the simulator is dropped, which closes the connection).
    Hang,
    /// Answers normally after this delay.
    Delay(Duration),
    /// JSON is not in `search.formats`: `format=json` gets a 403 HTML page.
    JsonDisabled,
    /// Answers 200 with `Content-Type: application/json` and a body that is not JSON.
    Garbage,
    /// Answers 200 with valid JSON over [`HUGE_BODY_BYTES`](super::HUGE_BODY_BYTES), sent chunked (no `Content-Length`).
    Huge,
    /// Declares a `Content-Length` larger than what it sends, sends half the JSON, then closes the connection.
    Truncated,
    /// A fault below the API ([`Fault`]): a block page, a reset, a hang, garbage, a huge or trickling body.
    Fault(Fault),
    /// The next `count` searches answer `status` (as in [`SearxngMode::Status`]), then the mode becomes
    /// [`SearxngMode::Normal`].
    FailTimes {
        /// How many searches still fail.
        count: usize,
        /// The status they fail with.
        status: u16,
    },
}
