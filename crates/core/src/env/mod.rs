//! Reading the environment, one variable at a time: the raw value (trimmed; empty counts as unset)
//! or its default from [`variables`] (the table of every variable, written once), then one parser
//! per kind of value. Every failure is a [`ConfigError`] naming the variable, with its [`Problem`]
//! as a variant. Each module that owns a setting reads it through [`Env`] (the providers their keys
//! and origins, the clients the keys file, the shared tier its URL); `config` puts the sections
//! together. This module sits below everything and knows none of them.

pub mod variables;

use std::cell::RefCell;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use url::Url;

use variables::Fallback;

/// A configuration problem: which variable, its value, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {variable}={value:?}: {problem}")]
pub struct ConfigError {
    /// The variable at fault.
    pub variable: String,
    /// The value found (never a secret's: keys, tokens and passwords are shown redacted).
    pub value: String,
    /// What is wrong.
    pub problem: Problem,
}

impl ConfigError {
    /// `variable`'s value `value` has `problem`.
    pub fn new(variable: &str, value: &str, problem: Problem) -> Self {
        Self {
            variable: variable.to_owned(),
            value: value.to_owned(),
            problem,
        }
    }
}

/// What is wrong with a value: each variant reads as a fact about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// Unset, and the variable has no default.
    #[error("is required")]
    Required,
    /// Not a whole number.
    #[error("not a whole number")]
    NotAWholeNumber,
    /// A number outside its range.
    #[error("must be between {min} and {max}")]
    OutOfRange {
        /// The smallest accepted value.
        min: String,
        /// The largest accepted value.
        max: String,
    },
    /// Not a number.
    #[error("not a number")]
    NotANumber,
    /// Not a number of seconds.
    #[error("not a number of seconds")]
    NotSeconds,
    /// Seconds that are zero, negative or beyond a year.
    #[error("must be a number of seconds greater than 0 and at most one year")]
    SecondsOutOfRange,
    /// A value that must be smaller than or equal to another variable's is not.
    #[error("must not be smaller than {0}")]
    SmallerThan(&'static str),
    /// Not one of the words the variable takes.
    #[error("must be one of {}", .0.join(", "))]
    NotOneOf(&'static [&'static str]),
    /// A name in a list that the gateway does not know.
    #[error("unknown {kind} {name:?} (known: {})", .known.join(", "))]
    UnknownName {
        /// What the list names (`provider`, `reader`).
        kind: &'static str,
        /// The name given.
        name: String,
        /// The names it takes.
        known: Vec<&'static str>,
    },
    /// The same entry twice in a list.
    #[error("lists {0} twice")]
    ListedTwice(String),
    /// An empty entry in a comma list.
    #[error("has an empty entry: separate the entries with single commas")]
    EmptyEntry,
    /// More entries than the variable takes.
    #[error("lists {count} entries; at most {max} are supported")]
    TooMany {
        /// How many were given.
        count: usize,
        /// How many are taken.
        max: usize,
    },
    /// Not a `:PORT`, `HOST:PORT` or `[IPv6]:PORT`.
    #[error("expected :PORT, HOST:PORT or [IPv6]:PORT")]
    NotAListenAddress,
    /// Not a URL at all.
    #[error("{entry:?} is not a URL ({error})")]
    NotAUrl {
        /// The text that did not parse.
        entry: String,
        /// Why.
        error: url::ParseError,
    },
    /// A URL that is not `http(s)://` with a host.
    #[error("must be an http:// or https:// URL with a host")]
    NotHttpUrl,
    /// A URL with a query or fragment where none may be.
    #[error("must not carry a query or fragment")]
    UrlWithQuery,
    /// SearXNG's search URL with its query, where its base URL belongs: the entry and the base.
    #[error("{entry:?} is a search URL with a query; give SearXNG's base URL instead, {base} (the gateway adds /search and the query itself)")]
    SearchUrlWithQuery {
        /// The entry as given.
        entry: String,
        /// The base URL to give instead.
        base: String,
    },
    /// A URL with a path where only an origin may be.
    #[error(
        "must be an origin (scheme://host[:port]) without a path: the upstream's path is added"
    )]
    NotAnOrigin,
    /// A URL that is not plain `http://` where TLS is not built in.
    #[error("must be an http:// URL: this build exports to a collector without TLS (a local agent or sidecar)")]
    NotPlainHttp,
    /// Not a Redis URL (its text is not shown: it may hold a password).
    #[error("not a URL: expected redis://[user:pass@]host:port/db, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master")]
    NotARedisUrl,
    /// A Redis URL whose scheme the client does not take.
    #[error("the scheme must be redis://, rediss:// (TLS), redis+cluster://, redis+sentinel:// (rediss+… with TLS)")]
    RedisScheme,
    /// A URL without a host.
    #[error("has no host")]
    NoHost,
    /// A Redis URL whose path is not a database number.
    #[error("the path must be a database number (/0)")]
    NotADatabase,
    /// A Sentinel URL without the master's name.
    #[error("names no master: redis+sentinel://host:port,host:port/<master>[/db]")]
    NoSentinelMaster,
    /// A Redis URL the client library refuses.
    #[error("not usable by the Redis client")]
    UnusableRedisUrl,
    /// Characters the value may not hold (named in the message).
    #[error("must not contain {0}")]
    ForbiddenCharacters(&'static str),
    /// Not a file the gateway can execute.
    #[error("must be an executable file (the gateway runs it as `PROGRAM parse-worker`)")]
    NotAProgram,
    /// No Chromium to run: the path is not an executable file, or none was found.
    #[error("must be an executable Chromium (none found at BROWSER_PATH nor on PATH as chromium, chromium-browser or google-chrome)")]
    NoBrowser,
    /// A directory the gateway cannot create or write in.
    #[error("must be a directory the gateway can create and write in")]
    NotAWritableDirectory,
    /// Not an absolute path such as `/metrics`.
    #[error("must be an absolute path such as /metrics")]
    NotAnAbsolutePath,
    /// A path another route already serves.
    #[error("collides with a route the gateway already serves")]
    CollidesWithRoute,
    /// Shorter than the variable allows.
    #[error("must be at least {0} characters")]
    TooShort(usize),
    /// A protocol this build does not speak.
    #[error("only {0} is supported")]
    Unsupported(&'static str),
    /// A file the variable names that cannot be used: its owner's reason.
    #[error("{0}")]
    UnusableFile(String),
    /// A value that needs another setting which is missing (named in the message).
    #[error("needs {0}")]
    Needs(&'static str),
}

/// The environment as the parser sees it: a lookup function, and the names it was asked for (a
/// test compares them with the table).
pub struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// The variables read so far (the unknown-variable check).
    pub read: RefCell<Vec<String>>,
}

/// A value and the variable it came from, so a later check can still name it.
pub struct Raw {
    pub(crate) name: String,
    /// The value as set.
    pub text: String,
}

impl Raw {
    /// This value has `problem`.
    pub fn error(&self, problem: Problem) -> ConfigError {
        ConfigError::new(&self.name, &self.text, problem)
    }
}

impl<'a> Env<'a> {
    /// Reads through `lookup` (the process environment, or a map in tests).
    pub fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
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
    pub fn value(&self, name: &str) -> Option<Raw> {
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
    pub fn required(&self, name: &str) -> Result<Raw, ConfigError> {
        self.value(name)
            .ok_or_else(|| ConfigError::new(name, "", Problem::Required))
    }

    /// `name` as an integer within `min..=max`, or its default from the table.
    pub fn integer<T>(&self, name: &str, min: T, max: T) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy,
    {
        let raw = self.required(name)?;
        let value: T = raw
            .text
            .parse()
            .map_err(|_| raw.error(Problem::NotAWholeNumber))?;
        if value < min || value > max {
            return Err(raw.error(Problem::OutOfRange {
                min: min.to_string(),
                max: max.to_string(),
            }));
        }
        Ok(value)
    }

    /// `true` or `false` (also `1`/`0`, `yes`/`no`, `on`/`off`, in any case).
    pub fn flag(&self, name: &str) -> Result<bool, ConfigError> {
        let raw = self.required(name)?;
        match raw.text.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(raw.error(Problem::NotOneOf(&["true", "false"]))),
        }
    }

    /// A comma list of names from a closed set (unset: empty), each read by `parse`, none twice:
    /// `FALLBACK_PROVIDERS`, `READ_PROVIDERS`. `kind` says what the names are in an error
    /// (`provider`), `known` lists the names it takes.
    pub fn name_list<T: PartialEq>(
        &self,
        name: &str,
        kind: &'static str,
        known: &[&'static str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Vec<T>, ConfigError> {
        let Some(raw) = self.value(name) else {
            return Ok(Vec::new());
        };
        let mut list = Vec::new();
        for entry in raw.text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let member = parse(entry).ok_or_else(|| {
                raw.error(Problem::UnknownName {
                    kind,
                    name: entry.to_owned(),
                    known: known.to_vec(),
                })
            })?;
            if list.contains(&member) {
                return Err(raw.error(Problem::ListedTwice(format!("{kind} {entry:?}"))));
            }
            list.push(member);
        }
        Ok(list)
    }

    /// An optional whole number between `min` and `max` (unset: `None`).
    pub fn optional_integer<T>(&self, name: &str, min: T, max: T) -> Result<Option<T>, ConfigError>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy,
    {
        match self.value(name) {
            None => Ok(None),
            Some(_) => self.integer(name, min, max).map(Some),
        }
    }

    /// A finite number between `min` and `max`.
    pub fn number(&self, name: &str, min: f64, max: f64) -> Result<f64, ConfigError> {
        let raw = self.required(name)?;
        let value: f64 = raw
            .text
            .parse()
            .map_err(|_| raw.error(Problem::NotANumber))?;
        if !value.is_finite() || value < min || value > max {
            return Err(raw.error(Problem::OutOfRange {
                min: min.to_string(),
                max: max.to_string(),
            }));
        }
        Ok(value)
    }

    /// `name` as seconds (a decimal number, at least zero), or its default from the table.
    pub fn seconds(&self, name: &str) -> Result<Duration, ConfigError> {
        let raw = self.required(name)?;
        seconds(&raw)
    }

    pub(crate) fn url(&self, name: &str) -> Result<Url, ConfigError> {
        let raw = self.required(name)?;
        http_url(&raw, &raw.text)
    }

    /// An origin (`scheme://host[:port]`, an http(s) URL without a path): an upstream's own path
    /// is added to it.
    pub fn origin(&self, name: &str) -> Result<Url, ConfigError> {
        let mut url = self.url(name)?;
        if !matches!(url.path(), "" | "/") {
            return Err(ConfigError::new(name, url.as_str(), Problem::NotAnOrigin));
        }
        url.set_path("");
        Ok(url)
    }

    /// A URL that may be unset.
    pub fn optional_url(&self, name: &str) -> Result<Option<Url>, ConfigError> {
        match self.value(name) {
            Some(_) => self.url(name).map(Some),
            None => Ok(None),
        }
    }

    /// `name` as a socket address (`host:port`), or its default from the table.
    pub fn listen_addr(&self, name: &str) -> Result<SocketAddr, ConfigError> {
        let raw = self.required(name)?;
        listen_addr(&raw.text).ok_or_else(|| raw.error(Problem::NotAListenAddress))
    }
}

/// `text` (all of `raw`, or one entry of a list in it) as an http(s) URL with a host and without a
/// query or fragment; an error names `raw`'s variable.
pub fn http_url(raw: &Raw, text: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(text).map_err(|error| {
        raw.error(Problem::NotAUrl {
            entry: text.to_owned(),
            error,
        })
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(raw.error(Problem::NotHttpUrl));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(raw.error(Problem::UrlWithQuery));
    }
    Ok(url)
}

/// A number of seconds: greater than 0, at most a year, fractions allowed.
pub fn seconds(raw: &Raw) -> Result<Duration, ConfigError> {
    let secs: f64 = raw
        .text
        .parse()
        .map_err(|_| raw.error(Problem::NotSeconds))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 31_536_000.0 {
        return Err(raw.error(Problem::SecondsOutOfRange));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `:PORT` (every IPv4 interface, which works on hosts without IPv6), `localhost:PORT`,
/// `HOST:PORT` or `[IPv6]:PORT`.
pub(crate) fn listen_addr(raw: &str) -> Option<SocketAddr> {
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
