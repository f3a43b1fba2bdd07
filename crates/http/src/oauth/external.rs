//! Tokens of an external issuer (`MCP_OAUTH_ISSUER`: Keycloak, Authentik, …): JWTs verified with
//! the public keys of the issuer's JWKS, found through its metadata (RFC 8414's
//! `/.well-known/oauth-authorization-server`, else OpenID Connect's `openid-configuration`).
//! A token is taken when it is signed by one of those keys with an asymmetric algorithm (RS*,
//! PS*, ES*, EdDSA — never HS*, whose secret the gateway does not share), and names the issuer
//! (`iss`), the audience (`MCP_OAUTH_AUDIENCE`, else the MCP resource), a subject and an expiry
//! still ahead. Its subject becomes an end user of `MCP_OAUTH_CLIENT` (or of the default limits).
//!
//! Bounded: a token over 8 kB is not parsed; metadata and key set are read with a size cap and a
//! timeout; the key set is fetched again when a token names a key it lacks, at most once a
//! minute, so a stream of forged `kid`s cannot make the gateway hammer the issuer.

use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::settings::ExternalIssuer;
use crate::clients::end_users::EndUser;
use crate::clients::{Caller, Clients};

/// The longest token looked at.
const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// The longest metadata document or key set read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// How long one fetch from the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// How soon the key set may be fetched again.
const REFETCH_AFTER: Duration = Duration::from_secs(60);

/// The algorithms a token may be signed with: public-key ones only.
const ASYMMETRIC: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The claims read from a token (the others the validation checks itself).
#[derive(Debug, serde::Deserialize)]
struct Claims {
    sub: String,
}

/// Checks an external issuer's tokens. Its key set is fetched on first use and kept.
#[derive(Debug)]
pub(crate) struct Verifier {
    issuer: ExternalIssuer,
    http: reqwest::Client,
    keys: Mutex<Option<Fetched>>,
}

#[derive(Debug)]
struct Fetched {
    set: JwkSet,
    at: Instant,
}

impl Verifier {
    pub(crate) fn new(issuer: ExternalIssuer) -> Self {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self {
            issuer,
            http,
            keys: Mutex::new(None),
        }
    }

    /// The caller `token` stands for, if it is one of the issuer's, for this gateway, unexpired.
    pub(crate) async fn caller(&self, token: &str, clients: &Clients) -> Option<Caller> {
        if token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        let header = jsonwebtoken::decode_header(token).ok()?;
        if !ASYMMETRIC.contains(&header.alg) {
            return None;
        }
        let jwk = self.key(header.kid.as_deref()).await?;
        let key = DecodingKey::from_jwk(&jwk).ok()?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        let issuer = self.issuer.issuer.as_str();
        validation.set_issuer(&[issuer, issuer.trim_end_matches('/')]);
        validation.set_audience(&[&self.issuer.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).ok()?;
        let parent = match &self.issuer.client {
            Some(name) => clients.named(name)?,
            None => clients.local(),
        };
        let user = EndUser::new(Some(&data.claims.sub), None, None, None)?;
        Some(clients.end_user(parent, &user))
    }

    /// The issuer's key named `kid` (the only one, when the token names none).
    async fn key(&self, kid: Option<&str>) -> Option<Jwk> {
        let mut keys = self.keys.lock().await;
        if let Some(found) = keys.as_ref().and_then(|k| pick(&k.set, kid)) {
            return Some(found);
        }
        let stale = keys
            .as_ref()
            .is_none_or(|k| k.at.elapsed() >= REFETCH_AFTER);
        if !stale {
            return None;
        }
        match self.fetch().await {
            Ok(set) => {
                let found = pick(&set, kid);
                *keys = Some(Fetched {
                    set,
                    at: Instant::now(),
                });
                found
            }
            Err(why) => {
                tracing::warn!(issuer = %self.issuer.issuer, error = why, "the OAuth issuer's keys could not be fetched");
                // Remember the attempt, so the next token does not fetch at once.
                if keys.is_none() {
                    *keys = Some(Fetched {
                        set: JwkSet { keys: Vec::new() },
                        at: Instant::now(),
                    });
                } else if let Some(k) = keys.as_mut() {
                    k.at = Instant::now();
                }
                None
            }
        }
    }

    /// The issuer's key set, through its metadata.
    async fn fetch(&self) -> Result<JwkSet, &'static str> {
        let mut jwks_uri = None;
        for url in metadata_urls(&self.issuer.issuer) {
            let Ok(document) = self.document(&url).await else {
                continue;
            };
            if let Some(uri) = document.get("jwks_uri").and_then(|u| u.as_str()) {
                jwks_uri = Some(uri.to_owned());
                break;
            }
        }
        let jwks_uri = jwks_uri.ok_or("no metadata with a jwks_uri")?;
        let document = self.document(&jwks_uri).await?;
        serde_json::from_value(document).map_err(|_| "the key set is not a JWKS")
    }

    async fn document(&self, url: &str) -> Result<serde_json::Value, &'static str> {
        let response = self
            .http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|_| "unreachable")?;
        if !response.status().is_success() {
            return Err("not found");
        }
        let body = gateway_core::upstream::read_body_capped(response, MAX_DOCUMENT_BYTES)
            .await
            .map_err(|_| "unreadable")?;
        serde_json::from_slice(&body).map_err(|_| "not JSON")
    }
}

/// Where an issuer's metadata may be: RFC 8414's (the well-known path before the issuer's path),
/// OpenID Connect's (after it), and OpenID's before it.
fn metadata_urls(issuer: &url::Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
        format!("{origin}/.well-known/openid-configuration{path}"),
    ]
}

fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_put_it() {
        let issuer =
            url::Url::parse("https://id.example/realms/mcp").unwrap_or_else(|_| unreachable!());
        assert_eq!(
            metadata_urls(&issuer),
            [
                "https://id.example/.well-known/oauth-authorization-server/realms/mcp",
                "https://id.example/realms/mcp/.well-known/openid-configuration",
                "https://id.example/.well-known/openid-configuration/realms/mcp",
            ]
        );
    }
}
