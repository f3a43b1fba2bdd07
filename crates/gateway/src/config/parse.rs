//! Reading one variable: the raw value (trimmed; empty counts as unset) or its default from the
//! table, then one parser per kind of value. Every failure is a [`ConfigError`] naming the variable.

use std::cell::RefCell;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use url::Url;

use super::variables::{self, Fallback};
use super::ConfigError;

/// The environment as the parser sees it: a lookup function, and the names it was asked for (a
/// test compares them with the table).
pub(super) struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    pub(super) read: RefCell<Vec<String>>,
}

/// A value and the variable it came from, so a later check can still name it.
pub(super) struct Raw {
    pub(super) name: String,
    pub(super) text: String,
}

impl Raw {
    pub(super) fn error(&self, problem: impl Into<String>) -> ConfigError {
        ConfigError::new(&self.name, &self.text, problem)
    }
}

impl<'a> Env<'a> {
    pub(super) fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            lookup,
            read: RefCell::new(Vec::new()),
        }
    }

    /// What the operator set, trimmed; an empty value counts as unset.
    fn given(&self, name: &str) -> Option<String> {
        self.read.borrow_mut().push(name.to_owned());
        (self.lookup)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The value to parse: what was set, else the table's default (another variable's value, for
    /// a default that names one). `None` only for a variable without a default.
    pub(super) fn value(&self, name: &str) -> Option<Raw> {
        if let Some(text) = self.given(name) {
            return Some(Raw {
                name: name.to_owned(),
                text,
            });
        }
        match variables::find(name).map(|v| v.fallback) {
            Some(Fallback::Text(text)) => Some(Raw {
                name: name.to_owned(),
                text: text.to_owned(),
            }),
            Some(Fallback::Variable(other)) => self.value(other),
            Some(Fallback::Unset) | None => None,
        }
    }

    /// A value that has a default in the table.
    pub(super) fn required(&self, name: &str) -> Result<Raw, ConfigError> {
        self.value(name)
            .ok_or_else(|| ConfigError::new(name, "", "is required"))
    }

    pub(super) fn integer<T>(&self, name: &str, min: T, max: T) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy,
    {
        let raw = self.required(name)?;
        let value: T = raw
            .text
            .parse()
            .map_err(|_| raw.error("not a whole number"))?;
        if value < min || value > max {
            return Err(raw.error(format!("must be between {min} and {max}")));
        }
        Ok(value)
    }

    pub(super) fn seconds(&self, name: &str) -> Result<Duration, ConfigError> {
        let raw = self.required(name)?;
        seconds(&raw)
    }

    pub(super) fn url(&self, name: &str) -> Result<Url, ConfigError> {
        let raw = self.required(name)?;
        http_url(&raw, &raw.text)
    }

    /// A URL that may be unset.
    pub(super) fn optional_url(&self, name: &str) -> Result<Option<Url>, ConfigError> {
        match self.value(name) {
            Some(_) => self.url(name).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn listen_addr(&self, name: &str) -> Result<SocketAddr, ConfigError> {
        let raw = self.required(name)?;
        listen_addr(&raw.text).ok_or_else(|| raw.error("expected :PORT, HOST:PORT or [IPv6]:PORT"))
    }
}

/// `text` (all of `raw`, or one entry of a list in it) as an http(s) URL with a host and without a
/// query or fragment; an error names `raw`'s variable.
pub(super) fn http_url(raw: &Raw, text: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(text).map_err(|e| raw.error(format!("{text:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(raw.error("must be an http:// or https:// URL with a host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(raw.error("must not carry a query or fragment"));
    }
    Ok(url)
}

/// A number of seconds: greater than 0, at most a year, fractions allowed.
pub(super) fn seconds(raw: &Raw) -> Result<Duration, ConfigError> {
    let secs: f64 = raw
        .text
        .parse()
        .map_err(|_| raw.error("not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 31_536_000.0 {
        return Err(raw.error("must be a number of seconds greater than 0 and at most one year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `:PORT` (every IPv4 interface, which works on hosts without IPv6), `localhost:PORT`,
/// `HOST:PORT` or `[IPv6]:PORT`.
pub(super) fn listen_addr(raw: &str) -> Option<SocketAddr> {
    if let Some(port) = raw.strip_prefix(':') {
        let port: u16 = port.parse().ok()?;
        return Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
    }
    if let Some(("localhost", port)) = raw.rsplit_once(':') {
        return Some(SocketAddr::from(([127, 0, 0, 1], port.parse().ok()?)));
    }
    raw.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn listen_addr_forms() {
        assert_eq!(listen_addr(":9090"), Some("0.0.0.0:9090".parse().unwrap()));
        assert_eq!(
            listen_addr("localhost:80"),
            Some("127.0.0.1:80".parse().unwrap())
        );
        assert_eq!(
            listen_addr("127.0.0.1:0"),
            Some("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!(listen_addr("[::1]:80"), Some("[::1]:80".parse().unwrap()));
        assert_eq!(listen_addr("8080"), None);
        assert_eq!(listen_addr(":http"), None);
    }

    #[test]
    fn an_empty_value_counts_as_unset_and_defaults_may_name_another_variable() {
        let lookup = |name: &str| match name {
            "CACHE_SIZE" => Some("  ".to_owned()),
            "PROVIDER_TIMEOUT_SECONDS" => Some("4".to_owned()),
            _ => None,
        };
        let env = Env::new(&lookup);
        assert_eq!(env.value("CACHE_SIZE").unwrap().text, "1000");
        let exa = env.value("EXA_TIMEOUT_SECONDS").unwrap();
        assert_eq!(
            (exa.name.as_str(), exa.text.as_str()),
            ("PROVIDER_TIMEOUT_SECONDS", "4")
        );
        assert!(env.value("EXA_API_KEY").is_none());
    }
}
