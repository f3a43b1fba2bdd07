//! The shared tier's settings, read from the environment here (their owner): `REDIS_URL`,
//! `REDIS_KEY_PREFIX`, `REDIS_TIMEOUT_MS` — off unless a URL is set. The URL is checked at
//! start-up, so a typo stops the process naming the variable — and the value shown in that error
//! has its password masked.
//!
//! `REDIS_URL` names one of three topologies ([`Topology`]):
//! - `redis://[user:pass@]host:port[/db]` (`rediss://` with TLS): one server;
//! - `redis+cluster://[user:pass@]host:port,host:port,…` (`rediss+cluster://`): a Redis Cluster,
//!   given by any of its nodes (the client learns the rest and follows the slots);
//! - `redis+sentinel://[user:pass@]host:port,host:port,…/<master>[/db]` (`rediss+sentinel://`):
//!   the master that the Sentinels at these addresses name `<master>`, followed through failovers.
//!   The credentials and TLS apply to the Redis servers; the Sentinels are asked without a password.
//!
//! The `url` crate parses one host per URL, so the host list is split here and each host checked
//! as a URL of its own.

use std::time::Duration;

use url::Url;

use crate::env::{ConfigError, Env, Problem};

/// How the shared tier's Redis is deployed.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Topology {
    /// One server (or a proxy in front of several).
    Single(Url),
    /// A Redis Cluster, given by some of its nodes (each a `redis://` URL with the credentials).
    Cluster {
        /// The seed nodes.
        nodes: Vec<Url>,
    },
    /// The master a set of Sentinels names.
    Sentinel {
        /// The Sentinels (`redis://host:port`, no credentials).
        sentinels: Vec<Url>,
        /// The master's name in the Sentinels' configuration.
        master: String,
        /// The master's credentials, database and TLS, as a URL without a host of its own
        /// (`redis://user:pass@sentinel-host/db`: only the scheme, user info and path count).
        server: Url,
    },
}

/// Where the shared tier lives and how long any one operation may take.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// The servers and how they are deployed.
    pub(crate) topology: Topology,
    /// `REDIS_URL` with its password masked: for `/status`, logs and errors.
    pub(crate) shown: String,
    /// Put in front of every key (`REDIS_KEY_PREFIX`).
    pub(crate) key_prefix: String,
    /// The bound of every Redis operation (`REDIS_TIMEOUT_MS`).
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field("url", &self.shown)
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RedisSettings {
    /// `None` when `REDIS_URL` is unset: one process, nothing shared.
    pub fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
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
        let (topology, shown) = parse_url(&raw.text)
            .map_err(|(shown, problem)| ConfigError::new("REDIS_URL", &shown, problem))?;
        Ok(Some(Self {
            topology,
            shown,
            key_prefix: key_prefix.text,
            timeout,
        }))
    }
}

/// What a URL that is refused shows (masked) and why.
type Refusal = (String, Problem);

/// Reads `REDIS_URL`'s text into a topology and its masked form.
fn parse_url(text: &str) -> Result<(Topology, String), Refusal> {
    const HIDDEN: &str = "(not shown: it may hold a password)";
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err((HIDDEN.to_owned(), Problem::NotARedisUrl));
    };
    let (base, kind) = match scheme {
        "redis" | "rediss" => (scheme, None),
        "redis+cluster" => ("redis", Some(Kind::Cluster)),
        "rediss+cluster" => ("rediss", Some(Kind::Cluster)),
        "redis+sentinel" => ("redis", Some(Kind::Sentinel)),
        "rediss+sentinel" => ("rediss", Some(Kind::Sentinel)),
        _ => {
            let shown = Url::parse(text).map_or_else(|_| HIDDEN.to_owned(), |u| masked(&u));
            return Err((shown, Problem::RedisScheme));
        }
    };
    let Some(kind) = kind else {
        let url = Url::parse(text).map_err(|_| (HIDDEN.to_owned(), Problem::NotARedisUrl))?;
        let shown = masked(&url);
        check_server(&url).map_err(|problem| (shown.clone(), problem))?;
        return Ok((Topology::Single(url), shown));
    };
    // `[userinfo@]host:port,host:port[/path]`: the path starts at the first '/' after the hosts.
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let shown_userinfo = userinfo.map(|u| match u.split_once(':') {
        Some((user, _)) => format!("{user}:***@"),
        None => format!("{u}@"),
    });
    let shown = format!(
        "{scheme}://{}{hosts}{path}",
        shown_userinfo.unwrap_or_default()
    );
    let refuse = |problem| (shown.clone(), problem);
    let credentials = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let hosts: Vec<&str> = hosts.split(',').map(str::trim).collect();
    if hosts.iter().any(|h| h.is_empty()) {
        return Err(refuse(Problem::NoHost));
    }
    match kind {
        Kind::Cluster => {
            if !path.is_empty() && path != "/" {
                // A Cluster has one database: a path is a mistake, not a choice.
                return Err(refuse(Problem::NotADatabase));
            }
            let nodes = hosts
                .iter()
                .map(|host| server_url(&format!("{base}://{credentials}{host}")).map_err(refuse))
                .collect::<Result<Vec<_>, Refusal>>()?;
            Ok((Topology::Cluster { nodes }, shown))
        }
        Kind::Sentinel => {
            let mut segments = path.trim_start_matches('/').splitn(2, '/');
            let master = segments.next().unwrap_or_default().to_owned();
            if master.is_empty() {
                return Err(refuse(Problem::NoSentinelMaster));
            }
            let db = segments.next().unwrap_or_default();
            let sentinels = hosts
                .iter()
                .map(|host| server_url(&format!("{base}://{host}")).map_err(refuse))
                .collect::<Result<Vec<_>, Refusal>>()?;
            let server =
                server_url(&format!("{base}://{credentials}{}/{db}", hosts[0])).map_err(refuse)?;
            Ok((
                Topology::Sentinel {
                    sentinels,
                    master,
                    server,
                },
                shown,
            ))
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Cluster,
    Sentinel,
}

/// `text` as one server's URL, checked.
fn server_url(text: &str) -> Result<Url, Problem> {
    let url = Url::parse(text).map_err(|_| Problem::NotARedisUrl)?;
    check_server(&url)?;
    Ok(url)
}

/// One server's URL: a host, a database number as its path, and something the client takes.
fn check_server(url: &Url) -> Result<(), Problem> {
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Problem::NoHost);
    }
    let db = url.path().trim_start_matches('/');
    if !db.is_empty() && db.parse::<u16>().is_err() {
        return Err(Problem::NotADatabase);
    }
    if redis::Client::open(url.as_str()).is_err() {
        return Err(Problem::UnusableRedisUrl);
    }
    Ok(())
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
        let Topology::Single(url) = &s.topology else {
            panic!("{s:?}")
        };
        assert_eq!(url.port(), Some(6379));
        assert_eq!(s.key_prefix, "sxgw:");
        assert_eq!(s.timeout, Duration::from_millis(50));
        assert!(!format!("{s:?}").contains("secret"), "{s:?}");
        assert_eq!(s.shown, "redis://u:***@127.0.0.1:6379/2");
    }

    #[test]
    fn a_wrong_scheme_is_refused_by_name_without_showing_the_password() {
        let e = read("http://u:secret@host:6379").unwrap_err();
        assert_eq!(e.variable, "REDIS_URL");
        assert_eq!(e.problem, Problem::RedisScheme, "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        let e = read("redis://host:6379/x").unwrap_err();
        assert_eq!(e.problem, Problem::NotADatabase, "{e}");
        let e = read("not a url at all:secret").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn a_cluster_url_lists_its_nodes_each_with_the_credentials() {
        let s = read("redis+cluster://u:secret@10.0.0.1:7000,10.0.0.2:7001, 10.0.0.3:7002")
            .unwrap()
            .unwrap();
        let Topology::Cluster { nodes } = &s.topology else {
            panic!("{s:?}")
        };
        let ports: Vec<_> = nodes.iter().map(|n| n.port().unwrap()).collect();
        assert_eq!(ports, [7000, 7001, 7002]);
        assert!(nodes.iter().all(|n| n.password() == Some("secret")));
        assert_eq!(
            s.shown,
            "redis+cluster://u:***@10.0.0.1:7000,10.0.0.2:7001, 10.0.0.3:7002"
        );
        let e = read("redis+cluster://a:1,,b:2").unwrap_err();
        assert_eq!(e.problem, Problem::NoHost, "{e}");
        let e = read("redis+cluster://u:secret@a:1/3").unwrap_err();
        assert_eq!(e.problem, Problem::NotADatabase, "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        let e = read("redis+cluster://a:notaport").unwrap_err();
        assert_eq!(e.problem, Problem::NotARedisUrl, "{e}");
    }

    #[test]
    fn a_sentinel_url_names_its_sentinels_the_master_and_its_database() {
        let s = read("rediss+sentinel://:secret@s1:26379,s2:26380/mymaster/2")
            .unwrap()
            .unwrap();
        let Topology::Sentinel {
            sentinels,
            master,
            server,
        } = &s.topology
        else {
            panic!("{s:?}")
        };
        assert_eq!(master, "mymaster");
        assert_eq!(sentinels.len(), 2);
        assert!(sentinels.iter().all(|u| u.password().is_none()));
        assert_eq!(server.scheme(), "rediss");
        assert_eq!(server.password(), Some("secret"));
        assert_eq!(server.path(), "/2");
        assert!(!s.shown.contains("secret"), "{}", s.shown);
        let e = read("redis+sentinel://s1:26379").unwrap_err();
        assert_eq!(e.problem, Problem::NoSentinelMaster, "{e}");
        let e = read("redis+sentinel://s1:26379/m/x").unwrap_err();
        assert_eq!(e.problem, Problem::NotADatabase, "{e}");
    }
}
