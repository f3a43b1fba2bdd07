//! The shared tier's settings, read from the environment here (their owner): `REDIS_URL`,
//! `REDIS_KEY_PREFIX`, `REDIS_TIMEOUT_MS` — off unless a URL is set. The URL is checked at
//! start-up, so a typo stops the process naming the variable — and the value shown in that error
//! has its password masked.

use std::time::Duration;

use url::Url;

use crate::env::{ConfigError, Env, Problem};

/// Where the shared tier lives and how long any one operation may take.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisSettings {
    /// `redis://` or `rediss://` (TLS), with optional credentials and database number.
    pub(crate) url: Url,
    /// Put in front of every key (`REDIS_KEY_PREFIX`).
    pub(crate) key_prefix: String,
    /// The bound of every Redis operation (`REDIS_TIMEOUT_MS`).
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field("url", &masked(&self.url))
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RedisSettings {
    /// `None` when `REDIS_URL` is unset: one process, nothing shared.
    pub(crate) fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        // Read (and checked) even without a URL, so a typo is caught before it matters.
        let key_prefix = env.required("REDIS_KEY_PREFIX")?;
        if key_prefix.text.contains(['{', '}']) || key_prefix.text.chars().any(char::is_whitespace)
        {
            return Err(key_prefix.error(Problem::ForbiddenCharacters(
                "braces (they are the keys' Redis Cluster hash tags) or spaces",
            )));
        }
        let timeout = Duration::from_millis(env.integer("REDIS_TIMEOUT_MS", 1u64, 10_000)?);
        let Some(raw) = env.value("REDIS_URL") else {
            return Ok(None);
        };
        let refuse = |shown: &str, problem| ConfigError::new("REDIS_URL", shown, problem);
        let url = Url::parse(&raw.text)
            .map_err(|_| refuse("(not shown: it may hold a password)", Problem::NotARedisUrl))?;
        let shown = masked(&url);
        if !matches!(url.scheme(), "redis" | "rediss") {
            return Err(refuse(&shown, Problem::RedisScheme));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(refuse(&shown, Problem::NoHost));
        }
        let db = url.path().trim_start_matches('/');
        if !db.is_empty() && db.parse::<u16>().is_err() {
            return Err(refuse(&shown, Problem::NotADatabase));
        }
        if redis::Client::open(url.as_str()).is_err() {
            return Err(refuse(&shown, Problem::UnusableRedisUrl));
        }
        Ok(Some(Self {
            url,
            key_prefix: key_prefix.text,
            timeout,
        }))
    }
}

/// The URL with its password replaced, for errors, logs and `/status`.
pub(crate) fn masked(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(url: &str) -> Result<Option<RedisSettings>, ConfigError> {
        let lookup = move |name: &str| (name == "REDIS_URL").then(|| url.to_owned());
        RedisSettings::read(&Env::new(&lookup))
    }

    #[test]
    fn unset_means_no_shared_tier() {
        assert_eq!(read("").unwrap(), None);
    }

    #[test]
    fn a_url_with_credentials_and_database_is_read_with_the_defaults() {
        let s = read("redis://u:secret@127.0.0.1:6379/2").unwrap().unwrap();
        assert_eq!(s.url.port(), Some(6379));
        assert_eq!(s.key_prefix, "sxgw:");
        assert_eq!(s.timeout, Duration::from_millis(50));
        assert!(!format!("{s:?}").contains("secret"), "{s:?}");
    }

    #[test]
    fn a_wrong_scheme_is_refused_by_name_without_showing_the_password() {
        let e = read("http://u:secret@host:6379").unwrap_err();
        assert_eq!(e.variable, "REDIS_URL");
        assert!(!e.to_string().contains("secret"), "{e}");
        let e = read("redis://host:6379/x").unwrap_err();
        assert_eq!(e.problem, Problem::NotADatabase, "{e}");
        let e = read("not a url at all:secret").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
