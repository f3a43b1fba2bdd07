//! `SEARXNG_BACKEND_URL`: one SearXNG base URL, or a comma-separated list of them (a pool). Each
//! entry is validated like any URL variable; a list with an empty entry or the same URL twice is
//! refused naming the variable. Each instance gets a name from this list, the closed set the
//! `searxng_instance` metric label and `/status` use:
//!
//! - `host:port` (the scheme's default port when the URL has none), when that is unique in the
//!   list;
//! - otherwise, for every instance, `searxng-<n>` by its 1-based position in the list (two
//!   instances behind one host and port, under different paths).

use url::Url;

use crate::env::{self, ConfigError, Env, Problem};

/// At most this many instances: the `searxng_instance` label stays a small closed set.
pub(crate) const MAX_INSTANCES: usize = 32;

/// One configured SearXNG instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearxngBackend {
    /// Its name: the `searxng_instance` label value and its `/status` entry.
    pub(crate) name: String,
    /// Its base URL, without a trailing slash in the path.
    pub(crate) url: Url,
}

/// Reads `SEARXNG_BACKEND_URL` (`name`) into one or more instances, in the order given.
pub(super) fn read(env: &Env<'_>, name: &str) -> Result<Vec<SearxngBackend>, ConfigError> {
    let raw = env.required(name)?;
    let mut urls: Vec<Url> = Vec::new();
    for entry in raw.text.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(raw.error(Problem::EmptyEntry));
        }
        let mut url = env::http_url(&raw, entry)?;
        let trimmed = url.path().trim_end_matches('/').to_owned();
        url.set_path(&trimmed);
        if urls.contains(&url) {
            return Err(raw.error(Problem::ListedTwice(url.to_string())));
        }
        urls.push(url);
    }
    if urls.len() > MAX_INSTANCES {
        return Err(raw.error(Problem::TooMany {
            count: urls.len(),
            max: MAX_INSTANCES,
        }));
    }
    Ok(name_instances(urls))
}

fn host_port(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn name_instances(urls: Vec<Url>) -> Vec<SearxngBackend> {
    let names: Vec<String> = urls.iter().map(host_port).collect();
    let unique = names
        .iter()
        .enumerate()
        .all(|(i, name)| !names[..i].contains(name));
    urls.into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, (url, name))| SearxngBackend {
            name: if unique {
                name
            } else {
                format!("searxng-{}", i + 1)
            },
            url,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read_value(value: &str) -> Result<Vec<SearxngBackend>, ConfigError> {
        let value = value.to_owned();
        let lookup = move |name: &str| (name == "SEARXNG_BACKEND_URL").then(|| value.clone());
        read(&Env::new(&lookup), "SEARXNG_BACKEND_URL")
    }

    fn names(backends: &[SearxngBackend]) -> Vec<&str> {
        backends.iter().map(|b| b.name.as_str()).collect()
    }

    #[test]
    fn one_url_is_one_instance_named_by_host_and_port() {
        let one = read_value("http://127.0.0.1:8888/").unwrap();
        assert_eq!(names(&one), ["127.0.0.1:8888"]);
        assert_eq!(one[0].url.as_str(), "http://127.0.0.1:8888/");
        let default_port = read_value("https://search.example/searx/").unwrap();
        assert_eq!(names(&default_port), ["search.example:443"]);
        assert_eq!(default_port[0].url.as_str(), "https://search.example/searx");
    }

    #[test]
    fn a_list_is_a_pool_in_the_order_given() {
        let pool = read_value(" http://a:1 , http://b:2/,http://a:3").unwrap();
        assert_eq!(names(&pool), ["a:1", "b:2", "a:3"]);
    }

    #[test]
    fn instances_sharing_a_host_and_port_are_named_by_position() {
        let pool = read_value("http://h:1/one,http://h:1/two,http://other:2").unwrap();
        assert_eq!(names(&pool), ["searxng-1", "searxng-2", "searxng-3"]);
    }

    #[test]
    fn a_bad_list_names_the_variable_and_the_problem() {
        for (value, problem) in [
            ("http://a:1,,http://b:2", Problem::EmptyEntry),
            ("http://a:1,", Problem::EmptyEntry),
            (
                "http://a:1,http://a:1/",
                Problem::ListedTwice("http://a:1/".into()),
            ),
            ("http://a:1,ftp://b", Problem::NotHttpUrl),
        ] {
            let err = read_value(value).unwrap_err();
            assert_eq!(err.variable, "SEARXNG_BACKEND_URL", "{value}");
            assert_eq!(err.problem, problem, "{value}");
        }
        let err = read_value("http://a:1,not a url").unwrap_err();
        assert!(
            matches!(err.problem, Problem::NotAUrl { ref entry, .. } if entry == "not a url"),
            "{err}"
        );
        let many: Vec<String> = (0..=MAX_INSTANCES)
            .map(|i| format!("http://h{i}:1"))
            .collect();
        let err = read_value(&many.join(",")).unwrap_err();
        assert_eq!(
            err.problem,
            Problem::TooMany {
                count: MAX_INSTANCES + 1,
                max: MAX_INSTANCES
            }
        );
    }
}
