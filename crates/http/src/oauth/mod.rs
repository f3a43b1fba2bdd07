//! MCP's authorization (OAuth 2.1, as the MCP authorization spec profiles it), so that assistants
//! that reach remote MCP servers only through OAuth — Claude.ai's and ChatGPT's connectors — can
//! use a gateway that requires keys, without opening it to everyone.
//!
//! The gateway is the **protected resource** `<PUBLIC_URL>/mcp` (its metadata at
//! `/.well-known/oauth-protected-resource`, pointed at by the 401's `WWW-Authenticate`), and —
//! unless `MCP_OAUTH_ISSUER` names an external issuer ([`external`]) — its own small
//! **authorization server**: client registration (RFC 7591), the authorization code with PKCE
//! S256 (RFC 7636), a consent page where the person proves who they are with their gateway API
//! key (no other identity store), access and refresh tokens bound to that key, rotation of the
//! refresh token on each use, revocation (RFC 7009). A grant lives as long as `API_KEYS_FILE`
//! holds its key: each use looks the key up, so removing it (and `SIGHUP`) signs its tokens out.
//!
//! Owns: the settings ([`settings`]), what is issued and the checks on it ([`grants`]), where it
//! is kept ([`store`]: this process, and Redis when the shared tier is configured), the
//! external issuer's token check ([`external`]), the events' metric ([`metrics`]), and
//! [`Authorization`], the handle the gate (token → caller) and the HTTP endpoints
//! (`crate::server`'s `authorization` module) use. HTTP itself — forms, redirects, the page —
//! is the server's.
//!
//! Hand-written on purpose: the maintained Rust OAuth crates are clients (`oauth2`,
//! `openidconnect`); the server side here is a handful of checks over records. JWT verification
//! for an external issuer uses `jsonwebtoken`.

pub(crate) mod external;
pub(crate) mod grants;
pub(crate) mod metrics;
pub mod settings;
pub(crate) mod store;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway_core::shared::SharedTier;
use serde::Serialize;

use crate::clients::{Caller, Clients, Unauthorized};
use grants::{ClientAuth, Code, Grant, Kind, Registration};
use metrics::{Event, OAuthMetrics};
use settings::{Lifetimes, OAuthMode, OAuthSettings};
use store::Store;

/// How long an authorization code may wait for its exchange.
const CODE_LIFETIME: Duration = Duration::from_secs(120);
/// How long a registration is kept (a client that comes back later registers again).
const REGISTRATION_LIFETIME: Duration = Duration::from_secs(180 * 24 * 3600);
/// The most redirect URIs a client may register.
const MAX_REDIRECT_URIS: usize = 10;
/// The longest redirect URI, client name, or other text field a registration may carry.
const MAX_FIELD_CHARS: usize = 2_000;

/// An OAuth error (RFC 6749 §5.2, RFC 7591 §3.2.2): its code and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuthError {
    pub(crate) code: &'static str,
    pub(crate) description: String,
}

impl OAuthError {
    pub(crate) fn new(code: &'static str, description: impl Into<String>) -> Self {
        Self {
            code,
            description: description.into(),
        }
    }

    /// `invalid_client` is answered with 401, every other code with 400 (503 when full).
    pub(crate) fn status(&self) -> u16 {
        match self.code {
            "invalid_client" => 401,
            "temporarily_unavailable" => 503,
            _ => 400,
        }
    }
}

/// A registration request (RFC 7591 §2), as far as the gateway reads it; other metadata is
/// ignored, as the RFC asks.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub(crate) struct RegistrationRequest {
    #[serde(default)]
    pub(crate) redirect_uris: Vec<String>,
    pub(crate) client_name: Option<String>,
    pub(crate) token_endpoint_auth_method: Option<String>,
    pub(crate) grant_types: Option<Vec<String>>,
    pub(crate) response_types: Option<Vec<String>>,
}

/// A registration's answer (RFC 7591 §3.2.1).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Registered {
    pub(crate) client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) client_id_issued_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret_expires_at: Option<u64>,
    pub(crate) redirect_uris: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) client_name: Option<String>,
    pub(crate) grant_types: [&'static str; 2],
    pub(crate) response_types: [&'static str; 1],
    pub(crate) token_endpoint_auth_method: &'static str,
    pub(crate) scope: &'static str,
}

/// An authorization request's parameters (RFC 6749 §4.1.1, RFC 7636, RFC 8707).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, Serialize)]
pub(crate) struct AuthorizeRequest {
    #[serde(default)]
    pub(crate) response_type: String,
    #[serde(default)]
    pub(crate) client_id: String,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) code_challenge: Option<String>,
    pub(crate) code_challenge_method: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) resource: Option<String>,
}

/// An authorization request that cannot go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthorizeRefusal {
    /// The client or its redirect URI is unknown: said on the page, never redirected (RFC 6749
    /// §4.1.2.1 — the redirect URI cannot be trusted).
    Page(String),
    /// Anything else: sent back to the client's redirect URI.
    Redirect {
        redirect_uri: String,
        error: OAuthError,
        state: Option<String>,
    },
}

/// An authorization request that may be shown to the person: the client and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Consent {
    pub(crate) request: AuthorizeRequest,
    pub(crate) client: Registration,
    pub(crate) redirect_uri: String,
}

/// Tokens, as the token endpoint answers them (RFC 6749 §5.1).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    pub(crate) token_type: &'static str,
    pub(crate) expires_in: u64,
    pub(crate) refresh_token: String,
    pub(crate) scope: String,
}

/// A token request's fields (RFC 6749 §4.1.3, §6), with the client's credentials from the form
/// or HTTP Basic.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub(crate) struct TokenRequest {
    #[serde(default)]
    pub(crate) grant_type: String,
    pub(crate) code: Option<String>,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) code_verifier: Option<String>,
    pub(crate) refresh_token: Option<String>,
    pub(crate) resource: Option<String>,
}

/// MCP's authorization: the settings, the records, the clients whose keys people sign in with.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Authorization {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: OAuthSettings,
    clients: Clients,
    store: Store,
    external: Option<external::Verifier>,
    metrics: OAuthMetrics,
}

impl Authorization {
    /// MCP's authorization as `settings` say, over `clients`' keys, its records in this process
    /// and in `shared` when the Redis tier is configured.
    pub(crate) fn new(
        settings: OAuthSettings,
        clients: Clients,
        shared: Option<SharedTier>,
        metrics: OAuthMetrics,
    ) -> Self {
        let external = match &settings.mode {
            OAuthMode::External(issuer) => Some(external::Verifier::new(issuer.clone())),
            OAuthMode::BuiltIn(_) => None,
        };
        Self {
            inner: Arc::new(Inner {
                settings,
                clients,
                store: Store::new(shared),
                external,
                metrics,
            }),
        }
    }

    pub(crate) fn settings(&self) -> &OAuthSettings {
        &self.inner.settings
    }

    /// The protected resource's metadata URL, as the 401's `WWW-Authenticate` points at it.
    pub(crate) fn resource_metadata_url(&self) -> String {
        self.inner.settings.public.join(&format!(
            "/.well-known/oauth-protected-resource{}",
            settings::RESOURCE_PATH
        ))
    }

    /// The issuer whose tokens `/mcp` takes: the gateway, or `MCP_OAUTH_ISSUER`.
    pub(crate) fn issuer(&self) -> String {
        match &self.inner.settings.mode {
            OAuthMode::External(external) => {
                external.issuer.as_str().trim_end_matches('/').to_owned()
            }
            OAuthMode::BuiltIn(_) => self.inner.settings.public.as_str().to_owned(),
        }
    }

    /// Whether the gateway is its own authorization server.
    pub(crate) fn is_built_in(&self) -> bool {
        matches!(self.inner.settings.mode, OAuthMode::BuiltIn(_))
    }

    fn lifetimes(&self) -> Lifetimes {
        match &self.inner.settings.mode {
            OAuthMode::BuiltIn(lifetimes) => *lifetimes,
            // Never issues; the lifetimes are those of nothing.
            OAuthMode::External(_) => Lifetimes {
                access: Duration::ZERO,
                refresh: Duration::ZERO,
            },
        }
    }

    fn count(&self, event: Event) {
        self.inner.metrics.count(event);
    }

    /// Who presents `bearer` at `/mcp`: a client's API key (when the gateway has keys), else an
    /// access token of the gateway's own or of the external issuer.
    pub(crate) async fn caller(&self, bearer: Option<&str>) -> Result<Caller, Unauthorized> {
        let clients = &self.inner.clients;
        let Some(bearer) = bearer.map(str::trim).filter(|b| !b.is_empty()) else {
            return Err(Unauthorized::Missing);
        };
        if clients.requires_keys() {
            if let Ok(caller) = clients.authenticate(Some(bearer)) {
                return Ok(caller);
            }
        }
        let found = match &self.inner.external {
            Some(verifier) => verifier.caller(bearer, clients).await,
            None => self.own_token(bearer).await,
        };
        self.count(if found.is_some() {
            Event::TokenAccepted
        } else {
            Event::TokenRefused
        });
        found.ok_or(Unauthorized::InvalidToken)
    }

    /// The caller of an access token the gateway issued, while its key is in the file.
    async fn own_token(&self, token: &str) -> Option<Caller> {
        let blob = self
            .inner
            .store
            .get(&grants::id(Kind::Access, token))
            .await?;
        let grant: Grant = serde_json::from_slice(&blob).ok()?;
        self.inner.clients.holder(&grant.key_digest()?)
    }

    /// Registers a client (RFC 7591).
    pub(crate) async fn register(
        &self,
        request: RegistrationRequest,
    ) -> Result<Registered, OAuthError> {
        let (name, auth) = checked(&request)?;
        let client_id = grants::secret("sgw_client_");
        let secret = (auth != ClientAuth::None).then(|| grants::secret("sgw_cs_"));
        let issued_at = unix_now();
        let registration = Registration {
            client_id: client_id.clone(),
            client_name: name.clone(),
            redirect_uris: request.redirect_uris.clone(),
            auth,
            secret_digest: secret.as_deref().map(grants::digest),
            issued_at,
        };
        self.put(
            &client_key(&client_id),
            &registration,
            REGISTRATION_LIFETIME,
        )
        .await?;
        self.count(Event::Registered);
        tracing::info!(
            client_name = name.as_deref().unwrap_or("-"),
            auth = auth.as_str(),
            "oauth client registered"
        );
        Ok(Registered {
            client_id,
            client_secret_expires_at: secret.as_ref().map(|_| 0),
            client_secret: secret,
            client_id_issued_at: issued_at,
            redirect_uris: request.redirect_uris,
            client_name: name,
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
            token_endpoint_auth_method: auth.as_str(),
            scope: grants::SCOPE,
        })
    }

    async fn put<T: Serialize>(
        &self,
        id: &str,
        record: &T,
        ttl: Duration,
    ) -> Result<(), OAuthError> {
        let blob = serde_json::to_vec(record)
            .map_err(|_| OAuthError::new("server_error", "the record could not be written"))?;
        self.inner.store.put(id, blob, ttl).await.map_err(|_| {
            OAuthError::new(
                "temporarily_unavailable",
                "the gateway holds as many authorization records as it keeps; try again later",
            )
        })
    }

    async fn client(&self, client_id: &str) -> Option<Registration> {
        if client_id.is_empty() || client_id.len() > 200 {
            return None;
        }
        let blob = self.inner.store.get(&client_key(client_id)).await?;
        serde_json::from_slice(&blob).ok()
    }

    /// Checks an authorization request before the consent page shows it.
    pub(crate) async fn check(
        &self,
        request: AuthorizeRequest,
    ) -> Result<Consent, AuthorizeRefusal> {
        let Some(client) = self.client(&request.client_id).await else {
            return Err(AuthorizeRefusal::Page(
                "This application is not registered with the gateway (unknown client_id). Ask it to connect again.".to_owned(),
            ));
        };
        let redirect_uri = match &request.redirect_uri {
            Some(uri) if client.redirect_uris.iter().any(|r| r == uri) => uri.clone(),
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            _ => {
                return Err(AuthorizeRefusal::Page(
                    "The redirect_uri is not one this application registered.".to_owned(),
                ))
            }
        };
        let refuse = |code, why: &str| AuthorizeRefusal::Redirect {
            redirect_uri: redirect_uri.clone(),
            error: OAuthError::new(code, why),
            state: request.state.clone(),
        };
        if request.response_type != "code" {
            return Err(refuse(
                "unsupported_response_type",
                "response_type must be code",
            ));
        }
        match (
            &request.code_challenge,
            request.code_challenge_method.as_deref(),
        ) {
            (Some(challenge), Some("S256")) if (43..=128).contains(&challenge.len()) => {}
            (Some(_), Some("S256")) => {
                return Err(refuse(
                    "invalid_request",
                    "code_challenge must be 43 to 128 characters",
                ))
            }
            (Some(_), _) => {
                return Err(refuse(
                    "invalid_request",
                    "code_challenge_method must be S256 (plain is not accepted)",
                ))
            }
            (None, _) => {
                return Err(refuse(
                    "invalid_request",
                    "code_challenge is required (PKCE with S256)",
                ))
            }
        }
        if let Some(resource) = &request.resource {
            if !self.is_resource(resource) {
                return Err(refuse(
                    "invalid_target",
                    "resource must be this gateway's MCP endpoint",
                ));
            }
        }
        Ok(Consent {
            request,
            client,
            redirect_uri,
        })
    }

    fn is_resource(&self, resource: &str) -> bool {
        let ours = self.inner.settings.resource();
        let given = resource.trim_end_matches('/');
        given == ours || given == self.inner.settings.public.as_str()
    }

    /// The person signed in with `key` and allowed `consent`: a code for the client, or why not.
    pub(crate) async fn allow(&self, consent: &Consent, key: &str) -> Result<String, Unauthorized> {
        let caller = self.inner.clients.authenticate(Some(key));
        let Ok(caller) = caller else {
            self.count(Event::Denied);
            self.inner.clients.count_unauthorized();
            return Err(Unauthorized::Unknown);
        };
        let code = grants::secret("");
        let record = Code {
            client_id: consent.client.client_id.clone(),
            redirect_uri: consent.redirect_uri.clone(),
            challenge: consent.request.code_challenge.clone().unwrap_or_default(),
            grant: Grant {
                client_id: consent.client.client_id.clone(),
                key_digest: hex::encode(crate::clients::keys_file::digest(key.trim().as_bytes())),
                scope: grants::SCOPE.to_owned(),
                resource: self.inner.settings.resource(),
            },
        };
        if self
            .put(&grants::id(Kind::Code, &code), &record, CODE_LIFETIME)
            .await
            .is_err()
        {
            return Err(Unauthorized::Unknown);
        }
        self.count(Event::Allowed);
        tracing::info!(
            client = caller.name.as_str(),
            oauth_client = consent.client.client_name.as_deref().unwrap_or("-"),
            "oauth consent given"
        );
        Ok(code)
    }

    /// Counts a person declining on the consent page.
    pub(crate) fn declined(&self) {
        self.count(Event::Denied);
    }

    /// The token endpoint: a code or a refresh token for new tokens. `basic` is the client's
    /// HTTP Basic credentials, if it sent them.
    pub(crate) async fn token(
        &self,
        request: TokenRequest,
        basic: Option<(String, String)>,
    ) -> Result<Tokens, OAuthError> {
        let result = match request.grant_type.as_str() {
            "authorization_code" => self.exchange(request, basic).await,
            "refresh_token" => self.refresh(request, basic).await,
            "" => Err(OAuthError::new("invalid_request", "grant_type is required")),
            other => Err(OAuthError::new(
                "unsupported_grant_type",
                format!("grant_type {other:?} is not supported: authorization_code, refresh_token"),
            )),
        };
        if result.is_err() {
            self.count(Event::GrantRefused);
        }
        result
    }

    /// The registered client the request names, its credentials checked.
    async fn authenticated_client(
        &self,
        request: &TokenRequest,
        basic: Option<(String, String)>,
    ) -> Result<Registration, OAuthError> {
        let (id, secret) = match basic {
            Some((id, secret)) => (Some(id), Some(secret)),
            None => (request.client_id.clone(), request.client_secret.clone()),
        };
        let Some(id) = id else {
            return Err(OAuthError::new("invalid_client", "client_id is required"));
        };
        let client = self
            .client(&id)
            .await
            .ok_or_else(|| OAuthError::new("invalid_client", "unknown client_id"))?;
        if !client.secret_matches(secret.as_deref()) {
            return Err(OAuthError::new(
                "invalid_client",
                "the client secret does not match",
            ));
        }
        Ok(client)
    }

    async fn exchange(
        &self,
        request: TokenRequest,
        basic: Option<(String, String)>,
    ) -> Result<Tokens, OAuthError> {
        let client = self.authenticated_client(&request, basic).await?;
        let Some(code) = request.code.as_deref().filter(|c| !c.is_empty()) else {
            return Err(OAuthError::new("invalid_request", "code is required"));
        };
        let invalid = || {
            OAuthError::new(
                "invalid_grant",
                "the code is not valid: unknown, used, or expired",
            )
        };
        let blob = self
            .inner
            .store
            .take(&grants::id(Kind::Code, code))
            .await
            .ok_or_else(invalid)?;
        let record: Code = serde_json::from_slice(&blob).map_err(|_| invalid())?;
        if record.client_id != client.client_id {
            return Err(OAuthError::new(
                "invalid_grant",
                "the code was issued to another client",
            ));
        }
        if request
            .redirect_uri
            .as_deref()
            .is_some_and(|uri| uri != record.redirect_uri)
        {
            return Err(OAuthError::new(
                "invalid_grant",
                "redirect_uri differs from the authorization request's",
            ));
        }
        let verifier = request.code_verifier.as_deref().unwrap_or_default();
        if !grants::pkce_matches(&record.challenge, verifier) {
            return Err(OAuthError::new(
                "invalid_grant",
                "code_verifier does not match the code_challenge",
            ));
        }
        self.check_resource(request.resource.as_deref())?;
        let tokens = self.issue(&record.grant).await?;
        self.count(Event::Issued);
        Ok(tokens)
    }

    async fn refresh(
        &self,
        request: TokenRequest,
        basic: Option<(String, String)>,
    ) -> Result<Tokens, OAuthError> {
        let client = self.authenticated_client(&request, basic).await?;
        let Some(token) = request.refresh_token.as_deref().filter(|t| !t.is_empty()) else {
            return Err(OAuthError::new(
                "invalid_request",
                "refresh_token is required",
            ));
        };
        let invalid = || {
            OAuthError::new(
                "invalid_grant",
                "the refresh token is not valid: unknown, used, expired, or its API key was removed",
            )
        };
        let blob = self
            .inner
            .store
            .take(&grants::id(Kind::Refresh, token))
            .await
            .ok_or_else(invalid)?;
        let grant: Grant = serde_json::from_slice(&blob).map_err(|_| invalid())?;
        if grant.client_id != client.client_id {
            return Err(OAuthError::new(
                "invalid_grant",
                "the refresh token was issued to another client",
            ));
        }
        let holds = grant
            .key_digest()
            .and_then(|digest| self.inner.clients.holder(&digest));
        if holds.is_none() {
            return Err(invalid());
        }
        self.check_resource(request.resource.as_deref())?;
        let tokens = self.issue(&grant).await?;
        self.count(Event::Refreshed);
        Ok(tokens)
    }

    fn check_resource(&self, resource: Option<&str>) -> Result<(), OAuthError> {
        match resource {
            Some(resource) if !self.is_resource(resource) => Err(OAuthError::new(
                "invalid_target",
                "resource must be this gateway's MCP endpoint",
            )),
            _ => Ok(()),
        }
    }

    async fn issue(&self, grant: &Grant) -> Result<Tokens, OAuthError> {
        let lifetimes = self.lifetimes();
        let access = grants::secret(grants::ACCESS_PREFIX);
        let refresh = grants::secret(grants::REFRESH_PREFIX);
        self.put(&grants::id(Kind::Access, &access), grant, lifetimes.access)
            .await?;
        self.put(
            &grants::id(Kind::Refresh, &refresh),
            grant,
            lifetimes.refresh,
        )
        .await?;
        Ok(Tokens {
            access_token: access,
            token_type: "Bearer",
            expires_in: lifetimes.access.as_secs(),
            refresh_token: refresh,
            scope: grant.scope.clone(),
        })
    }

    /// Revocation (RFC 7009): the token, access or refresh, is forgotten everywhere. Answered
    /// the same whether it existed or not.
    pub(crate) async fn revoke(&self, token: &str) {
        let store = &self.inner.store;
        store.delete(&grants::id(Kind::Access, token)).await;
        store.delete(&grants::id(Kind::Refresh, token)).await;
        self.count(Event::Revoked);
    }
}

/// A registration request checked: the client's name as shown, and how it authenticates.
pub(crate) fn checked(
    request: &RegistrationRequest,
) -> Result<(Option<String>, ClientAuth), OAuthError> {
    let metadata = |why: String| OAuthError::new("invalid_client_metadata", why);
    if request.redirect_uris.is_empty() {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            "redirect_uris is required: at least one",
        ));
    }
    if request.redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!("at most {MAX_REDIRECT_URIS} redirect_uris"),
        ));
    }
    for uri in &request.redirect_uris {
        redirect_uri_allowed(uri).map_err(|why| OAuthError::new("invalid_redirect_uri", why))?;
    }
    let name = request
        .client_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| n.chars().take(200).collect::<String>());
    let auth = match request.token_endpoint_auth_method.as_deref() {
        None => ClientAuth::None,
        Some(word) => ClientAuth::parse(word).ok_or_else(|| {
            metadata(format!(
                "token_endpoint_auth_method {word:?} is not supported: none, client_secret_post or client_secret_basic"
            ))
        })?,
    };
    if let Some(kinds) = &request.grant_types {
        if let Some(other) = kinds
            .iter()
            .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
        {
            return Err(metadata(format!(
                "grant type {other:?} is not supported: authorization_code and refresh_token"
            )));
        }
    }
    if let Some(kinds) = &request.response_types {
        if let Some(other) = kinds.iter().find(|r| r.as_str() != "code") {
            return Err(metadata(format!(
                "response type {other:?} is not supported: code"
            )));
        }
    }
    Ok((name, auth))
}

fn client_key(client_id: &str) -> String {
    format!("client:{client_id}")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether a client may register `uri` as where people come back to: an absolute URL without a
/// fragment; `https`, `http` only to a loopback host (a desktop client's listener), or an app's
/// own scheme (`cursor://…`) — never `javascript:`, `data:`, `file:` and the like.
fn redirect_uri_allowed(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_FIELD_CHARS {
        return Err("a redirect URI is too long".to_owned());
    }
    let parsed = url::Url::parse(uri).map_err(|_| format!("{uri:?} is not an absolute URL"))?;
    if parsed.fragment().is_some() {
        return Err(format!("{uri:?} has a fragment"));
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => match parsed.host() {
            Some(url::Host::Domain("localhost")) => Ok(()),
            Some(url::Host::Ipv4(ip)) if ip.is_loopback() => Ok(()),
            Some(url::Host::Ipv6(ip)) if ip.is_loopback() => Ok(()),
            _ => Err(format!("{uri:?}: http is allowed to a loopback host only")),
        },
        "javascript" | "data" | "file" | "blob" | "about" | "vbscript" | "ftp" | "ws" | "wss" => {
            Err(format!(
                "{uri:?}: the scheme {} is not allowed",
                parsed.scheme()
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_loopback_http_or_an_apps_scheme() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost:6274/oauth/callback",
            "http://[::1]:8080/cb",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
        ] {
            assert_eq!(redirect_uri_allowed(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "https://x.example/cb#frag",
            "/relative",
        ] {
            assert!(redirect_uri_allowed(bad).is_err(), "{bad}");
        }
    }
}
