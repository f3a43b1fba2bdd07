//! MCP's authorization, as the operator configures it: `PUBLIC_URL`, `MCP_OAUTH`,
//! `MCP_OAUTH_ISSUER`, `MCP_OAUTH_AUDIENCE`, `MCP_OAUTH_CLIENT` and the tokens' lifetimes.
//! Read here, by their owner; a setting that cannot work (OAuth on without `PUBLIC_URL`, the
//! gateway's own authorization server without `API_KEYS_FILE` to sign in with) is a configuration
//! error naming the variable.

use std::time::Duration;

use gateway_core::env::{ConfigError, Env, Problem};
use url::Url;

/// The MCP endpoint's path: the protected resource is `<PUBLIC_URL>/mcp`.
pub(crate) const RESOURCE_PATH: &str = "/mcp";

/// Where clients reach the gateway: an http(s) URL without query or fragment, kept without a
/// trailing slash so paths are appended to it (`<PUBLIC_URL>/mcp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PublicUrl(String);

impl PublicUrl {
    /// `PUBLIC_URL` as given, checked.
    fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        let Some(url) = env.optional_url("PUBLIC_URL")? else {
            return Ok(None);
        };
        if url.query().is_some() || url.fragment().is_some() {
            return Err(ConfigError::new(
                "PUBLIC_URL",
                url.as_str(),
                Problem::UrlWithQuery,
            ));
        }
        Ok(Some(Self(url.as_str().trim_end_matches('/').to_owned())))
    }

    /// The URL of `path` (which starts with `/`) on the gateway.
    pub(crate) fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }

    /// The gateway itself, as an issuer names itself: no trailing slash.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whose tokens `/mcp` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OAuthMode {
    /// The gateway's own authorization server: tokens it issued to a person who signed in with
    /// their API key.
    BuiltIn(Lifetimes),
    /// An external issuer's JWTs.
    External(ExternalIssuer),
}

/// How long what the gateway issues lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lifetimes {
    /// `MCP_OAUTH_TOKEN_SECONDS`.
    pub(crate) access: Duration,
    /// `MCP_OAUTH_REFRESH_SECONDS`.
    pub(crate) refresh: Duration,
}

/// `MCP_OAUTH_ISSUER` and what its tokens must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExternalIssuer {
    /// The issuer's identifier, as its tokens' `iss` and its metadata say it.
    pub(crate) issuer: Url,
    /// `MCP_OAUTH_AUDIENCE`, else the MCP resource.
    pub(crate) audience: String,
    /// `MCP_OAUTH_CLIENT`: the client whose limits its users share.
    pub(crate) client: Option<String>,
}

/// MCP's authorization; `None` in [`crate::settings::ServerSettings`] when it is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    /// `PUBLIC_URL`.
    pub(crate) public: PublicUrl,
    /// Whose tokens are taken.
    pub(crate) mode: OAuthMode,
}

impl OAuthSettings {
    /// The MCP resource's identifier: `<PUBLIC_URL>/mcp`.
    pub(crate) fn resource(&self) -> String {
        self.public.join(RESOURCE_PATH)
    }

    /// Reads MCP's authorization; `keys` says whether `API_KEYS_FILE` is set (the gateway's own
    /// server signs people in with their key). `None`: off.
    pub(crate) fn read(env: &Env<'_>, keys: bool) -> Result<Option<Self>, ConfigError> {
        let public = PublicUrl::read(env)?;
        let issuer = env.optional_url("MCP_OAUTH_ISSUER")?;
        let raw = env.value("MCP_OAUTH");
        let word = raw.as_ref().map_or("auto", |raw| raw.text.as_str());
        let on = match word {
            "off" => false,
            "on" => true,
            "auto" => public.is_some() && (keys || issuer.is_some()),
            _ => {
                let raw = raw.as_ref().map(|r| r.text.as_str()).unwrap_or_default();
                return Err(ConfigError::new(
                    "MCP_OAUTH",
                    raw,
                    Problem::NotOneOf(&["auto", "on", "off"]),
                ));
            }
        };
        // Read whether on or not, so a typo is an error either way.
        let lifetimes = Lifetimes {
            access: env.seconds("MCP_OAUTH_TOKEN_SECONDS")?,
            refresh: env.seconds("MCP_OAUTH_REFRESH_SECONDS")?,
        };
        let audience = env.value("MCP_OAUTH_AUDIENCE").map(|raw| raw.text);
        let client = env.value("MCP_OAUTH_CLIENT").map(|raw| raw.text);
        if !on {
            return Ok(None);
        }
        let Some(public) = public else {
            return Err(ConfigError::new(
                "MCP_OAUTH",
                word,
                Problem::Needs("PUBLIC_URL"),
            ));
        };
        let mode = match issuer {
            Some(issuer) => OAuthMode::External(ExternalIssuer {
                audience: audience.unwrap_or_else(|| public.join(RESOURCE_PATH)),
                issuer,
                client,
            }),
            None if !keys => {
                return Err(ConfigError::new(
                    "MCP_OAUTH",
                    word,
                    Problem::Needs(
                        "API_KEYS_FILE (people sign in with their API key) or MCP_OAUTH_ISSUER",
                    ),
                ))
            }
            None => OAuthMode::BuiltIn(lifetimes),
        };
        Ok(Some(Self { public, mode }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)], keys: bool) -> Result<Option<OAuthSettings>, ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        OAuthSettings::read(&Env::new(&lookup), keys)
    }

    #[test]
    fn auto_is_on_with_a_public_url_and_keys_and_off_otherwise() {
        assert_eq!(read(&[], true).unwrap(), None);
        assert_eq!(
            read(&[("PUBLIC_URL", "https://s.example")], false).unwrap(),
            None
        );
        let on = read(&[("PUBLIC_URL", "https://s.example/gw/")], true)
            .unwrap()
            .unwrap();
        assert_eq!(on.resource(), "https://s.example/gw/mcp");
        assert_eq!(on.public.as_str(), "https://s.example/gw");
        assert!(matches!(on.mode, OAuthMode::BuiltIn(_)));
        assert_eq!(
            read(
                &[("PUBLIC_URL", "https://s.example"), ("MCP_OAUTH", "off")],
                true
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn on_without_what_it_needs_names_the_variable() {
        let err = read(&[("MCP_OAUTH", "on")], true).unwrap_err().to_string();
        assert!(
            err.contains("MCP_OAUTH") && err.contains("PUBLIC_URL"),
            "{err}"
        );
        let err = read(
            &[("MCP_OAUTH", "on"), ("PUBLIC_URL", "https://s.example")],
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("API_KEYS_FILE"), "{err}");
        let err = read(&[("MCP_OAUTH", "yes")], true).unwrap_err().to_string();
        assert!(
            err.contains("MCP_OAUTH") && err.contains("auto, on, off"),
            "{err}"
        );
        let err = read(&[("PUBLIC_URL", "https://s.example/?a=1")], true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("PUBLIC_URL"), "{err}");
    }

    #[test]
    fn an_external_issuer_needs_no_keys_and_defaults_its_audience_to_the_resource() {
        let on = read(
            &[
                ("PUBLIC_URL", "https://s.example"),
                ("MCP_OAUTH_ISSUER", "https://id.example/realms/r"),
            ],
            false,
        )
        .unwrap()
        .unwrap();
        let OAuthMode::External(external) = on.mode else {
            panic!("external")
        };
        assert_eq!(external.audience, "https://s.example/mcp");
    }
}
