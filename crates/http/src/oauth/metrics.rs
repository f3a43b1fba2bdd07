//! `oauth_events_total{event}`: what MCP's authorization did — clients registered, people who
//! allowed or were refused at the consent page, tokens issued, refreshed, refused and revoked.
//! A closed set of events.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use gateway_core::metrics::{label_value_as_str, Registry};

/// One thing the authorization server or the token check did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Event {
    /// A client registered itself.
    Registered,
    /// A person signed in with a key and allowed a client.
    Allowed,
    /// A person presented a key the gateway does not hold, or declined.
    Denied,
    /// A code became tokens.
    Issued,
    /// A refresh token became new tokens.
    Refreshed,
    /// A token request was refused (a bad code, verifier, client or refresh token).
    GrantRefused,
    /// A token was revoked by its client.
    Revoked,
    /// An access token was taken at `/mcp`.
    TokenAccepted,
    /// An access token was refused at `/mcp`.
    TokenRefused,
}

impl Event {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Registered => "registered",
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Issued => "issued",
            Self::Refreshed => "refreshed",
            Self::GrantRefused => "grant_refused",
            Self::Revoked => "revoked",
            Self::TokenAccepted => "token_accepted",
            Self::TokenRefused => "token_refused",
        }
    }
}

label_value_as_str!(Event);

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EventLabels {
    event: Event,
}

/// The family. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct OAuthMetrics {
    events: Family<EventLabels, Counter>,
}

impl OAuthMetrics {
    /// Registers the family on `registry`.
    pub(crate) fn new(registry: &mut Registry) -> Self {
        Self {
            events: registry.registered(
                "oauth_events",
                "MCP authorization (OAuth 2.1) events: registered, allowed, denied, issued, refreshed, grant_refused, revoked, token_accepted, token_refused",
                Family::default(),
            ),
        }
    }

    pub(crate) fn count(&self, event: Event) {
        self.events.get_or_create(&EventLabels { event }).inc();
    }
}
