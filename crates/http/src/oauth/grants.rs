//! What the authorization server issues, as records ([`Registration`], [`Code`], [`Grant`]),
//! the secrets themselves ([`Secret`]: 32 random bytes, base64url) and the checks on them (PKCE's
//! S256, a client's secret). Records name secrets by SHA-256 only, so a copy of the store (Redis)
//! holds no usable token.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The one scope the gateway grants: calling its MCP tools.
pub(crate) const SCOPE: &str = "mcp";

/// What an access token the gateway issued starts with (a key of `API_KEYS_FILE` may be
/// anything, so the prefix is a hint for logs, not how tokens are told apart).
pub(crate) const ACCESS_PREFIX: &str = "sgw_at_";
/// What a refresh token starts with.
pub(crate) const REFRESH_PREFIX: &str = "sgw_rt_";

/// A fresh secret: 32 random bytes, base64url, after `prefix`.
pub(crate) fn secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// SHA-256 of a secret, hex: how records and store ids name it.
pub(crate) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The store id of the record `kind` of `secret`.
pub(crate) fn id(kind: Kind, secret: &str) -> String {
    format!("{}:{}", kind.as_str(), digest(secret))
}

/// The kinds of records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An authorization code.
    Code,
    /// An access token.
    Access,
    /// A refresh token.
    Refresh,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Access => "access",
            Self::Refresh => "refresh",
        }
    }
}

/// How a registered client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ClientAuth {
    /// A public client (a desktop app, a browser): PKCE is its proof.
    None,
    /// `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// HTTP Basic with `client_id:client_secret`.
    ClientSecretBasic,
}

impl ClientAuth {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretPost => "client_secret_post",
            Self::ClientSecretBasic => "client_secret_basic",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<Self> {
        match word {
            "none" => Some(Self::None),
            "client_secret_post" => Some(Self::ClientSecretPost),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            _ => None,
        }
    }
}

/// A client that registered itself (RFC 7591).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    /// As it named itself: shown, escaped, on the consent page.
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
    pub(crate) auth: ClientAuth,
    /// SHA-256 of its secret, hex, for a confidential client.
    pub(crate) secret_digest: Option<String>,
    /// Seconds since the epoch.
    pub(crate) issued_at: u64,
}

impl Registration {
    /// Whether `secret` is this client's (a public client has none to show).
    pub(crate) fn secret_matches(&self, secret: Option<&str>) -> bool {
        match (&self.secret_digest, secret) {
            (None, _) => true,
            (Some(expected), Some(secret)) => {
                bool::from(expected.as_bytes().ct_eq(digest(secret).as_bytes()))
            }
            (Some(_), None) => false,
        }
    }
}

/// An authorization code: what the person allowed, waiting for the client to exchange it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Code {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    /// PKCE's S256 challenge.
    pub(crate) challenge: String,
    /// The grant it becomes.
    pub(crate) grant: Grant,
}

/// What a token stands for: a registered client acting for the holder of one API key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) client_id: String,
    /// SHA-256 of the API key the person signed in with, hex (as `API_KEYS_FILE` holds it): the
    /// grant lives as long as the file holds that key.
    pub(crate) key_digest: String,
    pub(crate) scope: String,
    /// The resource the token is for (`<PUBLIC_URL>/mcp`).
    pub(crate) resource: String,
}

impl Grant {
    /// The key digest as the clients' registry compares it.
    pub(crate) fn key_digest(&self) -> Option<[u8; 32]> {
        let bytes = hex::decode(&self.key_digest).ok()?;
        bytes.try_into().ok()
    }
}

/// Whether `verifier` answers PKCE's S256 `challenge` (RFC 7636): base64url(SHA-256(verifier)).
/// A verifier outside RFC 7636's 43–128 unreserved characters never does.
pub(crate) fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    if !well_formed {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636s_example() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(challenge, verifier));
        assert!(!pkce_matches(
            challenge,
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj"
        ));
        assert!(!pkce_matches(challenge, "short"));
    }

    #[test]
    fn secrets_are_random_and_named_by_their_digest() {
        let a = secret(ACCESS_PREFIX);
        let b = secret(ACCESS_PREFIX);
        assert_ne!(a, b);
        assert!(a.starts_with(ACCESS_PREFIX) && a.len() == ACCESS_PREFIX.len() + 43);
        let id = id(Kind::Access, &a);
        assert!(id.starts_with("access:") && !id.contains(&a));
    }

    #[test]
    fn a_confidential_client_must_show_its_secret() {
        let mut registration = Registration {
            client_id: "c".into(),
            client_name: None,
            redirect_uris: vec![],
            auth: ClientAuth::ClientSecretPost,
            secret_digest: Some(digest("s3cret")),
            issued_at: 0,
        };
        assert!(registration.secret_matches(Some("s3cret")));
        assert!(!registration.secret_matches(Some("other")));
        assert!(!registration.secret_matches(None));
        registration.secret_digest = None;
        assert!(registration.secret_matches(None));
    }
}
